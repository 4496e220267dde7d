/**
 * The estimator registry: one typed `Record<AdvantageEstimatorName, AdvantageEstimatorDefinition>`
 * (verl's `ADV_ESTIMATOR_REGISTRY`, closed over a string-literal union), alias resolution, and
 * option validation with defaults.
 *
 * Shapes: every estimator reads a {@link PackedBatch} (`N×K` values, `B` groups) and writes `N`
 * advantages into `out`.
 * @module
 */
import type { PackedBatch } from "./batch.js";
import { AdvantageOptionsError, EstimatorRegistryError, showValue, UnknownEstimatorError } from "./errors.js";
import type { EstimatorParams, Workspace } from "./kernels.js";
import {
  batchTotalsDivisor,
  corrGrpoGroup,
  gdpoBatchStage,
  gdpoCovarianceBatchStage,
  grpoGroup,
  markActiveRows,
  normalizedSumGroup,
} from "./kernels.js";
import type { AdvantageEstimatorName } from "./types.js";
import { AdvantageEstimatorAliases, AdvantageEstimatorNames, GroupFlags } from "./types.js";

/**
 * Runs an estimator over a whole batch: reads `batch`, writes `out[0…N)` and
 * `ws.denominators[0…B)`. Groups flagged `dropped` in `flags` must get 0 and stay out of batch
 * statistics; `degenerate` groups (G = 1) are flagged by the engine before the call.
 */
export type EstimatorRunFn = (
  batch: PackedBatch,
  params: EstimatorParams,
  ws: Workspace,
  out: Float64Array,
  flags: Uint8Array,
) => void;

/** A user-facing option key (the fields of {@link EstimatorParams}). */
export type EstimatorOptionKey = keyof EstimatorParams;

/** One registry entry. */
export interface AdvantageEstimatorDefinition {
  readonly name: AdvantageEstimatorName;
  /** One line: what it computes. */
  readonly summary: string;
  /** Where the formula comes from. */
  readonly paper: string;
  /** Option keys this estimator accepts; any other key is an error. */
  readonly optionKeys: readonly EstimatorOptionKey[];
  /** Parameters used when an option is absent. */
  readonly defaults: EstimatorParams;
  /** Needs `ws.batchZ` (per-component terms for the whole batch). */
  readonly needsBatchZ: boolean;
  readonly run: EstimatorRunFn;
}

const BASE_PARAMS: EstimatorParams = {
  stdMode: "sample",
  epsilon: 1e-6,
  scale: "group",
  singleton: "zero",
  epsilonPlacement: "inside",
  coefficientSumFloor: 0,
  coefficientSumFallbackBelow: 0.01,
  normByStd: true,
  batchNorm: "sequence",
  batchEpsilon: 1e-6,
};

function zeroDropped(batch: PackedBatch, g: number, ws: Workspace, out: Float64Array): void {
  out.fill(0, batch.groupOffsets[g]!, batch.groupOffsets[g + 1]!);
  ws.denominators[g] = Number.NaN;
}

/**
 * GRPO (DeepSeekMath, arXiv 2402.03300 §4.1.2) on the weighted total `r_i = Σ_k w_k R_ik`:
 * `A_i = (r_i − mean_g r) / (σ + ε)`, `σ` the group std (or the batch std with `scale: "batch"`,
 * TRL `scale_rewards="batch"`; none with `scale: "none"`). Reads `N×K` values, writes `N` advantages.
 */
const runGrpo: EstimatorRunFn = (batch, params, ws, out, flags) => {
  const { values, weights, groupOffsets, components: K } = batch;
  let batchDivisor = Number.NaN;
  if (params.scale === "batch") {
    markActiveRows(batch, flags, ws, false);
    batchDivisor = batchTotalsDivisor(batch, params, ws);
  }
  for (let g = 0; g < batch.groupCount; g++) {
    if ((flags[g]! & GroupFlags.dropped) !== 0) {
      zeroDropped(batch, g, ws, out);
      continue;
    }
    const row0 = groupOffsets[g]!;
    grpoGroup(values, row0, groupOffsets[g + 1]! - row0, K, weights, params, ws, out, g, batchDivisor);
  }
};

/**
 * CorrGRPO (Hu et al., arXiv 2609.36820; released code `grpo_covariance_coefficient`): the centred
 * weighted total over `sqrt(max(Σ_kl ρ_kl, floor) + ε)`, per group. Reads `N×K`, writes `N`.
 */
const runCorrGrpo: EstimatorRunFn = (batch, params, ws, out, flags) => {
  const { values, weights, groupOffsets, components: K } = batch;
  for (let g = 0; g < batch.groupCount; g++) {
    if ((flags[g]! & GroupFlags.dropped) !== 0) {
      zeroDropped(batch, g, ws, out);
      continue;
    }
    const row0 = groupOffsets[g]!;
    if (corrGrpoGroup(values, row0, groupOffsets[g + 1]! - row0, K, weights, params, ws, out, g)) {
      flags[g] = flags[g]! | GroupFlags.corrFallback;
    }
  }
};

/**
 * MO-GRPO (Ichihara et al., arXiv 2509.22047): `A_i = Σ_k w_k (R_ik − μ_k)/(σ_k + ε)` per group.
 * Reads `N×K`, writes `N`.
 */
const runMoGrpo: EstimatorRunFn = (batch, params, ws, out, flags) => {
  const { values, weights, groupOffsets, components: K } = batch;
  for (let g = 0; g < batch.groupCount; g++) {
    if ((flags[g]! & GroupFlags.dropped) !== 0) {
      zeroDropped(batch, g, ws, out);
      continue;
    }
    const row0 = groupOffsets[g]!;
    normalizedSumGroup(values, row0, groupOffsets[g + 1]! - row0, K, weights, params, out, null);
    ws.denominators[g] = Number.NaN;
  }
};

/**
 * GDPO (NVIDIA, arXiv 2601.05242): MO-GRPO's per-group normalise-then-sum, then one batch
 * normalisation (`sequence` TRL / `token` verl / `none`). Reads `N×K` (+ `N` lengths), writes `N`.
 */
const runGdpo: EstimatorRunFn = (batch, params, ws, out, flags) => {
  const { values, weights, groupOffsets, components: K } = batch;
  for (let g = 0; g < batch.groupCount; g++) {
    const row0 = groupOffsets[g]!;
    normalizedSumGroup(values, row0, groupOffsets[g + 1]! - row0, K, weights, params, out, null);
  }
  markActiveRows(batch, flags, ws, params.batchNorm === "token");
  const d = gdpoBatchStage(batch, params, ws, out);
  for (let g = 0; g < batch.groupCount; g++) {
    if ((flags[g]! & GroupFlags.dropped) !== 0) zeroDropped(batch, g, ws, out);
    else ws.denominators[g] = d;
  }
};

/**
 * GDPO covariance coefficient (CorrGRPO fork, `compute_gdpo_covariance_coefficient_outcome_advantage`):
 * per-group per-component `Z_ik = w_k (R_ik − μ_k)/(σ_k + ε)`, `S_i = Σ_k Z_ik`, then
 * `A_i = (S_i − mean S) / sqrt(max(Σ_kl P_kl, floor) + ε)` with `P` the Pearson correlation of the
 * `Z` columns over the whole batch. Reads `N×K` (+ `N` lengths), writes `N`.
 */
const runGdpoCovariance: EstimatorRunFn = (batch, params, ws, out, flags) => {
  const { values, weights, groupOffsets, components: K } = batch;
  for (let g = 0; g < batch.groupCount; g++) {
    const row0 = groupOffsets[g]!;
    normalizedSumGroup(values, row0, groupOffsets[g + 1]! - row0, K, weights, params, out, ws.batchZ);
  }
  markActiveRows(batch, flags, ws, true);
  const { denominator: d, fellBack } = gdpoCovarianceBatchStage(batch, params, ws, out);
  for (let g = 0; g < batch.groupCount; g++) {
    if ((flags[g]! & GroupFlags.dropped) !== 0) zeroDropped(batch, g, ws, out);
    else {
      ws.denominators[g] = d;
      if (fellBack) flags[g] = flags[g]! | GroupFlags.corrFallback;
    }
  }
};

const DEFINITIONS: readonly AdvantageEstimatorDefinition[] = [
  {
    name: "grpo",
    summary: "GRPO: (r_i − mean r)/(std r + ε) on the weighted total",
    paper: "Shao et al., DeepSeekMath, arXiv 2402.03300 §4.1.2",
    optionKeys: ["stdMode", "epsilon", "scale", "singleton"],
    defaults: BASE_PARAMS,
    needsBatchZ: false,
    run: runGrpo,
  },
  {
    name: "dr_grpo",
    summary: "Dr. GRPO: r_i − mean r (no std division)",
    paper: "Liu et al., Understanding R1-Zero-Like Training, arXiv 2503.20783",
    optionKeys: [],
    defaults: { ...BASE_PARAMS, scale: "none" },
    needsBatchZ: false,
    run: runGrpo,
  },
  {
    name: "grpo_covariance_coefficient",
    summary: "CorrGRPO: centred weighted total / sqrt(Σ_kl ρ_kl + ε)",
    paper: "Hu et al., CorrGRPO, arXiv 2609.36820",
    optionKeys: [
      "epsilon",
      "epsilonPlacement",
      "coefficientSumFloor",
      "coefficientSumFallbackBelow",
      "normByStd",
    ],
    defaults: BASE_PARAMS,
    needsBatchZ: false,
    run: runCorrGrpo,
  },
  {
    name: "gdpo",
    summary: "GDPO: per-component group normalisation, weighted sum, batch normalisation",
    paper: "NVIDIA GDPO, arXiv 2601.05242",
    optionKeys: ["stdMode", "epsilon", "batchNorm", "batchEpsilon"],
    defaults: BASE_PARAMS,
    needsBatchZ: false,
    run: runGdpo,
  },
  {
    name: "gdpo_covariance_coefficient",
    summary: "GDPO with CorrGRPO's batch correlation denominator",
    paper: "Hu et al., CorrGRPO, arXiv 2609.36820 (released code, GDPO variant)",
    optionKeys: [
      "stdMode",
      "epsilon",
      "epsilonPlacement",
      "coefficientSumFloor",
      "coefficientSumFallbackBelow",
    ],
    defaults: BASE_PARAMS,
    needsBatchZ: true,
    run: runGdpoCovariance,
  },
  {
    name: "mo_grpo",
    summary: "MO-GRPO: Σ_k w_k (R_k − mean)/(std + ε) per group",
    paper: "Ichihara et al., MO-GRPO, arXiv 2509.22047",
    optionKeys: ["stdMode", "epsilon"],
    defaults: BASE_PARAMS,
    needsBatchZ: false,
    run: runMoGrpo,
  },
];

/**
 * Builds a complete registry from definitions. Registering a name twice throws; so does leaving a
 * canonical name out (the result is a total `Record`).
 * @throws {EstimatorRegistryError}
 */
export function createEstimatorRegistry(
  definitions: readonly AdvantageEstimatorDefinition[],
): Readonly<Record<AdvantageEstimatorName, AdvantageEstimatorDefinition>> {
  const registry: Partial<Record<AdvantageEstimatorName, AdvantageEstimatorDefinition>> = {};
  for (const def of definitions) {
    if (!(AdvantageEstimatorNames as readonly string[]).includes(def.name)) {
      throw new EstimatorRegistryError(`estimator '${def.name}' is not a known AdvantageEstimatorName`);
    }
    if (registry[def.name] !== undefined) {
      throw new EstimatorRegistryError(`estimator '${def.name}' is registered twice`);
    }
    registry[def.name] = def;
  }
  const missing = AdvantageEstimatorNames.filter((n) => registry[n] === undefined);
  if (missing.length > 0) {
    throw new EstimatorRegistryError(`estimator registry is missing: ${missing.join(", ")}`);
  }
  return Object.freeze(registry as Record<AdvantageEstimatorName, AdvantageEstimatorDefinition>);
}

/** The registry of built-in estimators, keyed by canonical name. */
export const ADVANTAGE_ESTIMATORS: Readonly<Record<AdvantageEstimatorName, AdvantageEstimatorDefinition>> =
  createEstimatorRegistry(DEFINITIONS);

/** Every accepted name: canonical names, then aliases. */
export function supportedEstimatorNames(): string[] {
  return [...AdvantageEstimatorNames, ...Object.keys(AdvantageEstimatorAliases)];
}

/**
 * Maps a name or alias (`corr_grpo`, `corrgrpo`) to its canonical name.
 * @throws {UnknownEstimatorError} listing every supported name.
 */
export function resolveEstimatorName(name: string): AdvantageEstimatorName {
  if ((AdvantageEstimatorNames as readonly string[]).includes(name)) return name as AdvantageEstimatorName;
  if (Object.hasOwn(AdvantageEstimatorAliases, name)) {
    return AdvantageEstimatorAliases[name as keyof typeof AdvantageEstimatorAliases];
  }
  throw new UnknownEstimatorError(name, supportedEstimatorNames());
}

/** The registry entry for a name or alias. @throws {UnknownEstimatorError} */
export function getAdvantageEstimator(name: string): AdvantageEstimatorDefinition {
  return ADVANTAGE_ESTIMATORS[resolveEstimatorName(name)];
}

function oneOf<T extends string>(key: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  throw new AdvantageOptionsError(
    key,
    `'${key}' must be one of ${allowed.join(" | ")}, got ${showValue(value)}`,
  );
}

function nonNegative(key: string, value: unknown): number {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value;
  throw new AdvantageOptionsError(key, `'${key}' must be a finite number ≥ 0, got ${showValue(value)}`);
}

/**
 * Validates `options` for estimator `def` and fills in its defaults. Unknown keys are errors that
 * list the accepted ones; messages name the key as `options.<key>`.
 * @throws {AdvantageOptionsError}
 */
export function resolveEstimatorParams(
  def: AdvantageEstimatorDefinition,
  options: Readonly<Record<string, unknown>> | undefined,
): EstimatorParams {
  const o = options ?? {};
  if (typeof o !== "object" || o === null || Array.isArray(o)) {
    throw new AdvantageOptionsError("options", "'options' must be an object");
  }
  for (const key of Object.keys(o)) {
    if (!(def.optionKeys as readonly string[]).includes(key)) {
      const accepted = def.optionKeys.length > 0 ? def.optionKeys.join(", ") : "none";
      throw new AdvantageOptionsError(
        `options.${key}`,
        `'options.${key}' is not an option of ${def.name}; accepted: ${accepted}`,
      );
    }
  }
  const d = def.defaults;
  const epsilon = o["epsilon"] === undefined ? d.epsilon : nonNegative("options.epsilon", o["epsilon"]);
  const batchNorm =
    o["batchNorm"] === undefined
      ? d.batchNorm
      : oneOf("options.batchNorm", o["batchNorm"], ["sequence", "token", "none"] as const);
  const normByStd = o["normByStd"] === undefined ? d.normByStd : o["normByStd"];
  if (typeof normByStd !== "boolean") {
    throw new AdvantageOptionsError("options.normByStd", `'options.normByStd' must be a boolean`);
  }
  const params: EstimatorParams = {
    stdMode:
      o["stdMode"] === undefined
        ? d.stdMode
        : oneOf("options.stdMode", o["stdMode"], ["sample", "population"] as const),
    epsilon,
    scale:
      o["scale"] === undefined
        ? d.scale
        : oneOf("options.scale", o["scale"], ["group", "batch", "none"] as const),
    singleton:
      o["singleton"] === undefined
        ? d.singleton
        : oneOf("options.singleton", o["singleton"], ["zero", "verl"] as const),
    epsilonPlacement:
      o["epsilonPlacement"] === undefined
        ? d.epsilonPlacement
        : oneOf("options.epsilonPlacement", o["epsilonPlacement"], ["inside", "outside"] as const),
    coefficientSumFloor:
      o["coefficientSumFloor"] === undefined
        ? d.coefficientSumFloor
        : nonNegative("options.coefficientSumFloor", o["coefficientSumFloor"]),
    coefficientSumFallbackBelow:
      o["coefficientSumFallbackBelow"] === undefined
        ? d.coefficientSumFallbackBelow
        : nonNegative("options.coefficientSumFallbackBelow", o["coefficientSumFallbackBelow"]),
    normByStd,
    batchNorm,
    batchEpsilon:
      o["batchEpsilon"] === undefined
        ? batchNorm === "token"
          ? 1e-8
          : epsilon
        : nonNegative("options.batchEpsilon", o["batchEpsilon"]),
  };
  const usesCorrelation =
    def.name === "grpo_covariance_coefficient" || def.name === "gdpo_covariance_coefficient";
  if (
    usesCorrelation &&
    params.normByStd &&
    params.epsilon === 0 &&
    params.coefficientSumFloor === 0 &&
    params.coefficientSumFallbackBelow === 0
  ) {
    throw new AdvantageOptionsError(
      "options.epsilon",
      `'options.epsilon' must be > 0 unless 'options.coefficientSumFloor' or 'options.coefficientSumFallbackBelow' > 0 (the coefficient sum can be 0 while the total varies)`,
    );
  }
  return params;
}
