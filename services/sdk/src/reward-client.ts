/**
 * A client of a reward service (`rewardmesh.v1.RewardService`) with a default deadline, so that no
 * call — `Describe`, `Score`, `ScoreBatch` or a whole `ScoreStream` — can wait forever on a server that
 * never answers. `scoreBatch({ requests })` scores up to `MAX_SCORE_BATCH` (1024) rollouts in one unary call
 * (`{ results, errors }`: a refused rollout is its own entry of `errors`); a service written against the
 * contract before ScoreBatch answers it UNIMPLEMENTED. {@link scoreBatch} does both: it splits a batch at
 * the cap and at {@link MAX_SCORE_BATCH_BYTES}, calls in parallel, and falls back to `ScoreStream` on
 * UNIMPLEMENTED.
 * @module
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type CallOptions,
  type Client,
  grpc,
  type RewardResult,
  RewardService,
  type Rollout,
  RolloutSchema,
  type ScoreBatchError,
  ScoreBatchRequestSchema,
} from "@reward-mesh/proto";
import { createSecureGrpcClient, type GrpcClientSecurity } from "./grpc-security.js";
import { MAX_SCORE_BATCH } from "./server.js";
import { MAX_MESSAGE_BYTES } from "./validate.js";

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
  /**
   * The RPC that scored them: `ScoreStream` when any of them went over it (a service that does not
   * implement ScoreBatch, or a rollout too big for one ScoreBatch message).
   */
  readonly rpc: "ScoreBatch" | "ScoreStream";
}

/**
 * The most bytes of serialized rollouts {@link scoreBatch} puts in one ScoreBatch request: half of what a
 * service accepts in one message (`MAX_MESSAGE_BYTES`, 8 MiB - 64 KiB, plus the envelope), so that the
 * request fits and its response — whose results may carry long `details` — is unlikely not to. A call whose
 * request the service still refuses as too big is split in halves (a single rollout then goes over
 * ScoreStream); one whose response was too big is redone once over ScoreStream (see {@link scoreBatch}).
 */
export const MAX_SCORE_BATCH_BYTES = Math.floor(MAX_MESSAGE_BYTES / 2);

/** How long a client whose service answered ScoreBatch UNIMPLEMENTED uses ScoreStream before trying again. */
export const SCORE_BATCH_RETRY_AFTER_MS = 60_000;

/** Clients whose service answered ScoreBatch UNIMPLEMENTED, and when: ScoreStream for a while. */
const withoutScoreBatch = new WeakMap<object, number>();
/** Clients whose service answered a ScoreBatch call: no probe call first. */
const withScoreBatch = new WeakSet<object>();

/** [start, end) ranges of `rollouts`: at most {@link MAX_SCORE_BATCH} and `maxBytes` each (a bigger rollout alone). */
export function splitScoreBatch(
  rollouts: readonly Rollout[],
  maxBytes: number = MAX_SCORE_BATCH_BYTES,
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let lo = 0;
  let size = 0;
  for (let i = 0; i < rollouts.length; i++) {
    // The rollout, and its ScoreRequest and ScoreBatchRequest envelopes (a tag and a length each).
    const n = toBinary(RolloutSchema, rollouts[i]!).length + 12;
    if (i > lo && (i - lo >= MAX_SCORE_BATCH || size + n > maxBytes)) {
      out.push([lo, i]);
      lo = i;
      size = 0;
    }
    size += n;
  }
  out.push([lo, rollouts.length]);
  return out;
}

const codeOf = (err: unknown) => (err as { code?: unknown }).code;

const SIZE = /larger than max \((\d+) vs\.? (\d+)\)/;

/**
 * Which message a RESOURCE_EXHAUSTED ScoreBatch answer (its `details`) says was over a size limit:
 * `"request"` (refused unscored), `"response"` (scored, then its answer refused), or `undefined` (not about
 * size: a busy server, a proxy's quota — not retried). The texts are grpc-js's and gRPC core's (grpcio,
 * grpc-go's differ only in wording they share): "Received message larger than max (N vs. M)" is written by
 * whichever side refused to receive, so the size says which message it was — the request's
 * `requestBytes` (the server's receive limit) or not (the client's, so the response); "Sent message larger
 * than max" is the server refusing to send the response (or this client a request of `requestBytes`), and
 * "Response message is larger than max" the same for a response.
 */
function tooBig(text: string, requestBytes: number): "request" | "response" | undefined {
  // grpc-go's "grpc: received message larger than max" / "grpc: trying to send message …" read the same.
  const details = text.toLowerCase();
  if (details.includes("response message is larger than max")) return "response";
  const m = SIZE.exec(details);
  if (m === null) {
    // grpc-js's own send limit, on the client: the request.
    return details.includes("attempted to send message with a size larger than") ? "request" : undefined;
  }
  if (!["received message", "sent message", "send message"].some((w) => details.includes(w)))
    return undefined;
  // grpc-js's "Sent" size counts the 5-byte frame header too.
  const n = Number(m[1]);
  return n === requestBytes || n === requestBytes + 5 ? "request" : "response";
}

/**
 * Scores `rollouts` with `ScoreBatch` — calls of at most {@link MAX_SCORE_BATCH} rollouts and
 * {@link MAX_SCORE_BATCH_BYTES}, in parallel, each with `options` (deadline, signal, metadata); the first
 * call that fails cancels the others — and falls back to `ScoreStream` where the service answers
 * UNIMPLEMENTED (a service written against the contract before ScoreBatch, in any language): the client
 * remembers it for {@link SCORE_BATCH_RETRY_AFTER_MS}, then tries ScoreBatch again. Until a service has
 * answered one ScoreBatch, a batch of several calls sends its first call alone, so an older service is not
 * asked — and does not score — the whole batch twice. A call whose request the service refuses as too big
 * (RESOURCE_EXHAUSTED "Received message larger than max") is split in halves, a single rollout over
 * ScoreStream; a call whose response was too big (already scored) is redone once over ScoreStream, so each
 * rollout is scored at most twice; any other RESOURCE_EXHAUSTED (a busy server) is thrown. Over ScoreBatch a refused
 * rollout is an entry of `errors` (its index in `rollouts`, the code and `'requests[<i>]…'` message of its
 * call) and the others are scored; over ScoreStream it fails the call.
 */
export async function scoreBatch(
  client: Client<typeof RewardService>,
  rollouts: readonly Rollout[],
  options: CallOptions = {},
): Promise<ScoreBatchOutcome> {
  if (rollouts.length === 0) return { results: [], errors: [], rpc: "ScoreBatch" };
  const abort = new AbortController();
  const outer = options.signal;
  const onOuterAbort = () => abort.abort(outer?.reason);
  if (outer?.aborted) abort.abort(outer.reason);
  outer?.addEventListener("abort", onOuterAbort, { once: true });
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  const callOptions = (): CallOptions => ({
    ...options,
    signal: abort.signal,
    ...(deadline === undefined ? {} : { timeoutMs: Math.max(0, deadline - Date.now()) }),
  });
  const results: RewardResult[] = new Array(rollouts.length);
  const errors: ScoreBatchError[] = [];
  let streamed = false;
  const streamsOnly = () => {
    const since = withoutScoreBatch.get(client);
    return since !== undefined && Date.now() - since < SCORE_BATCH_RETRY_AFTER_MS;
  };
  async function stream(lo: number, hi: number): Promise<void> {
    streamed = true;
    async function* requests() {
      for (let i = lo; i < hi; i++) yield { rollout: rollouts[i]! };
    }
    let i = lo;
    for await (const r of client.scoreStream(requests(), callOptions())) {
      if (i >= hi) throw new Error(`ScoreStream returned more than ${hi - lo} results`);
      results[i++] = r;
    }
    if (i !== hi) throw new Error(`ScoreStream returned ${i - lo} results for ${hi - lo} rollouts`);
  }
  async function batch(lo: number, hi: number): Promise<void> {
    let a: Awaited<ReturnType<typeof client.scoreBatch>>;
    const requests = rollouts.slice(lo, hi).map((rollout) => ({ rollout }));
    try {
      a = await client.scoreBatch({ requests }, callOptions());
    } catch (err) {
      if (codeOf(err) === grpc.status.UNIMPLEMENTED) {
        withoutScoreBatch.set(client, Date.now());
        withScoreBatch.delete(client);
        return stream(lo, hi);
      }
      if (codeOf(err) === grpc.status.RESOURCE_EXHAUSTED) {
        const details = String((err as { details?: unknown }).details ?? "");
        const request = create(ScoreBatchRequestSchema, { requests });
        const over = tooBig(details, toBinary(ScoreBatchRequestSchema, request).length);
        if (over === "request") {
          // Refused before it was scored: halves, down to one rollout, which goes over ScoreStream.
          if (hi - lo === 1) return stream(lo, hi);
          const mid = (lo + hi) >> 1;
          await batch(lo, mid);
          return batch(mid, hi);
        }
        // Already scored, its answer over a limit: once over ScoreStream, one result a message.
        if (over === "response") return stream(lo, hi);
        // Anything else (a busy server, a proxy's quota): more calls would only add load.
      }
      throw err;
    }
    withScoreBatch.add(client);
    withoutScoreBatch.delete(client);
    if (a.results.length !== hi - lo)
      throw new Error(`ScoreBatch returned ${a.results.length} results for ${hi - lo} rollouts`);
    for (const [k, r] of a.results.entries()) results[lo + k] = r;
    for (const e of a.errors) errors.push({ ...e, index: lo + e.index });
  }
  try {
    if (streamsOnly()) {
      await stream(0, rollouts.length);
    } else {
      let ranges = splitScoreBatch(rollouts);
      if (ranges.length > 1 && !withScoreBatch.has(client)) {
        await batch(...ranges[0]!);
        ranges = streamsOnly() ? [[ranges[1]![0], rollouts.length]] : ranges.slice(1);
      }
      const part = ([lo, hi]: [number, number]) => (streamsOnly() ? stream(lo, hi) : batch(lo, hi));
      await Promise.all(
        ranges.map((r) =>
          part(r).catch((err: unknown) => {
            abort.abort(err); // the first failure cancels the other calls, on the service too
            throw err;
          }),
        ),
      );
    }
  } finally {
    outer?.removeEventListener("abort", onOuterAbort);
  }
  errors.sort((x, y) => x.index - y.index);
  return { results, errors, rpc: streamed ? "ScoreStream" : "ScoreBatch" };
}
