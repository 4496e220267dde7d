/**
 * Serves any {@link Learner} as the gRPC `rewardmesh.v1.Learner` service (plus `grpc.health.v1`),
 * so the training loop can drive it through {@link createRemoteLearner} exactly as it would drive a
 * Python learner on a GPU node — CI exercises the real wire protocol without a GPU.
 * @module
 */
import {
  createGrpcHandlers,
  grpc,
  type LearnerSample,
  Learner as LearnerService,
  type LearnerTrainStepHeader,
  type ServiceImpl,
} from "@reward-mesh/proto";
import {
  extractFromMetadata,
  type GrpcServerSecurity,
  inSpan,
  type Logger,
  silentLogger,
  startGrpcServices,
} from "@reward-mesh/sdk";
import { LearnerInputError } from "./errors.js";
import type { Learner } from "./types.js";
import {
  decodeGenerateRequest,
  decodeSample,
  decodeScoredSequences,
  encodeInfo,
  decodeTrainStepRequest,
  encodeCompletions,
  learnerErrorToStatus,
} from "./wire.js";

/** Options of {@link serveLearner}. */
export interface ServeLearnerOptions {
  /** Interface to bind. @default "127.0.0.1" (loopback: the learner trusts its callers) */
  readonly host?: string;
  /** Port; 0 picks a free one. @default 0 */
  readonly port?: number;
  /** Receives handler failures that map to INTERNAL. @default silent */
  readonly logger?: Logger;
  /**
   * Largest single message the server accepts. TrainStep streams one sample per message, so this
   * bounds one sample (and one generate request), not a batch. @default 16 MiB
   */
  readonly maxMessageBytes?: number;
  /**
   * TLS, mutual TLS and bearer token (`loadGrpcServerSecurity("LEARNER")`: `LEARNER_GRPC_*`, falling
   * back to `REWARD_MESH_GRPC_*`). @default plaintext, refused on a non-loopback `host`
   */
  readonly security?: GrpcServerSecurity;
}

/** A running learner server. */
export interface RunningLearnerServer {
  /** `host:port` to pass to {@link createRemoteLearner}. */
  readonly address: string;
  /** The bound port. */
  readonly port: number;
  /**
   * Marks NOT_SERVING, lets calls finish for up to `graceMs`, then forces shutdown. Does not close
   * the learner (the caller owns it).
   */
  close(graceMs?: number): Promise<void>;
}

/** The `rewardmesh.v1.Learner` handlers for `learner`. */
export function createLearnerServiceImpl(learner: Learner): ServiceImpl<typeof LearnerService> {
  return {
    async info() {
      return encodeInfo(await learner.info());
    },
    async computeLogprobs(req) {
      const out = await learner.computeLogprobs(decodeScoredSequences(req));
      return {
        sequences: out.map((logprobs, i) => ({ sequenceId: req.sequences[i]!.sequenceId, logprobs })),
      };
    },
    async generate(req) {
      return encodeCompletions(await learner.generate(decodeGenerateRequest(req)));
    },
    async trainStep(reqs, ctx) {
      let header: LearnerTrainStepHeader | undefined;
      const samples = [];
      for await (const msg of reqs) {
        const kind = msg.kind;
        if (kind.case === "header") {
          if (header) throw new LearnerInputError("header", "was sent twice; send it once, first");
          header = kind.value;
        } else if (kind.case === "sample") {
          if (!header) throw new LearnerInputError("header", "must be the first message of the stream");
          if (samples.length >= header.sampleCount) {
            throw new LearnerInputError(
              "samples",
              `has more than header.sampleCount = ${header.sampleCount} samples`,
            );
          }
          samples.push(decodeSample(kind.value as LearnerSample));
        } else {
          throw new LearnerInputError(`messages[${samples.length + (header ? 1 : 0)}]`, "is empty");
        }
      }
      if (!header) throw new LearnerInputError("header", "is missing (the stream was empty)");
      if (samples.length !== header.sampleCount) {
        throw new LearnerInputError(
          "samples",
          `has ${samples.length} samples but header.sampleCount is ${header.sampleCount} (stream cut short?)`,
        );
      }
      const req = decodeTrainStepRequest(header, samples);
      // The trainer's `traceparent` (gRPC metadata): this update joins the step's trace.
      const res = await inSpan(
        "learner/train_step",
        extractFromMetadata(ctx.metadata),
        { "reward.step": req.step, "reward.samples": samples.length },
        () => learner.trainStep(req),
      );
      return { policyVersion: res.policyVersion, metrics: { ...res.metrics }, replayed: res.replayed };
    },
    async syncWeights() {
      return learner.syncWeights();
    },
    async saveCheckpoint(req) {
      return { path: await learner.saveCheckpoint(req.path) };
    },
  };
}

/**
 * Serves `learner` over gRPC. Bad input comes back as INVALID_ARGUMENT with the learner's
 * `'<field>' <problem>` message; a closed learner as UNAVAILABLE.
 */
export async function serveLearner(
  learner: Learner,
  options: ServeLearnerOptions = {},
): Promise<RunningLearnerServer> {
  const logger = (options.logger ?? silentLogger).child({ component: "learner-grpc" });
  const toStatus = (err: unknown) => {
    const st = learnerErrorToStatus(err);
    if (st.code === grpc.status.INTERNAL) logger.error({ err }, "learner handler failed");
    return st;
  };
  const server = await startGrpcServices(
    [
      {
        descriptor: LearnerService,
        handlers: createGrpcHandlers(LearnerService, createLearnerServiceImpl(learner), { toStatus }),
      },
    ],
    {
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      logger,
      maxMessageBytes: options.maxMessageBytes ?? 16 * 1024 * 1024,
      ...(options.security ? { security: options.security } : {}),
    },
  );
  return { address: server.address, port: server.port, close: (graceMs?: number) => server.close(graceMs) };
}
