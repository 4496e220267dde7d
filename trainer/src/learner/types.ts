/**
 * The learner contract: what the training loop asks of a policy learner (sample completions, apply
 * one clipped policy-gradient update, publish weights, checkpoint, score completions), independent of
 * where the policy lives. Two kinds of policy speak it:
 *
 * - fragment policies (the embedded tabular learner, `createEmbeddedLearner`): a prompt carries a
 *   vocabulary of text fragments, a degenerate tokenizer whose token id is the fragment's index;
 * - text policies (the PyTorch learner in `trainer/learner-torch`, over gRPC through
 *   `createRemoteLearner`): a prompt carries text or chat messages; completions and samples carry
 *   tokenizer token ids for the prompt and the completion.
 *
 * {@link LearnerInfo.tokenizer} says which (`fragments` for a fragment policy).
 * @module
 */

/** Loss families, named as TRL's `loss_type`. */
export const LossTypes = ["grpo", "dr_grpo", "dapo", "cispo", "bnpo"] as const;
/** One of {@link LossTypes}. */
export type LossType = (typeof LossTypes)[number];

/**
 * Loss aggregation modes, named as verl's `loss_agg_mode`:
 * - `token-mean`: Σ_{i,t} m·ℓ / Σ_{i,t} m
 * - `seq-mean-token-mean`: mean_i (Σ_t m·ℓ / Σ_t m)
 * - `seq-mean-token-sum`: mean_i Σ_t m·ℓ
 * - `seq-mean-token-sum-norm`: Σ_{i,t} m·ℓ / (B · L_max)
 */
export const LossAggregations = [
  "token-mean",
  "seq-mean-token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-sum-norm",
] as const;
/** One of {@link LossAggregations}. */
export type LossAggregation = (typeof LossAggregations)[number];

/**
 * CISPO's clipped importance weight:
 * - `two-sided` (verl `loss_mode="cispo"`): `clamp(r, 1 − epsLow, 1 + epsHigh)`;
 * - `upper-cap` (TRL `loss_type="cispo"`): `min(r, epsHigh)` — `epsHigh` is an absolute ratio cap
 *   (TRL recommends 5.0).
 */
export const CispoModes = ["two-sided", "upper-cap"] as const;
/** One of {@link CispoModes}. */
export type CispoMode = (typeof CispoModes)[number];

/** Optimizers of the embedded learner. */
export const Optimizers = ["adam", "sgd"] as const;
/** One of {@link Optimizers}. */
export type OptimizerName = (typeof Optimizers)[number];

/** One chat message of a prompt. */
export interface ChatMessage {
  /** `system`, `user`, `assistant` or `tool`. */
  readonly role: string;
  readonly content: string;
}

/**
 * One prompt to sample from: a fragment vocabulary (fragment policies: the policy's action space for
 * this context) or `text` / `messages` (text policies).
 */
export interface PromptSpec {
  readonly promptId: string;
  /**
   * Fragment policies keep parameters per context key (its vocabulary size must never change); text
   * policies only echo it.
   */
  readonly contextKey: string;
  /** Fragments; a completion's text is its fragments joined by `separator`. Absent for text prompts. */
  readonly vocabulary?: readonly string[];
  /** Raw prompt text (text policies). */
  readonly text?: string;
  /** Chat messages, rendered with the model's chat template (text policies; win over `text`). */
  readonly messages?: readonly ChatMessage[];
  /** Most tokens per completion (≥ 1). @default the request's `maxNewTokens` */
  readonly maxTokens?: number;
  /**
   * Token id that ends a completion: kept in `tokenIds` (its logprob counts), left out of `text`.
   * Unset: every completion has exactly `maxTokens` tokens and is never `truncated`.
   */
  readonly stopToken?: number;
  /** Joiner between fragments. @default "" */
  readonly separator?: string;
  /**
   * Fragment policies: token ids already in the sequence (a multi-turn episode's earlier turns and
   * environment-inserted fragments, each in `[0, vocabulary.length)`); the completion continues after
   * them and is conditioned on them exactly as `computeLogprobs`/`trainStep` condition the same tokens
   * in the episode's one sample. `tokenIds` of the completion hold only the new tokens. Text policies
   * continue a conversation through `text` instead. @default []
   */
  readonly prefixTokenIds?: readonly number[];
}

/** A batch of prompts, `n` completions each. */
export interface GenerateRequest {
  readonly prompts: readonly PromptSpec[];
  /** Completions per prompt (the group size G). */
  readonly n: number;
  /** Sampling temperature; the behaviour logprobs are those of the tempered distribution. @default 1 */
  readonly temperature?: number;
  /**
   * Seed for this call alone (uint32): the same seed on the same weights gives the same completions.
   * Unset: the learner's own seeded random stream (deterministic given the learner seed and call order).
   */
  readonly seed?: number;
  /**
   * Nucleus sampling: sample from the smallest set of tokens whose probability reaches `topP`. The
   * behaviour logprobs are those of the distribution sampled from (tempered, truncated, renormalised).
   * @default 1
   */
  readonly topP?: number;
  /** Most new tokens for prompts without `maxTokens`. @default 64 */
  readonly maxNewTokens?: number;
  /**
   * Stop strings: a completion ends once its text contains one; the text is cut before it (the tokens
   * that produced it stay), `finishReason` is `stop` and {@link Completion.matchedStop} is that string.
   */
  readonly stop?: readonly string[];
}

/** Why a completion ended: a stop token / end-of-sequence / stop string, or the length cap. */
export type FinishReason = "stop" | "length";

/** One sampled completion. */
export interface Completion {
  readonly promptId: string;
  readonly contextKey: string;
  /** Position among the prompt's `n` completions. */
  readonly index: number;
  readonly tokenIds: number[];
  /** Fragments joined by the prompt's separator (the stop token's fragment left out). */
  readonly text: string;
  /** Behaviour logprob of each token, under the sampling temperature. */
  readonly logprobs: number[];
  /** Policy version that generated this completion. */
  readonly policyVersion: number;
  /** True when `maxTokens` cut the completion before its stop token. */
  readonly truncated: boolean;
  /** `length` exactly when `truncated`. */
  readonly finishReason: FinishReason;
  /**
   * The stop string ({@link GenerateRequest.stop}, exactly as given) that ended the completion —
   * `text` is cut before it, the tokens that produced it are in `tokenIds` — or `""` when it ended
   * otherwise: at the stop token / end-of-sequence, at the token budget, or without any stop. When
   * several stop strings occur, the one `text` is cut at: the earliest occurrence, and of those
   * starting there the shortest. As vLLM's `CompletionOutput.stop_reason` (for strings), except which
   * one when a token completes several: vLLM and SGLang take the first in the list's order, this
   * contract the earliest in the text. Required: a learner always says (`""` included); the remote client refuses a
   * server that leaves `LearnerCompletion.matched_stop` unset where it matters (it predates the field).
   */
  readonly matchedStop: string;
  /**
   * Text policies: the prompt as tokenized (chat template applied), to send back in
   * {@link Sample.promptTokenIds}. Empty for fragment policies.
   */
  readonly promptTokenIds: number[];
}

/** One completion to learn from, with its precomputed (sequence-level) advantage. */
export interface Sample {
  readonly sampleId: string;
  /** The GRPO group (prompt) it belongs to; informational for the learner. */
  readonly groupId: string;
  readonly contextKey: string;
  /** Fragment policies: size of the context's vocabulary (parameters are created on first use). */
  readonly vocabularySize: number;
  /** Text policies: the prompt's token ids ({@link Completion.promptTokenIds}); required by them. */
  readonly promptTokenIds?: readonly number[];
  /** The completion's token ids. */
  readonly tokenIds: readonly number[];
  /** Behaviour logprobs (`Completion.logprobs`), one per token. */
  readonly rolloutLogprobs: readonly number[];
  /** 0/1 per token; 0 = the token does not count (tool output, ...). @default all 1 */
  readonly lossMask?: readonly number[];
  readonly advantage: number;
  /** Policy version that generated the sample. */
  readonly policyVersion: number;
  /** The completion hit `maxTokens` (masked entirely when `LossConfig.maskTruncated`). */
  readonly truncated?: boolean;
}

/** What TrainStep computes (`trainer/README.md`, "Loss types"). */
export interface LossConfig {
  readonly lossType: LossType;
  /** Lower clip ε (PPO ratio ≥ 1 − ε_low; CISPO two-sided lower bound). Typically 0.2. */
  readonly epsLow: number;
  /**
   * Upper clip ε: 0.2 (GRPO), 0.28 (DAPO clip-higher). CISPO `two-sided`: upper bound 1 + ε_high;
   * CISPO `upper-cap`: the absolute ratio cap (≥ 1, e.g. 5).
   */
  readonly epsHigh: number;
  /** Dual-clip constant c > 1 for negative advantages (verl `clip_ratio_c`). @default 0 (off) */
  readonly dualClipC?: number;
  /** KL-to-reference coefficient β (k3 estimator, added per token before aggregation). */
  readonly klBeta: number;
  /** L_max, the Dr. GRPO (`seq-mean-token-sum-norm`) normaliser. */
  readonly maxCompletionLength: number;
  /** Mask every token of samples with `truncated: true` (DAPO overlong filtering). @default false */
  readonly maskTruncated?: boolean;
  /** CISPO clip semantics. @default "two-sided" (verl) — safe with ε = 0.2/0.28 */
  readonly cispoMode?: CispoMode;
  /** Overrides the loss type's aggregation (see {@link aggregationFor}). */
  readonly aggregation?: LossAggregation;
  /**
   * Truncated importance sampling against the behaviour logprobs: the policy-gradient term of each
   * token is multiplied by `min(exp(old − rollout), cap)` (TRL `vllm_importance_sampling_correction`).
   * Corrects stale-but-kept samples and sampler/learner mismatch (e.g. temperature). @default 0 (off)
   */
  readonly rolloutIsCap?: number;
}

/** How the update is applied. */
export interface OptimConfig {
  /** Learning rate. With Adam (the default) 0.05–0.2 suits the embedded tabular policy. */
  readonly lr: number;
  /** Global gradient-norm clip (`Infinity` = off). @default 1 (as TRL and verl) */
  readonly maxGradNorm?: number;
  /** Passes over the batch. @default 1 */
  readonly epochs?: number;
  /** Optimizer steps per pass (contiguous slices of the batch). @default 1 */
  readonly miniBatches?: number;
  /** @default "adam" (β = 0.9/0.999, ε = 1e-8, no weight decay) */
  readonly optimizer?: OptimizerName;
}

/** One policy update. */
export interface TrainStepRequest {
  /** The trainer's step number (informational; part of the idempotency fingerprint). */
  readonly step: number;
  /** A retry with the same key returns the stored result instead of stepping again. */
  readonly idempotencyKey: string;
  readonly samples: readonly Sample[];
  readonly loss: LossConfig;
  readonly optim: OptimConfig;
  /** Drop samples with `policyVersion < current − maxStaleness`. @default no limit */
  readonly maxStaleness?: number;
}

/** Metrics of one update (means over active tokens and inner optimizer steps). */
export interface TrainStepMetrics {
  /** Aggregated loss (policy gradient + β·KL), mean over inner optimizer steps. */
  loss: number;
  /** Fraction of active tokens whose policy-gradient term was clipped (no gradient). */
  clipFraction: number;
  /** Mean k3 KL to the reference policy per active token. */
  klRef: number;
  /** Mean approximate KL between the step-start policy and the current one, (r − 1) − log r. */
  approxKlOld: number;
  /** Mean entropy of the policy's next-token distribution at active tokens. */
  entropy: number;
  /** Global gradient norm before clipping, mean over inner optimizer steps. */
  gradNorm: number;
  /** Active (unmasked) tokens in the kept samples. */
  nTokens: number;
  /** Samples kept after the staleness filter. */
  nSamples: number;
  /** Samples dropped as stale. */
  nDroppedStale: number;
  [k: string]: number;
}

/** Result of one update. */
export interface TrainStepResult {
  /** The policy version after the step. */
  policyVersion: number;
  metrics: TrainStepMetrics;
  /** True when the idempotency key was seen and the stored result is returned without a new step. */
  replayed: boolean;
}

/** What a learner is. */
export interface LearnerInfo {
  readonly name: string;
  readonly policyVersion: number;
  readonly kind: "embedded" | "remote";
  readonly description: string;
  /** `embedded-tabular`, `builtin:tiny`, a Hugging Face model directory, ... */
  readonly model: string;
  /** e.g. `TinyCausalLM(layers=2, d_model=64, heads=4)`, `Qwen2ForCausalLM`. */
  readonly architecture: string;
  readonly parameterCount: number;
  /** `fragments` for a fragment policy; else the tokenizer (`byte-level`, an HF tokenizer class). */
  readonly tokenizer: string;
  /** Parameter dtype: `float64`, `float32`, `bfloat16`, ... */
  readonly dtype: string;
  /** `cpu`, `cuda:0`, ... */
  readonly device: string;
  /** Tokenizer vocabulary size (0 for fragment policies: it is per context). */
  readonly vocabSize: number;
  /** Longest prompt + completion in tokens (0 = unbounded). */
  readonly maxContext: number;
}

/** The tokenizer a fragment policy reports. */
export const FRAGMENT_TOKENIZER = "fragments";

/** A completion to score with {@link Learner.computeLogprobs} (identified as a {@link Sample}). */
export interface ScoredSequence {
  readonly sequenceId: string;
  /** Fragment policies: the context and its vocabulary size. */
  readonly contextKey?: string;
  readonly vocabularySize?: number;
  /** Text policies: the prompt's token ids. */
  readonly promptTokenIds?: readonly number[];
  readonly tokenIds: readonly number[];
}

/** A policy learner. */
export interface Learner {
  info(): Promise<LearnerInfo>;
  /** `n` completions per prompt, prompt by prompt, from the current policy. */
  generate(req: GenerateRequest): Promise<Completion[]>;
  /** One update; increments `policyVersion` by 1 (unless replayed). */
  trainStep(req: TrainStepRequest): Promise<TrainStepResult>;
  /** Makes the newest weights visible to the rollout engine. */
  syncWeights(): Promise<{ policyVersion: number }>;
  /** Writes a checkpoint; resolves to the absolute path written. */
  saveCheckpoint(path: string): Promise<string>;
  /** Per-token logprobs of each sequence's completion under the current policy (temperature 1). */
  computeLogprobs(sequences: readonly ScoredSequence[]): Promise<number[][]>;
  close(): Promise<void>;
}

/** The aggregation each loss type uses (TRL `loss_type`, verl `loss_agg_mode`). */
export function aggregationFor(lossType: LossType): LossAggregation {
  switch (lossType) {
    case "grpo":
      return "seq-mean-token-mean";
    case "dr_grpo":
      return "seq-mean-token-sum-norm";
    case "dapo":
    case "cispo":
    case "bnpo":
      return "token-mean";
  }
}
