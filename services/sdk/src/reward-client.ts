/**
 * A client of a reward service (`rewardmesh.v1.RewardService`) with a default deadline, so that no
 * call — `Describe`, `Score`, `ScoreBatch` or a whole `ScoreStream` — can wait forever on a server that
 * never answers. `scoreBatch({ requests })` scores up to `MAX_SCORE_BATCH` (1024) rollouts in one unary call
 * (`{ results, errors }`: a refused rollout is its own entry of `errors`); a service written against the
 * contract before ScoreBatch answers it UNIMPLEMENTED. {@link scoreBatch} does both: it splits a batch at
 * the cap and falls back to `ScoreStream` on UNIMPLEMENTED.
 * @module
 */
import {
  type CallOptions,
  type Client,
  grpc,
  type RewardResult,
  RewardService,
  type Rollout,
  type ScoreBatchError,
} from "@reward-mesh/proto";
import { createSecureGrpcClient, type GrpcClientSecurity } from "./grpc-security.js";
import { MAX_SCORE_BATCH } from "./server.js";

/** Default deadline of a reward-service call without its own `timeoutMs`. */
export const DEFAULT_REWARD_CALL_TIMEOUT_MS = 60_000;

/** Options of {@link createRewardServiceClient}. */
export interface RewardServiceClientOptions {
  /**
   * Deadline of every call that sets no `timeoutMs` of its own (for `ScoreStream`: the whole stream).
   * @default 60000 — far above one scoring, short enough that a stuck call is noticed.
   */
  readonly timeoutMs?: number;
  /**
   * TLS, client certificate and bearer token (`loadGrpcClientSecurity`).
   * @default plaintext, to loopback addresses only
   */
  readonly security?: GrpcClientSecurity;
}

/** A typed RewardService client for `address` (`host:port`) whose calls all have a deadline. */
export function createRewardServiceClient(
  address: string,
  options: RewardServiceClientOptions = {},
): Client<typeof RewardService> {
  return createSecureGrpcClient(
    RewardService,
    address,
    options.security,
    {},
    {
      defaultTimeoutMs: options.timeoutMs ?? DEFAULT_REWARD_CALL_TIMEOUT_MS,
    },
  );
}

/** What {@link scoreBatch} answers: one result per rollout, in order, and the rollouts that failed. */
export interface ScoreBatchOutcome {
  /** One per rollout, in order; a failed rollout's holds only its identity (no components). */
  readonly results: RewardResult[];
  /** The rollouts that failed, by index into the whole batch (ScoreBatch only: ScoreStream throws). */
  readonly errors: ScoreBatchError[];
  /** The RPC that scored them: `ScoreStream` for a service that does not implement ScoreBatch. */
  readonly rpc: "ScoreBatch" | "ScoreStream";
}

/** Clients whose service answered ScoreBatch UNIMPLEMENTED: scored over ScoreStream from then on. */
const withoutScoreBatch = new WeakSet<object>();

/**
 * Scores `rollouts` with `ScoreBatch` — calls of at most {@link MAX_SCORE_BATCH}, in parallel, each with
 * `options` (deadline, signal, metadata) — and falls back to one `ScoreStream` when the service answers
 * UNIMPLEMENTED (a service written against the contract before ScoreBatch, in any language); the client
 * remembers it. Over ScoreBatch a refused rollout is an entry of `errors` (its index in `rollouts`, the code
 * and `'requests[<i>]…'` message of its call) and the others are scored; over ScoreStream it fails the call.
 */
export async function scoreBatch(
  client: Client<typeof RewardService>,
  rollouts: readonly Rollout[],
  options: CallOptions = {},
): Promise<ScoreBatchOutcome> {
  if (rollouts.length === 0) return { results: [], errors: [], rpc: "ScoreBatch" };
  if (!withoutScoreBatch.has(client)) {
    const chunks: Rollout[][] = [];
    for (let s = 0; s < rollouts.length; s += MAX_SCORE_BATCH)
      chunks.push(rollouts.slice(s, s + MAX_SCORE_BATCH));
    try {
      const answers = await Promise.all(
        chunks.map((c) => client.scoreBatch({ requests: c.map((rollout) => ({ rollout })) }, options)),
      );
      const results: RewardResult[] = [];
      const errors: ScoreBatchError[] = [];
      for (const [k, a] of answers.entries()) {
        const base = k * MAX_SCORE_BATCH;
        results.push(...a.results);
        for (const e of a.errors) errors.push({ ...e, index: base + e.index });
      }
      return { results, errors, rpc: "ScoreBatch" };
    } catch (err) {
      if ((err as { code?: unknown }).code !== grpc.status.UNIMPLEMENTED) throw err;
      withoutScoreBatch.add(client);
    }
  }
  const results: RewardResult[] = [];
  async function* requests() {
    for (const rollout of rollouts) yield { rollout };
  }
  for await (const r of client.scoreStream(requests(), options)) results.push(r);
  return { results, errors: [], rpc: "ScoreStream" };
}
