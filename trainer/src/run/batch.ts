/**
 * From assembled groups to the advantage engine's input, and from its output to the step's metrics.
 *
 * Rules: a component whose service does not score the rollout's domain,
 * or that a service reports NOT_APPLICABLE, is `null` (N/A). N/A for a whole group drops the component
 * from that group; N/A for some rollouts only counts as 0 and is reported. A missing result at the
 * deadline drops the group (`drop`) or is imputed with the group mean of each component (`impute`), so
 * it carries no signal through that component.
 * @module
 */
import { ComponentStatus } from "@reward-mesh/proto";
import type { AdvantageBatchResult, GroupDiagnostics } from "../advantage/types.js";
import type { AssembledGroup } from "./assembler.js";
import type { ComponentConfig, RunConfig } from "./config.js";
import { createRng, mixSeed } from "./tasks.js";

/** A group ready for the engine. */
export interface PreparedGroup {
  readonly source: AssembledGroup;
  /** `G×K`, `null` = NOT_APPLICABLE. */
  readonly rewards: (number | null)[][];
  /**
   * The rewards before label noise (`config.rewardNoise`) flipped any, when noise is on: what the
   * services reported. The engine sees `rewards`; metrics record both, so a curve can show what the
   * policy actually achieved rather than the flipped value, which shrinks by (1 − 2p).
   */
  readonly clean?: (number | null)[][];
  /** Values the noise flipped in this group. */
  readonly flipped?: number;
  readonly imputed: boolean;
}

/** Component id as used in names, diagnostics and `sgrpo.component`: `service/component`. */
export const componentId = (c: ComponentConfig) => `${c.service}/${c.component}`;

/**
 * Builds the reward matrices. Groups missing results are dropped or imputed per `config.groups.missing`;
 * label noise (`config.rewardNoise`) flips binary values of the listed components with probability p.
 */
export function prepareGroups(
  groups: readonly AssembledGroup[],
  config: RunConfig,
  domainOf: (groupId: string) => string,
  step: number,
): { prepared: PreparedGroup[]; droppedIncomplete: number; partialNotApplicable: number } {
  const prepared: PreparedGroup[] = [];
  let droppedIncomplete = 0;
  let partialNotApplicable = 0;
  const noisy = new Set(config.rewardNoise.components);
  groups.forEach((g, gi) => {
    if (!g.complete && config.groups.missing === "drop") {
      droppedIncomplete++;
      return;
    }
    const domain = domainOf(g.group.groupId);
    const rewards = g.results.map((byService) =>
      config.components.map((c): number | null => {
        if (!(config.serviceDomains[c.service] ?? []).includes(domain)) return null;
        const r = byService.get(c.service);
        if (!r) return Number.NaN; // missing: imputed below
        const comp = r.components.find((x) => x.name === c.component);
        if (!comp || comp.status === ComponentStatus.NOT_APPLICABLE) return null;
        return comp.value;
      }),
    );
    let imputed = false;
    config.components.forEach((_, k) => {
      const present = rewards.map((row) => row[k]).filter((v): v is number => v !== null && !Number.isNaN(v));
      const mean = present.length ? present.reduce((a, b) => a + b, 0) / present.length : null;
      for (const row of rewards) {
        if (row[k] !== null && Number.isNaN(row[k])) {
          row[k] = mean;
          imputed = true;
        }
      }
      const na = rewards.filter((row) => row[k] === null).length;
      if (na > 0 && na < rewards.length) partialNotApplicable += na;
    });
    // Label noise after imputation; `clean` keeps the values as reported (and imputed).
    const noiseOn = config.rewardNoise.p > 0 && config.components.some((c) => noisy.has(componentId(c)));
    const clean = noiseOn ? rewards.map((row) => [...row]) : undefined;
    let flipped = 0;
    config.components.forEach((c, k) => {
      if (!noiseOn || !noisy.has(componentId(c))) return;
      const rng = createRng(mixSeed(config.seed, step, gi, k, 0x5eed));
      for (const row of rewards) {
        const v = row[k];
        if ((v === 0 || v === 1) && rng() < config.rewardNoise.p) {
          row[k] = 1 - v;
          flipped++;
        }
      }
    });
    prepared.push({ source: g, rewards, imputed, ...(clean ? { clean, flipped } : {}) });
  });
  return { prepared, droppedIncomplete, partialNotApplicable };
}

/**
 * Results still missing at the deadline, per service (one per rollout the service did not score in
 * time, or whose result was rejected): what `missingResults` in the step metrics records, so a step that
 * dropped its groups says whose results it waited for.
 */
export function missingResultsByService(groups: readonly AssembledGroup[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const g of groups)
    for (const m of g.missing) {
      // `index/service`: the index is a number, so the service is everything after the first '/'.
      const service = m.slice(m.indexOf("/") + 1);
      out[service] = (out[service] ?? 0) + 1;
    }
  return out;
}

/** Weighted total of one rollout (N/A counts as 0). */
export function weightedTotal(
  row: readonly (number | null)[],
  components: readonly ComponentConfig[],
): number {
  let s = 0;
  components.forEach((c, k) => {
    const v = row[k];
    if (v !== null && v !== undefined) s += c.weight * v;
  });
  return s;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const std = (xs: readonly number[]) => {
  const m = mean(xs);
  if (m === null || xs.length < 2) return null;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
};

/** Averages of the per-group diagnostics (pairs/components only where defined). */
function averageMatrix(
  ds: readonly GroupDiagnostics[],
  pick: (d: GroupDiagnostics) => number[][],
  K: number,
): (number | null)[][] {
  const sum = Array.from({ length: K }, () => new Array<number>(K).fill(0));
  const n = Array.from({ length: K }, () => new Array<number>(K).fill(0));
  for (const d of ds) {
    const m = pick(d);
    for (let k = 0; k < K; k++) {
      for (let l = 0; l < K; l++) {
        if (d.constantComponents[k] || d.constantComponents[l] || d.weights[k] === 0 || d.weights[l] === 0)
          continue;
        sum[k]![l]! += m[k]![l]!;
        n[k]![l]!++;
      }
    }
  }
  return sum.map((row, k) => row.map((s, l) => (n[k]![l]! ? s / n[k]![l]! : null)));
}

function averageShares(
  ds: readonly GroupDiagnostics[],
  pick: (d: GroupDiagnostics) => readonly number[],
  K: number,
): (number | null)[] {
  const out: (number | null)[] = [];
  for (let k = 0; k < K; k++) {
    const xs = ds
      .map(pick)
      .map((s) => s[k]!)
      .filter((v) => Number.isFinite(v));
    out.push(mean(xs));
  }
  return out;
}

/** The per-step metrics line (`metrics.jsonl`), without timings and learner figures. */
export function rewardMetrics(
  prepared: readonly PreparedGroup[],
  result: AdvantageBatchResult,
  config: RunConfig,
): Record<string, unknown> {
  const K = config.components.length;
  const ids = config.components.map(componentId);
  const perComponent: Record<
    string,
    { mean: number | null; std: number | null; notApplicable: number; cleanMean?: number | null }
  > = {};
  config.components.forEach((_, k) => {
    const vals: number[] = [];
    let na = 0;
    for (const g of prepared)
      for (const row of g.rewards) row[k] === null ? na++ : vals.push(row[k] as number);
    perComponent[ids[k]!] = { mean: mean(vals), std: std(vals), notApplicable: na };
  });
  const totals = prepared.flatMap((g) => g.rewards.map((row) => weightedTotal(row, config.components)));
  const noisy = new Set(config.rewardNoise.components);
  const noiseOn = config.rewardNoise.p > 0 && ids.some((id) => noisy.has(id));
  const cleanRows = prepared.flatMap((g) => g.clean ?? g.rewards);
  if (noiseOn) {
    // Observed (flipped, what the estimator saw) stays in `mean`; the services' values in `cleanMean`.
    config.components.forEach((_, k) => {
      if (!noisy.has(ids[k]!)) return;
      const vals = cleanRows.map((row) => row[k]).filter((v): v is number => v !== null && v !== undefined);
      perComponent[ids[k]!] = { ...perComponent[ids[k]!]!, cleanMean: mean(vals) };
    });
  }
  const diags = result.groups.map((g) => g.diagnostics).filter((d): d is GroupDiagnostics => d !== undefined);
  const sgrpoWeights = diags.map((d) => d.sgrpo?.weight).filter((w): w is number => w !== undefined);
  return {
    weightedReward: mean(totals),
    weightedRewardStd: std(totals),
    ...(noiseOn
      ? {
          weightedRewardClean: mean(cleanRows.map((row) => weightedTotal(row, config.components))),
          rewardNoise: {
            p: config.rewardNoise.p,
            components: config.rewardNoise.components,
            flipped: prepared.reduce((n, g) => n + (g.flipped ?? 0), 0),
          },
        }
      : {}),
    components: perComponent,
    correlation: { components: ids, matrix: averageMatrix(diags, (d) => d.correlation, K) },
    denominatorShares: {
      components: ids,
      grpoRow: averageShares(diags, (d) => d.grpoShares.rowShare, K),
      corrGrpoRow: averageShares(diags, (d) => d.corrGrpoShares.rowShare, K),
      grpoDiagonal: averageShares(diags, (d) => d.grpoShares.diagonalShare, K),
      corrGrpoDiagonal: averageShares(diags, (d) => d.corrGrpoShares.diagonalShare, K),
    },
    sgrpo: config.sgrpo
      ? { meanWeight: mean(sgrpoWeights), gatedGroups: diags.filter((d) => d.sgrpo?.gated).length }
      : null,
    groups: {
      used: prepared.length,
      dynamicSamplingDropped: result.groups.filter((g) => !g.kept).length,
      degenerate: result.groups.filter((g) => g.degenerate).length,
      imputed: prepared.filter((g) => g.imputed).length,
      // CorrGRPO's degenerate-group guard: groups divided by GRPO's scale instead of sqrt(S) ≈ 0.
      corrFallback: result.groups.filter((g) => g.corrFallback).length,
    },
  };
}
