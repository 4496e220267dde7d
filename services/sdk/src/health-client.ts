/**
 * Waiting for a gRPC server to report SERVING (`grpc.health.v1`), by polling — never by sleeping for a
 * fixed time. Used by `reward-mesh up`, tests and benchmarks.
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { health } from "@reward-mesh/proto";
import { UnavailableError } from "./errors.js";
import { createSecureGrpcClient, type GrpcClientSecurity } from "./grpc-security.js";

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
  /**
   * TLS / client certificate / token to dial with (health checks need no token, but a client with one
   * sends it anyway). @default plaintext (loopback only)
   */
  readonly security?: GrpcClientSecurity;
}

/**
 * Resolves once `address` reports SERVING; throws {@link UnavailableError} on timeout or early exit
 * (with the last check's error, e.g. a TLS handshake failure).
 */
export async function waitServing(address: string, o: WaitServingOptions = {}): Promise<void> {
  const client = createSecureGrpcClient(health.Health, address, o.security);
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  let last = "";
  const more = () => `${last ? ` (last check: ${last})` : ""}${o.describe ? `\n${o.describe()}` : ""}`;
  try {
    while (true) {
      const c = o.child;
      if (c && (c.exitCode !== null || c.signalCode !== null)) {
        throw new UnavailableError(
          `${address}: the process exited (${c.exitCode ?? c.signalCode}) before serving${more()}`,
        );
      }
      const serving = await client.check({ service: o.service ?? "" }, { timeoutMs: 500 }).then(
        (r) => {
          last = `status ${health.HealthCheckResponse_ServingStatus[r.status]}`;
          return r.status === health.HealthCheckResponse_ServingStatus.SERVING;
        },
        (err: unknown) => {
          last = err instanceof Error ? err.message : String(err);
          return false;
        },
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
