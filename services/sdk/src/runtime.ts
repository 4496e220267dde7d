/**
 * Runs a defined reward service as a process: gRPC server + JetStream worker sharing one limiter,
 * graceful drain on SIGTERM/SIGINT. Entrypoints (`main.ts`) install the OTel SDK, then call
 * {@link serveRewardService}.
 * @module
 */
import { hostname } from "node:os";
import type { ServiceRuntimeOptions } from "./config.js";
import { openBus } from "./bus.js";
import { type DescribeResponder, startDescribeResponder } from "./describe.js";
import { HealthStatus } from "./health.js";
import { serviceUser } from "./nats-accounts.js";
import { explainPermissionViolation } from "./nats-auth.js";
import { createLimiter } from "./limiter.js";
import type { Logger } from "./logger.js";
import { type HostedService, type RunningGrpcServer, startGrpcServer } from "./server.js";
import type { RewardServiceDefinition } from "./service.js";
import { type RunningWorker, startWorker } from "./worker.js";

/** A running service process. */
export interface RunningService {
  readonly grpc: RunningGrpcServer;
  /** Undefined when the worker is disabled. */
  readonly worker: RunningWorker | undefined;
  /** Reports NOT_SERVING, stops the worker (drain), then the gRPC server, then the NATS connection. */
  close(graceMs?: number): Promise<void>;
}

/** Extras of a service process. */
export interface ServiceExtras {
  /** More gRPC services on the reward service's port (e.g. agentdojo's AgentEnvironment). */
  readonly extraServices?: readonly HostedService[];
}

/**
 * Starts gRPC and (unless disabled) the JetStream worker with its `mesh.describe.<service>` responder
 * (the contract the trainer checks results against).
 */
export async function startRewardService(
  def: RewardServiceDefinition,
  options: ServiceRuntimeOptions,
  logger: Logger,
  extras: ServiceExtras = {},
): Promise<RunningService> {
  const limiter = createLimiter(options.concurrency);
  const grpcServer = await startGrpcServer(def, {
    host: options.grpcHost,
    port: options.grpcPort,
    limiter,
    logger,
    ...(options.grpcSecurity ? { security: options.grpcSecurity } : {}),
    ...(options.healthPort !== undefined ? { healthPort: options.healthPort } : {}),
    ...(options.httpPort !== undefined ? { httpPort: options.httpPort } : {}),
    ...(extras.extraServices ? { extraServices: extras.extraServices } : {}),
  });
  let worker: RunningWorker | undefined;
  let describer: DescribeResponder | undefined;
  let closeBus: (() => Promise<void>) | undefined;
  if (options.workerEnabled) {
    try {
      const bus = await openBus(options.bus, `${def.name}@${hostname()}:${process.pid}`);
      closeBus = bus.close;
      worker = await startWorker(def, {
        bus,
        limiter,
        logger,
        instance: `${hostname()}:${process.pid}`,
        ackWaitMs: options.ackWaitMs,
        maxDeliver: options.maxDeliver,
        nakBackoffMs: options.nakBackoffMs,
        nakBackoffMaxMs: options.nakBackoffMaxMs,
      });
      // A service that publishes results on the bus also tells the trainer its contract there.
      describer = await startDescribeResponder(bus.nc, def, logger);
    } catch (err) {
      await worker?.stop(0);
      await grpcServer.close(0);
      await closeBus?.();
      throw explainPermissionViolation(err, options.bus.auth, roleNeeded(def)) ?? err;
    }
  }
  return {
    grpc: grpcServer,
    worker,
    async close(graceMs = 10_000) {
      // NOT_SERVING from the start of the drain (on the health-only port too: one status map), so that
      // probes and balancers stop sending new work while the worker finishes what it holds.
      grpcServer.health.setAll(HealthStatus.NOT_SERVING);
      describer?.stop();
      await worker?.stop(graceMs);
      await grpcServer.close(graceMs);
      await closeBus?.();
    },
  };
}

/** What a service's NATS user must be allowed, for a permission error (see `nats-accounts.ts`). */
function roleNeeded(def: RewardServiceDefinition): string {
  const domains = def.domains.map((d) => `mesh.rollouts.${d}.>`).join(", ");
  return `service '${def.name}' needs the role '${serviceUser(def.name)}', which consumes ${domains} (durable consumers ${def.name}--<domain>) and publishes mesh.rewards.*.${def.name}.* and mesh.dlq.${def.name}: connect with that role's credentials (NATS_* variables; a service served elsewhere joins 'reward-mesh up' through 'reward-mesh up --remote ${def.name}=<host:port>', whose user 'reward-mesh serve --remote' then finds without NATS_URL)`;
}

/**
 * The body of every service's `main.ts`: start, print the address, drain on SIGTERM/SIGINT.
 * `onShutdown` runs last (flush telemetry).
 */
export async function serveRewardService(
  def: RewardServiceDefinition,
  options: ServiceRuntimeOptions,
  logger: Logger,
  onShutdown: () => Promise<void> = async () => {},
  extras: ServiceExtras = {},
): Promise<RunningService> {
  const running = await startRewardService(def, options, logger, extras);
  logger.info(
    {
      address: running.grpc.address,
      ...(running.grpc.healthAddress ? { healthAddress: running.grpc.healthAddress } : {}),
      ...(running.grpc.httpUrl ? { httpUrl: running.grpc.httpUrl } : {}),
      worker: options.workerEnabled,
      concurrency: options.concurrency,
      version: def.version,
    },
    `${def.name} ready`,
  );
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, "draining");
    running
      .close()
      .then(() =>
        // Telemetry flush failures (no collector) must not turn a clean drain into a failure.
        onShutdown().catch((err: unknown) => logger.warn({ err: String(err) }, "telemetry flush failed")),
      )
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  return running;
}
