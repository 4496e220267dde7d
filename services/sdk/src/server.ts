/**
 * The gRPC side of a reward service: `rewardmesh.v1.RewardService` (Describe, Score, ScoreStream, ScoreBatch),
 * `grpc.health.v1.Health` and server reflection, on one grpc-js server; and the generic server every
 * other mesh gRPC service (agent environment, learner) is hosted on.
 * @module
 */
import { setMaxListeners } from "node:events";
import type { DescService } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { create } from "@bufbuild/protobuf";
import {
  createGrpcHandlers,
  createGrpcServiceDefinition,
  grpc,
  health,
  type RewardResult,
  RewardResultSchema,
  RewardService,
  type ScoreBatchError,
  ScoreBatchErrorSchema,
  reflectionV1,
  reflectionV1alpha,
  type ServiceImpl,
} from "@reward-mesh/proto";
import { InvalidArgumentError, isInvalidArgumentError, toGrpcStatus } from "./errors.js";
import {
  createServerCredentials,
  describeServerSecurity,
  type GrpcServerSecurity,
  serverInterceptors,
} from "./grpc-security.js";
import { createHealthState, type HealthState, HealthStatus } from "./health.js";
import { type ConnectHostable, type RunningHttpServer, startHttpServer } from "./http.js";
import type { Limiter } from "./limiter.js";
import type { Logger } from "./logger.js";
import { createReflectionImpls } from "./reflection.js";
import type { RewardServiceDefinition } from "./service.js";
import { extractFromMetadata } from "./telemetry.js";
import { MAX_MESSAGE_BYTES } from "./validate.js";

/**
 * One gRPC service to host: its descriptor and its typed handlers (build with {@link grpcService}, so a
 * missing or mistyped RPC is a compile error).
 */
export interface HostedService {
  readonly descriptor: DescService;
  readonly handlers: grpc.UntypedServiceImplementation;
  /** The typed handler object and error mapping, for HTTP/JSON (set by {@link grpcService}). */
  readonly connect?: Omit<ConnectHostable, "descriptor">;
}

/** Pairs a protobuf-es service with its {@link ServiceImpl}, mapping errors with `toGrpcStatus`. */
export function grpcService<S extends GenService<GenServiceMethods>>(
  service: S,
  impl: ServiceImpl<S>,
  logger?: Logger,
): HostedService {
  const toStatus = (err: unknown) => {
    const st = toGrpcStatus(err);
    if (st.code === grpc.status.INTERNAL) logger?.error({ err, service: service.typeName }, "handler failed");
    return st;
  };
  return {
    descriptor: service as unknown as DescService,
    handlers: createGrpcHandlers(service, impl, { toStatus }),
    connect: { impl: impl as ConnectHostable["impl"], toStatus },
  };
}

/** Options of {@link startGrpcServices}. */
export interface GrpcServicesOptions {
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  readonly logger: Logger;
  /** @default 16 MiB */
  readonly maxMessageBytes?: number;
  /** Also serve `grpc.reflection.v1` / `v1alpha` for these services. @default true */
  readonly reflection?: boolean;
  /**
   * TLS / mutual TLS / bearer token (build with `loadGrpcServerSecurity`).
   * @default plaintext, refused on a non-loopback `host`
   */
  readonly security?: GrpcServerSecurity;
  /**
   * Also serve `grpc.health.v1.Health` — and nothing else — in plaintext on this port of `host` (0 = any
   * free port), for probes that cannot speak TLS (Kubernetes' gRPC probes). It reports the same statuses
   * as the main port (one status map) and closes with it. @default no health port
   */
  readonly healthPort?: number;
  /**
   * Also serve every hosted service (and health) as HTTP/JSON — the Connect protocol, `POST
   * /<package.Service>/<Method>` — on this port of `host` (0 = any free port), with the gRPC port's TLS and
   * token (see `./http.ts`). @default no HTTP port
   */
  readonly httpPort?: number;
}

/** Options of {@link startGrpcServer}. */
export interface GrpcServerOptions {
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** Shared with the JetStream worker so that both together respect the service's concurrency. */
  readonly limiter: Limiter;
  readonly logger: Logger;
  /** More services on the same port (e.g. the agentdojo service's AgentEnvironment). */
  readonly extraServices?: readonly HostedService[];
  /** @default plaintext, refused on a non-loopback `host` */
  readonly security?: GrpcServerSecurity;
  /** A plaintext health-only port (see {@link GrpcServicesOptions.healthPort}). @default none */
  readonly healthPort?: number;
  /** An HTTP/JSON port (see {@link GrpcServicesOptions.httpPort}). @default none */
  readonly httpPort?: number;
}

/** A running gRPC server. */
export interface RunningGrpcServer {
  /** The bound port. */
  readonly port: number;
  /** `host:port` clients can dial. */
  readonly address: string;
  readonly health: HealthState;
  /** The bound plaintext health-only port, when one was asked for. */
  readonly healthPort?: number;
  /** `host:port` of the health-only port, when there is one. */
  readonly healthAddress?: string;
  /** The bound HTTP/JSON port, when one was asked for. */
  readonly httpPort?: number;
  /** `http://host:port` (or `https://`) of the HTTP/JSON port, when there is one. */
  readonly httpUrl?: string;
  /** Marks NOT_SERVING, lets calls finish for up to `graceMs`, then forces shutdown (both ports). */
  close(graceMs?: number): Promise<void>;
}

function bindServer(server: grpc.Server, address: string, credentials: grpc.ServerCredentials) {
  return new Promise<number>((resolve, reject) =>
    server.bindAsync(address, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  ).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
}

function shutdownServer(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
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
}

/**
 * A second grpc-js server on `host:port` hosting only `grpc.health.v1.Health` over `healthState` (the
 * main server's own state object, so both report the same statuses). Plaintext whatever the host:
 * Kubernetes' native gRPC probes cannot speak TLS, and this port carries nothing but serving status —
 * no scoring, no reflection, no other service (their calls are UNIMPLEMENTED here).
 */
async function startHealthOnlyServer(
  host: string,
  port: number,
  healthState: HealthState,
  logger: Logger,
): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 64 * 1024,
    "grpc.max_send_message_length": 1024 * 1024,
  });
  const h = grpcService(health.Health, healthState.impl, logger);
  server.addService(createGrpcServiceDefinition(h.descriptor), h.handlers);
  const bindHost = host.includes(":") ? `[${host}]` : host;
  const bound = await bindServer(server, `${bindHost}:${port}`, grpc.ServerCredentials.createInsecure());
  logger.info({ port: bound, host, security: "plaintext (health only)" }, "gRPC health port listening");
  return { port: bound, server };
}

/**
 * Most requests one `ScoreBatch` call takes (the proto's documented cap): bounds the work and the memory
 * one call can pin. A client with a bigger batch splits it (the Python client does).
 */
export const MAX_SCORE_BATCH = 1024;

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
    transport: "grpc" | "http",
  ) =>
    limiter.run(
      () =>
        def.scoreRollout(rollout, {
          signal,
          logger,
          parentContext: extractFromMetadata(md),
          transport,
        }),
      signal,
    );
  return {
    async describe() {
      return def.describe();
    },
    async score(req, ctx) {
      return scoreOne(req.rollout, ctx.metadata, ctx.signal, ctx.transport ?? "grpc");
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
            const p = scoreOne(req.rollout, ctx.metadata, ctx.signal, ctx.transport ?? "grpc").catch(
              (err: unknown) => {
                if (isInvalidArgumentError(err)) {
                  throw new InvalidArgumentError(`requests[${idx}].${err.field}`, err.problem, {
                    cause: err,
                  });
                }
                throw err;
              },
            );
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
    // Every request validated and scored as Score does it (the same scoreRollout: spans, metrics, the
    // limiter), at most 2 × the limiter's capacity in flight per call, as ScoreStream does: a big batch
    // does not fill the limiter's queue ahead of every other caller (a Score, a stream, the bus worker).
    // A request that fails is reported in `errors` with the status and message ScoreStream would end with;
    // the call fails only as a whole (an empty or oversized batch, the deadline or a cancellation).
    async scoreBatch(req, ctx) {
      const n = req.requests.length;
      if (n === 0) throw new InvalidArgumentError("requests", "must hold at least one ScoreRequest");
      if (n > MAX_SCORE_BATCH) {
        throw new InvalidArgumentError(
          "requests",
          `must hold at most ${MAX_SCORE_BATCH} ScoreRequests, got ${n}: split the batch (or use ScoreStream)`,
        );
      }
      const window = Math.min(n, limiter.capacity * 2);
      setMaxListeners(window * 2 + 10, ctx.signal);
      const transport = ctx.transport ?? "grpc";
      const errors: ScoreBatchError[] = [];
      const results: RewardResult[] = new Array(n);
      const scoreAt = (index: number): Promise<RewardResult> => {
        const r = req.requests[index]!;
        return scoreOne(r.rollout, ctx.metadata, ctx.signal, transport).catch(
          (err: unknown): RewardResult => {
            // The call's deadline or cancellation fails the whole call, as it would a ScoreStream.
            if (ctx.signal.aborted) throw err;
            const st = toGrpcStatus(
              isInvalidArgumentError(err)
                ? new InvalidArgumentError(`requests[${index}].${err.field}`, err.problem, { cause: err })
                : err,
            );
            if (st.code === grpc.status.INTERNAL) logger.error({ err, index }, "ScoreBatch request failed");
            errors.push(create(ScoreBatchErrorSchema, { index, code: st.code, message: st.details }));
            const ro = r.rollout;
            return create(RewardResultSchema, {
              rolloutId: ro?.id ?? "",
              runId: ro?.runId ?? "",
              step: ro?.step ?? 0,
              groupId: ro?.groupId ?? "",
              index: ro?.index ?? 0,
              groupSize: ro?.groupSize ?? 0,
              policyVersion: ro?.policyVersion ?? 0,
              service: def.name,
              serviceVersion: def.version,
            });
          },
        );
      };
      // `window` workers, each taking the next request when its last one is done.
      let next = 0;
      const worker = async () => {
        while (next < n && !ctx.signal.aborted) {
          const index = next++;
          results[index] = await scoreAt(index);
        }
      };
      await Promise.all(Array.from({ length: window }, worker));
      ctx.signal.throwIfAborted();
      errors.sort((a, b) => a.index - b.index);
      return { results, errors };
    },
  };
}

/**
 * Starts one grpc-js server hosting `services` plus `grpc.health.v1` (every service and "" SERVING once
 * bound) and server reflection. The one place the mesh builds a gRPC server: reward services, the agent
 * environment and the learner all use it. `options.security` decides TLS, mutual TLS and the bearer
 * token; plaintext on a non-loopback host without `security.insecure` is refused with a `ConfigError`.
 */
export async function startGrpcServices(
  services: readonly HostedService[],
  options: GrpcServicesOptions,
): Promise<RunningGrpcServer> {
  const host = options.host ?? "127.0.0.1";
  const logger = options.logger.child({ component: "grpc" });
  const max = options.maxMessageBytes ?? 16 * 1024 * 1024;
  const security = options.security ?? {};
  const credentials = createServerCredentials(host, security);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": max,
    "grpc.max_send_message_length": max,
    interceptors: serverInterceptors(security),
  });
  const healthState = createHealthState(services.map((s) => s.descriptor.typeName));
  const all: HostedService[] = [...services, grpcService(health.Health, healthState.impl, logger)];
  if (options.reflection ?? true) {
    const reflection = createReflectionImpls(all.map((s) => s.descriptor));
    all.push(grpcService(reflectionV1.ServerReflection, reflection.v1, logger));
    all.push(grpcService(reflectionV1alpha.ServerReflection, reflection.v1alpha, logger));
  }
  for (const s of all) server.addService(createGrpcServiceDefinition(s.descriptor), s.handlers);
  const bindHost = host.includes(":") ? `[${host}]` : host;
  const port = await bindServer(server, `${bindHost}:${options.port ?? 0}`, credentials);
  let healthOnly: { port: number; server: grpc.Server } | undefined;
  if (options.healthPort !== undefined) {
    try {
      healthOnly = await startHealthOnlyServer(host, options.healthPort, healthState, logger);
    } catch (err) {
      server.forceShutdown();
      throw err;
    }
  }
  let httpServer: RunningHttpServer | undefined;
  if (options.httpPort !== undefined) {
    try {
      httpServer = await startHttpServer({
        host,
        port: options.httpPort,
        services: all.flatMap((s) => (s.connect ? [{ descriptor: s.descriptor, ...s.connect }] : [])),
        health: healthState,
        logger,
        maxMessageBytes: max,
        security,
      });
    } catch (err) {
      server.forceShutdown();
      healthOnly?.server.forceShutdown();
      throw err;
    }
  }
  healthState.setAll(HealthStatus.SERVING);
  const dialHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : bindHost;
  logger.info(
    {
      port,
      host,
      security: describeServerSecurity(security),
      services: services.map((s) => s.descriptor.typeName),
    },
    "gRPC server listening",
  );
  return {
    port,
    address: `${dialHost}:${port}`,
    health: healthState,
    ...(healthOnly ? { healthPort: healthOnly.port, healthAddress: `${dialHost}:${healthOnly.port}` } : {}),
    ...(httpServer ? { httpPort: httpServer.port, httpUrl: httpServer.url } : {}),
    async close(graceMs = 5_000) {
      healthState.setAll(HealthStatus.NOT_SERVING);
      await Promise.all([
        shutdownServer(server, graceMs),
        ...(healthOnly ? [shutdownServer(healthOnly.server, graceMs)] : []),
        ...(httpServer ? [httpServer.close(graceMs)] : []),
      ]);
    },
  };
}

/** Starts the gRPC server for `def` (plus `extraServices`) and marks it SERVING. */
export function startGrpcServer(
  def: RewardServiceDefinition,
  options: GrpcServerOptions,
): Promise<RunningGrpcServer> {
  const logger = options.logger.child({ component: "grpc" });
  return startGrpcServices(
    [
      grpcService(RewardService, createRewardServiceImpl(def, options.limiter, logger), logger),
      ...(options.extraServices ?? []),
    ],
    {
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      logger: options.logger,
      ...(options.security ? { security: options.security } : {}),
      ...(options.healthPort !== undefined ? { healthPort: options.healthPort } : {}),
      ...(options.httpPort !== undefined ? { httpPort: options.httpPort } : {}),
      // The bus's limit on the rollout, plus the ScoreRequest envelope (a tag and a length): gRPC and the
      // bus accept the same rollouts.
      maxMessageBytes: MAX_MESSAGE_BYTES + 16,
    },
  );
}
