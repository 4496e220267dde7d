/**
 * Conversions between the learner's TypeScript contract and the `rewardmesh.v1.Learner` messages,
 * and the mapping of learner errors to gRPC statuses and back. The server is the one authority on
 * validity: the client only refuses values that cannot be encoded at all (a non-integer token id, an
 * unknown loss-type name), with the same `LearnerInputError` field paths.
 * @module
 */
import {
  type Client,
  type GrpcStatusInfo,
  grpc,
  LearnerCispoMode,
  type LearnerCompletion,
  type LearnerComputeLogprobsRequest,
  type LearnerInfoResponse,
  type LearnerGenerateRequest,
  type LearnerGenerateResponse,
  LearnerLossAggregation,
  type LearnerLossConfig,
  LearnerLossType,
  type LearnerOptimConfig,
  LearnerOptimizer,
  type LearnerSample,
  type Learner as LearnerService,
  type LearnerTrainStepHeader,
  type LearnerTrainStepResponse,
} from "@reward-mesh/proto";
import { toGrpcStatus } from "@reward-mesh/sdk";
import { isLearnerInputError, LearnerClosedError, LearnerInputError, RemoteLearnerError } from "./errors.js";
import {
  type CispoMode,
  CispoModes,
  type Completion,
  type GenerateRequest,
  type LossAggregation,
  LossAggregations,
  type LossConfig,
  type LossType,
  LossTypes,
  type OptimConfig,
  type OptimizerName,
  Optimizers,
  type LearnerInfo,
  type Sample,
  type ScoredSequence,
  type TrainStepMetrics,
  type TrainStepRequest,
  type TrainStepResult,
} from "./types.js";

// ── wire message init shapes (derived from the typed client, so no protobuf import is needed) ──

type LearnerClient = Client<typeof LearnerService>;
/** Init shape of `LearnerGenerateRequest`. */
export type GenerateRequestInit = Parameters<LearnerClient["generate"]>[0];
type TrainStepStreamInit =
  Parameters<LearnerClient["trainStep"]>[0] extends AsyncIterable<infer T> ? T : never;
type TrainStepKindInit = NonNullable<TrainStepStreamInit["kind"]>;
/** Init shape of `LearnerTrainStepHeader`. */
export type TrainStepHeaderInit = Extract<TrainStepKindInit, { case: "header" }>["value"];
/** Init shape of `LearnerSample`. */
export type SampleInit = Extract<TrainStepKindInit, { case: "sample" }>["value"];

// ── enum maps ────────────────────────────────────────────────────────────────────────────────

const LOSS_TYPE_TO_WIRE: Record<LossType, LearnerLossType> = {
  grpo: LearnerLossType.GRPO,
  dr_grpo: LearnerLossType.DR_GRPO,
  dapo: LearnerLossType.DAPO,
  cispo: LearnerLossType.CISPO,
  bnpo: LearnerLossType.BNPO,
};
const AGGREGATION_TO_WIRE: Record<LossAggregation, LearnerLossAggregation> = {
  "token-mean": LearnerLossAggregation.TOKEN_MEAN,
  "seq-mean-token-mean": LearnerLossAggregation.SEQ_MEAN_TOKEN_MEAN,
  "seq-mean-token-sum": LearnerLossAggregation.SEQ_MEAN_TOKEN_SUM,
  "seq-mean-token-sum-norm": LearnerLossAggregation.SEQ_MEAN_TOKEN_SUM_NORM,
};
const CISPO_MODE_TO_WIRE: Record<CispoMode, LearnerCispoMode> = {
  "two-sided": LearnerCispoMode.TWO_SIDED,
  "upper-cap": LearnerCispoMode.UPPER_CAP,
};
const OPTIMIZER_TO_WIRE: Record<OptimizerName, LearnerOptimizer> = {
  adam: LearnerOptimizer.ADAM,
  sgd: LearnerOptimizer.SGD,
};

function invert<K extends string, V extends number>(m: Record<K, V>): Map<V, K> {
  return new Map(Object.entries(m).map(([k, v]) => [v as V, k as K]));
}
const LOSS_TYPE_FROM_WIRE = invert(LOSS_TYPE_TO_WIRE);
const AGGREGATION_FROM_WIRE = invert(AGGREGATION_TO_WIRE);
const CISPO_MODE_FROM_WIRE = invert(CISPO_MODE_TO_WIRE);
const OPTIMIZER_FROM_WIRE = invert(OPTIMIZER_TO_WIRE);

// ── encodability checks (client side) ──────────────────────────────────────────────────────

function unencodable(field: string, v: unknown, as: string): never {
  const shown = typeof v === "number" || typeof v === "string" ? JSON.stringify(v) : typeof v;
  throw new LearnerInputError(field, `is ${shown}, which cannot be sent as ${as}`);
}

function u32(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 0xffffffff)
    unencodable(field, v, "a uint32");
  return v;
}

function i32(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
    unencodable(field, v, "an int32");
  }
  return v;
}

function f64(v: unknown, field: string): number {
  if (typeof v !== "number") unencodable(field, v, "a double");
  return v;
}

function str(v: unknown, field: string): string {
  if (typeof v !== "string") unencodable(field, v, "a string");
  return v;
}

function bool(v: unknown, field: string): boolean {
  if (typeof v !== "boolean") unencodable(field, v, "a bool");
  return v;
}

function arr(v: unknown, field: string): ArrayLike<unknown> {
  if (!Array.isArray(v) && !(ArrayBuffer.isView(v) && !(v instanceof DataView)))
    unencodable(field, v, "a list");
  return v as ArrayLike<unknown>;
}

function enumTo<K extends string, V>(m: Record<K, V>, allowed: readonly K[], v: unknown, field: string): V {
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
    throw new LearnerInputError(
      field,
      `is ${typeof v === "string" ? `'${v}'` : String(v)}; expected one of ${allowed.join(", ")}`,
    );
  }
  return m[v as K];
}

function mapList<T>(v: unknown, field: string, f: (x: unknown, field: string) => T): T[] {
  const a = arr(v, field);
  const out: T[] = [];
  for (let i = 0; i < a.length; i++) out.push(f(a[i], `${field}[${i}]`));
  return out;
}

// ── requests: TypeScript → wire (client) ────────────────────────────────────────────────────

/** A generate request as a wire message init. */
export function encodeGenerateRequest(req: GenerateRequest): GenerateRequestInit {
  if (typeof req !== "object" || req === null) throw new LearnerInputError("request", "is not an object");
  return {
    prompts: mapList(req.prompts, "prompts", (p, f) => {
      if (typeof p !== "object" || p === null) throw new LearnerInputError(f, "is not an object");
      const q = p as GenerateRequest["prompts"][number];
      return {
        promptId: str(q.promptId, `${f}.promptId`),
        contextKey: str(q.contextKey, `${f}.contextKey`),
        vocabulary: q.vocabulary === undefined ? [] : mapList(q.vocabulary, `${f}.vocabulary`, str),
        maxTokens: q.maxTokens === undefined ? 0 : u32(q.maxTokens, `${f}.maxTokens`),
        ...(q.stopToken === undefined ? {} : { stopToken: i32(q.stopToken, `${f}.stopToken`) }),
        ...(q.separator === undefined ? {} : { separator: str(q.separator, `${f}.separator`) }),
        prefixTokenIds:
          q.prefixTokenIds === undefined ? [] : mapList(q.prefixTokenIds, `${f}.prefixTokenIds`, i32),
        text: q.text === undefined ? "" : str(q.text, `${f}.text`),
        messages:
          q.messages === undefined
            ? []
            : mapList(q.messages, `${f}.messages`, (m, mf) => {
                if (typeof m !== "object" || m === null) throw new LearnerInputError(mf, "is not an object");
                const msg = m as { role?: unknown; content?: unknown };
                return { role: str(msg.role, `${mf}.role`), content: str(msg.content, `${mf}.content`) };
              }),
      };
    }),
    n: u32(req.n, "n"),
    ...(req.temperature === undefined ? {} : { temperature: f64(req.temperature, "temperature") }),
    ...(req.seed === undefined ? {} : { seed: u32(req.seed, "seed") }),
    ...(req.topP === undefined ? {} : { topP: f64(req.topP, "topP") }),
    ...(req.maxNewTokens === undefined ? {} : { maxNewTokens: u32(req.maxNewTokens, "maxNewTokens") }),
    stop: req.stop === undefined ? [] : mapList(req.stop, "stop", str),
  };
}

/** Sequences to score as a wire request. */
export function encodeScoredSequences(sequences: readonly ScoredSequence[]): {
  sequences: Array<{
    sequenceId: string;
    contextKey: string;
    vocabularySize: number;
    promptTokenIds: number[];
    tokenIds: number[];
  }>;
} {
  return {
    sequences: mapList(sequences, "sequences", (q, f) => {
      if (typeof q !== "object" || q === null) throw new LearnerInputError(f, "is not an object");
      const s = q as ScoredSequence;
      return {
        sequenceId: str(s.sequenceId, `${f}.sequenceId`),
        contextKey: s.contextKey === undefined ? "" : str(s.contextKey, `${f}.contextKey`),
        vocabularySize: s.vocabularySize === undefined ? 0 : i32(s.vocabularySize, `${f}.vocabularySize`),
        promptTokenIds:
          s.promptTokenIds === undefined ? [] : mapList(s.promptTokenIds, `${f}.promptTokenIds`, i32),
        tokenIds: mapList(s.tokenIds, `${f}.tokenIds`, i32),
      };
    }),
  };
}

/** Sequences to score from a wire request (empty fields = absent). */
export function decodeScoredSequences(req: LearnerComputeLogprobsRequest): ScoredSequence[] {
  return req.sequences.map((q) => ({
    sequenceId: q.sequenceId,
    ...(q.contextKey ? { contextKey: q.contextKey } : {}),
    ...(q.vocabularySize ? { vocabularySize: q.vocabularySize } : {}),
    ...(q.promptTokenIds.length > 0 ? { promptTokenIds: q.promptTokenIds } : {}),
    tokenIds: q.tokenIds,
  }));
}

/** Learner info as a wire response (kind as the server reports it). */
export function encodeInfo(i: LearnerInfo): Omit<LearnerInfoResponse, "$typeName" | "$unknown"> {
  return {
    name: i.name,
    policyVersion: i.policyVersion,
    kind: i.kind,
    description: i.description,
    model: i.model,
    architecture: i.architecture,
    parameterCount: BigInt(i.parameterCount),
    tokenizer: i.tokenizer,
    dtype: i.dtype,
    device: i.device,
    vocabSize: i.vocabSize,
    maxContext: i.maxContext,
  };
}

function encodeLoss(loss: LossConfig): TrainStepHeaderInit["loss"] {
  if (typeof loss !== "object" || loss === null) throw new LearnerInputError("loss", "is not an object");
  return {
    lossType: enumTo(LOSS_TYPE_TO_WIRE, LossTypes, loss.lossType, "loss.lossType"),
    epsLow: f64(loss.epsLow, "loss.epsLow"),
    epsHigh: f64(loss.epsHigh, "loss.epsHigh"),
    dualClipC: loss.dualClipC === undefined ? 0 : f64(loss.dualClipC, "loss.dualClipC"),
    klBeta: f64(loss.klBeta, "loss.klBeta"),
    maxCompletionLength: u32(loss.maxCompletionLength, "loss.maxCompletionLength"),
    maskTruncated: loss.maskTruncated === undefined ? false : bool(loss.maskTruncated, "loss.maskTruncated"),
    cispoMode:
      loss.cispoMode === undefined
        ? LearnerCispoMode.UNSPECIFIED
        : enumTo(CISPO_MODE_TO_WIRE, CispoModes, loss.cispoMode, "loss.cispoMode"),
    aggregation:
      loss.aggregation === undefined
        ? LearnerLossAggregation.UNSPECIFIED
        : enumTo(AGGREGATION_TO_WIRE, LossAggregations, loss.aggregation, "loss.aggregation"),
    rolloutIsCap: loss.rolloutIsCap === undefined ? 0 : f64(loss.rolloutIsCap, "loss.rolloutIsCap"),
  };
}

function encodeOptim(optim: OptimConfig): TrainStepHeaderInit["optim"] {
  if (typeof optim !== "object" || optim === null) throw new LearnerInputError("optim", "is not an object");
  return {
    lr: f64(optim.lr, "optim.lr"),
    ...(optim.maxGradNorm === undefined ? {} : { maxGradNorm: f64(optim.maxGradNorm, "optim.maxGradNorm") }),
    ...(optim.epochs === undefined ? {} : { epochs: u32(optim.epochs, "optim.epochs") }),
    ...(optim.miniBatches === undefined ? {} : { miniBatches: u32(optim.miniBatches, "optim.miniBatches") }),
    optimizer:
      optim.optimizer === undefined
        ? LearnerOptimizer.UNSPECIFIED
        : enumTo(OPTIMIZER_TO_WIRE, Optimizers, optim.optimizer, "optim.optimizer"),
  };
}

function encodeSample(s: Sample, f: string): SampleInit {
  if (typeof s !== "object" || s === null) throw new LearnerInputError(f, "is not an object");
  const tokenIds = mapList(s.tokenIds, `${f}.tokenIds`, i32);
  let lossMask: number[] = [];
  if (s.lossMask !== undefined) {
    lossMask = mapList(s.lossMask, `${f}.lossMask`, u32);
    // On the wire an empty mask means "absent"; refuse the one case where that would change meaning.
    if (lossMask.length === 0 && tokenIds.length > 0) {
      throw new LearnerInputError(`${f}.lossMask`, `has 0 entries but tokenIds has ${tokenIds.length}`);
    }
  }
  return {
    sampleId: str(s.sampleId, `${f}.sampleId`),
    groupId: str(s.groupId, `${f}.groupId`),
    contextKey: str(s.contextKey, `${f}.contextKey`),
    vocabularySize: i32(s.vocabularySize, `${f}.vocabularySize`),
    promptTokenIds:
      s.promptTokenIds === undefined ? [] : mapList(s.promptTokenIds, `${f}.promptTokenIds`, i32),
    tokenIds,
    rolloutLogprobs: mapList(s.rolloutLogprobs, `${f}.rolloutLogprobs`, f64),
    lossMask,
    advantage: f64(s.advantage, `${f}.advantage`),
    policyVersion: u32(s.policyVersion, `${f}.policyVersion`),
    truncated: s.truncated === undefined ? false : bool(s.truncated, `${f}.truncated`),
  };
}

/** A train-step request as the messages of the client stream: the header, then one per sample. */
export function encodeTrainStepRequest(req: TrainStepRequest): {
  header: TrainStepHeaderInit;
  samples: SampleInit[];
} {
  if (typeof req !== "object" || req === null) throw new LearnerInputError("request", "is not an object");
  const samples = mapList(req.samples, "samples", (s, f) => encodeSample(s as Sample, f));
  return {
    header: {
      step: u32(req.step, "step"),
      idempotencyKey: str(req.idempotencyKey, "idempotencyKey"),
      loss: encodeLoss(req.loss),
      optim: encodeOptim(req.optim),
      ...(req.maxStaleness === undefined ? {} : { maxStaleness: u32(req.maxStaleness, "maxStaleness") }),
      sampleCount: samples.length,
    },
    samples,
  };
}

// ── requests: wire → TypeScript (server) ────────────────────────────────────────────────────

/** A decoded generate request. */
export function decodeGenerateRequest(req: LearnerGenerateRequest): GenerateRequest {
  return {
    prompts: req.prompts.map((p) => ({
      promptId: p.promptId,
      contextKey: p.contextKey,
      // On the wire an empty list / string / 0 means "absent".
      ...(p.vocabulary.length > 0 ? { vocabulary: p.vocabulary } : {}),
      ...(p.maxTokens > 0 ? { maxTokens: p.maxTokens } : {}),
      ...(p.stopToken === undefined ? {} : { stopToken: p.stopToken }),
      ...(p.separator === undefined ? {} : { separator: p.separator }),
      ...(p.prefixTokenIds.length > 0 ? { prefixTokenIds: p.prefixTokenIds } : {}),
      ...(p.text ? { text: p.text } : {}),
      ...(p.messages.length > 0
        ? { messages: p.messages.map((m) => ({ role: m.role, content: m.content })) }
        : {}),
    })),
    n: req.n,
    ...(req.temperature === undefined ? {} : { temperature: req.temperature }),
    ...(req.seed === undefined ? {} : { seed: req.seed }),
    ...(req.topP === undefined ? {} : { topP: req.topP }),
    ...(req.maxNewTokens === undefined ? {} : { maxNewTokens: req.maxNewTokens }),
    ...(req.stop.length > 0 ? { stop: req.stop } : {}),
  };
}

function decodeLoss(loss: LearnerLossConfig | undefined): LossConfig {
  if (!loss) throw new LearnerInputError("loss", "is missing from the header");
  const lossType = LOSS_TYPE_FROM_WIRE.get(loss.lossType);
  if (!lossType) {
    throw new LearnerInputError(
      "loss.lossType",
      `is ${LearnerLossType[loss.lossType] ?? loss.lossType}; expected one of ${LossTypes.join(", ")}`,
    );
  }
  const cispoMode = CISPO_MODE_FROM_WIRE.get(loss.cispoMode);
  const aggregation = AGGREGATION_FROM_WIRE.get(loss.aggregation);
  return {
    lossType,
    epsLow: loss.epsLow,
    epsHigh: loss.epsHigh,
    dualClipC: loss.dualClipC,
    klBeta: loss.klBeta,
    maxCompletionLength: loss.maxCompletionLength,
    maskTruncated: loss.maskTruncated,
    rolloutIsCap: loss.rolloutIsCap,
    ...(cispoMode ? { cispoMode } : {}),
    ...(aggregation ? { aggregation } : {}),
  };
}

function decodeOptim(optim: LearnerOptimConfig | undefined): OptimConfig {
  if (!optim) throw new LearnerInputError("optim", "is missing from the header");
  const optimizer = OPTIMIZER_FROM_WIRE.get(optim.optimizer);
  return {
    lr: optim.lr,
    ...(optim.maxGradNorm === undefined ? {} : { maxGradNorm: optim.maxGradNorm }),
    ...(optim.epochs === undefined ? {} : { epochs: optim.epochs }),
    ...(optim.miniBatches === undefined ? {} : { miniBatches: optim.miniBatches }),
    ...(optimizer ? { optimizer } : {}),
  };
}

/** A decoded sample. */
export function decodeSample(s: LearnerSample): Sample {
  return {
    sampleId: s.sampleId,
    groupId: s.groupId,
    contextKey: s.contextKey,
    vocabularySize: s.vocabularySize,
    ...(s.promptTokenIds.length > 0 ? { promptTokenIds: s.promptTokenIds } : {}),
    tokenIds: s.tokenIds,
    rolloutLogprobs: s.rolloutLogprobs,
    ...(s.lossMask.length > 0 ? { lossMask: s.lossMask } : {}),
    advantage: s.advantage,
    policyVersion: s.policyVersion,
    truncated: s.truncated,
  };
}

/** A decoded train-step request from its header and samples. */
export function decodeTrainStepRequest(header: LearnerTrainStepHeader, samples: Sample[]): TrainStepRequest {
  return {
    step: header.step,
    idempotencyKey: header.idempotencyKey,
    samples,
    loss: decodeLoss(header.loss),
    optim: decodeOptim(header.optim),
    ...(header.maxStaleness === undefined ? {} : { maxStaleness: header.maxStaleness }),
  };
}

// ── responses ────────────────────────────────────────────────────────────────────────────────

/** Completions as a wire response. */
export function encodeCompletions(completions: readonly Completion[]): { completions: Completion[] } {
  return { completions: completions.map((c) => ({ ...c })) };
}

/**
 * A completion as decoded from the wire: `matchedStop` is `undefined` when the server left
 * `LearnerCompletion.matched_stop` unset (a learner that predates the field). {@link completionsOf}
 * makes it a {@link Completion}.
 */
export type WireCompletion = Omit<Completion, "matchedStop"> & { readonly matchedStop?: string };

/** Completions from a wire response (see {@link completionsOf}). */
export function decodeCompletions(res: LearnerGenerateResponse): WireCompletion[] {
  return res.completions.map((c: LearnerCompletion) => ({
    promptId: c.promptId,
    contextKey: c.contextKey,
    index: c.index,
    tokenIds: c.tokenIds,
    text: c.text,
    logprobs: c.logprobs,
    policyVersion: c.policyVersion,
    truncated: c.truncated,
    // A server that predates finish_reason sends "": derive it from truncated.
    finishReason: c.finishReason === "length" || (c.finishReason === "" && c.truncated) ? "length" : "stop",
    // A server that predates matched_stop leaves it unset: undefined, not "" (which says "no stop string").
    ...(c.matchedStop !== undefined ? { matchedStop: c.matchedStop } : {}),
    promptTokenIds: c.promptTokenIds,
  }));
}

/**
 * The completions of `req` from a server's decoded response. A server that leaves `matched_stop`
 * unset predates the field: where the answer is certain anyway it is `""` (a completion that ran to
 * the budget, or a request without stop strings); a completion that ended at a stop of a request with
 * stop strings is refused rather than guessed at (a RemoteLearnerError naming the field).
 */
export function completionsOf(decoded: readonly WireCompletion[], req: GenerateRequest): Completion[] {
  const hasStops = (req.stop?.length ?? 0) > 0;
  return decoded.map((c, i) => {
    if (c.matchedStop !== undefined) return { ...c, matchedStop: c.matchedStop };
    if (hasStops && c.finishReason === "stop")
      throw new RemoteLearnerError(
        grpc.status.INTERNAL,
        `Generate: completion ${i} (prompt '${c.promptId}') ended at a stop but does not say which (LearnerCompletion.matched_stop is unset): the learner predates that field; upgrade it`,
        false,
      );
    return { ...c, matchedStop: "" };
  });
}

const REQUIRED_METRICS = [
  "loss",
  "clipFraction",
  "klRef",
  "approxKlOld",
  "entropy",
  "gradNorm",
  "nTokens",
  "nSamples",
  "nDroppedStale",
] as const;

/** A train-step result from a wire response; every required metric must be present. */
export function decodeTrainStepResult(res: LearnerTrainStepResponse): TrainStepResult {
  for (const k of REQUIRED_METRICS) {
    if (typeof res.metrics[k] !== "number") {
      throw new RemoteLearnerError(
        grpc.status.INTERNAL,
        `TrainStep response lacks the required metric '${k}'`,
        false,
      );
    }
  }
  return {
    policyVersion: res.policyVersion,
    metrics: { ...res.metrics } as TrainStepMetrics,
    replayed: res.replayed,
  };
}

// ── errors ───────────────────────────────────────────────────────────────────────────────────

/**
 * The gRPC status for anything a learner throws: bad input → INVALID_ARGUMENT (`'<field>' <problem>`),
 * a closed learner → UNAVAILABLE, anything else as the SDK maps it (INTERNAL without a stack).
 */
export function learnerErrorToStatus(err: unknown): GrpcStatusInfo {
  if (isLearnerInputError(err)) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof Error && err.name === "LearnerClosedError") {
    return { code: grpc.status.UNAVAILABLE, details: err.message };
  }
  if (err instanceof Error && err.name === "LearnerCheckpointError") {
    return { code: grpc.status.INTERNAL, details: err.message };
  }
  return toGrpcStatus(err);
}

const RETRYABLE_CODES: ReadonlySet<number> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ABORTED,
]);

/**
 * A learner error from a failed call: INVALID_ARGUMENT becomes a {@link LearnerInputError} with the
 * server's field and problem; other statuses a {@link RemoteLearnerError} (retryable for UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED). Errors that are already learner errors pass through.
 */
export function learnerErrorFromGrpc(err: unknown, method: string): Error {
  if (err instanceof Error && (isLearnerInputError(err) || err instanceof LearnerClosedError)) return err;
  if (err instanceof RemoteLearnerError) return err;
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code !== "number") {
    return new RemoteLearnerError(
      grpc.status.UNKNOWN,
      `${method}: ${String((err as Error)?.message ?? err)}`,
      false,
      {
        cause: err,
      },
    );
  }
  const details = e.details ?? e.message ?? "";
  if (e.code === grpc.status.INVALID_ARGUMENT) {
    const m = /^'([^']+)' ([\s\S]*)$/.exec(details);
    return m
      ? new LearnerInputError(m[1]!, m[2]!, { cause: err })
      : new LearnerInputError("request", details, { cause: err });
  }
  return new RemoteLearnerError(
    e.code,
    `${method} failed (${grpc.status[e.code] ?? e.code}): ${details}`,
    RETRYABLE_CODES.has(e.code),
    { cause: err },
  );
}
