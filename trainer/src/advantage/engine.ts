/**
 * The advantage engine: compile a configuration once, then run it over packed batches with
 * preallocated scratch memory.
 *
 * Order of steps in a run (straight-line, see {@link AdvantageEngine.run}):
 * 1. flag one-rollout groups `degenerate`;
 * 2. DAPO dynamic sampling (optional) flags constant groups `dropped`;
 * 3. the estimator writes `N` advantages (dropped groups get 0 and stay out of batch statistics);
 * 4. S-GRPO (optional) reweights each kept group;
 * 5. rollouts whose every component is NOT_APPLICABLE get 0;
 * 6. diagnostics (optional) are computed per group.
 * @module
 */
import type { PackedBatch } from "./batch.js";
import { packBatch, resolveComponent } from "./batch.js";
import { applyDynamicSampling } from "./dapo.js";
import { computeGroupDiagnostics } from "./diagnostics.js";
import { AdvantageInputError, AdvantageOptionsError } from "./errors.js";
import type { AdvantageEstimatorDefinition } from "./estimators.js";
import { ADVANTAGE_ESTIMATORS, resolveEstimatorName, resolveEstimatorParams } from "./estimators.js";
import type { EstimatorParams, Workspace } from "./kernels.js";
import { createWorkspace, ensureWorkspace } from "./kernels.js";
import type { ResolvedSgrpoOptions } from "./sgrpo.js";
import { applySgrpo, resolveSgrpoOptions } from "./sgrpo.js";
import type {
  AdvantageBatchInput,
  AdvantageBatchResult,
  AdvantageConfig,
  AdvantageEstimatorName,
  GroupDiagnostics,
  UntypedAdvantageConfig,
} from "./types.js";
import { GroupFlags } from "./types.js";

/** A validated configuration, ready to run. Build with {@link compileAdvantageConfig}. */
export interface CompiledAdvantageConfig {
  readonly estimator: AdvantageEstimatorName;
  readonly definition: AdvantageEstimatorDefinition;
  readonly params: EstimatorParams;
  readonly sgrpo: ResolvedSgrpoOptions | null;
  /** `null` = off; otherwise the component to test (`null` inside = weighted total). */
  readonly dynamicSampling: { readonly component: string | number | null } | null;
}

/**
 * Validates a configuration read from JSON, YAML or flags (estimator name or alias, its options,
 * S-GRPO, dynamic sampling) and applies defaults.
 * @throws {UnknownEstimatorError} for an unknown estimator, listing the supported names.
 * @throws {AdvantageOptionsError} naming the offending key.
 */
export function compileUntypedAdvantageConfig(config: UntypedAdvantageConfig): CompiledAdvantageConfig {
  if (typeof config !== "object" || config === null) {
    throw new AdvantageOptionsError("config", "advantage config must be an object");
  }
  if (typeof config.estimator !== "string") {
    throw new AdvantageOptionsError(
      "estimator",
      "'estimator' is required (a name such as grpo or corr_grpo)",
    );
  }
  const estimator = resolveEstimatorName(config.estimator);
  const definition = ADVANTAGE_ESTIMATORS[estimator];
  const params = resolveEstimatorParams(definition, config.options);
  const sgrpo = config.sgrpo === undefined ? null : resolveSgrpoOptions(config.sgrpo);
  let dynamicSampling: CompiledAdvantageConfig["dynamicSampling"] = null;
  const ds = config.dynamicSampling;
  if (ds === true) {
    dynamicSampling = { component: null };
  } else if (typeof ds === "object" && ds !== null) {
    const c = ds.component ?? null;
    if (c !== null && typeof c !== "string" && typeof c !== "number") {
      throw new AdvantageOptionsError(
        "dynamicSampling.component",
        "'dynamicSampling.component' must be a name or index",
      );
    }
    dynamicSampling = { component: c };
  } else if (ds !== undefined && ds !== false) {
    throw new AdvantageOptionsError(
      "dynamicSampling",
      "'dynamicSampling' must be a boolean or { component }",
    );
  }
  return { estimator, definition, params, sgrpo, dynamicSampling };
}

/**
 * Validates a typed configuration and applies defaults. Same checks as
 * {@link compileUntypedAdvantageConfig}; the compiler additionally checks option names per estimator.
 */
export function compileAdvantageConfig(config: AdvantageConfig): CompiledAdvantageConfig {
  return compileUntypedAdvantageConfig(config as UntypedAdvantageConfig);
}

/** Options of {@link AdvantageEngine.run}. */
export interface AdvantageRunOptions {
  /** Where to write the `N` advantages (length ≥ N). @default a new `Float64Array(N)` */
  readonly out?: Float64Array;
  /** Where to write the `B` group flags (length ≥ B). @default a new `Uint8Array(B)` */
  readonly flags?: Uint8Array;
  /** Compute {@link GroupDiagnostics} for every group. @default false — then nothing extra is computed */
  readonly diagnostics?: boolean;
}

/** Result of one run. */
export interface AdvantageRun {
  /** `N` advantages in rollout order (the `out` buffer when one was given). */
  readonly advantages: Float64Array;
  /** `B` bit sets of {@link GroupFlags}. */
  readonly flags: Uint8Array;
  /** Per-group diagnostics, or `null` when not requested. */
  readonly diagnostics: GroupDiagnostics[] | null;
}

/** Reusable engine holding scratch memory; not safe for two concurrent runs (runs are synchronous). */
export interface AdvantageEngine {
  /**
   * Runs `config` over `batch`. Allocation-free per group once the workspace has grown to the
   * largest batch seen (pass `out` and `flags` to make the whole run allocation-free without
   * diagnostics).
   * @throws {AdvantageInputError} when a configured component reference matches no component.
   */
  run(batch: PackedBatch, config: CompiledAdvantageConfig, options?: AdvantageRunOptions): AdvantageRun;
}

/** Sizing hints for {@link createAdvantageEngine}; the workspace grows past them on demand. */
export interface AdvantageEngineOptions {
  /** @default 64 */
  readonly maxGroupSize?: number;
  /** @default 16 */
  readonly maxComponents?: number;
}

function componentIndex(batch: PackedBatch, ref: string | number | null, key: string): number {
  return ref === null ? -1 : resolveComponent(batch, ref, key);
}

/**
 * Creates an engine with preallocated `Float64Array` scratch buffers (sized by `options`, grown
 * when a larger group or batch arrives).
 */
export function createAdvantageEngine(options: AdvantageEngineOptions = {}): AdvantageEngine {
  const ws: Workspace = createWorkspace(options.maxGroupSize ?? 64, options.maxComponents ?? 16);
  return {
    run(batch, config, runOptions = {}) {
      const N = batch.rolloutCount;
      const B = batch.groupCount;
      const out = runOptions.out ?? new Float64Array(N);
      const flags = runOptions.flags ?? new Uint8Array(B);
      if (out.length < N) throw new AdvantageInputError("out", `out has length ${out.length}, need ≥ N=${N}`);
      if (flags.length < B)
        throw new AdvantageInputError("flags", `flags has length ${flags.length}, need ≥ B=${B}`);
      const dsComponent =
        config.dynamicSampling === null
          ? -1
          : componentIndex(batch, config.dynamicSampling.component, "dynamicSampling.component");
      const sgrpoComponent =
        config.sgrpo === null ? -1 : componentIndex(batch, config.sgrpo.component, "sgrpo.component");
      ensureWorkspace(ws, batch, config.definition.needsBatchZ);

      const offsets = batch.groupOffsets;
      const mask = batch.notApplicable;
      const K = batch.components;
      for (let g = 0; g < B; g++) {
        const row0 = offsets[g]!;
        const end = offsets[g + 1]!;
        let f = end - row0 === 1 ? GroupFlags.degenerate : 0;
        if (mask !== null) {
          for (let j = row0 * K; j < end * K; j++) {
            if (mask[j] !== 0) {
              f |= GroupFlags.notApplicable;
              break;
            }
          }
        }
        flags[g] = f;
      }
      if (config.dynamicSampling !== null) applyDynamicSampling(batch, dsComponent, ws, flags);

      config.definition.run(batch, config.params, ws, out, flags);

      if (config.sgrpo !== null) applySgrpo(batch, config.sgrpo, sgrpoComponent, ws, out, flags);

      const unscorable = batch.unscorable;
      for (let u = 0; u < unscorable.length; u++) out[unscorable[u]!] = 0;

      let diagnostics: GroupDiagnostics[] | null = null;
      if (runOptions.diagnostics === true) {
        const ctx = {
          estimator: config.estimator,
          flags,
          advantages: out,
          denominators: ws.denominators,
          sgrpo: config.sgrpo,
          sgrpoWeights: ws.sgrpoWeights,
          sgrpoSuccesses: ws.sgrpoSuccesses,
        };
        diagnostics = [];
        for (let g = 0; g < B; g++) diagnostics.push(computeGroupDiagnostics(batch, g, ctx));
      }
      return { advantages: out, flags, diagnostics };
    },
  };
}

/** Options of {@link computeAdvantages}. */
export interface ComputeAdvantagesOptions {
  /** Attach {@link GroupDiagnostics} to every group. @default false */
  readonly diagnostics?: boolean;
  /** Reuse an engine (and its scratch memory). @default a fresh engine */
  readonly engine?: AdvantageEngine;
}

/**
 * Convenience entry point on nested arrays: validates and packs `input`, compiles `config`, runs
 * the engine, and splits the result per group. For the hot path use {@link packFlatBatch},
 * {@link compileAdvantageConfig} and {@link createAdvantageEngine} directly.
 * @throws {AdvantageInputError} / {@link AdvantageOptionsError} / {@link UnknownEstimatorError}.
 */
export function computeAdvantages(
  input: AdvantageBatchInput,
  config: AdvantageConfig | CompiledAdvantageConfig,
  options: ComputeAdvantagesOptions = {},
): AdvantageBatchResult {
  const compiled = "definition" in config ? config : compileAdvantageConfig(config);
  const batch = packBatch(input);
  const engine = options.engine ?? createAdvantageEngine();
  const run = engine.run(batch, compiled, { diagnostics: options.diagnostics === true });
  const groups = [];
  for (let g = 0; g < batch.groupCount; g++) {
    const row0 = batch.groupOffsets[g]!;
    const row1 = batch.groupOffsets[g + 1]!;
    const f = run.flags[g]!;
    const diagnostics = run.diagnostics?.[g];
    groups.push({
      advantages: Array.from(run.advantages.subarray(row0, row1)),
      degenerate: (f & GroupFlags.degenerate) !== 0,
      kept: (f & GroupFlags.dropped) === 0,
      corrFallback: (f & GroupFlags.corrFallback) !== 0,
      ...(diagnostics === undefined ? {} : { diagnostics }),
    });
  }
  return { estimator: compiled.estimator, groups };
}
