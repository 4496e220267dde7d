/**
 * Per-group diagnostics: covariance and correlation matrices of the weighted components, the
 * coefficient sum, the estimator's denominator, each component's share of GRPO's and CorrGRPO's
 * normaliser, S-GRPO weight and gate, DAPO keep/drop and NOT_APPLICABLE bookkeeping.
 *
 * Plain, allocating code on purpose: it runs only when diagnostics are requested, after the
 * kernels, so the hot path never pays for it.
 * @module
 */
import type { PackedBatch } from "./batch.js";
import type { ResolvedSgrpoOptions } from "./sgrpo.js";
import type { AdvantageEstimatorName, GroupDiagnostics, SgrpoDiagnostics, ShareBreakdown } from "./types.js";
import { GroupFlags } from "./types.js";

/**
 * Shares of `total = Σ_kl M_kl`: `diagonalShare[k] = M_kk / total`, `rowShare[k] = Σ_l M_kl / total`
 * (all 0 when the total is 0). This is how the spec attributes GRPO's variance and CorrGRPO's
 * coefficient sum to components (vectors `b1`, `b2`, `f`).
 */
export function shareBreakdown(matrix: readonly (readonly number[])[]): ShareBreakdown {
  const K = matrix.length;
  let total = 0;
  const rows = new Array<number>(K).fill(0);
  for (let k = 0; k < K; k++) {
    for (let l = 0; l < K; l++) rows[k] += matrix[k]![l]!;
    total += rows[k]!;
  }
  const diagonalShare = matrix.map((row, k) => (total === 0 ? 0 : row[k]! / total));
  const rowShare = rows.map((r) => (total === 0 ? 0 : r / total));
  return { total, diagonalShare, rowShare };
}

/** Inputs of {@link computeGroupDiagnostics} besides the batch. */
export interface GroupDiagnosticsContext {
  readonly estimator: AdvantageEstimatorName;
  readonly flags: Uint8Array;
  readonly advantages: Float64Array;
  /** Per group divisor recorded by the estimator (NaN when none). */
  readonly denominators: Float64Array;
  readonly sgrpo: ResolvedSgrpoOptions | null;
  readonly sgrpoWeights: Float64Array;
  readonly sgrpoSuccesses: Int32Array;
}

/**
 * Computes the diagnostics of group `g`. Matrices are over `X = w·R` with NOT_APPLICABLE entries
 * as 0 and exactly-constant columns zeroed; covariance is the sample covariance (all zeros for a
 * one-rollout group).
 */
export function computeGroupDiagnostics(
  batch: PackedBatch,
  g: number,
  ctx: GroupDiagnosticsContext,
): GroupDiagnostics {
  const K = batch.components;
  const row0 = batch.groupOffsets[g]!;
  const G = batch.groupOffsets[g + 1]! - row0;
  const mask = batch.notApplicable;
  const names = batch.componentNames;

  const partialCounts = new Array<number>(K).fill(0);
  const droppedComponents: string[] = [];
  const dropped = new Array<boolean>(K).fill(false);
  const unscorableRollouts: number[] = [];
  if (mask !== null) {
    for (let k = 0; k < K; k++) {
      let count = 0;
      for (let i = 0; i < G; i++) count += mask[(row0 + i) * K + k]!;
      if (count === G) {
        dropped[k] = true;
        droppedComponents.push(names[k]!);
      } else {
        partialCounts[k] = count;
      }
    }
    for (let i = 0; i < G; i++) {
      let all = K > 0;
      for (let k = 0; k < K; k++) if (mask[(row0 + i) * K + k] === 0) all = false;
      if (all) unscorableRollouts.push(i);
    }
  }
  const weights = Array.from(batch.weights, (w, k) => (dropped[k] ? 0 : w));

  const X: number[][] = [];
  for (let i = 0; i < G; i++) {
    const row: number[] = [];
    for (let k = 0; k < K; k++) row.push(batch.weights[k]! * batch.values[(row0 + i) * K + k]!);
    X.push(row);
  }
  const constantComponents = Array.from({ length: K }, (_, k) => X.every((row) => row[k] === X[0]![k]));
  const centred = X.map((row) => row.slice());
  for (let k = 0; k < K; k++) {
    const mean = X.reduce((s, row) => s + row[k]!, 0) / G;
    for (let i = 0; i < G; i++) centred[i]![k] = constantComponents[k] ? 0 : X[i]![k]! - mean;
  }
  const totals = X.map((row) => row.reduce((s, x) => s + x, 0));
  const totalConstant = totals.every((t) => t === totals[0]);
  const totalMean = totals.reduce((s, t) => s + t, 0) / G;
  const centeredTotal = totals.map((t) => (totalConstant ? 0 : t - totalMean));

  const covariance: number[][] = [];
  for (let k = 0; k < K; k++) {
    const row: number[] = [];
    for (let l = 0; l < K; l++) {
      let dot = 0;
      for (let i = 0; i < G; i++) dot += centred[i]![k]! * centred[i]![l]!;
      row.push(G > 1 ? dot / (G - 1) : 0);
    }
    covariance.push(row);
  }
  const invStd = covariance.map((row, k) => (row[k]! > 0 ? 1 / Math.sqrt(row[k]!) : 0));
  const correlation = covariance.map((row, k) => row.map((c, l) => c * invStd[k]! * invStd[l]!));
  const corrGrpoShares = shareBreakdown(correlation);

  let sgrpo: SgrpoDiagnostics | null = null;
  const f = ctx.flags[g]!;
  if (ctx.sgrpo !== null && (f & GroupFlags.dropped) === 0) {
    sgrpo = {
      p: ctx.sgrpo.p,
      variant: ctx.sgrpo.variant,
      successes: ctx.sgrpoSuccesses[g]!,
      weight: ctx.sgrpoWeights[g]!,
      gated: (f & GroupFlags.sgrpoGated) !== 0,
    };
  }
  const denominator = ctx.denominators[g]!;
  return {
    group: g,
    estimator: ctx.estimator,
    groupSize: G,
    components: names,
    degenerate: (f & GroupFlags.degenerate) !== 0,
    kept: (f & GroupFlags.dropped) === 0,
    corrFallback: (f & GroupFlags.corrFallback) !== 0,
    weights,
    constantComponents,
    centeredTotal,
    covariance,
    correlation,
    coefficientSum: corrGrpoShares.total,
    denominator: Number.isNaN(denominator) ? null : denominator,
    grpoShares: shareBreakdown(covariance),
    corrGrpoShares,
    sgrpo,
    notApplicable: { droppedComponents, partialCounts, unscorableRollouts },
    advantages: Array.from(ctx.advantages.subarray(row0, row0 + G)),
  };
}
