/**
 * A plain, obviously-correct implementation of every estimator and step on nested `number[]`
 * arrays, written straight from `specs/advantages.md`. It exists only to check the optimised
 * kernels (seeded equivalence tests, verl `test_grpo_and_vectorized_equivalence` style); it is
 * slow, allocates freely, and is not exported from the package.
 * @module
 */
import type {
  AdvantageEstimatorName,
  EpsilonPlacement,
  GdpoBatchNorm,
  SgrpoVariant,
  StdMode,
} from "./types.js";

/** Everything the reference needs, flattened (defaults are the engine's). */
export interface ReferenceConfig {
  readonly estimator: AdvantageEstimatorName;
  readonly stdMode?: StdMode;
  readonly epsilon?: number;
  readonly scale?: "group" | "batch" | "none";
  readonly singleton?: "zero" | "verl";
  readonly epsilonPlacement?: EpsilonPlacement;
  readonly coefficientSumFloor?: number;
  readonly coefficientSumFallbackBelow?: number;
  readonly normByStd?: boolean;
  readonly batchNorm?: GdpoBatchNorm;
  readonly batchEpsilon?: number;
  readonly sgrpo?: { p: number; variant?: SgrpoVariant; component?: number; successThreshold?: number };
  /** `undefined` = off, `-1` = weighted total, else component index. */
  readonly dynamicSampling?: number;
}

/** One reference group: raw rewards, optional N/A flags and lengths. */
export interface ReferenceGroup {
  readonly rewards: number[][];
  readonly notApplicable?: boolean[][];
  readonly lengths?: number[];
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const mean = (xs: readonly number[]): number => sum(xs) / xs.length;
const allEqual = (xs: readonly number[]): boolean => xs.every((x) => x === xs[0]);
const column = (m: readonly number[][], k: number): number[] => m.map((row) => row[k]!);

function std(xs: readonly number[], mode: StdMode): number {
  const m = mean(xs);
  const ss = sum(xs.map((x) => (x - m) ** 2));
  return Math.sqrt(ss / (mode === "sample" ? xs.length - 1 : xs.length));
}

/** Centred values, exactly 0 when all values are `===`. */
function centre(xs: readonly number[]): number[] {
  if (allEqual(xs)) return xs.map(() => 0);
  const m = mean(xs);
  return xs.map((x) => x - m);
}

/** Σ_kl of the Pearson correlation matrix of the columns of `m` (constant columns: zero row/column). */
export function referenceCoefficientSum(m: readonly number[][]): number {
  const K = m[0]?.length ?? 0;
  const n = m.length;
  if (n < 2) return 0;
  const cols = Array.from({ length: K }, (_, k) => centre(column(m, k)));
  const cov = (a: number[], b: number[]) => sum(a.map((x, i) => x * b[i]!)) / (n - 1);
  let S = 0;
  for (let k = 0; k < K; k++) {
    for (let l = 0; l < K; l++) {
      const vk = cov(cols[k]!, cols[k]!);
      const vl = cov(cols[l]!, cols[l]!);
      if (vk > 0 && vl > 0) S += cov(cols[k]!, cols[l]!) / Math.sqrt(vk) / Math.sqrt(vl);
    }
  }
  return S;
}

/**
 * CorrGRPO's divisor: `sqrt(max(S, floor) + ε)`, or, when `max(S, floor)` is below the degenerate
 * guard's threshold, the same expression over the sample variance of `values` (the weighted totals,
 * or the batch's summed terms) instead of S.
 */
function correlationDenominator(S: number, values: readonly number[], c: ReferenceConfig): number {
  let Se = Math.max(S, c.coefficientSumFloor ?? 0);
  if (Se < (c.coefficientSumFallbackBelow ?? 0.01)) Se = std(values, "sample") ** 2;
  const eps = c.epsilon ?? 1e-6;
  return (c.epsilonPlacement ?? "inside") === "inside" ? Math.sqrt(Se + eps) : Math.sqrt(Se) + eps;
}

/** Per-component normalised terms `w_k (R_k − μ_k)/(σ_k + ε)` of one group (0 for constant columns). */
function normalizedTerms(X: number[][], weights: readonly number[], c: ReferenceConfig): number[][] {
  const G = X.length;
  const terms = X.map((row) => row.map(() => 0));
  if (G < 2) return terms;
  weights.forEach((w, k) => {
    const col = column(X, k);
    if (allEqual(col) || w === 0) return;
    const m = mean(col);
    const s = std(col, c.stdMode ?? "sample");
    col.forEach((x, i) => {
      terms[i]![k] = w * ((x - m) / (s + (c.epsilon ?? 1e-6)));
    });
  });
  return terms;
}

/**
 * Reference pipeline: N/A → 0, dynamic sampling, estimator, S-GRPO, unscorable rollouts → 0.
 * Returns advantages per group.
 */
export function referenceAdvantages(
  groups: readonly ReferenceGroup[],
  weights: readonly number[],
  c: ReferenceConfig,
): number[][] {
  const K = weights.length;
  const R = groups.map((g) =>
    g.rewards.map((row, i) => row.map((v, k) => (g.notApplicable?.[i]?.[k] ? 0 : v))),
  );
  const totals = R.map((rows) => rows.map((row) => row.reduce((t, v, k) => t + weights[k]! * v, 0)));
  const kept = R.map((rows, g) => {
    if (c.dynamicSampling === undefined || rows.length === 1) return true;
    const metric = c.dynamicSampling < 0 ? totals[g]! : column(rows, c.dynamicSampling);
    return !allEqual(metric);
  });
  const active = R.map((rows, g) => kept[g]! && rows.length > 1);
  const eps = c.epsilon ?? 1e-6;
  let A: number[][];
  const e = c.estimator;
  if (e === "grpo" || e === "dr_grpo") {
    const scale = e === "dr_grpo" ? "none" : (c.scale ?? "group");
    const batchRows = totals.filter((_, g) => active[g]).flat();
    const batchDivisor =
      batchRows.length < 2 || allEqual(batchRows) ? eps : std(batchRows, c.stdMode ?? "sample") + eps;
    A = totals.map((t, g) => {
      if (!kept[g]) return t.map(() => 0);
      if (t.length === 1) {
        if (e === "dr_grpo" || (c.singleton ?? "zero") === "zero") return [0];
        const d = scale === "none" ? 1 : scale === "batch" ? batchDivisor : 1 + eps;
        return [t[0]! / d];
      }
      const d = scale === "none" ? 1 : scale === "batch" ? batchDivisor : std(t, c.stdMode ?? "sample") + eps;
      return centre(t).map((n) => n / d);
    });
  } else if (e === "grpo_covariance_coefficient") {
    A = R.map((rows, g) => {
      if (!kept[g] || rows.length === 1) return rows.map(() => 0);
      const X = rows.map((row) => row.map((v, k) => weights[k]! * v));
      const C = Array.from({ length: K }, (_, k) => centre(column(X, k)));
      const numerator = rows.map((_, i) => sum(C.map((col) => col[i]!)));
      if (allEqual(totals[g]!)) return rows.map(() => 0);
      const d = c.normByStd === false ? 1 : correlationDenominator(referenceCoefficientSum(X), totals[g]!, c);
      return numerator.map((n) => n / d);
    });
  } else {
    const terms = R.map((rows) => normalizedTerms(rows, weights, c));
    const S = terms.map((t) => t.map((row) => sum(row)));
    if (e === "mo_grpo") {
      A = S.map((s, g) => (kept[g] ? s : s.map(() => 0)));
    } else if (e === "gdpo") {
      const mode = c.batchNorm ?? "sequence";
      const token = mode === "token";
      const L = groups.map((g, gi) => R[gi]!.map((_, i) => (token ? (g.lengths?.[i] ?? 1) : 1)));
      const rowActive = S.map((s, g) => s.map((_, i) => active[g]! && L[g]![i]! > 0));
      const xs = S.flatMap((s, g) => s.filter((_, i) => rowActive[g]![i]));
      const ws = L.flatMap((l, g) => l.filter((_, i) => rowActive[g]![i]));
      const W = sum(ws);
      const mu = sum(xs.map((x, j) => ws[j]! * x)) / W;
      const ss = sum(xs.map((x, j) => ws[j]! * (x - mu) ** 2));
      const bEps = c.batchEpsilon ?? (token ? 1e-8 : eps);
      const degenerate = xs.length < 2 || allEqual(xs) || W <= 1;
      const d = token
        ? Math.sqrt(ss / (W - 1) + bEps)
        : Math.sqrt(ss / ((c.stdMode ?? "sample") === "sample" ? W - 1 : W)) + bEps;
      A = S.map((s, g) =>
        s.map((x, i) => {
          if (!rowActive[g]![i]) return 0;
          if (mode === "none") return x;
          return degenerate ? 0 : (x - mu) / d;
        }),
      );
    } else {
      const L = groups.map((g, gi) => R[gi]!.map((_, i) => g.lengths?.[i] ?? 1));
      const rowActive = S.map((s, g) => s.map((_, i) => active[g]! && L[g]![i]! > 0));
      const Zrows = terms.flatMap((t, g) => t.filter((_, i) => rowActive[g]![i]));
      const xs = S.flatMap((s, g) => s.filter((_, i) => rowActive[g]![i]));
      const ws = L.flatMap((l, g) => l.filter((_, i) => rowActive[g]![i]));
      const degenerate = xs.length < 2 || allEqual(xs);
      const mu = sum(xs.map((x, j) => ws[j]! * x)) / sum(ws);
      const d = degenerate ? 1 : correlationDenominator(referenceCoefficientSum(Zrows), xs, c);
      A = S.map((s, g) => s.map((x, i) => (!rowActive[g]![i] || degenerate ? 0 : (x - mu) / d)));
    }
  }
  if (c.sgrpo !== undefined) {
    const o = c.sgrpo;
    A = A.map((a, g) => {
      if (!kept[g]) return a;
      const na = groups[g]!.notApplicable;
      if (o.component !== undefined && na?.every((row) => row[o.component!])) return a;
      const metric = o.component === undefined ? totals[g]! : column(R[g]!, o.component);
      const k = metric.filter((m) => m > (o.successThreshold ?? 0)).length;
      const w = referenceSgrpoWeight(a.length, k, o.p);
      return (o.variant ?? "code") === "code" ? a.map((x) => w * x) : centre(totals[g]!).map((n) => w * n);
    });
  }
  return A.map((a, g) =>
    a.map((x, i) => {
      const flags = groups[g]!.notApplicable?.[i];
      return flags !== undefined && K > 0 && flags.every(Boolean) ? 0 : x;
    }),
  );
}

/** S-GRPO `w*(n, k, p)` straight from the released code's formula (ε = 1e-8). */
export function referenceSgrpoWeight(n: number, k: number, p: number, eps = 1e-8): number {
  if (n === 0) return 0;
  const q = k / n;
  const t = Math.min(1, Math.max(0, (q - p) / (1 - 2 * p)));
  const den = Math.sqrt(q * (1 - q) + eps) * Math.sqrt(t * (1 - t) + eps);
  return den === 0 ? 0 : ((1 - 2 * p) * t * (1 - t)) / den;
}
