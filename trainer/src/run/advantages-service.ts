/**
 * `rewardmesh.v1.Trainer.ComputeAdvantages`: the advantage engine as a service. The request maps field by
 * field onto the input of `reward-mesh advantages` (same engine, same configuration compiler), so an RPC and
 * the CLI given the same batch return the same numbers to the last bit. Engine errors come back as
 * INVALID_ARGUMENT naming the request field (`groups[2].rollouts[5].values[3]`, `options.epsilon_placement`).
 *
 * The request is size-capped before the engine runs ({@link COMPUTE_ADVANTAGES_LIMITS}): the engine runs on the
 * event loop, CorrGRPO costs O(G·K²) per group and diagnostics return two K×K matrices per group, so an
 * unbounded K or batch could stall or exhaust the process. A request past a cap is INVALID_ARGUMENT naming
 * the limit.
 * @module
 */
import { create } from "@bufbuild/protobuf";
import {
  type AdvantageGroupDiagnostics,
  AdvantageGroupDiagnosticsSchema,
  type ComputeAdvantagesRequest,
  type ComputeAdvantagesResponse,
  ComputeAdvantagesResponseSchema,
  type DynamicSamplingConfig,
  type SgrpoConfig,
} from "@reward-mesh/proto";
import { InvalidArgumentError } from "@reward-mesh/sdk";
import { compileUntypedAdvantageConfig, computeAdvantages } from "../advantage/engine.js";
import { isAdvantageError } from "../advantage/errors.js";
import type {
  AdvantageBatchInput,
  AdvantageGroupInput,
  GroupDiagnostics,
  UntypedAdvantageConfig,
} from "../advantage/types.js";

/** The engine's camelCase option keys and their proto field names. */
const SNAKE_KEYS: Readonly<Record<string, string>> = {
  stdMode: "std_mode",
  epsilonPlacement: "epsilon_placement",
  coefficientSumFloor: "coefficient_sum_floor",
  coefficientSumFallbackBelow: "coefficient_sum_fallback_below",
  normByStd: "norm_by_std",
  batchNorm: "batch_norm",
  batchEpsilon: "batch_epsilon",
  successThreshold: "success_threshold",
  dynamicSampling: "dynamic_sampling",
};

/** Rewrites the engine's JSON paths and option keys (CLI input) into the request's proto field paths. */
export function protoFieldPath(text: string): string {
  return text
    .replace(/groups\[(\d+)\]\.rewards\[(\d+)\]\[(\d+)\]/g, "groups[$1].rollouts[$2].values[$3]")
    .replace(/groups\[(\d+)\]\.rewards\[(\d+)\]/g, "groups[$1].rollouts[$2].values")
    .replace(/groups\[(\d+)\]\.rewards/g, "groups[$1].rollouts")
    .replace(
      /groups\[(\d+)\]\.notApplicable\[(\d+)\]\[(\d+)\]/g,
      "groups[$1].rollouts[$2].not_applicable[$3]",
    )
    .replace(/groups\[(\d+)\]\.notApplicable\[(\d+)\]/g, "groups[$1].rollouts[$2].not_applicable")
    .replace(/groups\[(\d+)\]\.lengths\[(\d+)\]/g, "groups[$1].rollouts[$2].length")
    .replace(/groups\[(\d+)\]\.lengths/g, "groups[$1].rollouts[*].length")
    .replace(
      /\b(stdMode|epsilonPlacement|coefficientSumFloor|coefficientSumFallbackBelow|normByStd|batchNorm|batchEpsilon|successThreshold|dynamicSampling)\b/g,
      (k) => SNAKE_KEYS[k] ?? k,
    );
}

function componentRef(
  c: SgrpoConfig["component"] | DynamicSamplingConfig["component"],
): string | number | undefined {
  if (c.case === "componentName") return c.value;
  if (c.case === "componentIndex") return c.value;
  return undefined;
}

/**
 * Size caps of one `ComputeAdvantages` request (each refused as INVALID_ARGUMENT naming it). Sized so the worst
 * admitted request stays around a second of CPU and a few hundred MB: 2^22 values are 32 MiB of doubles;
 * Σ G·K² bounds the covariance work of CorrGRPO (and diagnostics) at 2^27 multiply-adds; diagnostics answer
 * 2·groups·K² doubles, bounded at 2·2^22 (64 MiB).
 */
export const COMPUTE_ADVANTAGES_LIMITS = {
  /** K, the number of reward components (values per rollout). */
  components: 256,
  /** Groups per request. */
  groups: 65_536,
  /** Rollouts per request, all groups together. */
  rollouts: 1_048_576,
  /** Values per request (Σ rollouts × K). */
  values: 4_194_304,
  /** Σ over groups of G·K² (rollouts × K²): the covariance work of CorrGRPO and diagnostics. */
  covarianceWork: 134_217_728,
  /** groups × K² when `diagnostics` is set: the size of the covariance and correlation matrices answered. */
  diagnosticsCells: 4_194_304,
} as const;

/** Refuses a request past {@link COMPUTE_ADVANTAGES_LIMITS}, before anything K- or batch-sized is allocated. */
export function checkRequestSize(req: ComputeAdvantagesRequest): void {
  const L = COMPUTE_ADVANTAGES_LIMITS;
  const over = (field: string, what: string, got: number, limit: keyof typeof L) =>
    new InvalidArgumentError(field, `${what} ${got}, over the ${limit} limit of ${L[limit]} per request`);
  for (const key of ["weights", "components"] as const) {
    if (req[key].length > L.components) throw over(key, "has K =", req[key].length, "components");
  }
  if (req.groups.length > L.groups) throw over("groups", "has", req.groups.length, "groups");
  let rollouts = 0;
  let values = 0;
  let work = 0;
  let K = 0;
  for (const [g, group] of req.groups.entries()) {
    rollouts += group.rollouts.length;
    let groupK = 0;
    for (const [i, r] of group.rollouts.entries()) {
      if (r.values.length > L.components)
        throw over(`groups[${g}].rollouts[${i}].values`, "has K =", r.values.length, "components");
      values += r.values.length;
      groupK = Math.max(groupK, r.values.length);
    }
    K = Math.max(K, groupK);
    work += group.rollouts.length * groupK * groupK;
  }
  if (rollouts > L.rollouts) throw over("groups", "has rollouts =", rollouts, "rollouts");
  if (values > L.values) throw over("groups", "has values (Σ rollouts·K) =", values, "values");
  if (work > L.covarianceWork)
    throw over("groups", "has covariance work (Σ rollouts·K²) =", work, "covarianceWork");
  const cells = req.groups.length * K * K;
  if (req.diagnostics && cells > L.diagnosticsCells)
    throw over("diagnostics", "would answer matrix cells (groups·K²) =", cells, "diagnosticsCells");
}

/** The request's groups as the engine's input; checks what the proto shape allows but the engine cannot see. */
function groupsOf(req: ComputeAdvantagesRequest): AdvantageGroupInput[] {
  return req.groups.map((group, g) => {
    const anyFlags = group.rollouts.some((r) => r.notApplicable.length > 0);
    const withLength = group.rollouts.filter((r) => r.length !== undefined).length;
    if (withLength !== 0 && withLength !== group.rollouts.length) {
      const i = group.rollouts.findIndex((r) => r.length === undefined);
      throw new InvalidArgumentError(
        `groups[${g}].rollouts[${i}].length`,
        `is unset while ${withLength} other rollout(s) of the group have one: set it on every rollout of a group or on none`,
      );
    }
    return {
      rewards: group.rollouts.map((r) => r.values),
      ...(anyFlags
        ? {
            notApplicable: group.rollouts.map((r) =>
              r.notApplicable.length > 0 ? r.notApplicable : r.values.map(() => false),
            ),
          }
        : {}),
      ...(withLength > 0 ? { lengths: group.rollouts.map((r) => r.length!) } : {}),
    };
  });
}

/** The request's estimator, options and steps, as `reward-mesh advantages` builds them from its JSON. */
export function advantageConfigOf(req: ComputeAdvantagesRequest): UntypedAdvantageConfig {
  if (req.estimator === "") throw new InvalidArgumentError("estimator", "is required (e.g. grpo, corr_grpo)");
  const o = req.options;
  const options: Record<string, unknown> = {};
  if (o) {
    for (const [key, value] of Object.entries({
      stdMode: o.stdMode,
      epsilon: o.epsilon,
      scale: o.scale,
      singleton: o.singleton,
      epsilonPlacement: o.epsilonPlacement,
      coefficientSumFloor: o.coefficientSumFloor,
      coefficientSumFallbackBelow: o.coefficientSumFallbackBelow,
      normByStd: o.normByStd,
      batchNorm: o.batchNorm,
      batchEpsilon: o.batchEpsilon,
    })) {
      if (value !== undefined) options[key] = value;
    }
  }
  const s = req.sgrpo;
  if (s && s.p === undefined)
    throw new InvalidArgumentError(
      "sgrpo.p",
      "is required: S-GRPO needs the label-flip probability p in [0, 0.5) (set 0 explicitly for none)",
    );
  const sgrpoComponent = s ? componentRef(s.component) : undefined;
  const ds = req.dynamicSampling;
  const dsComponent = ds ? componentRef(ds.component) : undefined;
  return {
    estimator: req.estimator,
    options,
    ...(s
      ? {
          sgrpo: {
            p: s.p!,
            ...(s.variant !== undefined ? { variant: s.variant as "code" | "dr_grpo" } : {}),
            ...(s.epsilon !== undefined ? { epsilon: s.epsilon } : {}),
            ...(s.successThreshold !== undefined ? { successThreshold: s.successThreshold } : {}),
            ...(sgrpoComponent !== undefined ? { component: sgrpoComponent } : {}),
          },
        }
      : {}),
    ...(ds ? { dynamicSampling: dsComponent === undefined ? {} : { component: dsComponent } } : {}),
  };
}

function diagnosticsMessage(d: GroupDiagnostics): AdvantageGroupDiagnostics {
  return create(AdvantageGroupDiagnosticsSchema, {
    groupSize: d.groupSize,
    weights: [...d.weights],
    constantComponents: [...d.constantComponents],
    centeredTotal: [...d.centeredTotal],
    covariance: d.covariance.flat(),
    correlation: d.correlation.flat(),
    coefficientSum: d.coefficientSum,
    ...(d.denominator !== null ? { denominator: d.denominator } : {}),
    grpoShares: { ...d.grpoShares },
    corrGrpoShares: { ...d.corrGrpoShares },
    ...(d.sgrpo ? { sgrpo: { ...d.sgrpo } } : {}),
    notApplicableDroppedComponents: [...d.notApplicable.droppedComponents],
    notApplicablePartialCounts: [...d.notApplicable.partialCounts],
    unscorableRollouts: [...d.notApplicable.unscorableRollouts],
    corrFallback: d.corrFallback,
  });
}

/** The engine's error as INVALID_ARGUMENT naming the request field (`sgrpo.component_index`, …). */
function invalidArgument(
  err: Error & { path?: unknown; key?: unknown },
  req: ComputeAdvantagesRequest,
): InvalidArgumentError {
  let field =
    typeof err.path === "string"
      ? err.path
      : typeof err.key === "string"
        ? err.key
        : err.name === "UnknownEstimatorError"
          ? "estimator"
          : "";
  field = protoFieldPath(field);
  for (const [prefix, ref] of [
    ["sgrpo.component", req.sgrpo?.component],
    ["dynamic_sampling.component", req.dynamicSampling?.component],
  ] as const) {
    if (field === prefix && ref?.case)
      field = `${prefix}_${ref.case === "componentIndex" ? "index" : "name"}`;
  }
  let problem = protoFieldPath(err.message);
  const bare = field.replace(/_(index|name)$/, "");
  for (const lead of [`'${field}' `, `${field} `, `'${bare}' `, `${bare} `]) {
    if (problem.startsWith(lead)) {
      problem = problem.slice(lead.length);
      break;
    }
  }
  return new InvalidArgumentError(field || "request", problem, { cause: err });
}

/**
 * Runs the advantage engine on one request: the same configuration compiler and `computeAdvantages` call
 * as `reward-mesh advantages`.
 * @throws {InvalidArgumentError} naming the request field for a bad batch, option or estimator, or the
 *   limit of {@link COMPUTE_ADVANTAGES_LIMITS} a request exceeds.
 */
export function computeAdvantagesMessage(req: ComputeAdvantagesRequest): ComputeAdvantagesResponse {
  checkRequestSize(req);
  const config = advantageConfigOf(req);
  // K is the first rollout's number of values; the engine would infer it from `weights` first.
  const first = req.groups[0]?.rollouts[0]?.values.length;
  if (first !== undefined) {
    for (const key of ["weights", "components"] as const) {
      if (req[key].length > 0 && req[key].length !== first)
        throw new InvalidArgumentError(
          key,
          `has ${req[key].length} entries, but groups[0].rollouts[0].values has K=${first} (one per component)`,
        );
    }
  }
  const batch: AdvantageBatchInput = {
    groups: groupsOf(req),
    ...(req.weights.length > 0 ? { weights: req.weights } : {}),
    ...(req.components.length > 0 ? { components: req.components } : {}),
  };
  let result: ReturnType<typeof computeAdvantages>;
  try {
    result = computeAdvantages(batch, compileUntypedAdvantageConfig(config), {
      diagnostics: req.diagnostics,
    });
  } catch (err) {
    if (isAdvantageError(err)) throw invalidArgument(err, req);
    throw err;
  }
  const K = req.groups[0]?.rollouts[0]?.values.length ?? req.components.length;
  return create(ComputeAdvantagesResponseSchema, {
    estimator: result.estimator,
    components:
      req.components.length > 0 ? [...req.components] : Array.from({ length: K }, (_, k) => String(k)),
    groups: result.groups.map((g, i) => ({
      groupId: req.groups[i]!.groupId,
      rolloutIds: req.groups[i]!.rollouts.map((r) => r.rolloutId),
      advantages: g.advantages,
      degenerate: g.degenerate,
      kept: g.kept,
      corrFallback: g.corrFallback,
      ...(g.diagnostics ? { diagnostics: diagnosticsMessage(g.diagnostics) } : {}),
    })),
  });
}
