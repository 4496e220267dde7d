/**
 * The batch objective of one optimizer step and its hand-derived gradient with respect to the
 * tabular logits (`trainer/README.md`, "Loss types").
 *
 * For token t of sample i (logits z of its row, sampled token a, p = softmax(z)):
 *
 *   L = Σ_{i,t} w_it · ( s_it · pg_it(lp_it) + β · k3(lp_it, ref_it) )
 *
 * with w the aggregation weight (mask included, {@link aggregationWeights}), s the optional rollout
 * importance weight (constant), pg the PPO clip-higher or CISPO term. The chain rule through the
 * log-softmax, `∂lp/∂z_k = 1[k = a] − p_k`, gives
 *
 *   ∂L/∂z_k += w_it · ( s_it · ∂pg/∂lp + β · (1 − exp(ref − lp)) ) · (1[k = a] − p_k)
 *
 * where ∂pg/∂lp = −A·r on PPO's unclipped branch (0 when clipped) and −ŵ·A for CISPO.
 * Finite-difference checks for every loss type are in `gradient.test.ts`.
 * @module
 */
import { aggregationWeights, cispoTokenLoss, importanceRatio, k3Kl, ppoClipTokenLoss } from "./loss.js";
import { type ContextParams, entropyOf, rowOf, rowSoftmax } from "./policy.js";
import type { CispoMode, LossAggregation, LossType } from "./types.js";

/** A validated sample bound to its context's parameters, with everything fixed during the step. */
export interface PreparedSample {
  readonly sampleId: string;
  readonly params: ContextParams;
  readonly tokenIds: Int32Array;
  /** 0/1 per token (loss mask, and all 0 for masked truncated samples). */
  readonly mask: Float64Array;
  readonly advantage: number;
  /** Logprobs under the step-start policy (detached). */
  readonly oldLogprobs: Float64Array;
  /** Rollout importance weights (detached), or null when the correction is off. */
  readonly isWeights: Float64Array | null;
}

/** The resolved loss settings of a step. */
export interface ObjectiveConfig {
  readonly lossType: LossType;
  readonly aggregation: LossAggregation;
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly dualClipC: number;
  readonly klBeta: number;
  readonly maxCompletionLength: number;
  readonly cispoMode: CispoMode;
}

/** Sums over active tokens of one evaluation. */
export interface ObjectiveStats {
  /** The aggregated loss L. */
  loss: number;
  /** Active tokens. */
  nTokens: number;
  /** Tokens whose policy-gradient term was clipped (any side). */
  nClipped: number;
  nClippedLow: number;
  nClippedHigh: number;
  nDualClipped: number;
  /** Σ k3 KL to the reference (0 without a reference). */
  klRefSum: number;
  /** Σ (r − 1) − log r between the step-start and the current policy. */
  approxKlOldSum: number;
  /** Σ entropy of the next-token distribution. */
  entropySum: number;
  /** Σ rollout importance weight (1 per token when the correction is off). */
  isWeightSum: number;
}

/** Options of {@link evaluateObjective}. */
export interface EvaluateOptions {
  /**
   * Gradient accumulators by context key, each the size of that context's `theta`; when given,
   * ∂L/∂θ is added into them.
   */
  readonly grads?: Map<string, Float64Array>;
  /**
   * Per-sample logprobs at which stop-gradient quantities (the CISPO weight ŵ) are evaluated.
   * Default: the current logprobs (what training does). Finite-difference checks pin them to the
   * point where the gradient is taken, so that they stay constant under perturbation.
   */
  readonly detachedLogprobs?: readonly Float64Array[];
}

/** Evaluates the objective over `samples` (one mini-batch) and optionally accumulates its gradient. */
export function evaluateObjective(
  samples: readonly PreparedSample[],
  cfg: ObjectiveConfig,
  options: EvaluateOptions = {},
): ObjectiveStats {
  const stats: ObjectiveStats = {
    loss: 0,
    nTokens: 0,
    nClipped: 0,
    nClippedLow: 0,
    nClippedHigh: 0,
    nDualClipped: 0,
    klRefSum: 0,
    approxKlOldSum: 0,
    entropySum: 0,
    isWeightSum: 0,
  };
  const weights = aggregationWeights(
    samples.map((s) => s.mask),
    cfg.aggregation,
    { maxCompletionLength: cfg.maxCompletionLength },
  );
  const ppo = { epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, dualClipC: cfg.dualClipC };
  const cispo = { epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, mode: cfg.cispoMode };
  let probs = new Float64Array(0);
  let refProbs = new Float64Array(0);
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    const { theta, reference, vocabularySize: v } = s.params;
    if (probs.length < v) {
      probs = new Float64Array(v);
      refProbs = new Float64Array(v);
    }
    const grad = options.grads?.get(s.params.key);
    const detached = options.detachedLogprobs?.[i];
    const w = weights[i]!;
    let prev = -1;
    for (let t = 0; t < s.tokenIds.length; t++) {
      const a = s.tokenIds[t]!;
      const row = rowOf(prev);
      prev = a;
      if (s.mask[t] === 0) continue;
      const lse = rowSoftmax(theta, row, v, probs);
      const lp = theta[row * v + a]! - lse;
      const old = s.oldLogprobs[t]!;
      const isw = s.isWeights ? s.isWeights[t]! : 1;

      let pgLoss: number;
      let dPgDLp: number;
      if (cfg.lossType === "cispo") {
        const ratio = importanceRatio(detached ? detached[t]! : lp, old).ratio;
        const term = cispoTokenLoss(ratio, s.advantage, lp, cispo);
        pgLoss = term.loss;
        dPgDLp = term.gradCoefWrtLogp;
        if (term.clipped) {
          stats.nClipped++;
          if (term.clippedWeight < ratio) stats.nClippedHigh++;
          else stats.nClippedLow++;
        }
      } else {
        const r = importanceRatio(lp, old);
        const term = ppoClipTokenLoss(r.ratio, s.advantage, ppo);
        pgLoss = term.loss;
        dPgDLp = term.dLossDRatio * r.dRatioDLogp;
        if (term.clip !== "none") {
          stats.nClipped++;
          if (term.clip === "low") stats.nClippedLow++;
          else if (term.clip === "high") stats.nClippedHigh++;
          else stats.nDualClipped++;
        }
      }

      let klValue = 0;
      let dKlDLp = 0;
      if (reference) {
        const refLse = rowSoftmax(reference, row, v, refProbs);
        const kl = k3Kl(lp, reference[row * v + a]! - refLse);
        klValue = kl.value;
        dKlDLp = kl.dValueDLogp;
        stats.klRefSum += klValue;
      }

      const wt = w[t]!;
      stats.loss += wt * (isw * pgLoss + cfg.klBeta * klValue);
      stats.nTokens++;
      const logRatio = lp - old;
      stats.approxKlOldSum += Math.expm1(logRatio) - logRatio;
      stats.entropySum += entropyOf(probs, v);
      stats.isWeightSum += isw;

      if (grad) {
        const g = wt * (isw * dPgDLp + cfg.klBeta * dKlDLp);
        if (g !== 0) {
          const off = row * v;
          for (let k = 0; k < v; k++) grad[off + k] -= g * probs[k]!;
          grad[off + a] += g;
        }
      }
    }
  }
  return stats;
}
