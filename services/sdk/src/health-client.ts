/**
 * Waiting for a gRPC server to report SERVING (`grpc.health.v1`), by polling — never by sleeping for a
 * fixed time. Used by `reward-mesh up`, tests and benchmarks.
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { createGrpcClient, health } from "@reward-mesh/proto";
import { UnavailableError } from "./errors.js";

/** Options of {@link waitServing}. */
export interface WaitServingOptions {
  /** Fail at once when this process exits before serving. */
  readonly child?: ChildProcess;
  /** @default 30000 */
  readonly timeoutMs?: number;
  /** Service name to check. @default "" (the server as a whole) */
  readonly service?: string;
  /** Extra text for the error (e.g. the process's stderr). */
  readonly describe?: () => string;
}

/** Resolves once `address` reports SERVING; throws {@link UnavailableError} on timeout or early exit. */
export async function waitServing(address: string, o: WaitServingOptions = {}): Promise<void> {
  const client = createGrpcClient(health.Health, address);
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  const more = () => (o.describe ? `\n${o.describe()}` : "");
  try {
    while (true) {
      const c = o.child;
      if (c && (c.exitCode !== null || c.signalCode !== null)) {
        throw new UnavailableError(
          `${address}: the process exited (${c.exitCode ?? c.signalCode}) before serving${more()}`,
        );
      }
      const serving = await client.check({ service: o.service ?? "" }, { timeoutMs: 500 }).then(
        (r) => r.status === health.HealthCheckResponse_ServingStatus.SERVING,
        () => false,
      );
      if (serving) return;
      if (Date.now() >= deadline)
        throw new UnavailableError(`${address} did not report SERVING in time${more()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    client.close();
  }
}
