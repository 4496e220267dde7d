/**
 * Entrypoint of the sidecar (`reward-mesh serve --remote host:port`): a reward service implemented
 * elsewhere, in any language, served on the mesh by this process (`@reward-mesh/sdk`
 * `connectRemoteService`: Describe, then ScoreStream). Its options come from `<PREFIX>_*` variables,
 * where PREFIX is the remote service's name in UPPER_SNAKE case (`py-length` → `PY_LENGTH_CONCURRENCY`),
 * exactly as a TypeScript service's; its own gRPC front defaults to an ephemeral port.
 * @module
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import {
  type BusOptions,
  applyTelemetryDefaults,
  connectRemoteService,
  createLogger,
  type GrpcClientSecurity,
  loadServiceRuntimeOptions,
  type RunningService,
  serveRewardService,
} from "@reward-mesh/sdk";
import { SERVICES } from "../services.js";

/** Options of {@link runSidecar}. */
export interface SidecarOptions {
  /** How long to wait for the remote to answer Describe. */
  readonly waitMs: number;
  /** TLS / token towards the remote (the CLI's `REWARD_MESH_GRPC_*`). */
  readonly security: GrpcClientSecurity;
  /**
   * The mesh's bus for the service named by the remote's Describe (its NATS URL and that service's
   * credentials). @default the `NATS_*` environment
   */
  readonly bus?: (name: string) => Promise<BusOptions>;
}

/** The environment prefix of a remote service's sidecar options. */
export const sidecarPrefix = (service: string) => service.toUpperCase().replace(/[^A-Z0-9]/g, "_");

/** Connects to the remote service, then runs its worker and gRPC front until SIGTERM/SIGINT. */
export async function runSidecar(address: string, o: SidecarOptions): Promise<RunningService> {
  applyTelemetryDefaults();
  const boot = createLogger({ service: "sidecar" });
  const remote = await connectRemoteService(address, {
    waitMs: o.waitMs,
    security: o.security,
    onWait: (err) => boot.info({ address, err: String(err) }, "waiting for the remote reward service"),
  });
  const name = remote.definition.name;
  // Same name, same durable consumers (`<name>--<domain>`) and result subjects: the two would silently
  // split one service's rollouts between them.
  if (SERVICES.some((s) => s.name === name)) {
    remote.close();
    throw new Error(
      `the reward service at ${address} is named '${name}' (its Describe), like this build's own '${name}' service: served here it would share that service's durable consumers (${name}--<domain>) and results; give the remote service another name`,
    );
  }
  const own = loadServiceRuntimeOptions(sidecarPrefix(name), 0);
  let config = own;
  try {
    if (o.bus) config = { ...own, bus: await o.bus(name) };
  } catch (err) {
    remote.close();
    throw err;
  }
  const otel = new NodeSDK({ serviceName: `reward-mesh-${name}` });
  otel.start();
  const logger = createLogger({ service: name, level: config.logLevel });
  logger.info(
    { remote: address, version: remote.definition.version, domains: remote.definition.domains },
    "sidecar connected",
  );
  return serveRewardService(remote.definition, config, logger, async () => {
    remote.close();
    await otel.shutdown();
  });
}
