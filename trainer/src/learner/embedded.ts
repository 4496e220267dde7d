/**
 * The embedded learner: pure TypeScript, CPU, seeded. A small autoregressive softmax policy over a
 * per-context vocabulary of fragments (tabular bigram logits θ[context][previous token][token]),
 * trained with the real clipped objectives (GRPO, Dr. GRPO, DAPO, BNPO, CISPO), token-level masks,
 * the aggregation modes and a k3 KL to a frozen reference, with hand-derived gradients.
 *
 * It is a small policy for demos, tests and experiments — not an LLM. What it generates is real
 * text (fragments joined), so real reward services can score it.
 * @module
 */
import { type CheckpointData, readCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { LearnerClosedError, LearnerInputError } from "./errors.js";
import { rolloutIsWeight } from "./loss.js";
import { evaluateObjective, type ObjectiveConfig, type PreparedSample } from "./objective.js";
import { type AdamState, applyUpdate } from "./optimizer.js";
import { type ContextParams, initialTheta, rowOf, rowSoftmax, sequenceLogprobs } from "./policy.js";
import { createPrng, hashString, type Prng, prngFromState } from "./prng.js";
import {
  type Completion,
  FRAGMENT_TOKENIZER,
  type GenerateRequest,
  type Learner,
  type LearnerInfo,
  type Sample,
  type ScoredSequence,
  type TrainStepMetrics,
  type TrainStepRequest,
  type TrainStepResult,
} from "./types.js";
import { validateGenerateRequest, validateScoredSequences, validateTrainStepRequest } from "./validate.js";

/** Options of {@link createEmbeddedLearner}. */
export interface EmbeddedLearnerOptions {
  /** Seeds the initial logits (when `initialScale > 0`) and the learner's sampling stream. */
  readonly seed: number;
  /**
   * Standard deviation of the initial logits. @default 0 — a uniform initial policy: maximal
   * exploration, and a reference that prefers nothing.
   */
  readonly initialScale?: number;
  /**
   * Keep a frozen copy of each context's initial logits as the KL reference. Without it `klBeta`
   * must be 0. @default true
   */
  readonly referenceFromInitial?: boolean;
  /**
   * Restore a checkpoint written by `saveCheckpoint`: every piece of state (including the seed,
   * `initialScale` and `referenceFromInitial`) comes from the file; the options above are ignored.
   */
  readonly checkpoint?: string;
  /** Train-step results remembered for idempotent retries (oldest forgotten first). @default 1024 */
  readonly idempotencyCacheSize?: number;
}

/** The name the embedded learner reports. */
export const EMBEDDED_LEARNER_NAME = "embedded-tabular";

/** The tokens of the nucleus (top-p set) of `probs[0..v)`, most probable first, and their mass. */
function nucleusOf(probs: Float64Array, v: number, topP: number): { ids: number[]; mass: number } {
  const order = Array.from({ length: v }, (_, k) => k).sort((x, y) => probs[y]! - probs[x]! || x - y);
  const ids: number[] = [];
  let mass = 0;
  for (const k of order) {
    ids.push(k);
    mass += probs[k]!;
    if (mass >= topP) break;
  }
  return { ids, mass };
}

/**
 * The stop string the text is cut at and where: the earliest occurrence of any of `stop` in `text`,
 * and of those starting there the shortest (the match that was complete first); `undefined` when none
 * occurs. The PyTorch learner's `first_stop` (`reward_mesh_learner/sampling.py`) applies the same rule.
 * Not vLLM's / SGLang's, which take the first of `stop` in list order that a token completed.
 */
function firstStop(text: string, stop: readonly string[]): { at: number; stop: string } | undefined {
  let best: { at: number; stop: string } | undefined;
  for (const s of stop) {
    const i = text.indexOf(s);
    if (i < 0) continue;
    if (!best || i < best.at || (i === best.at && s.length < best.stop.length)) best = { at: i, stop: s };
  }
  return best;
}

interface State {
  seed: number;
  initialScale: number;
  referenceFromInitial: boolean;
  policyVersion: number;
  contexts: Map<string, ContextParams>;
  adam: Map<string, AdamState>;
  rng: Prng;
  idempotency: Map<string, { fingerprint: string; result: TrainStepResult }>;
}

function stateFromCheckpoint(d: CheckpointData): State {
  const contexts = new Map<string, ContextParams>();
  const adam = new Map<string, AdamState>();
  for (const c of d.contexts) {
    contexts.set(c.key, {
      key: c.key,
      vocabularySize: c.vocabularySize,
      theta: Float64Array.from(c.theta),
      reference: c.reference ? Float64Array.from(c.reference) : null,
    });
    if (c.adam)
      adam.set(c.key, { m: Float64Array.from(c.adam.m), v: Float64Array.from(c.adam.v), t: c.adam.t });
  }
  return {
    seed: d.seed,
    initialScale: d.initialScale,
    referenceFromInitial: d.referenceFromInitial,
    policyVersion: d.policyVersion,
    contexts,
    adam,
    rng: prngFromState(d.rngState),
    idempotency: new Map(d.idempotency.map((e) => [e.key, { fingerprint: e.fingerprint, result: e.result }])),
  };
}

function checkOptions(options: EmbeddedLearnerOptions): void {
  if (typeof options !== "object" || options === null)
    throw new LearnerInputError("options", "is not an object");
  if (options.checkpoint !== undefined) return;
  if (!Number.isSafeInteger(options.seed)) {
    throw new LearnerInputError("options.seed", `is ${String(options.seed)}, not a safe integer`);
  }
  const s = options.initialScale;
  if (s !== undefined && !(typeof s === "number" && s >= 0 && Number.isFinite(s))) {
    throw new LearnerInputError("options.initialScale", `is ${String(s)}; it must be finite and ≥ 0`);
  }
}

/** A stable fingerprint of a train-step request, to catch an idempotency key reused for other data. */
function fingerprintOf(req: TrainStepRequest): string {
  let h = 0;
  for (const s of req.samples) h = hashString(String(s?.sampleId), h);
  return `step=${req.step};samples=${req.samples.length};ids=${h.toString(16)}`;
}

function emptyMetrics(): TrainStepMetrics {
  return {
    loss: 0,
    clipFraction: 0,
    klRef: 0,
    approxKlOld: 0,
    entropy: 0,
    gradNorm: 0,
    nTokens: 0,
    nSamples: 0,
    nDroppedStale: 0,
  };
}

/**
 * Creates an embedded learner (or restores one from `options.checkpoint`).
 *
 * - `generate`: autoregressive sampling with a seeded PRNG (sfc32); a request `seed` gives a private
 *   stream, otherwise the learner's own stream advances (and is checkpointed).
 * - `trainStep`: drops stale samples, recomputes old logprobs once at step start (with one epoch and
 *   one mini-batch that is `old = current`, detached), optionally applies truncated importance
 *   weights against the behaviour logprobs, runs `epochs × miniBatches` optimizer steps (Adam by
 *   default) with global gradient-norm clipping, and increments `policyVersion` by 1.
 * - `syncWeights`: a no-op returning the version — the embedded learner samples from its live
 *   weights, so its "rollout engine" is always in sync.
 * - `saveCheckpoint`: atomic JSON; {@link EmbeddedLearnerOptions.checkpoint} restores it exactly.
 */
export function createEmbeddedLearner(options: EmbeddedLearnerOptions): Learner {
  checkOptions(options);
  const cacheSize = options.idempotencyCacheSize ?? 1024;
  const st: State =
    options.checkpoint !== undefined
      ? stateFromCheckpoint(readCheckpoint(options.checkpoint))
      : {
          seed: options.seed,
          initialScale: options.initialScale ?? 0,
          referenceFromInitial: options.referenceFromInitial ?? true,
          policyVersion: 0,
          contexts: new Map(),
          adam: new Map(),
          rng: createPrng(options.seed),
          idempotency: new Map(),
        };
  let closed = false;

  const ensureOpen = () => {
    if (closed) throw new LearnerClosedError("the embedded learner is closed");
  };
  const vocabularySizeOf = (key: string) => st.contexts.get(key)?.vocabularySize;
  const contextFor = (key: string, v: number): ContextParams => {
    let c = st.contexts.get(key);
    if (!c) {
      const theta = initialTheta(st.seed, key, v, st.initialScale);
      c = { key, vocabularySize: v, theta, reference: st.referenceFromInitial ? theta.slice() : null };
      st.contexts.set(key, c);
    }
    return c;
  };

  function describeSelf(): string {
    let params = 0;
    for (const c of st.contexts.values()) params += c.theta.length;
    return (
      "A tabular bigram softmax policy (logits θ[context][previous token][token]) over per-context " +
      "fragment vocabularies, trained on the CPU with the clipped GRPO / Dr. GRPO / DAPO / BNPO / CISPO " +
      "objectives, a k3 KL to its initial policy and hand-derived gradients. A small policy for demos, " +
      `tests and experiments, not an LLM. ${st.contexts.size} contexts, ${params} parameters.`
    );
  }

  function generate(req: GenerateRequest): Completion[] {
    const { temperature, seed, topP, maxNewTokens, stop } = validateGenerateRequest(req, vocabularySizeOf);
    const rng = seed === undefined ? st.rng : createPrng(seed);
    const out: Completion[] = [];
    let probs = new Float64Array(0);
    for (const p of req.prompts) {
      const vocabulary = p.vocabulary!; // validated: fragment prompts only
      const v = vocabulary.length;
      const ctx = contextFor(p.contextKey, v);
      if (probs.length < v) probs = new Float64Array(v);
      const maxTokens = p.maxTokens ?? maxNewTokens;
      for (let g = 0; g < req.n; g++) {
        const tokenIds: number[] = [];
        const logprobs: number[] = [];
        const parts: string[] = [];
        // A continued sequence (multi-turn episode): condition on its last token, as the sample will.
        const prefix = p.prefixTokenIds ?? [];
        let prev = prefix.length > 0 ? prefix[prefix.length - 1]! : -1;
        let stopped = false;
        let cut: { at: number; stop: string } | undefined;
        for (let t = 0; t < maxTokens; t++) {
          const row = rowOf(prev);
          const lse = rowSoftmax(ctx.theta, row, v, probs, temperature);
          const u = rng.next();
          let a: number;
          let lp: number;
          if (topP < 1) {
            const nucleus = nucleusOf(probs, v, topP);
            let acc = 0;
            let k = 0;
            const target = u * nucleus.mass;
            while (k < nucleus.ids.length - 1 && target >= acc + probs[nucleus.ids[k]!]!)
              acc += probs[nucleus.ids[k++]!]!;
            a = nucleus.ids[k]!;
            lp = Math.log(probs[a]! / nucleus.mass);
          } else {
            a = 0;
            let acc = probs[0]!;
            while (a < v - 1 && u >= acc) acc += probs[++a]!;
            lp = ctx.theta[row * v + a]! / temperature - lse;
          }
          tokenIds.push(a);
          logprobs.push(lp);
          if (a === p.stopToken) {
            stopped = true;
            break;
          }
          parts.push(vocabulary[a]!);
          prev = a;
          if (stop.length > 0) {
            cut = firstStop(parts.join(p.separator ?? ""), stop);
            if (cut) {
              stopped = true;
              break;
            }
          }
        }
        const text = parts.join(p.separator ?? "");
        const truncated = (p.stopToken !== undefined || stop.length > 0) && !stopped;
        out.push({
          promptId: p.promptId,
          contextKey: p.contextKey,
          index: g,
          tokenIds,
          text: cut ? text.slice(0, cut.at) : text,
          logprobs,
          policyVersion: st.policyVersion,
          truncated,
          finishReason: truncated ? "length" : "stop",
          matchedStop: cut?.stop ?? "",
          promptTokenIds: [],
        });
      }
    }
    return out;
  }

  function computeLogprobs(sequences: readonly ScoredSequence[]): number[][] {
    const resolved = validateScoredSequences(sequences, vocabularySizeOf);
    return resolved.map(({ contextKey, vocabularySize, tokenIds }) => {
      const c = contextFor(contextKey, vocabularySize);
      return Array.from(sequenceLogprobs(c.theta, vocabularySize, Int32Array.from(tokenIds)));
    });
  }

  function trainStep(req: TrainStepRequest): TrainStepResult {
    if (
      typeof req === "object" &&
      req !== null &&
      typeof req.idempotencyKey === "string" &&
      Array.isArray(req.samples)
    ) {
      const seen = st.idempotency.get(req.idempotencyKey);
      if (seen) {
        const fp = fingerprintOf(req);
        if (seen.fingerprint !== fp) {
          throw new LearnerInputError(
            "idempotencyKey",
            `'${req.idempotencyKey}' was already used for a different request (${seen.fingerprint}; now ${fp})`,
          );
        }
        return { ...seen.result, metrics: { ...seen.result.metrics }, replayed: true };
      }
    }
    const { loss, optim, maxStaleness } = validateTrainStepRequest(req, {
      policyVersion: st.policyVersion,
      vocabularySizeOf,
    });
    if (loss.klBeta > 0 && !st.referenceFromInitial) {
      throw new LearnerInputError(
        "loss.klBeta",
        `is ${loss.klBeta} but this learner keeps no reference policy (referenceFromInitial: false)`,
      );
    }

    // Staleness filter, then bind every kept sample to its parameters with the step-start logprobs.
    const minVersion = maxStaleness === undefined ? 0 : st.policyVersion - maxStaleness;
    const kept: Sample[] = req.samples.filter((s) => s.policyVersion >= minVersion);
    const nDroppedStale = req.samples.length - kept.length;
    let nMaskedTruncated = 0;
    const prepared: PreparedSample[] = kept.map((s) => {
      const params = contextFor(s.contextKey, s.vocabularySize);
      const tokenIds = Int32Array.from(s.tokenIds);
      const oldLogprobs = sequenceLogprobs(params.theta, params.vocabularySize, tokenIds);
      const maskAll = loss.maskTruncated && s.truncated === true;
      if (maskAll) nMaskedTruncated++;
      const mask = new Float64Array(tokenIds.length);
      for (let t = 0; t < mask.length; t++) mask[t] = maskAll ? 0 : (s.lossMask?.[t] ?? 1);
      let isWeights: Float64Array | null = null;
      if (loss.rolloutIsCap > 0) {
        isWeights = new Float64Array(tokenIds.length);
        for (let t = 0; t < tokenIds.length; t++) {
          isWeights[t] = rolloutIsWeight(oldLogprobs[t]!, s.rolloutLogprobs[t]!, loss.rolloutIsCap);
        }
      }
      return { sampleId: s.sampleId, params, tokenIds, mask, advantage: s.advantage, oldLogprobs, isWeights };
    });

    const cfg: ObjectiveConfig = {
      lossType: loss.lossType,
      aggregation: loss.aggregation,
      epsLow: loss.epsLow,
      epsHigh: loss.epsHigh,
      dualClipC: loss.dualClipC,
      klBeta: loss.klBeta,
      maxCompletionLength: loss.maxCompletionLength,
      cispoMode: loss.cispoMode,
    };
    // Contiguous mini-batches (sizes differ by at most one), the same split every epoch.
    const nMb = Math.min(optim.miniBatches, prepared.length);
    const miniBatches: PreparedSample[][] = [];
    for (let b = 0; b < nMb; b++) {
      miniBatches.push(
        prepared.slice(
          Math.floor((b * prepared.length) / nMb),
          Math.floor(((b + 1) * prepared.length) / nMb),
        ),
      );
    }
    const thetas = new Map([...st.contexts].map(([k, c]) => [k, c.theta]));
    let lossSum = 0;
    let gradNormSum = 0;
    let gradNormMax = 0;
    let evals = 0;
    let tokenEvals = 0;
    let clipped = 0;
    let clippedLow = 0;
    let clippedHigh = 0;
    let dualClipped = 0;
    let klRefSum = 0;
    let approxKlSum = 0;
    let entropySum = 0;
    let isWeightSum = 0;
    for (let e = 0; e < optim.epochs; e++) {
      for (const mb of miniBatches) {
        const grads = new Map<string, Float64Array>();
        for (const s of mb) {
          if (!grads.has(s.params.key)) grads.set(s.params.key, new Float64Array(s.params.theta.length));
        }
        const stats = evaluateObjective(mb, cfg, { grads });
        const norm = applyUpdate(thetas, grads, st.adam, optim);
        lossSum += stats.loss;
        gradNormSum += norm;
        gradNormMax = Math.max(gradNormMax, norm);
        evals++;
        tokenEvals += stats.nTokens;
        clipped += stats.nClipped;
        clippedLow += stats.nClippedLow;
        clippedHigh += stats.nClippedHigh;
        dualClipped += stats.nDualClipped;
        klRefSum += stats.klRefSum;
        approxKlSum += stats.approxKlOldSum;
        entropySum += stats.entropySum;
        isWeightSum += stats.isWeightSum;
      }
    }
    let nTokens = 0;
    let advantageSum = 0;
    for (const s of prepared) {
      for (let t = 0; t < s.mask.length; t++) nTokens += s.mask[t]!;
      advantageSum += s.advantage;
    }
    const perToken = (x: number) => (tokenEvals > 0 ? x / tokenEvals : 0);
    const metrics: TrainStepMetrics = {
      ...emptyMetrics(),
      loss: evals > 0 ? lossSum / evals : 0,
      clipFraction: perToken(clipped),
      klRef: perToken(klRefSum),
      approxKlOld: perToken(approxKlSum),
      entropy: perToken(entropySum),
      gradNorm: evals > 0 ? gradNormSum / evals : 0,
      nTokens,
      nSamples: prepared.length,
      nDroppedStale,
      clipFractionLow: perToken(clippedLow),
      clipFractionHigh: perToken(clippedHigh),
      dualClipFraction: perToken(dualClipped),
      rolloutIsWeightMean: tokenEvals > 0 ? isWeightSum / tokenEvals : 1,
      gradNormMax,
      nOptimizerSteps: evals,
      nMaskedTruncated,
      advantageMean: prepared.length > 0 ? advantageSum / prepared.length : 0,
      lr: optim.lr,
    };
    st.policyVersion++;
    const result: TrainStepResult = { policyVersion: st.policyVersion, metrics, replayed: false };
    st.idempotency.set(req.idempotencyKey, { fingerprint: fingerprintOf(req), result });
    while (st.idempotency.size > cacheSize) {
      const oldest = st.idempotency.keys().next().value as string;
      st.idempotency.delete(oldest);
    }
    return { ...result, metrics: { ...metrics } };
  }

  function snapshot(): CheckpointData {
    return {
      format: "reward-mesh.embedded-learner",
      version: 1,
      seed: st.seed,
      initialScale: st.initialScale,
      referenceFromInitial: st.referenceFromInitial,
      policyVersion: st.policyVersion,
      rngState: st.rng.state(),
      contexts: [...st.contexts.values()].map((c) => {
        const a = st.adam.get(c.key);
        return {
          key: c.key,
          vocabularySize: c.vocabularySize,
          theta: Array.from(c.theta),
          reference: c.reference ? Array.from(c.reference) : null,
          adam: a ? { m: Array.from(a.m), v: Array.from(a.v), t: a.t } : null,
        };
      }),
      idempotency: [...st.idempotency].map(([key, e]) => ({
        key,
        fingerprint: e.fingerprint,
        result: e.result,
      })),
    };
  }

  return {
    async info(): Promise<LearnerInfo> {
      ensureOpen();
      let params = 0;
      for (const c of st.contexts.values()) params += c.theta.length;
      return {
        name: EMBEDDED_LEARNER_NAME,
        policyVersion: st.policyVersion,
        kind: "embedded",
        description: describeSelf(),
        model: EMBEDDED_LEARNER_NAME,
        architecture: "tabular bigram softmax over per-context fragment vocabularies",
        parameterCount: params,
        tokenizer: FRAGMENT_TOKENIZER,
        dtype: "float64",
        device: "cpu",
        vocabSize: 0,
        maxContext: 0,
      };
    },
    async generate(req) {
      ensureOpen();
      return generate(req);
    },
    async trainStep(req) {
      ensureOpen();
      return trainStep(req);
    },
    async syncWeights() {
      ensureOpen();
      // The embedded learner samples from its live weights: nothing to publish.
      return { policyVersion: st.policyVersion };
    },
    async computeLogprobs(sequences) {
      ensureOpen();
      return computeLogprobs(sequences);
    },
    async saveCheckpoint(path) {
      ensureOpen();
      // The snapshot is taken synchronously, so concurrent calls cannot tear it.
      return writeCheckpoint(path, snapshot());
    },
    async close() {
      closed = true;
    },
  };
}
