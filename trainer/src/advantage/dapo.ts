/**
 * DAPO pieces that act on rewards (Yu et al., arXiv 2503.14476; verl `docs/algo/dapo.md`):
 * dynamic sampling (keep/drop a group) and the soft overlong penalty, which lives in
 * `@reward-mesh/sdk/rewards` so the `length` service and the trainer share one implementation.
 * @module
 */
import type { PackedBatch } from "./batch.js";
import { AdvantageInputError } from "./errors.js";
import type { Workspace } from "./kernels.js";
import { weightedTotals } from "./kernels.js";
import { GroupFlags } from "./types.js";

export type { OverlongOptions } from "@reward-mesh/sdk/rewards";
export { checkOverlongOptions, dapoOverlongPenalty, OverlongOptionsError } from "@reward-mesh/sdk/rewards";

/**
 * DAPO dynamic sampling's keep decision for one group's metric values: keep iff the group has
 * exactly one rollout or its values are not all `===` (verl's `std > 0`, made exact: a float std of
 * identical values is not always 0). An empty group is not kept.
 * @throws {AdvantageInputError} on a non-finite value.
 */
export function dapoKeepGroup(values: ArrayLike<number>): boolean {
  const n = values.length;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(values[i])) {
      throw new AdvantageInputError(`values[${i}]`, `values[${i}] is not a finite number: ${values[i]}`);
    }
  }
  if (n === 0) return false;
  if (n === 1) return true;
  const v0 = values[0];
  for (let i = 1; i < n; i++) if (values[i] !== v0) return true;
  return false;
}

/**
 * Applies dynamic sampling to a packed batch: sets {@link GroupFlags.dropped} on every group whose
 * metric (the weighted total when `component < 0`, else that component's raw value) is exactly
 * constant. One-rollout groups are kept. Allocation-free.
 */
export function applyDynamicSampling(
  batch: PackedBatch,
  component: number,
  ws: Workspace,
  flags: Uint8Array,
): void {
  const { values, weights, groupOffsets, components: K } = batch;
  for (let g = 0; g < batch.groupCount; g++) {
    const row0 = groupOffsets[g]!;
    const G = groupOffsets[g + 1]! - row0;
    if (G === 1) continue;
    let constant: number;
    if (component < 0) {
      constant = weightedTotals(values, row0, G, K, weights, ws.totals);
    } else {
      constant = 1;
      const v0 = values[row0 * K + component]!;
      for (let i = 1; i < G; i++) {
        if (values[(row0 + i) * K + component] !== v0) {
          constant = 0;
          break;
        }
      }
    }
    if (constant === 1) flags[g] = flags[g]! | GroupFlags.dropped;
  }
}
