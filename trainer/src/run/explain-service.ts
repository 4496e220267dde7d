/**
 * `rewardmesh.v1.Trainer` over gRPC: `Explain` gives the same explanation as `reward-mesh explain` (the
 * trainer's engine re-run on a run's stored step), for tools that do not read the run directory themselves;
 * `ComputeAdvantages` runs the advantage engine on a batch sent by the caller (`./advantages-service.ts`).
 * @module
 */
import { create } from "@bufbuild/protobuf";
import {
  type ServiceImpl,
  Trainer,
  type TrainerExplainRequest,
  type TrainerExplainResponse,
  TrainerExplainResponseSchema,
} from "@reward-mesh/proto";
import {
  type GrpcServerSecurity,
  grpcService,
  InvalidArgumentError,
  type Logger,
  NotFoundError,
  silentLogger,
  startGrpcServices,
} from "@reward-mesh/sdk";
import { computeAdvantagesMessage } from "./advantages-service.js";
import {
  ExplainNotFoundError,
  type ExplainTarget,
  explainRolloutAsync,
  type GroupExplanation,
} from "./explain.js";

/** Options of {@link createTrainerServiceImpl} and {@link serveTrainer}. */
export interface TrainerServiceOptions {
  /** Where runs are stored (`runs`). */
  readonly outputDir: string;
  /** Trace link template (`{traceId}`), e.g. a Jaeger or Tempo URL. @default no link */
  readonly traceUrlTemplate?: string;
}

/** The explanation as its protobuf message. */
export function explanationMessage(e: GroupExplanation): TrainerExplainResponse {
  return create(TrainerExplainResponseSchema, {
    runId: e.runId,
    step: e.step,
    groupId: e.groupId,
    taskId: e.taskId,
    domain: e.domain,
    rolloutIndex: e.rolloutIndex ?? -1,
    estimator: e.estimator,
    components: [...e.components],
    weights: [...e.weights],
    effectiveWeights: [...e.effectiveWeights],
    rollouts: e.rollouts.map((r) => ({
      rolloutId: r.rolloutId,
      values: r.values.map((v) => v ?? 0),
      notApplicable: r.values.map((v) => v === null),
      statuses: [...r.statuses],
      weightedTotal: r.weightedTotal,
      advantage: r.advantage,
    })),
    correlation: e.correlation.flat(),
    grpoShares: [...e.denominatorShares.grpo],
    corrGrpoShares: [...e.denominatorShares.corrGrpo],
    coefficientSum: e.coefficientSum,
    ...(e.denominator !== null ? { denominator: e.denominator } : {}),
    ...(e.sgrpo
      ? { sgrpoWeight: e.sgrpo.weight, sgrpoSuccesses: e.sgrpo.successes, sgrpoGated: e.sgrpo.gated }
      : {}),
    ...(e.dynamicSampling ? { kept: e.dynamicSampling.kept } : {}),
    degenerate: e.degenerate,
    imputed: e.imputed,
    reproduced: e.reproduced,
    traceId: e.traceId,
    traceUrl: e.traceUrl ?? "",
    rolloutTraceId: e.rolloutTraceId ?? "",
    rolloutTraceUrl: e.rolloutTraceUrl ?? "",
  });
}

function targetOf(req: TrainerExplainRequest): ExplainTarget {
  if (req.runId === "") throw new InvalidArgumentError("run_id", "is required");
  if (req.rolloutId !== "") {
    if (req.step !== 0 || req.groupId !== "")
      throw new InvalidArgumentError(
        "rollout_id",
        "goes alone: give either rollout_id or step with group_id",
      );
    return { rolloutId: req.rolloutId };
  }
  if (req.step === 0 || req.groupId === "")
    throw new InvalidArgumentError("rollout_id", "or step (≥ 1) with group_id is required");
  return { step: req.step, groupId: req.groupId };
}

/** The `Trainer` handlers: Explain over the runs in `o.outputDir`, ComputeAdvantages (stateless). */
export function createTrainerServiceImpl(o: TrainerServiceOptions): ServiceImpl<typeof Trainer> {
  return {
    async explain(req) {
      const target = targetOf(req);
      if (req.runId.includes("/") || req.runId.includes(".."))
        throw new InvalidArgumentError("run_id", `is not a run id: '${req.runId}'`);
      try {
        return explanationMessage(
          await explainRolloutAsync(o.outputDir, req.runId, target, {
            ...(o.traceUrlTemplate ? { traceUrlTemplate: o.traceUrlTemplate } : {}),
          }),
        );
      } catch (err) {
        if (err instanceof ExplainNotFoundError) throw new NotFoundError(err.message);
        throw err;
      }
    },
    async computeAdvantages(req) {
      return computeAdvantagesMessage(req);
    },
  };
}

/** A running Trainer server. */
export interface RunningTrainerServer {
  readonly address: string;
  readonly port: number;
  /** `http://host:port` of the HTTP/JSON (Connect) port, when one was asked for. */
  readonly httpUrl?: string;
  close(): Promise<void>;
}

/**
 * Serves `Trainer` (plus health and reflection) on `host:port` (loopback and a free port by default), and as
 * HTTP/JSON (Connect protocol) on `httpPort` when given (0 = any free port).
 */
export async function serveTrainer(
  o: TrainerServiceOptions & {
    readonly host?: string;
    readonly port?: number;
    readonly logger?: Logger;
    readonly security?: GrpcServerSecurity;
    readonly httpPort?: number;
  },
): Promise<RunningTrainerServer> {
  const logger = o.logger ?? silentLogger;
  const server = await startGrpcServices([grpcService(Trainer, createTrainerServiceImpl(o), logger)], {
    host: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
    logger,
    ...(o.security ? { security: o.security } : {}),
    ...(o.httpPort !== undefined ? { httpPort: o.httpPort } : {}),
  });
  return {
    address: server.address,
    port: server.port,
    ...(server.httpUrl ? { httpUrl: server.httpUrl } : {}),
    close: () => server.close(),
  };
}
