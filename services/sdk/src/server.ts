/**
 * The gRPC side of a reward service: `rewardmesh.v1.RewardService` (Describe, Score, ScoreStream),
 * `grpc.health.v1.Health` and server reflection, on one grpc-js server.
 * @module
 */
import { setMaxListeners } from "node:events";
import {
  createGrpcHandlers,
  createGrpcServiceDefinition,
  grpc,
  health,
  type RewardResult,
  RewardService,
  reflectionV1,
  reflectionV1alpha,
  type ServiceImpl,
} from "@reward-mesh/proto";
import { InvalidArgumentError, isInvalidArgumentError, toGrpcStatus } from "./errors.js";
import { createHealthState, type HealthState, HealthStatus } from "./health.js";
import type { Limiter } from "./limiter.js";
import type { Logger } from "./logger.js";
import { createReflectionImpls } from "./reflection.js";
import type { RewardServiceDefinition } from "./service.js";
import { extractFromMetadata } from "./telemetry.js";

/** Options of {@link startGrpcServer}. */
export interface GrpcServerOptions {
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** Shared with the JetStream worker so that both together respect the service's concurrency. */
  readonly limiter: Limiter;
  readonly logger: Logger;
}

/** A running gRPC server. */
export interface RunningGrpcServer {
  /** The bound port. */
  readonly port: number;
  /** `host:port` clients can dial. */
  readonly address: string;
  readonly health: HealthState;
  /** Marks NOT_SERVING, lets calls finish for up to `graceMs`, then forces shutdown. */
  close(graceMs?: number): Promise<void>;
}

/** The RewardService handler object for `def`. */
export function createRewardServiceImpl(
  def: RewardServiceDefinition,
  limiter: Limiter,
  logger: Logger,
): ServiceImpl<typeof RewardService> {
  const scoreOne = (
    rollout: Parameters<RewardServiceDefinition["scoreRollout"]>[0],
    md: grpc.Metadata,
    signal: AbortSignal,
  ) =>
    limiter.run(
      () =>
        def.scoreRollout(rollout, {
          signal,
          logger,
          parentContext: extractFromMetadata(md),
          transport: "grpc",
        }),
      signal,
    );
  return {
    async describe() {
      return def.describe();
    },
    async score(req, ctx) {
      return scoreOne(req.rollout, ctx.metadata, ctx.signal);
    },
    // Results come back in request order. Requests are read concurrently with writing results, with at
    // most 2 × concurrency in flight: a slow reader (client) stops us reading, which stops the client
    // writing (HTTP/2 flow control) — end-to-end back-pressure.
    async *scoreStream(reqs, ctx) {
      const window = limiter.capacity * 2;
      // Every in-flight request listens on the one call signal (limiter wait + score function).
      setMaxListeners(window * 2 + 10, ctx.signal);
      const queue: Promise<RewardResult>[] = [];
      let readerDone = false;
      let readerError: unknown;
      let wakeWriter: (() => void) | undefined;
      let wakeReader: (() => void) | undefined;
      const reader = (async () => {
        try {
          let i = 0;
          for await (const req of reqs) {
            while (queue.length >= window) await new Promise<void>((r) => (wakeReader = r));
            const idx = i++;
            const p = scoreOne(req.rollout, ctx.metadata, ctx.signal).catch((err: unknown) => {
              if (isInvalidArgumentError(err)) {
                throw new InvalidArgumentError(`requests[${idx}].${err.field}`, err.problem, { cause: err });
              }
              throw err;
            });
            p.catch(() => {}); // observed by the writer; avoid an unhandled rejection meanwhile
            queue.push(p);
            wakeWriter?.();
          }
        } catch (err) {
          readerError = err;
        } finally {
          readerDone = true;
          wakeWriter?.();
        }
      })();
      while (true) {
        const next = queue.shift();
        if (next) {
          wakeReader?.();
          yield await next;
          continue;
        }
        if (readerDone) break;
        await new Promise<void>((r) => (wakeWriter = r));
      }
      await reader;
      if (readerError) throw readerError;
    },
  };
}

/** Starts the gRPC server for `def` and marks it SERVING. */
export async function startGrpcServer(
  def: RewardServiceDefinition,
  options: GrpcServerOptions,
): Promise<RunningGrpcServer> {
  const host = options.host ?? "127.0.0.1";
  const logger = options.logger.child({ component: "grpc" });
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    "grpc.max_send_message_length": 16 * 1024 * 1024,
  });
  const toStatus = (err: unknown) => {
    const st = toGrpcStatus(err);
    if (st.code === grpc.status.INTERNAL) logger.error({ err }, "handler failed");
    return st;
  };
  const healthState = createHealthState([RewardService.typeName]);
  const reflection = createReflectionImpls([RewardService, health.Health]);
  server.addService(
    createGrpcServiceDefinition(RewardService),
    createGrpcHandlers(RewardService, createRewardServiceImpl(def, options.limiter, logger), { toStatus }),
  );
  server.addService(
    createGrpcServiceDefinition(health.Health),
    createGrpcHandlers(health.Health, healthState.impl, { toStatus }),
  );
  server.addService(
    createGrpcServiceDefinition(reflectionV1.ServerReflection),
    createGrpcHandlers(reflectionV1.ServerReflection, reflection.v1, { toStatus }),
  );
  server.addService(
    createGrpcServiceDefinition(reflectionV1alpha.ServerReflection),
    createGrpcHandlers(reflectionV1alpha.ServerReflection, reflection.v1alpha, { toStatus }),
  );
  const bindHost = host.includes(":") ? `[${host}]` : host;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${bindHost}:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  healthState.setAll(HealthStatus.SERVING);
  const dialHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : bindHost;
  logger.info({ port, host }, "gRPC server listening");
  return {
    port,
    address: `${dialHost}:${port}`,
    health: healthState,
    async close(graceMs = 5_000) {
      healthState.setAll(HealthStatus.NOT_SERVING);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
