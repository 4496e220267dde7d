/**
 * Per-token policy-gradient losses, their derivatives, the k3 KL and the loss aggregation modes —
 * pure functions, no state (`trainer/README.md`, "Loss types").
 *
 * Conventions: `ratio = exp(logp − old)` with the log-ratio clamped to ±{@link LOG_RATIO_CLAMP}
 * (verl); a loss is minimised; derivatives are with respect to the current token logprob `logp`
 * (or the ratio), everything else (old, reference, advantage, the CISPO weight) is held fixed.
 * Checked against `trainer/test/fixtures/advantage-vectors.json` (`j_*`, `k_*`) in `loss.test.ts`.
 * @module
 */
import type { CispoMode, LossAggregation } from "./types.js";

/** verl clamps `logp − old` to ±20 before `exp`, so a ratio never overflows. */
export const LOG_RATIO_CLAMP = 20;

/** The importance ratio `exp(logp − old)` and its derivative with respect to `logp`. */
export interface ImportanceRatio {
  readonly ratio: number;
  /** `ratio` inside the clamp, 0 where the log-ratio was clamped. */
  readonly dRatioDLogp: number;
}

/** `exp(clamp(logp − oldLogp, ±20))` and d/dlogp of it. */
export function importanceRatio(logp: number, oldLogp: number): ImportanceRatio {
  const d = logp - oldLogp;
  if (d > LOG_RATIO_CLAMP) return { ratio: Math.exp(LOG_RATIO_CLAMP), dRatioDLogp: 0 };
  if (d < -LOG_RATIO_CLAMP) return { ratio: Math.exp(-LOG_RATIO_CLAMP), dRatioDLogp: 0 };
  const ratio = Math.exp(d);
  return { ratio, dRatioDLogp: ratio };
}

/** Which branch of the clipped objective binds for a token. */
export type ClipSide = "none" | "low" | "high" | "dual";

/** Options of {@link ppoClipTokenLoss}. */
export interface PpoClipOptions {
  /** Lower clip: the ratio is clipped below at `1 − epsLow`. */
  readonly epsLow: number;
  /** Upper clip: the ratio is clipped above at `1 + epsHigh` (DAPO clip-higher: 0.28). */
  readonly epsHigh: number;
  /** Dual-clip constant `c > 1` for negative advantages; 0 = off. @default 0 */
  readonly dualClipC?: number;
}

/** One token's PPO clip-higher term. */
export interface PpoTokenLoss {
  /** `max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high))`, then `min(·, −c·A)` for `A < 0` with dual-clip. */
  readonly loss: number;
  /** d loss / d ratio: `−A` when the unclipped branch binds, else 0. */
  readonly dLossDRatio: number;
  /** `low`/`high`: the clipped branch binds (strictly); `dual`: the dual clip binds. */
  readonly clip: ClipSide;
}

/**
 * PPO clip-higher per-token loss with optional dual-clip (verl `compute_policy_loss_vanilla`,
 * TRL `_compute_loss`): `ℓ = max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high))`; for `A < 0` and
 * `c > 0`, `ℓ = min(ℓ, −c·A)`. The gradient flows only through the unclipped branch: d/dr = −A when
 * `−A·r ≥ −A·clip(r)` and the dual clip does not bind, else 0 (ties go to the unclipped branch).
 */
export function ppoClipTokenLoss(ratio: number, advantage: number, options: PpoClipOptions): PpoTokenLoss {
  const a = advantage;
  const clipped = Math.min(Math.max(ratio, 1 - options.epsLow), 1 + options.epsHigh);
  const l1 = -a * ratio;
  const l2 = -a * clipped;
  let loss = l1;
  let dLossDRatio = -a;
  let clip: ClipSide = "none";
  if (l2 > l1) {
    loss = l2;
    dLossDRatio = 0;
    clip = ratio < 1 ? "low" : "high";
  }
  const c = options.dualClipC ?? 0;
  if (c > 0 && a < 0) {
    const l3 = -a * c;
    if (l3 < loss) {
      loss = l3;
      dLossDRatio = 0;
      clip = "dual";
    }
  }
  return { loss, dLossDRatio, clip };
}

/** Options of {@link cispoTokenLoss}. */
export interface CispoOptions {
  /** Two-sided mode: lower bound `1 − epsLow`. Ignored by `upper-cap`. */
  readonly epsLow: number;
  /** Two-sided mode: upper bound `1 + epsHigh`; `upper-cap` mode: the absolute cap `epsHigh`. */
  readonly epsHigh: number;
  /** @default "two-sided" */
  readonly mode?: CispoMode;
}

/** One token's CISPO term. */
export interface CispoTokenLoss {
  /** `−sg(ŵ)·A·logp`. */
  readonly loss: number;
  /** d loss / d logp = `−ŵ·A` (never zeroed, unlike PPO clipping). */
  readonly gradCoefWrtLogp: number;
  /** The stop-gradient importance weight ŵ. */
  readonly clippedWeight: number;
  /** True when the clip changed the ratio. */
  readonly clipped: boolean;
}

/**
 * CISPO per-token loss (MiniMax-M1, arXiv 2506.13585): `ℓ = −sg(ŵ)·A·logp` with
 * `ŵ = clamp(r, 1 − ε_low, 1 + ε_high)` (verl, `two-sided`) or `ŵ = min(r, ε_high)` (TRL,
 * `upper-cap`, ε_high an absolute cap). `logp` is the current token logprob.
 */
export function cispoTokenLoss(
  ratio: number,
  advantage: number,
  logp: number,
  options: CispoOptions,
): CispoTokenLoss {
  const w =
    (options.mode ?? "two-sided") === "upper-cap"
      ? Math.min(ratio, options.epsHigh)
      : Math.min(Math.max(ratio, 1 - options.epsLow), 1 + options.epsHigh);
  const gradCoefWrtLogp = -w * advantage;
  return { loss: gradCoefWrtLogp * logp, gradCoefWrtLogp, clippedWeight: w, clipped: w !== ratio };
}

/** The k3 KL estimate of one token and its derivative. */
export interface KlTerm {
  /** `exp(ref − logp) − (ref − logp) − 1` (≥ 0). */
  readonly value: number;
  /** d value / d logp = `1 − exp(ref − logp)`. */
  readonly dValueDLogp: number;
}

/**
 * Schulman's k3 estimator of KL(π_θ ‖ π_ref) for one sampled token (TRL `beta`, verl
 * `kl_loss_type: low_var_kl` without its ±10 clamp): `exp(ref − logp) − (ref − logp) − 1`.
 */
export function k3Kl(logp: number, refLogp: number): KlTerm {
  const d = refLogp - logp;
  const e = Math.exp(d);
  return { value: e - d - 1, dValueDLogp: 1 - e };
}

/** Truncated importance-sampling weight against the behaviour policy: `min(exp(old − rollout), cap)`. */
export function rolloutIsWeight(oldLogp: number, rolloutLogp: number, cap: number): number {
  return Math.min(Math.exp(Math.min(oldLogp - rolloutLogp, LOG_RATIO_CLAMP)), cap);
}

/** Options of {@link aggregationWeights} and {@link aggregateLoss}. */
export interface AggregationOptions {
  /** L_max for `seq-mean-token-sum-norm`. */
  readonly maxCompletionLength?: number;
}

function sumOf(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return s;
}

/**
 * Per-token weights `w[i][t]` with `aggregated loss = Σ_{i,t} w[i][t]·ℓ[i][t]`, from the 0/1 masks of
 * the B sequences of one (mini-)batch. B counts every sequence, including fully masked ones (TRL):
 * - `token-mean`: `m / max(1, Σ_{i,t} m)`
 * - `seq-mean-token-mean`: `m / (B · max(1, Σ_t m_i))`
 * - `seq-mean-token-sum`: `m / B`
 * - `seq-mean-token-sum-norm`: `m / (B · L_max)`
 */
export function aggregationWeights(
  masks: readonly ArrayLike<number>[],
  mode: LossAggregation,
  options: AggregationOptions = {},
): Float64Array[] {
  const b = masks.length;
  let total = 0;
  for (const m of masks) total += sumOf(m);
  const lMax = options.maxCompletionLength ?? Number.NaN;
  if (mode === "seq-mean-token-sum-norm" && !(lMax > 0)) {
    throw new RangeError("seq-mean-token-sum-norm needs maxCompletionLength > 0");
  }
  return masks.map((m) => {
    let scale: number;
    switch (mode) {
      case "token-mean":
        scale = 1 / Math.max(1, total);
        break;
      case "seq-mean-token-mean":
        scale = 1 / (b * Math.max(1, sumOf(m)));
        break;
      case "seq-mean-token-sum":
        scale = 1 / b;
        break;
      case "seq-mean-token-sum-norm":
        scale = 1 / (b * lMax);
        break;
    }
    const w = new Float64Array(m.length);
    for (let t = 0; t < m.length; t++) w[t] = m[t]! * scale;
    return w;
  });
}

/**
 * Aggregates per-token losses `ℓ[i][t]` of B sequences by `mode` (`advantages.md` §8.3), with
 * optional 0/1 masks (default: every token counts). Fully masked sequences still count in B.
 */
export function aggregateLoss(
  perTokenLoss: readonly (readonly number[])[],
  mode: LossAggregation,
  options: AggregationOptions & { readonly masks?: readonly ArrayLike<number>[] } = {},
): number {
  const b = perTokenLoss.length;
  if (b === 0) return 0;
  const masks = options.masks ?? perTokenLoss.map((l) => l.map(() => 1));
  let tokenSum = 0;
  let tokenCount = 0;
  let seqMeanSum = 0;
  for (let i = 0; i < b; i++) {
    const l = perTokenLoss[i]!;
    const m = masks[i]!;
    let s = 0;
    let c = 0;
    for (let t = 0; t < l.length; t++) {
      s += m[t]! * l[t]!;
      c += m[t]!;
    }
    tokenSum += s;
    tokenCount += c;
    seqMeanSum += s / Math.max(1, c);
  }
  switch (mode) {
    case "token-mean":
      return tokenSum / Math.max(1, tokenCount);
    case "seq-mean-token-mean":
      return seqMeanSum / b;
    case "seq-mean-token-sum":
      return tokenSum / b;
    case "seq-mean-token-sum-norm": {
      const lMax = options.maxCompletionLength ?? Number.NaN;
      if (!(lMax > 0)) throw new RangeError("seq-mean-token-sum-norm needs maxCompletionLength > 0");
      return tokenSum / (b * lMax);
    }
  }
}
