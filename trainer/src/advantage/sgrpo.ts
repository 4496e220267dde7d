/**
 * S-GRPO noise-aware group weight (Shen et al., arXiv 2508.05928; released code
 * `train/train_S-GRPO.py::group_weight`), as a step applied after any estimator.
 *
 * With symmetric label-flip probability `p`, `q = k/n` the observed success rate and
 * `t = clip((q − p)/(1 − 2p), 0, 1)` the de-noised one:
 * `w* = (1 − 2p)·t(1 − t) / (sqrt(q(1 − q) + ε)·sqrt(t(1 − t) + ε))`, `ε = 1e-8`.
 * `w*` is (as ε → 0) the correlation between the true and the observed binary reward; it is 0 for
 * groups that are too imbalanced to trust (`q ≤ p` or `q ≥ 1 − p`): "gated".
 * @module
 */
import type { PackedBatch } from "./batch.js";
import { AdvantageOptionsError, showValue } from "./errors.js";
import type { Workspace } from "./kernels.js";
import { weightedTotals } from "./kernels.js";
import type { SgrpoOptions, SgrpoVariant } from "./types.js";
import { GroupFlags } from "./types.js";

/** S-GRPO options with defaults applied. */
export interface ResolvedSgrpoOptions {
  readonly p: number;
  readonly variant: SgrpoVariant;
  readonly epsilon: number;
  readonly successThreshold: number;
  /** Component reference, or `null` for the weighted total. */
  readonly component: string | number | null;
}

/**
 * Validates S-GRPO options and applies defaults (`variant: "code"`, `epsilon: 1e-8`,
 * `successThreshold: 0`, metric = weighted total).
 * @throws {AdvantageOptionsError} naming `sgrpo.<key>`.
 */
export function resolveSgrpoOptions(o: SgrpoOptions): ResolvedSgrpoOptions {
  if (typeof o !== "object" || o === null)
    throw new AdvantageOptionsError("sgrpo", "'sgrpo' must be an object");
  const known = ["p", "variant", "epsilon", "successThreshold", "component"];
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) {
      throw new AdvantageOptionsError(
        `sgrpo.${key}`,
        `'sgrpo.${key}' is not an S-GRPO option; accepted: ${known.join(", ")}`,
      );
    }
  }
  checkP(o.p, "sgrpo.p");
  const variant = o.variant ?? "code";
  if (variant !== "code" && variant !== "dr_grpo") {
    throw new AdvantageOptionsError(
      "sgrpo.variant",
      `'sgrpo.variant' must be one of code | dr_grpo, got ${showValue(variant)}`,
    );
  }
  const epsilon = o.epsilon ?? 1e-8;
  if (typeof epsilon !== "number" || !Number.isFinite(epsilon) || epsilon < 0) {
    throw new AdvantageOptionsError(
      "sgrpo.epsilon",
      `'sgrpo.epsilon' must be a finite number ≥ 0, got ${epsilon}`,
    );
  }
  const successThreshold = o.successThreshold ?? 0;
  if (typeof successThreshold !== "number" || !Number.isFinite(successThreshold)) {
    throw new AdvantageOptionsError(
      "sgrpo.successThreshold",
      `'sgrpo.successThreshold' must be a finite number, got ${successThreshold}`,
    );
  }
  const component = o.component ?? null;
  if (component !== null && typeof component !== "string" && typeof component !== "number") {
    throw new AdvantageOptionsError("sgrpo.component", "'sgrpo.component' must be a component name or index");
  }
  return { p: o.p, variant, epsilon, successThreshold, component };
}

function checkP(p: unknown, key: string): asserts p is number {
  if (typeof p !== "number" || !Number.isFinite(p) || p < 0 || p >= 0.5) {
    throw new AdvantageOptionsError(key, `'${key}' must be a number in [0, 0.5), got ${String(p)}`);
  }
}

/** `w*` without validation (the hot path); callers guarantee `0 ≤ k ≤ n`, `0 ≤ p < 0.5`. */
export function sgrpoWeightUnchecked(n: number, k: number, p: number, epsilon: number): number {
  if (n === 0) return 0;
  const q = k / n;
  let t = (q - p) / (1 - 2 * p);
  if (t < 0) t = 0;
  else if (t > 1) t = 1;
  const tt = t * (1 - t);
  const den = Math.sqrt(q * (1 - q) + epsilon) * Math.sqrt(tt + epsilon);
  if (den === 0) return 0;
  return ((1 - 2 * p) * tt) / den;
}

/**
 * The S-GRPO group weight `w*(n, k, p)` for `k` successes among `n` rollouts.
 * `n = 0` gives 0; a zero denominator gives 0.
 * @param epsilon @default 1e-8 (released code)
 * @throws {AdvantageOptionsError} when `p ∉ [0, 0.5)` or `k ∉ [0, n]` (integers).
 */
export function sgrpoWeight(n: number, k: number, p: number, epsilon = 1e-8): number {
  checkP(p, "p");
  if (!Number.isInteger(n) || n < 0)
    throw new AdvantageOptionsError("n", `'n' must be an integer ≥ 0, got ${n}`);
  if (!Number.isInteger(k) || k < 0 || k > n) {
    throw new AdvantageOptionsError("k", `'k' must be an integer in [0, n=${n}], got ${k}`);
  }
  if (!Number.isFinite(epsilon) || epsilon < 0) {
    throw new AdvantageOptionsError("epsilon", `'epsilon' must be a finite number ≥ 0, got ${epsilon}`);
  }
  return sgrpoWeightUnchecked(n, k, p, epsilon);
}

function allNotApplicable(na: Uint8Array, row0: number, G: number, K: number, k: number): boolean {
  for (let i = 0; i < G; i++) if (na[(row0 + i) * K + k] === 0) return false;
  return true;
}

/**
 * Applies S-GRPO to every kept group, in place on `out`. A group whose metric component is
 * NOT_APPLICABLE for every rollout is left as it is (weight 1): the S-GRPO model needs that outcome.
 * `component` is the resolved component index (−1 = weighted total). Records `w*` and `k` in `ws.sgrpoWeights` / `ws.sgrpoSuccesses`
 * and sets {@link GroupFlags.sgrpoGated} when `w* = 0` silenced a group whose advantages were not
 * all 0 (for binary rewards: `0 < k < G` with `q ≤ p` or `q ≥ 1 − p`). Allocation-free.
 */
export function applySgrpo(
  batch: PackedBatch,
  o: ResolvedSgrpoOptions,
  component: number,
  ws: Workspace,
  out: Float64Array,
  flags: Uint8Array,
): void {
  const { values, weights, groupOffsets, components: K } = batch;
  const tot = ws.totals;
  const thr = o.successThreshold;
  for (let g = 0; g < batch.groupCount; g++) {
    const row0 = groupOffsets[g]!;
    const G = groupOffsets[g + 1]! - row0;
    if ((flags[g]! & GroupFlags.dropped) !== 0) {
      ws.sgrpoWeights[g] = 0;
      ws.sgrpoSuccesses[g] = 0;
      continue;
    }
    if (
      component >= 0 &&
      batch.notApplicable !== null &&
      allNotApplicable(batch.notApplicable, row0, G, K, component)
    ) {
      // The group has no binary outcome to de-noise (e.g. a tool-call group in a run whose S-GRPO
      // metric is code-exec/pass): S-GRPO does not apply; its advantages stay as the estimator made them.
      ws.sgrpoWeights[g] = 1;
      ws.sgrpoSuccesses[g] = 0;
      continue;
    }
    const constant = weightedTotals(values, row0, G, K, weights, tot);
    let k = 0;
    for (let i = 0; i < G; i++) {
      const m = component < 0 ? tot[i]! : values[(row0 + i) * K + component]!;
      if (m > thr) k++;
    }
    const w = sgrpoWeightUnchecked(G, k, o.p, o.epsilon);
    let signal = 0;
    if (o.variant === "code") {
      for (let i = 0; i < G; i++) {
        const a = out[row0 + i]!;
        if (a !== 0) signal = 1;
        out[row0 + i] = w * a;
      }
    } else {
      signal = 1 - constant;
      let mean = 0;
      for (let i = 0; i < G; i++) mean += tot[i]!;
      mean /= G;
      for (let i = 0; i < G; i++) out[row0 + i] = constant === 1 ? 0 : w * (tot[i]! - mean);
    }
    if (w === 0 && signal === 1) flags[g] = flags[g]! | GroupFlags.sgrpoGated;
    ws.sgrpoWeights[g] = w;
    ws.sgrpoSuccesses[g] = k;
  }
}
