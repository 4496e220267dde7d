/**
 * Public types of the advantage engine: estimator names, their options, the step configuration,
 * inputs, results and diagnostics. No runtime code except small `const` objects.
 *
 * Shapes used throughout: a batch has `B` groups; group `g` has `G_g` rollouts; every rollout has
 * `K` reward components. `N = Σ_g G_g` is the number of rollouts in the batch.
 * @module
 */

/** Canonical estimator names (the registry keys). */
export const AdvantageEstimatorNames = [
  "grpo",
  "dr_grpo",
  "grpo_covariance_coefficient",
  "gdpo",
  "gdpo_covariance_coefficient",
  "mo_grpo",
] as const;

/** A canonical estimator name. */
export type AdvantageEstimatorName = (typeof AdvantageEstimatorNames)[number];

/** Accepted aliases and the canonical names they resolve to. */
export const AdvantageEstimatorAliases = {
  corr_grpo: "grpo_covariance_coefficient",
  corrgrpo: "grpo_covariance_coefficient",
} as const satisfies Record<string, AdvantageEstimatorName>;

/** An alias accepted in place of a canonical name. */
export type AdvantageEstimatorAlias = keyof typeof AdvantageEstimatorAliases;

/** Standard-deviation convention: `sample` divides by `G − 1` (verl, TRL, oat), `population` by `G`. */
export type StdMode = "sample" | "population";

/**
 * GRPO's advantage scale: `group` = std of the group's weighted totals (DeepSeekMath, verl, TRL default);
 * `batch` = std of every weighted total in the batch, baseline still the group mean (TRL
 * `scale_rewards="batch"`); `none` = no division (Dr. GRPO).
 */
export type GrpoScale = "group" | "batch" | "none";

/** Where CorrGRPO's ε goes: `inside` = `sqrt(S + ε)` (released code), `outside` = `sqrt(S) + ε` (project page). */
export type EpsilonPlacement = "inside" | "outside";

/**
 * GDPO's final batch normalisation: `sequence` = one value per response (TRL), `token` = weighted by
 * response length (verl `masked_whiten`), `none` = skip it (then GDPO equals MO-GRPO with GDPO's ε).
 */
export type GdpoBatchNorm = "sequence" | "token" | "none";

/** What a one-rollout group gets: `zero` (default, flagged degenerate) or `verl` (mean 0, std 1 → `r/(1+ε)`). */
export type SingletonPolicy = "zero" | "verl";

/** Options of `grpo` (DeepSeekMath GRPO on the weighted total). */
export interface GrpoOptions {
  /** @default "sample" — what verl, TRL and oat use. */
  readonly stdMode?: StdMode;
  /** Added to the std. @default 1e-6 (verl; TRL uses 1e-4, oat 1e-8). */
  readonly epsilon?: number;
  /** @default "group" */
  readonly scale?: GrpoScale;
  /** @default "zero" — verl's `r/(1+ε)` silently turns a singleton into un-baselined REINFORCE. */
  readonly singleton?: SingletonPolicy;
}

/** `dr_grpo` has no options: `A_i = r_i − mean r`. */
export type DrGrpoOptions = Record<string, never>;

/** Options of `grpo_covariance_coefficient` (CorrGRPO). */
export interface CorrGrpoOptions {
  /** Numerical-stability constant. @default 1e-6 (released code). */
  readonly epsilon?: number;
  /** @default "inside" — `sqrt(S + ε)` as in the released code. */
  readonly epsilonPlacement?: EpsilonPlacement;
  /**
   * Lower bound on the coefficient sum `S` before the square root (`max(S, floor)`).
   * @default 0 — fidelity to the paper; `1` caps the amplification at the Dr. GRPO scale when
   * anti-correlated components drive `S` towards 0.
   */
  readonly coefficientSumFloor?: number;
  /**
   * Degenerate-group guard: when `max(S, floor)` is below this while the group's weighted total
   * varies, the group is divided by the total's sample std (GRPO's denominator, ε placed as above)
   * and flagged `corrFallback`. Without it, perfectly anti-correlated components (S = 0, routine at
   * G = 2 and with binary rewards) multiply the centred total by up to `1/sqrt(ε)` = 1000.
   * @default 0.01 — only groups whose standardised components cancel to within 1 % of one
   * component's variance; `0` is the paper's and the released code's behaviour.
   */
  readonly coefficientSumFallbackBelow?: number;
  /** `false` skips the denominator (verl `norm_adv_by_std_in_grpo=False`). @default true */
  readonly normByStd?: boolean;
}

/** Options of `gdpo` (group reward-decoupled normalisation). */
export interface GdpoOptions {
  /** Per-component std convention (also used for the batch std). @default "sample" */
  readonly stdMode?: StdMode;
  /** Per-component ε added to each group std. @default 1e-6 (verl; TRL uses 1e-4). */
  readonly epsilon?: number;
  /** @default "sequence" (TRL); `token` follows verl. */
  readonly batchNorm?: GdpoBatchNorm;
  /**
   * ε of the batch stage: added to the batch std (`sequence`) or to the variance under the square
   * root (`token`). @default `epsilon` for `sequence`, 1e-8 for `token` (verl `masked_whiten`).
   */
  readonly batchEpsilon?: number;
}

/** Options of `gdpo_covariance_coefficient` (CorrGRPO's batch-level drop-in for GDPO). */
export interface GdpoCovarianceCoefficientOptions {
  /** Per-component std convention. @default "sample" */
  readonly stdMode?: StdMode;
  /** ε of the per-component std and of the correlation denominator. @default 1e-6 */
  readonly epsilon?: number;
  /** @default "inside" */
  readonly epsilonPlacement?: EpsilonPlacement;
  /** Floor on the batch coefficient sum. @default 0 */
  readonly coefficientSumFloor?: number;
  /** The degenerate guard of {@link CorrGrpoOptions.coefficientSumFallbackBelow}, on the batch sum. @default 0.01 */
  readonly coefficientSumFallbackBelow?: number;
}

/** Options of `mo_grpo` (per-component normalise-then-sum, no batch stage). */
export interface MoGrpoOptions {
  /** @default "sample" */
  readonly stdMode?: StdMode;
  /** @default 1e-6 */
  readonly epsilon?: number;
}

/** Option type of each estimator, by canonical name. */
export interface AdvantageEstimatorOptionsMap {
  grpo: GrpoOptions;
  dr_grpo: DrGrpoOptions;
  grpo_covariance_coefficient: CorrGrpoOptions;
  gdpo: GdpoOptions;
  gdpo_covariance_coefficient: GdpoCovarianceCoefficientOptions;
  mo_grpo: MoGrpoOptions;
}

/** Which base S-GRPO's weight multiplies (spec §5.2). */
export type SgrpoVariant = "code" | "dr_grpo";

/**
 * S-GRPO noise-aware group weight (Shen et al., arXiv 2508.05928), applied after any estimator.
 *
 * Binarisation: a rollout counts as a success iff its metric is `> successThreshold` (default 0, as
 * in the released code's `k = #{r > 0}`); the metric is the weighted total unless `component` names
 * one component (raw value). The noise model assumes binary rewards.
 */
export interface SgrpoOptions {
  /** Symmetric label-flip probability, `0 ≤ p < 0.5`. Released runs: 0.15 (1.5B/3B), 0.10 (7B). */
  readonly p: number;
  /**
   * `code` (default): multiply the estimator's advantages by `w*` — with `grpo` this is the released
   * code. `dr_grpo`: `A_i = w*·(r_i − mean r)`, ignoring the estimator's denominator (the paper's
   * Dr. GRPO reading).
   */
  readonly variant?: SgrpoVariant;
  /** ε inside both square roots of `w*`. @default 1e-8 (released code) */
  readonly epsilon?: number;
  /** Success iff metric `>` this. @default 0 */
  readonly successThreshold?: number;
  /** Component (name or index) whose raw value is binarised. @default the weighted total */
  readonly component?: string | number;
}

/** DAPO dynamic sampling: drop a group whose metric is exactly constant (one-rollout groups are kept). */
export interface DynamicSamplingOptions {
  /** Component (name or index) to test. @default the weighted total — the quantity the advantage is zero for */
  readonly component?: string | number;
}

/** Composable steps around the estimator. */
export interface AdvantageStepsConfig {
  /** S-GRPO weighting on top of the estimator. @default off */
  readonly sgrpo?: SgrpoOptions;
  /** DAPO keep/drop decision per group; dropped groups get 0 and do not enter batch statistics. @default off */
  readonly dynamicSampling?: boolean | DynamicSamplingOptions;
}

/** Typed configuration: the estimator (canonical name or alias) with its own option type, plus steps. */
export type AdvantageConfig = (
  | {
      [N in AdvantageEstimatorName]: {
        readonly estimator: N;
        readonly options?: AdvantageEstimatorOptionsMap[N];
      };
    }[AdvantageEstimatorName]
  | {
      [A in AdvantageEstimatorAlias]: {
        readonly estimator: A;
        readonly options?: AdvantageEstimatorOptionsMap[(typeof AdvantageEstimatorAliases)[A]];
      };
    }[AdvantageEstimatorAlias]
) &
  AdvantageStepsConfig;

/** Configuration read from JSON / YAML / flags: checked at run time instead of by the compiler. */
export interface UntypedAdvantageConfig extends AdvantageStepsConfig {
  readonly estimator: string;
  readonly options?: Readonly<Record<string, unknown>>;
}

/** One group of rollouts of one prompt. */
export interface AdvantageGroupInput {
  /**
   * `G×K` raw (unweighted) component values. `null` means NOT_APPLICABLE (same as a `true` flag in
   * `notApplicable`). NaN and ±Infinity are rejected unless flagged NOT_APPLICABLE.
   */
  readonly rewards: ReadonlyArray<ReadonlyArray<number | null>>;
  /** Optional `G×K` NOT_APPLICABLE flags. */
  readonly notApplicable?: ReadonlyArray<ReadonlyArray<boolean>>;
  /** Optional response lengths in tokens (`G`), used by GDPO's token-level batch statistics. */
  readonly lengths?: ReadonlyArray<number>;
}

/** A batch of groups sharing one component layout. */
export interface AdvantageBatchInput {
  readonly groups: readonly AdvantageGroupInput[];
  /** Component weights `w` (length `K`). @default all 1 */
  readonly weights?: readonly number[];
  /** Component names (length `K`), used in messages and diagnostics. @default "0", "1", … */
  readonly components?: readonly string[];
}

/** Bits of the per-group flags returned with every run. */
export const GroupFlags = {
  /** `G = 1`: no baseline exists; advantage 0 (unless GRPO `singleton: "verl"`). */
  degenerate: 1,
  /** DAPO dynamic sampling dropped the group; advantages 0. */
  dropped: 2,
  /**
   * S-GRPO's weight is 0 although the group had signal (non-zero advantages): silenced as too
   * noisy to trust. With binary rewards this is `0 < k < G` with `q ≤ p` or `q ≥ 1 − p`.
   */
  sgrpoGated: 4,
  /** Some component is NOT_APPLICABLE for some rollout of the group (see diagnostics). */
  notApplicable: 8,
  /**
   * CorrGRPO's degenerate-group guard fired: the coefficient sum `S` was below
   * `coefficientSumFallbackBelow` while the weighted total varied, so the group was divided by the
   * total's sample std (GRPO's denominator) instead of `sqrt(S)`, which would have amplified it
   * without bound.
   */
  corrFallback: 16,
} as const;

/** Share of a normaliser (sum of all entries of a K×K matrix) attributed to each component. */
export interface ShareBreakdown {
  /** `Σ_kl M_kl`. */
  readonly total: number;
  /** `M_kk / total` (0 when total is 0). */
  readonly diagonalShare: number[];
  /** `Σ_l M_kl / total` (0 when total is 0). */
  readonly rowShare: number[];
}

/** S-GRPO diagnostics of one group. */
export interface SgrpoDiagnostics {
  readonly p: number;
  readonly variant: SgrpoVariant;
  /** `k`: rollouts whose metric exceeded the threshold. */
  readonly successes: number;
  /** `w*(G, k, p)`. */
  readonly weight: number;
  /** `w* = 0` silenced a group whose advantages were not all 0 (see {@link GroupFlags.sgrpoGated}). */
  readonly gated: boolean;
}

/** NOT_APPLICABLE bookkeeping of one group. */
export interface NotApplicableDiagnostics {
  /** Components NOT_APPLICABLE for every rollout: weight 0 in this group. */
  readonly droppedComponents: string[];
  /** Per component: rollouts where it was NOT_APPLICABLE and counted as 0 (0 for dropped components). */
  readonly partialCounts: number[];
  /** Rollouts (indices in the group) with every component NOT_APPLICABLE: advantage forced to 0. */
  readonly unscorableRollouts: number[];
}

/**
 * Everything about one group, for metrics and `reward-mesh explain`. Computed only on request.
 * Matrices are over the weighted components `X = w·R` (NOT_APPLICABLE → 0) with exactly-constant
 * columns zeroed; covariance is the sample covariance (`÷ (G − 1)`).
 */
export interface GroupDiagnostics {
  readonly group: number;
  readonly estimator: AdvantageEstimatorName;
  readonly groupSize: number;
  readonly components: readonly string[];
  readonly degenerate: boolean;
  /** False when DAPO dynamic sampling dropped the group. */
  readonly kept: boolean;
  /** CorrGRPO's degenerate-group guard replaced `sqrt(S)` (see {@link GroupFlags.corrFallback}). */
  readonly corrFallback: boolean;
  /** Effective weights in this group (0 for dropped NOT_APPLICABLE components). */
  readonly weights: number[];
  /** Per component: exactly constant within the group after weighting. */
  readonly constantComponents: boolean[];
  /** `r_i − mean r` of the weighted totals (exactly 0 when the total is constant). */
  readonly centeredTotal: number[];
  /** K×K sample covariance of the weighted components. */
  readonly covariance: number[][];
  /** K×K correlation; constant components give a zero row and column, diagonal included. */
  readonly correlation: number[][];
  /** CorrGRPO's `S = Σ_kl ρ_kl` for this group (before clamp / floor). */
  readonly coefficientSum: number;
  /**
   * The divisor the estimator applied in its last stage for this group: GRPO `σ + ε` (group or
   * batch), CorrGRPO `sqrt(max(S, floor) + ε)`, GDPO its batch divisor, Dr. GRPO 1; `null` for
   * MO-GRPO (one divisor per component).
   */
  readonly denominator: number | null;
  /** GRPO's view: shares of `Var(Σ_k X_k) = Σ_kl Cov_kl`. */
  readonly grpoShares: ShareBreakdown;
  /** CorrGRPO's view: shares of `S = Σ_kl ρ_kl`. */
  readonly corrGrpoShares: ShareBreakdown;
  readonly sgrpo: SgrpoDiagnostics | null;
  readonly notApplicable: NotApplicableDiagnostics;
  /** Final advantages of the group (after every step). */
  readonly advantages: number[];
}

/** Result of one group from {@link AdvantageBatchResult}. */
export interface AdvantageGroupResult {
  /** One advantage per rollout, input order. */
  readonly advantages: number[];
  readonly degenerate: boolean;
  /** False when DAPO dynamic sampling dropped the group (always true when the step is off). */
  readonly kept: boolean;
  /** CorrGRPO's degenerate-group guard replaced `sqrt(S)` (see {@link GroupFlags.corrFallback}). */
  readonly corrFallback: boolean;
  /** Present only when diagnostics were requested. */
  readonly diagnostics?: GroupDiagnostics;
}

/** Result of {@link computeAdvantages}. */
export interface AdvantageBatchResult {
  readonly estimator: AdvantageEstimatorName;
  readonly groups: AdvantageGroupResult[];
}
