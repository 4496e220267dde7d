/**
 * The numeric kernels: allocation-free loops over `Float64Array`s.
 *
 * Every kernel reads a validated {@link PackedBatch} (finite values, NOT_APPLICABLE already 0),
 * writes advantages into a caller-owned `out`, and uses only the preallocated {@link Workspace}.
 * Nothing here allocates per group; diagnostics live elsewhere and cost nothing unless requested.
 *
 * Exactness rule (spec §1.3): a column (or the weighted total) is constant iff all its values in
 * the group are `===`; its centred values are then forced to exactly 0. A `var > 0` test would be
 * wrong: the floating mean of identical values is not always exact (vector `c3`).
 * @module
 */
import type { PackedBatch } from "./batch.js";
import type { EpsilonPlacement, GdpoBatchNorm, GrpoScale, SingletonPolicy, StdMode } from "./types.js";
import { GroupFlags } from "./types.js";

/**
 * Resolved numeric parameters of an estimator (defaults applied, validated). One flat shape for
 * every estimator keeps the kernels monomorphic; each estimator reads only its own fields.
 */
export interface EstimatorParams {
  readonly stdMode: StdMode;
  readonly epsilon: number;
  readonly scale: GrpoScale;
  readonly singleton: SingletonPolicy;
  readonly epsilonPlacement: EpsilonPlacement;
  readonly coefficientSumFloor: number;
  /**
   * CorrGRPO's degenerate-group guard: when `max(S, floor)` is below this while the weighted total
   * varies, the divisor is the weighted total's sample std (GRPO's) instead of `sqrt(S)`; 0 = off.
   */
  readonly coefficientSumFallbackBelow: number;
  readonly normByStd: boolean;
  readonly batchNorm: GdpoBatchNorm;
  readonly batchEpsilon: number;
}

/**
 * Reusable scratch memory, sized for the largest group / batch seen so far (grown on demand,
 * never shrunk). One workspace must not be used by two runs at once.
 */
export interface Workspace {
  maxGroupSize: number;
  maxComponents: number;
  maxRollouts: number;
  maxGroups: number;
  /** Centred weighted components of one group, column-major `K×G`. */
  centred: Float64Array;
  /** Weighted totals `r_i` of one group. */
  totals: Float64Array;
  /** Numerators of one group. */
  numer: Float64Array;
  /** Per component: 1 when exactly constant. */
  constant: Uint8Array;
  /** Per component: `1/σ_k` (0 for constant columns). */
  invStd: Float64Array;
  /** Per component: batch-level column means (GDPO covariance coefficient). */
  colMean: Float64Array;
  /** Batch-level per-component normalised values `Z`, row-major `N×K` (GDPO covariance coefficient). */
  batchZ: Float64Array;
  /** Per rollout: 1 when it enters batch statistics. */
  rowActive: Uint8Array;
  /** Per group: the divisor applied in the estimator's last stage (NaN when none). */
  denominators: Float64Array;
  /** Per group: S-GRPO weight. */
  sgrpoWeights: Float64Array;
  /** Per group: S-GRPO success count. */
  sgrpoSuccesses: Int32Array;
}

/** Allocates a workspace for groups up to `maxGroupSize × maxComponents`. */
export function createWorkspace(maxGroupSize: number, maxComponents: number): Workspace {
  const G = Math.max(1, maxGroupSize);
  const K = Math.max(1, maxComponents);
  return {
    maxGroupSize: G,
    maxComponents: K,
    maxRollouts: 0,
    maxGroups: 0,
    centred: new Float64Array(G * K),
    totals: new Float64Array(G),
    numer: new Float64Array(G),
    constant: new Uint8Array(K),
    invStd: new Float64Array(K),
    colMean: new Float64Array(K),
    batchZ: new Float64Array(0),
    rowActive: new Uint8Array(0),
    denominators: new Float64Array(0),
    sgrpoWeights: new Float64Array(0),
    sgrpoSuccesses: new Int32Array(0),
  };
}

/** Grows `ws` so that it fits `batch` (a no-op once it has seen a batch this large). */
export function ensureWorkspace(ws: Workspace, batch: PackedBatch, needsBatchZ: boolean): void {
  const K = Math.max(1, batch.components);
  let G = 1;
  const offsets = batch.groupOffsets;
  for (let g = 0; g < batch.groupCount; g++) {
    const size = offsets[g + 1]! - offsets[g]!;
    if (size > G) G = size;
  }
  if (G > ws.maxGroupSize || K > ws.maxComponents) {
    const nG = Math.max(G, ws.maxGroupSize);
    const nK = Math.max(K, ws.maxComponents);
    ws.maxGroupSize = nG;
    ws.maxComponents = nK;
    ws.centred = new Float64Array(nG * nK);
    ws.totals = new Float64Array(nG);
    ws.numer = new Float64Array(nG);
    ws.constant = new Uint8Array(nK);
    ws.invStd = new Float64Array(nK);
    ws.colMean = new Float64Array(nK);
  }
  const N = batch.rolloutCount;
  if (N > ws.maxRollouts) {
    ws.maxRollouts = N;
    ws.rowActive = new Uint8Array(N);
  }
  if (needsBatchZ && ws.batchZ.length < N * ws.maxComponents) {
    ws.batchZ = new Float64Array(Math.max(N, ws.maxRollouts) * ws.maxComponents);
  }
  if (batch.groupCount > ws.maxGroups) {
    ws.maxGroups = batch.groupCount;
    ws.denominators = new Float64Array(batch.groupCount);
    ws.sgrpoWeights = new Float64Array(batch.groupCount);
    ws.sgrpoSuccesses = new Int32Array(batch.groupCount);
  }
}

/**
 * Writes the weighted totals `r_i = Σ_k w_k R_ik` of rows `row0 … row0+G−1` into `totals[0…G)`
 * (summed left to right over k) and returns 1 when they are all `===`, else 0.
 */
export function weightedTotals(
  values: Float64Array,
  row0: number,
  G: number,
  K: number,
  w: Float64Array,
  totals: Float64Array,
): number {
  let base = row0 * K;
  for (let i = 0; i < G; i++) {
    let t = 0;
    for (let k = 0; k < K; k++) t += w[k]! * values[base + k]!;
    totals[i] = t;
    base += K;
  }
  const t0 = totals[0]!;
  for (let i = 1; i < G; i++) if (totals[i] !== t0) return 0;
  return 1;
}

/**
 * GRPO / Dr. GRPO for one group: `A_i = (r_i − mean r) / d`, `d = σ + ε` (`scale: "group"`),
 * `batchDivisor` (`"batch"`) or 1 (`"none"`). Exactly constant totals give exactly 0.
 * Writes `out[row0 … row0+G)` and `ws.denominators[g]`.
 */
export function grpoGroup(
  values: Float64Array,
  row0: number,
  G: number,
  K: number,
  w: Float64Array,
  p: EstimatorParams,
  ws: Workspace,
  out: Float64Array,
  g: number,
  batchDivisor: number,
): void {
  const tot = ws.totals;
  const constant = weightedTotals(values, row0, G, K, w, tot);
  const scale = p.scale;
  if (G === 1) {
    if (p.singleton === "verl") {
      const d = scale === "none" ? 1 : scale === "batch" ? batchDivisor : 1 + p.epsilon;
      out[row0] = tot[0]! / d;
      ws.denominators[g] = d;
    } else {
      out[row0] = 0;
      ws.denominators[g] = Number.NaN;
    }
    return;
  }
  let mean = 0;
  for (let i = 0; i < G; i++) mean += tot[i]!;
  mean /= G;
  let d = 1;
  if (scale === "group") {
    let ss = 0;
    if (constant === 0) {
      for (let i = 0; i < G; i++) {
        const c = tot[i]! - mean;
        ss += c * c;
      }
    }
    d = Math.sqrt(ss / (p.stdMode === "sample" ? G - 1 : G)) + p.epsilon;
  } else if (scale === "batch") {
    d = batchDivisor;
  }
  ws.denominators[g] = d;
  if (constant === 1) {
    for (let i = 0; i < G; i++) out[row0 + i] = 0;
    return;
  }
  for (let i = 0; i < G; i++) out[row0 + i] = (tot[i]! - mean) / d;
}

/**
 * CorrGRPO for one group (`grpo_covariance_coefficient`, spec §4.2 with the exact-constant rule):
 * `X = w·R`; `C = X − column means` (exactly-constant columns → 0); `n_i = Σ_k C_ik`;
 * `S = Σ_kl ρ_kl` over non-constant columns; `d = sqrt(max(S, floor) + ε)` (or `sqrt(·) + ε`);
 * `A_i = n_i / d` (0 when the weighted total is exactly constant).
 *
 * Degenerate-group guard: when `max(S, floor) < fallbackBelow` although the weighted total varies
 * (standardised components that cancel, e.g. two perfectly anti-correlated rewards), `sqrt(S)` would
 * amplify the centred total without bound; the divisor is then GRPO's, the total's sample std, with ε
 * placed the same way. Returns true when the guard replaced the divisor.
 */
export function corrGrpoGroup(
  values: Float64Array,
  row0: number,
  G: number,
  K: number,
  w: Float64Array,
  p: EstimatorParams,
  ws: Workspace,
  out: Float64Array,
  g: number,
): boolean {
  const C = ws.centred;
  const tot = ws.totals;
  const num = ws.numer;
  const cst = ws.constant;
  const inv = ws.invStd;
  const base = row0 * K;
  for (let i = 0; i < G; i++) {
    tot[i] = 0;
    num[i] = 0;
  }
  for (let k = 0; k < K; k++) {
    const wk = w[k]!;
    const x0 = wk * values[base + k]!;
    let sum = 0;
    let constant = 1;
    for (let i = 0, j = base + k; i < G; i++, j += K) {
      const x = wk * values[j]!;
      sum += x;
      tot[i] += x;
      if (x !== x0) constant = 0;
    }
    cst[k] = constant;
    const off = k * G;
    if (constant === 1) {
      for (let i = 0; i < G; i++) C[off + i] = 0;
      continue;
    }
    const mean = sum / G;
    for (let i = 0, j = base + k; i < G; i++, j += K) {
      const c = wk * values[j]! - mean;
      C[off + i] = c;
      num[i] += c;
    }
  }
  let totalConstant = 1;
  const t0 = tot[0]!;
  for (let i = 1; i < G; i++) {
    if (tot[i] !== t0) {
      totalConstant = 0;
      break;
    }
  }
  let S = 0;
  if (G > 1) {
    const dof = G - 1;
    for (let k = 0; k < K; k++) {
      if (cst[k] === 1) {
        inv[k] = 0;
        continue;
      }
      const off = k * G;
      let dot = 0;
      for (let i = 0; i < G; i++) {
        const c = C[off + i]!;
        dot += c * c;
      }
      const v = dot / dof;
      const s = v > 0 ? 1 / Math.sqrt(v) : 0;
      inv[k] = s;
      S += v * s * s;
    }
    for (let k = 0; k < K; k++) {
      const sk = inv[k]!;
      if (sk === 0) continue;
      const ok = k * G;
      for (let l = k + 1; l < K; l++) {
        const sl = inv[l]!;
        if (sl === 0) continue;
        const ol = l * G;
        let dot = 0;
        for (let i = 0; i < G; i++) dot += C[ok + i]! * C[ol + i]!;
        S += 2 * ((dot / dof) * sk * sl);
      }
    }
  }
  let d = 1;
  let fellBack = false;
  if (p.normByStd) {
    let Se = Math.max(S, p.coefficientSumFloor);
    if (Se < p.coefficientSumFallbackBelow && totalConstant === 0 && G > 1) {
      Se = sampleVariance(tot, G);
      fellBack = true;
    }
    d = placeEpsilon(Se, p);
  }
  ws.denominators[g] = G > 1 ? d : Number.NaN;
  if (totalConstant === 1 || G === 1) {
    for (let i = 0; i < G; i++) out[row0 + i] = 0;
    return false;
  }
  for (let i = 0; i < G; i++) out[row0 + i] = num[i]! / d;
  return fellBack;
}

/** Sample variance (÷ (n − 1)) of `x[0..n)`, two-pass. */
function sampleVariance(x: Float64Array, n: number): number {
  let sum = 0;
  for (let i = 0; i < n; i++) sum += x[i]!;
  const mean = sum / n;
  let dot = 0;
  for (let i = 0; i < n; i++) {
    const c = x[i]! - mean;
    dot += c * c;
  }
  return dot / (n - 1);
}

/**
 * CorrGRPO's divisor from the (floored, or the guard's) sum `v`: `sqrt(v + ε)` with `inside` placement (the
 * released code), `sqrt(v) + ε` with `outside` (the project page).
 */
export function placeEpsilon(v: number, p: Pick<EstimatorParams, "epsilon" | "epsilonPlacement">): number {
  return p.epsilonPlacement === "inside" ? Math.sqrt(v + p.epsilon) : Math.sqrt(v) + p.epsilon;
}

/**
 * Normalise-then-sum for one group (MO-GRPO, and GDPO's first stage):
 * `out_i = Σ_k w_k (R_ik − μ_k) / (σ_k + ε)`, exactly-constant columns contributing 0.
 * When `z` is given, also writes each term into `z[(row0+i)·K + k]`.
 */
export function normalizedSumGroup(
  values: Float64Array,
  row0: number,
  G: number,
  K: number,
  w: Float64Array,
  p: EstimatorParams,
  out: Float64Array,
  z: Float64Array | null,
): void {
  const base = row0 * K;
  for (let i = 0; i < G; i++) out[row0 + i] = 0;
  if (z !== null) z.fill(0, base, base + G * K);
  if (G === 1) return;
  const eps = p.epsilon;
  const dof = p.stdMode === "sample" ? G - 1 : G;
  for (let k = 0; k < K; k++) {
    const wk = w[k]!;
    const x0 = values[base + k]!;
    let sum = 0;
    let constant = 1;
    for (let i = 0, j = base + k; i < G; i++, j += K) {
      const x = values[j]!;
      sum += x;
      if (x !== x0) constant = 0;
    }
    if (constant === 1 || wk === 0) continue;
    const mean = sum / G;
    let ss = 0;
    for (let i = 0, j = base + k; i < G; i++, j += K) {
      const c = values[j]! - mean;
      ss += c * c;
    }
    const d = Math.sqrt(ss / dof) + eps;
    if (z === null) {
      for (let i = 0, j = base + k; i < G; i++, j += K) out[row0 + i] += wk * ((values[j]! - mean) / d);
    } else {
      for (let i = 0, j = base + k; i < G; i++, j += K) {
        const t = wk * ((values[j]! - mean) / d);
        out[row0 + i] += t;
        z[j] = t;
      }
    }
  }
}

/**
 * Marks the rollouts that enter batch-level statistics: rows of groups that are neither dropped
 * nor degenerate, and (when `useLengths` and lengths are known) that have at least one token.
 * Returns how many rows are active.
 */
export function markActiveRows(
  batch: PackedBatch,
  flags: Uint8Array,
  ws: Workspace,
  useLengths: boolean,
): number {
  const active = ws.rowActive;
  const offsets = batch.groupOffsets;
  const lengths = useLengths ? batch.lengths : null;
  const skip = GroupFlags.dropped | GroupFlags.degenerate;
  let count = 0;
  for (let g = 0; g < batch.groupCount; g++) {
    const on = (flags[g]! & skip) === 0 ? 1 : 0;
    for (let r = offsets[g]!; r < offsets[g + 1]!; r++) {
      const a = on === 1 && (lengths === null || lengths[r]! > 0) ? 1 : 0;
      active[r] = a;
      count += a;
    }
  }
  return count;
}

/**
 * `σ + ε` of the weighted totals of every active rollout in the batch (GRPO `scale: "batch"`,
 * TRL's `scale_rewards="batch"`). Returns `ε` when fewer than two rows are active or all totals are equal.
 */
export function batchTotalsDivisor(batch: PackedBatch, p: EstimatorParams, ws: Workspace): number {
  const { values, weights: w, components: K, rolloutCount: N } = batch;
  const active = ws.rowActive;
  let n = 0;
  let sum = 0;
  let first = 0;
  let constant = 1;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) continue;
    let t = 0;
    for (let k = 0, j = r * K; k < K; k++, j++) t += w[k]! * values[j]!;
    if (n === 0) first = t;
    else if (t !== first) constant = 0;
    sum += t;
    n++;
  }
  if (n < 2 || constant === 1) return p.epsilon;
  const mean = sum / n;
  let ss = 0;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) continue;
    let t = 0;
    for (let k = 0, j = r * K; k < K; k++, j++) t += w[k]! * values[j]!;
    const c = t - mean;
    ss += c * c;
  }
  return Math.sqrt(ss / (p.stdMode === "sample" ? n - 1 : n)) + p.epsilon;
}

/**
 * GDPO's batch stage, in place on `out` (which holds the per-group sums): `sequence`
 * `(x − μ)/(σ + ε_b)`; `token` the length-weighted mean and Bessel-corrected variance,
 * `(x − μ)/sqrt(var + ε_b)`; `none` leaves `out` as is. Inactive rows get 0; an exactly constant
 * set of active values gives 0. Returns the divisor (NaN when there is none).
 */
export function gdpoBatchStage(
  batch: PackedBatch,
  p: EstimatorParams,
  ws: Workspace,
  out: Float64Array,
): number {
  const N = batch.rolloutCount;
  const active = ws.rowActive;
  const token = p.batchNorm === "token";
  const lengths = token ? batch.lengths : null;
  let wsum = 0;
  let sum = 0;
  let first = 0;
  let seen = 0;
  let constant = 1;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) {
      out[r] = 0;
      continue;
    }
    const x = out[r]!;
    const L = lengths === null ? 1 : lengths[r]!;
    if (seen === 0) first = x;
    else if (x !== first) constant = 0;
    seen++;
    wsum += L;
    sum += L * x;
  }
  if (p.batchNorm === "none") return Number.NaN;
  if (seen < 2 || constant === 1 || wsum <= 1) {
    for (let r = 0; r < N; r++) out[r] = 0;
    return Number.NaN;
  }
  const mean = sum / wsum;
  let ss = 0;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) continue;
    const L = lengths === null ? 1 : lengths[r]!;
    const c = out[r]! - mean;
    ss += L * c * c;
  }
  let d: number;
  if (token) {
    d = Math.sqrt(ss / (wsum - 1) + p.batchEpsilon);
  } else {
    d = Math.sqrt(ss / (p.stdMode === "sample" ? wsum - 1 : wsum)) + p.batchEpsilon;
  }
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) continue;
    out[r] = (out[r]! - mean) / d;
  }
  return d;
}

/**
 * The batch stage of `gdpo_covariance_coefficient` (spec §4.6), in place on `out` (per-group sums
 * `S_i`) with the per-component terms in `ws.batchZ`: Pearson correlation of the `Z` columns over
 * the active rows (exactly-constant columns → zero row/column), `d = sqrt(max(ΣP, floor) + ε)`,
 * `A_i = (S_i − length-weighted mean S) / d`. Inactive rows get 0. Returns `d` (NaN when fewer
 * than two rows are active or every `S_i` is exactly equal, in which case all advantages are 0) and
 * whether the degenerate guard replaced `sqrt(S)` by the sample std of the `S_i` (see
 * {@link corrGrpoGroup}).
 */
export function gdpoCovarianceBatchStage(
  batch: PackedBatch,
  p: EstimatorParams,
  ws: Workspace,
  out: Float64Array,
): { readonly denominator: number; readonly fellBack: boolean } {
  const N = batch.rolloutCount;
  const K = batch.components;
  const active = ws.rowActive;
  const Z = ws.batchZ;
  const mean = ws.colMean;
  const cst = ws.constant;
  const inv = ws.invStd;
  const lengths = batch.lengths;
  let n = 0;
  for (let k = 0; k < K; k++) {
    mean[k] = 0;
    cst[k] = 1;
  }
  let wsum = 0;
  let ssum = 0;
  let sFirst = 0;
  let sConstant = 1;
  let first = 0;
  while (first < N && active[first] === 0) first++;
  const firstBase = first * K;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) {
      out[r] = 0;
      continue;
    }
    const j = r * K;
    for (let k = 0; k < K; k++) {
      const z = Z[j + k]!;
      mean[k] += z;
      if (z !== Z[firstBase + k]) cst[k] = 0;
    }
    const L = lengths === null ? 1 : lengths[r]!;
    const s = out[r]!;
    if (n === 0) sFirst = s;
    else if (s !== sFirst) sConstant = 0;
    wsum += L;
    ssum += L * s;
    n++;
  }
  if (n < 2 || sConstant === 1) {
    for (let r = 0; r < N; r++) out[r] = 0;
    return { denominator: Number.NaN, fellBack: false };
  }
  for (let k = 0; k < K; k++) mean[k] = mean[k]! / n;
  const dof = n - 1;
  let S = 0;
  for (let k = 0; k < K; k++) {
    if (cst[k] === 1) {
      inv[k] = 0;
      continue;
    }
    const mk = mean[k]!;
    let dot = 0;
    for (let r = 0; r < N; r++) {
      if (active[r] === 0) continue;
      const c = Z[r * K + k]! - mk;
      dot += c * c;
    }
    const v = dot / dof;
    const s = v > 0 ? 1 / Math.sqrt(v) : 0;
    inv[k] = s;
    S += v * s * s;
  }
  for (let k = 0; k < K; k++) {
    const sk = inv[k]!;
    if (sk === 0) continue;
    const mk = mean[k]!;
    for (let l = k + 1; l < K; l++) {
      const sl = inv[l]!;
      if (sl === 0) continue;
      const ml = mean[l]!;
      let dot = 0;
      for (let r = 0; r < N; r++) {
        if (active[r] === 0) continue;
        dot += (Z[r * K + k]! - mk) * (Z[r * K + l]! - ml);
      }
      S += 2 * ((dot / dof) * sk * sl);
    }
  }
  let Se = Math.max(S, p.coefficientSumFloor);
  let fellBack = false;
  if (Se < p.coefficientSumFallbackBelow) {
    // Degenerate batch (the standardised columns cancel): divide by the summed values' sample std.
    let sm = 0;
    for (let r = 0; r < N; r++) if (active[r] !== 0) sm += out[r]!;
    sm /= n;
    let dot = 0;
    for (let r = 0; r < N; r++) {
      if (active[r] === 0) continue;
      const c = out[r]! - sm;
      dot += c * c;
    }
    Se = dot / dof;
    fellBack = true;
  }
  const d = placeEpsilon(Se, p);
  const sMean = ssum / wsum;
  for (let r = 0; r < N; r++) {
    if (active[r] === 0) continue;
    out[r] = (out[r]! - sMean) / d;
  }
  return { denominator: d, fellBack };
}
