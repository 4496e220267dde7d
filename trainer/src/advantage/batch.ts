/**
 * Validation and packing of a batch into flat `Float64Array`s, the only form the kernels read.
 *
 * All input checking happens here, once per batch, so the estimator kernels never branch on
 * NaN, masks or shapes: NOT_APPLICABLE entries are already 0 in {@link PackedBatch.values}.
 * @module
 */
import { AdvantageInputError } from "./errors.js";
import type { AdvantageBatchInput } from "./types.js";

/**
 * A validated batch in flat typed arrays. Build it with {@link packBatch} (nested arrays) or
 * {@link packFlatBatch} (typed arrays); the engine trusts its invariants.
 */
export interface PackedBatch {
  /** `K`. */
  readonly components: number;
  /** `B`. */
  readonly groupCount: number;
  /** `N = Σ_g G_g`. */
  readonly rolloutCount: number;
  /** `B + 1` offsets: group `g` is rollouts `groupOffsets[g] … groupOffsets[g+1] − 1`. */
  readonly groupOffsets: Int32Array;
  /** `N×K` raw component values, row-major; NOT_APPLICABLE entries are 0. All finite. */
  readonly values: Float64Array;
  /** `K` finite component weights. */
  readonly weights: Float64Array;
  /** `N×K` NOT_APPLICABLE flags (1 = not applicable), or `null` when nothing is flagged. */
  readonly notApplicable: Uint8Array | null;
  /** `N` response lengths (≥ 0), or `null` (every response then counts as one token). */
  readonly lengths: Float64Array | null;
  /** `K` component names. */
  readonly componentNames: readonly string[];
  /** Rollout indices (batch-wide) whose every component is NOT_APPLICABLE; their advantage is 0. */
  readonly unscorable: Int32Array;
}

/** Flat input for {@link packFlatBatch}. */
export interface FlatBatchInput {
  /** `N×K` raw values, row-major. Referenced, not copied, unless `notApplicable` flags some entry. */
  readonly values: Float64Array;
  /** Size of each group, in order; must sum to `N`. */
  readonly groupSizes: ArrayLike<number>;
  /** `K`. */
  readonly components: number;
  /** @default all 1 */
  readonly weights?: ArrayLike<number>;
  /** Optional `N×K` flags, non-zero = NOT_APPLICABLE. */
  readonly notApplicable?: Uint8Array;
  /** Optional `N` response lengths. */
  readonly lengths?: ArrayLike<number>;
  /** @default "0", "1", … */
  readonly componentNames?: readonly string[];
}

function describeNumber(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}

function componentLabel(names: readonly string[], k: number): string {
  return `component '${names[k]}'`;
}

function checkWeights(weights: ArrayLike<number> | undefined, K: number): Float64Array {
  const out = new Float64Array(K);
  if (weights === undefined) {
    out.fill(1);
    return out;
  }
  if (weights.length !== K) {
    throw new AdvantageInputError("weights", `weights has ${weights.length} entries, expected K=${K}`);
  }
  for (let k = 0; k < K; k++) {
    const w = weights[k];
    if (typeof w !== "number") {
      throw new AdvantageInputError(`weights[${k}]`, `weights[${k}] must be a number, got ${typeof w}`);
    }
    if (!Number.isFinite(w)) {
      throw new AdvantageInputError(`weights[${k}]`, `weights[${k}] is ${describeNumber(w)}`);
    }
    out[k] = w;
  }
  return out;
}

function checkNames(names: readonly string[] | undefined, K: number): readonly string[] {
  if (names === undefined) return Array.from({ length: K }, (_, k) => String(k));
  if (!Array.isArray(names) || names.length !== K) {
    throw new AdvantageInputError("components", `components must be an array of K=${K} names`);
  }
  const seen = new Set<string>();
  for (let k = 0; k < K; k++) {
    const n = names[k];
    if (typeof n !== "string" || n.length === 0) {
      throw new AdvantageInputError(`components[${k}]`, `components[${k}] must be a non-empty string`);
    }
    if (seen.has(n)) {
      throw new AdvantageInputError(`components[${k}]`, `components[${k}] '${n}' is a duplicate name`);
    }
    seen.add(n);
  }
  return names.slice();
}

function findUnscorable(mask: Uint8Array | null, N: number, K: number): Int32Array {
  if (mask === null || K === 0) return new Int32Array(0);
  const rows: number[] = [];
  for (let i = 0; i < N; i++) {
    let all = true;
    for (let k = 0; k < K; k++) {
      if (mask[i * K + k] === 0) {
        all = false;
        break;
      }
    }
    if (all) rows.push(i);
  }
  return Int32Array.from(rows);
}

/**
 * Validates a nested batch and packs it.
 *
 * `K` is `weights.length` when weights are given, else the length of the first row. Every row of
 * every group must have `K` entries; each entry must be a finite number, or `null` / flagged in
 * `notApplicable` (then it counts as 0). Errors name the path and component, e.g.
 * `groups[2].rewards[5][3] is NaN (component 'pass')`.
 * @throws {AdvantageInputError}
 */
export function packBatch(input: AdvantageBatchInput): PackedBatch {
  if (typeof input !== "object" || input === null || !Array.isArray(input.groups)) {
    throw new AdvantageInputError("groups", "groups must be an array");
  }
  const groups = input.groups;
  const B = groups.length;
  let K: number;
  if (input.weights !== undefined) {
    if (!Array.isArray(input.weights)) throw new AdvantageInputError("weights", "weights must be an array");
    K = input.weights.length;
  } else if (input.components !== undefined) {
    if (!Array.isArray(input.components)) {
      throw new AdvantageInputError("components", "components must be an array");
    }
    K = input.components.length;
  } else {
    const first = B > 0 && Array.isArray(groups[0]?.rewards) ? groups[0].rewards[0] : undefined;
    K = Array.isArray(first) ? first.length : 0;
  }
  const weights = checkWeights(input.weights, K);
  const names = checkNames(input.components, K);

  const groupOffsets = new Int32Array(B + 1);
  let N = 0;
  for (let g = 0; g < B; g++) {
    const group = groups[g];
    if (typeof group !== "object" || group === null || !Array.isArray(group.rewards)) {
      throw new AdvantageInputError(`groups[${g}].rewards`, `groups[${g}].rewards must be an array of rows`);
    }
    if (group.rewards.length === 0) {
      throw new AdvantageInputError(
        `groups[${g}].rewards`,
        `groups[${g}].rewards is empty (a group needs ≥ 1 rollout)`,
      );
    }
    groupOffsets[g] = N;
    N += group.rewards.length;
  }
  groupOffsets[B] = N;

  const values = new Float64Array(N * K);
  let mask: Uint8Array | null = null;
  let lengths: Float64Array | null = null;
  for (let g = 0; g < B; g++) {
    const group = groups[g]!;
    const rows = group.rewards;
    const flags = group.notApplicable;
    if (flags !== undefined && (!Array.isArray(flags) || flags.length !== rows.length)) {
      throw new AdvantageInputError(
        `groups[${g}].notApplicable`,
        `groups[${g}].notApplicable must have one row per rollout (${rows.length})`,
      );
    }
    const row0 = groupOffsets[g]!;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const path = `groups[${g}].rewards[${i}]`;
      if (!Array.isArray(row) || row.length !== K) {
        const got = Array.isArray(row) ? `${row.length} entries` : typeof row;
        throw new AdvantageInputError(path, `${path} has ${got}, expected K=${K} components`);
      }
      const flagRow = flags?.[i];
      if (flags !== undefined && (!Array.isArray(flagRow) || flagRow.length !== K)) {
        throw new AdvantageInputError(
          `groups[${g}].notApplicable[${i}]`,
          `groups[${g}].notApplicable[${i}] must have K=${K} booleans`,
        );
      }
      for (let k = 0; k < K; k++) {
        const v = row[k];
        const flag = flagRow?.[k];
        if (flag !== undefined && typeof flag !== "boolean") {
          throw new AdvantageInputError(
            `groups[${g}].notApplicable[${i}][${k}]`,
            `groups[${g}].notApplicable[${i}][${k}] must be a boolean, got ${typeof flag}`,
          );
        }
        if (flag === true || v === null) {
          if (mask === null) mask = new Uint8Array(N * K);
          mask[(row0 + i) * K + k] = 1;
          continue;
        }
        if (typeof v !== "number") {
          throw new AdvantageInputError(
            `${path}[${k}]`,
            `${path}[${k}] must be a number or null, got ${typeof v} (${componentLabel(names, k)})`,
          );
        }
        if (!Number.isFinite(v)) {
          throw new AdvantageInputError(
            `${path}[${k}]`,
            `${path}[${k}] is ${describeNumber(v)} (${componentLabel(names, k)})`,
          );
        }
        values[(row0 + i) * K + k] = v;
      }
    }
    const len = group.lengths;
    if (len !== undefined) {
      if (!Array.isArray(len) || len.length !== rows.length) {
        throw new AdvantageInputError(
          `groups[${g}].lengths`,
          `groups[${g}].lengths must have one entry per rollout (${rows.length})`,
        );
      }
      if (lengths === null) lengths = new Float64Array(N).fill(1);
      for (let i = 0; i < rows.length; i++) {
        const L = len[i];
        if (typeof L !== "number" || !Number.isFinite(L) || L < 0) {
          throw new AdvantageInputError(
            `groups[${g}].lengths[${i}]`,
            `groups[${g}].lengths[${i}] must be a finite number ≥ 0, got ${String(L)}`,
          );
        }
        lengths[row0 + i] = L;
      }
    }
  }
  return {
    components: K,
    groupCount: B,
    rolloutCount: N,
    groupOffsets,
    values,
    weights,
    notApplicable: mask,
    lengths,
    componentNames: names,
    unscorable: findUnscorable(mask, N, K),
  };
}

/**
 * Validates and packs a batch that is already in typed arrays (the trainer's hot path).
 * `values` is used in place when no entry is flagged NOT_APPLICABLE; do not mutate it while a run
 * that uses the packed batch is in progress.
 * @throws {AdvantageInputError}
 */
export function packFlatBatch(input: FlatBatchInput): PackedBatch {
  const K = input.components;
  if (!Number.isInteger(K) || K < 0) {
    throw new AdvantageInputError("components", `components must be an integer ≥ 0, got ${K}`);
  }
  const sizes = input.groupSizes;
  const B = sizes.length;
  const groupOffsets = new Int32Array(B + 1);
  let N = 0;
  for (let g = 0; g < B; g++) {
    const G = sizes[g]!;
    if (!Number.isInteger(G) || G < 1) {
      throw new AdvantageInputError(`groupSizes[${g}]`, `groupSizes[${g}] must be an integer ≥ 1, got ${G}`);
    }
    groupOffsets[g] = N;
    N += G;
  }
  groupOffsets[B] = N;
  if (input.values.length !== N * K) {
    throw new AdvantageInputError(
      "values",
      `values has ${input.values.length} entries, expected N×K=${N * K}`,
    );
  }
  const weights = checkWeights(input.weights, K);
  const names = checkNames(input.componentNames, K);
  const flags = input.notApplicable;
  if (flags !== undefined && flags.length !== N * K) {
    throw new AdvantageInputError(
      "notApplicable",
      `notApplicable has ${flags.length} entries, expected ${N * K}`,
    );
  }
  let mask: Uint8Array | null = null;
  if (flags !== undefined) {
    for (let j = 0; j < flags.length; j++) {
      if (flags[j] !== 0) {
        mask = new Uint8Array(N * K);
        break;
      }
    }
  }
  const values = mask === null ? input.values : new Float64Array(N * K);
  for (let g = 0; g < B; g++) {
    for (let r = groupOffsets[g]!; r < groupOffsets[g + 1]!; r++) {
      for (let k = 0; k < K; k++) {
        const j = r * K + k;
        if (mask !== null && flags![j] !== 0) {
          mask[j] = 1;
          continue;
        }
        const v = input.values[j]!;
        if (v - v !== 0) {
          const path = `groups[${g}].rewards[${r - groupOffsets[g]!}][${k}]`;
          throw new AdvantageInputError(
            path,
            `${path} is ${describeNumber(v)} (${componentLabel(names, k)})`,
          );
        }
        if (mask !== null) values[j] = v;
      }
    }
  }
  let lengths: Float64Array | null = null;
  if (input.lengths !== undefined) {
    if (input.lengths.length !== N) {
      throw new AdvantageInputError(
        "lengths",
        `lengths has ${input.lengths.length} entries, expected N=${N}`,
      );
    }
    lengths = new Float64Array(N);
    for (let i = 0; i < N; i++) {
      const L = input.lengths[i]!;
      if (!Number.isFinite(L) || L < 0) {
        throw new AdvantageInputError(`lengths[${i}]`, `lengths[${i}] must be a finite number ≥ 0, got ${L}`);
      }
      lengths[i] = L;
    }
  }
  return {
    components: K,
    groupCount: B,
    rolloutCount: N,
    groupOffsets,
    values,
    weights,
    notApplicable: mask,
    lengths,
    componentNames: names,
    unscorable: findUnscorable(mask, N, K),
  };
}

/**
 * Resolves a component reference (name or index) against a packed batch.
 * @throws {AdvantageInputError} naming `key` when it matches nothing.
 */
export function resolveComponent(batch: PackedBatch, ref: string | number, key: string): number {
  if (typeof ref === "number") {
    if (Number.isInteger(ref) && ref >= 0 && ref < batch.components) return ref;
    throw new AdvantageInputError(key, `${key} index ${ref} is out of range [0, ${batch.components})`);
  }
  const k = batch.componentNames.indexOf(ref);
  if (k < 0) {
    throw new AdvantageInputError(
      key,
      `${key} '${ref}' is not a component; components: ${batch.componentNames.join(", ")}`,
    );
  }
  return k;
}
