/**
 * The gRPC client side of the learner contract: a {@link Learner} backed by a `rewardmesh.v1.Learner`
 * server (the embedded learner behind {@link serveLearner}, or a Python learner on a GPU node).
 * @module
 */
import { grpc, Learner as LearnerService } from "@reward-mesh/proto";
import { createSecureGrpcClient, type GrpcClientSecurity, injectIntoMetadata } from "@reward-mesh/sdk";
import { LearnerClosedError, RemoteLearnerError } from "./errors.js";
import type { Learner, LearnerInfo } from "./types.js";
import {
  completionsOf,
  decodeCompletions,
  decodeTrainStepResult,
  encodeGenerateRequest,
  encodeScoredSequences,
  encodeTrainStepRequest,
  learnerErrorFromGrpc,
} from "./wire.js";

/** Options of {@link createRemoteLearner}. */
export interface RemoteLearnerOptions {
  /** Deadline of every call in milliseconds. @default none (a train step may legitimately take long) */
  readonly timeoutMs?: number;
  /** Largest response accepted (a Generate response holds every completion). @default 64 MiB */
  readonly maxResponseBytes?: number;
  /**
   * TLS, client certificate and bearer token (`loadGrpcClientSecurity()`: `REWARD_MESH_GRPC_*`).
   * @default plaintext, to a loopback address only
   */
  readonly security?: GrpcClientSecurity;
}

/**
 * A learner at `address` (`host:port`; TLS and a token per `options.security`, plaintext to a loopback
 * address otherwise — a non-loopback one without TLS is refused unless explicitly allowed, see
 * `grpcChannelSettings`). Calls are not retried automatically: a caller
 * that retries `trainStep` after a retryable {@link RemoteLearnerError} must reuse the idempotency
 * key, and the server then returns the stored result (`replayed: true`) if the first attempt landed.
 * INVALID_ARGUMENT comes back as a `LearnerInputError` with the server's field path.
 */
export function createRemoteLearner(address: string, options: RemoteLearnerOptions = {}): Learner {
  const client = createSecureGrpcClient(LearnerService, address, options.security, {
    "grpc.max_receive_message_length": options.maxResponseBytes ?? 64 * 1024 * 1024,
  });
  const timeout = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
  // Per call: the caller's trace context (`traceparent`) in the metadata, so the learner's work joins the
  // step's trace (the trainer's `trainer/train_step` span is active around `trainStep`).
  const opts = () => {
    const metadata = new grpc.Metadata();
    injectIntoMetadata(metadata);
    return { ...timeout, metadata };
  };
  let closed = false;

  async function call<T>(method: string, fn: () => Promise<T>): Promise<T> {
    if (closed) throw new LearnerClosedError(`the remote learner client for ${address} is closed`);
    try {
      return await fn();
    } catch (err) {
      throw learnerErrorFromGrpc(err, method);
    }
  }

  return {
    info: () =>
      call("Info", async (): Promise<LearnerInfo> => {
        const i = await client.info({}, opts());
        return {
          name: i.name,
          policyVersion: i.policyVersion,
          kind: "remote",
          description: `Remote learner at ${address} (server kind '${i.kind}'): ${i.description}`,
          model: i.model,
          architecture: i.architecture,
          parameterCount: Number(i.parameterCount),
          tokenizer: i.tokenizer,
          dtype: i.dtype,
          device: i.device,
          vocabSize: i.vocabSize,
          maxContext: i.maxContext,
        };
      }),
    computeLogprobs: (sequences) =>
      call("ComputeLogprobs", async () => {
        const res = await client.computeLogprobs(encodeScoredSequences(sequences), opts());
        if (res.sequences.length !== sequences.length) {
          throw new RemoteLearnerError(
            grpc.status.INTERNAL,
            `ComputeLogprobs returned ${res.sequences.length} sequences for ${sequences.length}`,
            false,
          );
        }
        return res.sequences.map((q) => q.logprobs);
      }),
    generate: (req) =>
      call("Generate", async () =>
        completionsOf(decodeCompletions(await client.generate(encodeGenerateRequest(req), opts())), req),
      ),
    trainStep: (req) =>
      call("TrainStep", async () => {
        // Encode everything first, so a value that cannot be sent fails before the call starts.
        const { header, samples } = encodeTrainStepRequest(req);
        async function* messages() {
          yield { kind: { case: "header" as const, value: header } };
          for (const s of samples) yield { kind: { case: "sample" as const, value: s } };
        }
        return decodeTrainStepResult(await client.trainStep(messages(), opts()));
      }),
    syncWeights: () =>
      call("SyncWeights", async () => {
        const r = await client.syncWeights({}, opts());
        return { policyVersion: r.policyVersion };
      }),
    saveCheckpoint: (path) =>
      call("SaveCheckpoint", async () => (await client.saveCheckpoint({ path }, opts())).path),
    async close() {
      if (closed) return;
      closed = true;
      client.close();
    },
  };
}
