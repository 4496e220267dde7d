/**
 * Validation of learner requests. Every problem is a {@link LearnerInputError} whose field is the
 * JSON-style path (`samples[3].tokenIds[2]`) and whose message names the sample or prompt id, so a
 * bad batch is fixed from the error alone. Stateless checks only; checks against the learner's state
 * (vocabulary sizes, policy versions, reference) take callbacks.
 * @module
 */
import { LearnerInputError } from "./errors.js";
import {
  aggregationFor,
  FRAGMENT_TOKENIZER,
  type CispoMode,
  CispoModes,
  type GenerateRequest,
  type LossAggregation,
  LossAggregations,
  type LossConfig,
  type LossType,
  LossTypes,
  type OptimConfig,
  type OptimizerName,
  Optimizers,
  type Sample,
  type ScoredSequence,
  type TrainStepRequest,
} from "./types.js";

/** Largest vocabulary of one context: the bigram table has (V + 1)·V parameters. */
export const MAX_VOCABULARY_SIZE = 1024;
/** Largest `maxTokens` of a generate request. */
export const MAX_GENERATE_TOKENS = 4096;
/**
 * Longest `prefixTokenIds` of a prompt: a multi-turn episode's sequence so far (the run config's
 * `episodes.maxTokens` is capped at the same number).
 */
export const MAX_PREFIX_TOKENS = 32768;
/** Largest `n` of a generate request. */
export const MAX_COMPLETIONS_PER_PROMPT = 4096;
/** Largest `epochs` and `miniBatches`. */
export const MAX_INNER_STEPS = 1000;

function fail(field: string, problem: string): never {
  throw new LearnerInputError(field, problem);
}

function describe(v: unknown): string {
  if (typeof v === "string") return `'${v.length > 40 ? `${v.slice(0, 40)}…` : v}'`;
  if (typeof v === "number") return String(v);
  if (v === undefined) return "missing";
  if (v === null) return "null";
  return `a ${Array.isArray(v) ? "array" : typeof v}`;
}

function isArrayLike(v: unknown): v is ArrayLike<unknown> {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
}

function checkString(v: unknown, field: string, suffix = "", allowEmpty = false): string {
  if (typeof v !== "string") fail(field, `is ${describe(v)}, not a string${suffix}`);
  if (!allowEmpty && v.length === 0) fail(field, `is empty${suffix}`);
  return v;
}

function checkInt(v: unknown, field: string, min: number, max: number, suffix = ""): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    fail(field, `is ${describe(v)}, not an integer in [${min}, ${max}]${suffix}`);
  }
  return v;
}

function checkNumber(
  v: unknown,
  field: string,
  ok: (x: number) => boolean,
  what: string,
  suffix = "",
): number {
  if (typeof v !== "number" || Number.isNaN(v)) fail(field, `is ${describe(v)}, not a number${suffix}`);
  if (!ok(v)) fail(field, `is ${v}; it must be ${what}${suffix}`);
  return v;
}

function checkEnum<T extends string>(v: unknown, field: string, allowed: readonly T[]): T {
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
    fail(field, `is ${describe(v)}; expected one of ${allowed.join(", ")}`);
  }
  return v as T;
}

/** Default of {@link GenerateRequest.maxNewTokens}. */
export const DEFAULT_MAX_NEW_TOKENS = 64;

/** The checked settings of a generate request. */
export interface ResolvedGenerate {
  readonly temperature: number;
  readonly seed: number | undefined;
  readonly topP: number;
  readonly maxNewTokens: number;
  readonly stop: readonly string[];
}

/**
 * Checks a generate request. `vocabularySizeOf(contextKey)` returns the size a context was created
 * with (undefined for a new context); a different size is an error naming the context.
 */
export function validateGenerateRequest(
  req: GenerateRequest,
  vocabularySizeOf: (contextKey: string) => number | undefined,
): ResolvedGenerate {
  if (typeof req !== "object" || req === null) fail("request", "is not an object");
  if (!Array.isArray(req.prompts)) fail("prompts", `is ${describe(req.prompts)}, not an array`);
  checkInt(req.n, "n", 1, MAX_COMPLETIONS_PER_PROMPT);
  const temperature =
    req.temperature === undefined
      ? 1
      : checkNumber(req.temperature, "temperature", (x) => x > 0 && Number.isFinite(x), "finite and > 0");
  const seed = req.seed === undefined ? undefined : checkInt(req.seed, "seed", 0, 0xffffffff);
  const topP =
    req.topP === undefined ? 1 : checkNumber(req.topP, "topP", (x) => x > 0 && x <= 1, "in (0, 1]");
  const maxNewTokens =
    req.maxNewTokens === undefined
      ? DEFAULT_MAX_NEW_TOKENS
      : checkInt(req.maxNewTokens, "maxNewTokens", 1, MAX_GENERATE_TOKENS);
  if (req.stop !== undefined && !Array.isArray(req.stop))
    fail("stop", `is ${describe(req.stop)}, not an array`);
  const stop = (req.stop ?? []).map((x, k) => checkString(x, `stop[${k}]`));
  const sizes = new Map<string, { size: number; at: number }>();
  req.prompts.forEach((p, i) => {
    const f = `prompts[${i}]`;
    if (typeof p !== "object" || p === null) fail(f, "is not an object");
    const id = checkString(p.promptId, `${f}.promptId`);
    const sfx = ` (prompt '${id}')`;
    const key = checkString(p.contextKey, `${f}.contextKey`, sfx);
    if (p.vocabulary === undefined) {
      fail(
        `${f}.vocabulary`,
        `is missing: this learner is a fragment policy (tokenizer '${FRAGMENT_TOKENIZER}'), so every prompt needs a vocabulary of fragments; text prompts need a text policy such as the PyTorch learner${sfx}`,
      );
    }
    if (!Array.isArray(p.vocabulary))
      fail(`${f}.vocabulary`, `is ${describe(p.vocabulary)}, not an array${sfx}`);
    const v = p.vocabulary.length;
    if (v < 1 || v > MAX_VOCABULARY_SIZE) {
      fail(`${f}.vocabulary`, `has ${v} entries; it must have 1 to ${MAX_VOCABULARY_SIZE}${sfx}`);
    }
    (p.vocabulary as readonly unknown[]).forEach((frag: unknown, k: number) => {
      checkString(frag, `${f}.vocabulary[${k}]`, sfx, true);
    });
    if (p.maxTokens !== undefined) checkInt(p.maxTokens, `${f}.maxTokens`, 1, MAX_GENERATE_TOKENS, sfx);
    if (p.stopToken !== undefined) checkInt(p.stopToken, `${f}.stopToken`, 0, v - 1, sfx);
    if (p.separator !== undefined) checkString(p.separator, `${f}.separator`, sfx, true);
    if (p.prefixTokenIds !== undefined) {
      if (!Array.isArray(p.prefixTokenIds))
        fail(`${f}.prefixTokenIds`, `is ${describe(p.prefixTokenIds)}, not an array${sfx}`);
      if (p.prefixTokenIds.length > MAX_PREFIX_TOKENS)
        fail(
          `${f}.prefixTokenIds`,
          `has ${p.prefixTokenIds.length} tokens; at most ${MAX_PREFIX_TOKENS}${sfx}`,
        );
      (p.prefixTokenIds as readonly unknown[]).forEach((t: unknown, k: number) => {
        checkInt(t, `${f}.prefixTokenIds[${k}]`, 0, v - 1, sfx);
      });
    }
    const known = vocabularySizeOf(key);
    if (known !== undefined && known !== v) {
      fail(
        `${f}.vocabulary`,
        `has ${v} entries but context '${key}' was created with a vocabulary of ${known}${sfx}`,
      );
    }
    const seen = sizes.get(key);
    if (seen && seen.size !== v) {
      fail(
        `${f}.vocabulary`,
        `has ${v} entries but prompts[${seen.at}] uses context '${key}' with ${seen.size}${sfx}`,
      );
    }
    if (!seen) sizes.set(key, { size: v, at: i });
  });
  return { temperature, seed, topP, maxNewTokens, stop };
}

/** A loss configuration with every default filled in. */
export interface ResolvedLossConfig {
  readonly lossType: LossType;
  readonly aggregation: LossAggregation;
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly dualClipC: number;
  readonly klBeta: number;
  readonly maxCompletionLength: number;
  readonly maskTruncated: boolean;
  readonly cispoMode: CispoMode;
  readonly rolloutIsCap: number;
}

/** Checks a loss configuration and fills in its defaults. */
export function resolveLossConfig(loss: LossConfig, field = "loss"): ResolvedLossConfig {
  if (typeof loss !== "object" || loss === null) fail(field, "is not an object");
  const lossType = checkEnum(loss.lossType, `${field}.lossType`, LossTypes);
  const aggregation =
    loss.aggregation === undefined
      ? aggregationFor(lossType)
      : checkEnum(loss.aggregation, `${field}.aggregation`, LossAggregations);
  const cispoMode =
    loss.cispoMode === undefined ? "two-sided" : checkEnum(loss.cispoMode, `${field}.cispoMode`, CispoModes);
  const epsLow = checkNumber(loss.epsLow, `${field}.epsLow`, (x) => x >= 0 && x < 1, "in [0, 1)");
  const epsHigh = checkNumber(
    loss.epsHigh,
    `${field}.epsHigh`,
    (x) => x >= 0 && Number.isFinite(x),
    "finite and ≥ 0",
  );
  if (lossType === "cispo" && cispoMode === "upper-cap" && epsHigh < 1) {
    fail(
      `${field}.epsHigh`,
      `is ${epsHigh}; with cispoMode 'upper-cap' it is an absolute ratio cap and must be ≥ 1 (TRL recommends 5)`,
    );
  }
  const dualClipC =
    loss.dualClipC === undefined || loss.dualClipC === 0
      ? 0
      : checkNumber(
          loss.dualClipC,
          `${field}.dualClipC`,
          (x) => x > 1 && Number.isFinite(x),
          "0 (off) or finite and > 1",
        );
  const klBeta = checkNumber(
    loss.klBeta,
    `${field}.klBeta`,
    (x) => x >= 0 && Number.isFinite(x),
    "finite and ≥ 0",
  );
  let maxCompletionLength = checkNumber(
    loss.maxCompletionLength,
    `${field}.maxCompletionLength`,
    (x) => x >= 0 && Number.isFinite(x),
    "finite and ≥ 0",
  );
  if (aggregation === "seq-mean-token-sum-norm") {
    maxCompletionLength = checkInt(
      maxCompletionLength,
      `${field}.maxCompletionLength`,
      1,
      Number.MAX_SAFE_INTEGER,
      ` (the ${aggregation} normaliser)`,
    );
  }
  if (loss.maskTruncated !== undefined && typeof loss.maskTruncated !== "boolean") {
    fail(`${field}.maskTruncated`, `is ${describe(loss.maskTruncated)}, not a boolean`);
  }
  const rolloutIsCap =
    loss.rolloutIsCap === undefined
      ? 0
      : checkNumber(
          loss.rolloutIsCap,
          `${field}.rolloutIsCap`,
          (x) => x >= 0 && Number.isFinite(x),
          "0 (off) or finite and > 0",
        );
  return {
    lossType,
    aggregation,
    epsLow,
    epsHigh,
    dualClipC,
    klBeta,
    maxCompletionLength,
    maskTruncated: loss.maskTruncated ?? false,
    cispoMode,
    rolloutIsCap,
  };
}

/** An optimizer configuration with every default filled in. */
export interface ResolvedOptimConfig {
  readonly lr: number;
  readonly maxGradNorm: number;
  readonly epochs: number;
  readonly miniBatches: number;
  readonly optimizer: OptimizerName;
}

/** Checks an optimizer configuration and fills in its defaults. */
export function resolveOptimConfig(optim: OptimConfig, field = "optim"): ResolvedOptimConfig {
  if (typeof optim !== "object" || optim === null) fail(field, "is not an object");
  return {
    lr: checkNumber(optim.lr, `${field}.lr`, (x) => x > 0 && Number.isFinite(x), "finite and > 0"),
    maxGradNorm:
      optim.maxGradNorm === undefined
        ? 1
        : checkNumber(
            optim.maxGradNorm,
            `${field}.maxGradNorm`,
            (x) => x > 0,
            "> 0 (Infinity = no clipping)",
          ),
    epochs: optim.epochs === undefined ? 1 : checkInt(optim.epochs, `${field}.epochs`, 1, MAX_INNER_STEPS),
    miniBatches:
      optim.miniBatches === undefined
        ? 1
        : checkInt(optim.miniBatches, `${field}.miniBatches`, 1, MAX_INNER_STEPS),
    optimizer:
      optim.optimizer === undefined ? "adam" : checkEnum(optim.optimizer, `${field}.optimizer`, Optimizers),
  };
}

/** What {@link validateTrainStepRequest} needs to know about the learner. */
export interface TrainStepContext {
  /** The learner's current policy version. */
  readonly policyVersion: number;
  /** The vocabulary size a context was created with (undefined for a new context). */
  vocabularySizeOf(contextKey: string): number | undefined;
}

/** The checked request. */
export interface ResolvedTrainStep {
  readonly loss: ResolvedLossConfig;
  readonly optim: ResolvedOptimConfig;
  /** undefined = no limit. */
  readonly maxStaleness: number | undefined;
}

function checkSample(
  s: Sample,
  i: number,
  ctx: TrainStepContext,
  sizes: Map<string, { size: number; at: number }>,
) {
  const f = `samples[${i}]`;
  if (typeof s !== "object" || s === null) fail(f, "is not an object");
  const id = checkString(s.sampleId, `${f}.sampleId`);
  const sfx = ` (sample '${id}')`;
  checkString(s.groupId, `${f}.groupId`, sfx, true);
  const key = checkString(s.contextKey, `${f}.contextKey`, sfx);
  const v = checkInt(s.vocabularySize, `${f}.vocabularySize`, 1, MAX_VOCABULARY_SIZE, sfx);
  const known = ctx.vocabularySizeOf(key);
  if (known !== undefined && known !== v) {
    fail(
      `${f}.vocabularySize`,
      `is ${v} but context '${key}' was created with a vocabulary of ${known}${sfx}`,
    );
  }
  const seen = sizes.get(key);
  if (seen && seen.size !== v) {
    fail(
      `${f}.vocabularySize`,
      `is ${v} but samples[${seen.at}] uses context '${key}' with ${seen.size}${sfx}`,
    );
  }
  if (!seen) sizes.set(key, { size: v, at: i });
  const promptIds = s.promptTokenIds as unknown;
  if (promptIds !== undefined && (!isArrayLike(promptIds) || promptIds.length > 0)) {
    fail(
      `${f}.promptTokenIds`,
      `is set, but this learner is a fragment policy: its context is contextKey, not prompt tokens${sfx}`,
    );
  }
  const tokens = s.tokenIds as unknown;
  if (!isArrayLike(tokens)) fail(`${f}.tokenIds`, `is ${describe(tokens)}, not an array${sfx}`);
  const n = tokens.length;
  if (n === 0) fail(`${f}.tokenIds`, `is empty${sfx}`);
  for (let t = 0; t < n; t++) {
    const a = tokens[t];
    if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= v) {
      fail(`${f}.tokenIds[${t}]`, `is ${describe(a)}, outside the vocabulary [0, ${v})${sfx}`);
    }
  }
  const lps = s.rolloutLogprobs as unknown;
  if (!isArrayLike(lps)) fail(`${f}.rolloutLogprobs`, `is ${describe(lps)}, not an array${sfx}`);
  if (lps.length !== n) {
    fail(`${f}.rolloutLogprobs`, `has ${lps.length} entries but tokenIds has ${n}${sfx}`);
  }
  for (let t = 0; t < n; t++) {
    const x = lps[t];
    if (typeof x !== "number" || !Number.isFinite(x) || x > 1e-6) {
      fail(`${f}.rolloutLogprobs[${t}]`, `is ${describe(x)}; a logprob must be finite and ≤ 0${sfx}`);
    }
  }
  if (s.lossMask !== undefined) {
    const m = s.lossMask as unknown;
    if (!isArrayLike(m)) fail(`${f}.lossMask`, `is ${describe(m)}, not an array${sfx}`);
    if (m.length !== n) fail(`${f}.lossMask`, `has ${m.length} entries but tokenIds has ${n}${sfx}`);
    for (let t = 0; t < n; t++) {
      if (m[t] !== 0 && m[t] !== 1) fail(`${f}.lossMask[${t}]`, `is ${describe(m[t])}, not 0 or 1${sfx}`);
    }
  }
  if (typeof s.advantage !== "number" || !Number.isFinite(s.advantage)) {
    fail(`${f}.advantage`, `is ${describe(s.advantage)}, not a finite number${sfx}`);
  }
  const pv = checkInt(s.policyVersion, `${f}.policyVersion`, 0, Number.MAX_SAFE_INTEGER, sfx);
  if (pv > ctx.policyVersion) {
    fail(`${f}.policyVersion`, `is ${pv}, ahead of the learner's policy version ${ctx.policyVersion}${sfx}`);
  }
  if (s.truncated !== undefined && typeof s.truncated !== "boolean") {
    fail(`${f}.truncated`, `is ${describe(s.truncated)}, not a boolean${sfx}`);
  }
  return id;
}

/** Checks a train-step request against the learner's state and resolves its configuration. */
export function validateTrainStepRequest(req: TrainStepRequest, ctx: TrainStepContext): ResolvedTrainStep {
  if (typeof req !== "object" || req === null) fail("request", "is not an object");
  checkInt(req.step, "step", 0, Number.MAX_SAFE_INTEGER);
  const key = checkString(req.idempotencyKey, "idempotencyKey");
  if (key.length > 512) fail("idempotencyKey", `has ${key.length} characters; at most 512`);
  const loss = resolveLossConfig(req.loss);
  const optim = resolveOptimConfig(req.optim);
  const maxStaleness =
    req.maxStaleness === undefined
      ? undefined
      : checkInt(req.maxStaleness, "maxStaleness", 0, Number.MAX_SAFE_INTEGER);
  if (!Array.isArray(req.samples)) fail("samples", `is ${describe(req.samples)}, not an array`);
  if (req.samples.length === 0) fail("samples", "is empty");
  const ids = new Map<string, number>();
  const sizes = new Map<string, { size: number; at: number }>();
  req.samples.forEach((s, i) => {
    const id = checkSample(s, i, ctx, sizes);
    const first = ids.get(id);
    if (first !== undefined) fail(`samples[${i}].sampleId`, `'${id}' repeats samples[${first}].sampleId`);
    ids.set(id, i);
  });
  return { loss, optim, maxStaleness };
}

/** A {@link ScoredSequence} of a fragment policy, checked. */
export interface ResolvedScoredSequence {
  readonly contextKey: string;
  readonly vocabularySize: number;
  readonly tokenIds: readonly number[];
}

/** Checks the sequences of a fragment policy's `computeLogprobs` (context, vocabulary size, token ids). */
export function validateScoredSequences(
  sequences: readonly ScoredSequence[],
  vocabularySizeOf: (contextKey: string) => number | undefined,
): ResolvedScoredSequence[] {
  if (!Array.isArray(sequences)) fail("sequences", `is ${describe(sequences)}, not an array`);
  return sequences.map((q, i) => {
    const f = `sequences[${i}]`;
    if (typeof q !== "object" || q === null) fail(f, "is not an object");
    const id = checkString(q.sequenceId, `${f}.sequenceId`);
    const sfx = ` (sequence '${id}')`;
    const contextKey = checkString(q.contextKey, `${f}.contextKey`, sfx);
    const v = checkInt(q.vocabularySize, `${f}.vocabularySize`, 1, MAX_VOCABULARY_SIZE, sfx);
    const known = vocabularySizeOf(contextKey);
    if (known !== undefined && known !== v) {
      fail(
        `${f}.vocabularySize`,
        `is ${v} but context '${contextKey}' was created with a vocabulary of ${known}${sfx}`,
      );
    }
    if (q.promptTokenIds !== undefined && q.promptTokenIds.length > 0) {
      fail(`${f}.promptTokenIds`, `is set, but this learner is a fragment policy${sfx}`);
    }
    if (!isArrayLike(q.tokenIds)) fail(`${f}.tokenIds`, `is ${describe(q.tokenIds)}, not an array${sfx}`);
    const tokenIds = Array.from(q.tokenIds as ArrayLike<unknown>, (a, t) => {
      if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= v) {
        fail(`${f}.tokenIds[${t}]`, `is ${describe(a)}, outside the vocabulary [0, ${v})${sfx}`);
      }
      return a;
    });
    return { contextKey, vocabularySize: v, tokenIds };
  });
}
