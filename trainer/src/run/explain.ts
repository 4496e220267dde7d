/**
 * `reward-mesh explain`: why a rollout got its advantage.
 *
 * Per step the trainer appends one line to `runs/<id>/explain.jsonl` ({@link ExplainStepRecord}): the
 * engine's input (per rollout, each component's value or null for NOT_APPLICABLE, its status, the
 * response length) and what it gave (advantages), plus the step's trace id. {@link explainRollout}
 * re-runs the same engine (`computeAdvantages` with the run's compiled configuration, diagnostics on)
 * on that stored batch, so every figure it prints — correlation, denominator shares under GRPO and
 * CorrGRPO, S-GRPO weight and gate, DAPO decision, final advantage — is the trainer's own code's, and it
 * checks that the advantages it recomputes are the ones the trainer applied.
 * @module
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { computeAdvantages } from "../advantage/engine.js";
import type { GroupDiagnostics } from "../advantage/types.js";
import { type PreparedGroup, weightedTotal } from "./batch.js";
import { compileAdvantage, type RunConfig } from "./config.js";
import { runPaths } from "./state.js";

/** One group as stored for explain. */
export interface ExplainGroupRecord {
  readonly groupId: string;
  readonly taskId: string;
  readonly domain: string;
  readonly rolloutIds: readonly string[];
  /** `G×K`: the engine's input, `null` = NOT_APPLICABLE (imputed values included). */
  readonly rewards: readonly (readonly (number | null)[])[];
  /** `G×K`: each component's status as the service reported it (`MISSING` when no result came). */
  readonly statuses: readonly (readonly string[])[];
  /** Per rollout: the length passed to the engine. */
  readonly lengths: readonly number[];
  readonly imputed: boolean;
  /** The advantages the trainer applied. */
  readonly advantages: readonly number[];
}

/** One step of `explain.jsonl`. */
export interface ExplainStepRecord {
  readonly v: 1;
  readonly step: number;
  readonly estimator: string;
  readonly traceId: string;
  readonly components: readonly string[];
  readonly weights: readonly number[];
  /** The groups that reached the engine, in engine order. */
  readonly groups: readonly ExplainGroupRecord[];
  /** Groups dropped before the engine (results missing at the deadline), with what was missing. */
  readonly dropped: ReadonlyArray<{
    readonly groupId: string;
    readonly rolloutIds: readonly string[];
    readonly missing: readonly string[];
  }>;
}

/** The explain file of a run directory. */
export const explainPath = (outputDir: string, runId: string) =>
  `${runPaths(outputDir, runId).dir}/explain.jsonl`;

/** Appends a step's record (one compact JSON line). */
export function appendExplainRecord(file: string, record: ExplainStepRecord): void {
  appendFileSync(file, `${JSON.stringify(record)}\n`);
}

/** The record of a prepared group (statuses from the assembled results). */
export function explainGroupRecord(
  g: PreparedGroup,
  config: RunConfig,
  taskId: string,
  domain: string,
  lengths: readonly number[],
  advantages: readonly number[],
): ExplainGroupRecord {
  const statuses = g.source.results.map((byService) =>
    config.components.map((c) => {
      const r = byService.get(c.service);
      if (!r) return (config.serviceDomains[c.service] ?? []).includes(domain) ? "MISSING" : "NOT_SCORED";
      const comp = r.components.find((x) => x.name === c.component);
      return comp ? statusName(comp.status) : "ABSENT";
    }),
  );
  return {
    groupId: g.source.group.groupId,
    taskId,
    domain,
    rolloutIds: g.source.group.rolloutIds,
    rewards: g.rewards,
    statuses,
    lengths,
    imputed: g.imputed,
    advantages,
  };
}

const STATUS_NAMES = ["UNSPECIFIED", "OK", "NOT_APPLICABLE", "ERROR", "TIMEOUT"];
function statusName(s: number): string {
  return STATUS_NAMES[s] ?? String(s);
}

/** Which rollout or group to explain. */
export type ExplainTarget =
  | { readonly rolloutId: string }
  | { readonly step: number; readonly groupId: string };

/** Raised when the run, step, group or rollout asked for is not in the run directory. */
export class ExplainNotFoundError extends Error {
  override readonly name = "ExplainNotFoundError";
}

/** What `explain` reports about one group. */
export interface GroupExplanation {
  readonly runId: string;
  readonly step: number;
  readonly groupId: string;
  readonly taskId: string;
  readonly domain: string;
  /** The rollout asked for (index in the group), when one was. */
  readonly rolloutIndex: number | null;
  readonly estimator: string;
  readonly components: readonly string[];
  /** Configured weights, and the effective ones in this group (0 for a component N/A for the whole group). */
  readonly weights: readonly number[];
  readonly effectiveWeights: readonly number[];
  readonly rollouts: ReadonlyArray<{
    readonly rolloutId: string;
    readonly values: readonly (number | null)[];
    readonly statuses: readonly string[];
    readonly weightedTotal: number;
    readonly advantage: number;
  }>;
  readonly correlation: readonly (readonly number[])[];
  /** Per component: row share of the denominator under GRPO (`Σ Cov`) and under CorrGRPO (`Σ ρ`). */
  readonly denominatorShares: { readonly grpo: readonly number[]; readonly corrGrpo: readonly number[] };
  readonly coefficientSum: number;
  readonly denominator: number | null;
  readonly sgrpo: { readonly weight: number; readonly successes: number; readonly gated: boolean } | null;
  /** DAPO dynamic sampling: null when off. */
  readonly dynamicSampling: { readonly kept: boolean } | null;
  readonly degenerate: boolean;
  readonly imputed: boolean;
  /** True when the re-run engine gives the advantages the trainer applied (to 1e-12). */
  readonly reproduced: boolean;
  readonly traceId: string;
  /** The trace link built from the URL template (`{traceId}`), when one was given and the step was traced. */
  readonly traceUrl: string | null;
}

/** Reads every step record of a run (none when it stored none). */
export function readExplainRecords(outputDir: string, runId: string): ExplainStepRecord[] {
  const file = explainPath(outputDir, runId);
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as ExplainStepRecord);
}

function findGroup(
  records: readonly ExplainStepRecord[],
  target: ExplainTarget,
): { record: ExplainStepRecord; gi: number; rolloutIndex: number | null } {
  // A resumed step is journalled again: the last record of a step wins.
  for (let s = records.length - 1; s >= 0; s--) {
    const record = records[s]!;
    if ("rolloutId" in target) {
      for (let gi = 0; gi < record.groups.length; gi++) {
        const i = record.groups[gi]!.rolloutIds.indexOf(target.rolloutId);
        if (i >= 0) return { record, gi, rolloutIndex: i };
      }
      const dropped = record.dropped.find((d) => d.rolloutIds.includes(target.rolloutId));
      if (dropped)
        throw new ExplainNotFoundError(
          `rollout '${target.rolloutId}' belongs to group '${dropped.groupId}' of step ${record.step}, dropped before the advantages (missing at the deadline: ${dropped.missing.join(", ")})`,
        );
    } else if (record.step === target.step) {
      const gi = record.groups.findIndex((g) => g.groupId === target.groupId);
      if (gi >= 0) return { record, gi, rolloutIndex: null };
      const dropped = record.dropped.find((d) => d.groupId === target.groupId);
      if (dropped)
        throw new ExplainNotFoundError(
          `group '${target.groupId}' of step ${target.step} was dropped before the advantages (missing at the deadline: ${dropped.missing.join(", ")})`,
        );
      throw new ExplainNotFoundError(
        `step ${target.step} has no group '${target.groupId}' (groups: ${record.groups.map((g) => g.groupId).join(", ")})`,
      );
    }
  }
  throw new ExplainNotFoundError(
    "rolloutId" in target
      ? `no stored step holds rollout '${target.rolloutId}'`
      : `step ${target.step} is not stored (stored steps: ${records.map((r) => r.step).join(", ") || "none"})`,
  );
}

/**
 * Explains one group of a finished (or running) run from its directory: `outputDir/runId/` must hold
 * `resolved-config.json` and `explain.jsonl`.
 */
export function explainRollout(
  outputDir: string,
  runId: string,
  target: ExplainTarget,
  options: { readonly traceUrlTemplate?: string } = {},
): GroupExplanation {
  const paths = runPaths(outputDir, runId);
  if (!existsSync(paths.config))
    throw new ExplainNotFoundError(`no run '${runId}' in ${outputDir} (${paths.config} does not exist)`);
  const config = JSON.parse(readFileSync(paths.config, "utf8")) as RunConfig;
  const records = readExplainRecords(outputDir, runId);
  if (records.length === 0)
    throw new ExplainNotFoundError(
      `run '${runId}' stored no explain records (${explainPath(outputDir, runId)})`,
    );
  const { record, gi, rolloutIndex } = findGroup(records, target);
  // The whole step again (batch-level estimators and GRPO's batch scale look at every group).
  const result = computeAdvantages(
    {
      groups: record.groups.map((g) => ({ rewards: g.rewards.map((r) => [...r]), lengths: [...g.lengths] })),
      weights: [...record.weights],
      components: [...record.components],
    },
    compileAdvantage(config),
    { diagnostics: true },
  );
  const g = record.groups[gi]!;
  const r = result.groups[gi]!;
  const d = r.diagnostics as GroupDiagnostics;
  const reproduced = r.advantages.every(
    (a, i) => Math.abs(a - g.advantages[i]!) <= 1e-12 * Math.max(1, Math.abs(a)),
  );
  const traced = !/^0*$/.test(record.traceId);
  return {
    runId,
    step: record.step,
    groupId: g.groupId,
    taskId: g.taskId,
    domain: g.domain,
    rolloutIndex,
    estimator: record.estimator,
    components: record.components,
    weights: record.weights,
    effectiveWeights: d.weights,
    rollouts: g.rolloutIds.map((id, i) => ({
      rolloutId: id,
      values: g.rewards[i]!,
      statuses: g.statuses[i]!,
      weightedTotal: weightedTotal(g.rewards[i]!, config.components),
      advantage: r.advantages[i]!,
    })),
    correlation: d.correlation,
    denominatorShares: { grpo: d.grpoShares.rowShare, corrGrpo: d.corrGrpoShares.rowShare },
    coefficientSum: d.coefficientSum,
    denominator: d.denominator,
    sgrpo: d.sgrpo ? { weight: d.sgrpo.weight, successes: d.sgrpo.successes, gated: d.sgrpo.gated } : null,
    dynamicSampling: config.dynamicSampling ? { kept: r.kept } : null,
    degenerate: r.degenerate,
    imputed: g.imputed,
    reproduced,
    traceId: record.traceId,
    traceUrl:
      traced && options.traceUrlTemplate
        ? options.traceUrlTemplate.replaceAll("{traceId}", record.traceId)
        : null,
  };
}

const num = (v: number | null, w = 8) => (v === null ? "n/a".padStart(w) : v.toFixed(4).padStart(w));

/** The explanation as text (what `reward-mesh explain` prints). */
export function renderExplanation(e: GroupExplanation): string {
  const L: string[] = [];
  L.push(`run ${e.runId}  step ${e.step}  group ${e.groupId}  task ${e.taskId} (${e.domain})`);
  L.push(
    `estimator ${e.estimator}${e.imputed ? "  (imputed results)" : ""}${e.degenerate ? "  (degenerate)" : ""}`,
  );
  L.push("");
  L.push("components and weights (configured → in this group):");
  e.components.forEach((c, k) => {
    L.push(`  ${c.padEnd(28)} ${num(e.weights[k]!)} → ${num(e.effectiveWeights[k]!)}`);
  });
  L.push("");
  L.push("rollouts (value/status per component, weighted total, advantage):");
  e.rollouts.forEach((r, i) => {
    const mark = i === e.rolloutIndex ? "▶" : " ";
    const cells = r.values.map((v, k) => `${num(v, 7)} ${r.statuses[k]!.slice(0, 6).padEnd(6)}`).join(" ");
    L.push(
      `${mark} ${r.rolloutId.padEnd(24)} ${cells}  total ${num(r.weightedTotal)}  adv ${num(r.advantage, 9)}`,
    );
  });
  L.push("");
  L.push("correlation matrix:");
  e.correlation.forEach((row, k) => {
    L.push(`  ${e.components[k]!.padEnd(28)} ${row.map((v) => num(v)).join(" ")}`);
  });
  L.push("");
  L.push("share of the denominator (row sums):        GRPO   CorrGRPO");
  e.components.forEach((c, k) => {
    L.push(`  ${c.padEnd(36)} ${num(e.denominatorShares.grpo[k]!)} ${num(e.denominatorShares.corrGrpo[k]!)}`);
  });
  L.push(`coefficient sum S ${num(e.coefficientSum)}   denominator ${num(e.denominator)}`);
  L.push(
    e.sgrpo
      ? `S-GRPO: weight ${num(e.sgrpo.weight)} (${e.sgrpo.successes} successes)${e.sgrpo.gated ? "  GATED: advantages silenced" : ""}`
      : "S-GRPO: off",
  );
  L.push(
    e.dynamicSampling
      ? `DAPO dynamic sampling: ${e.dynamicSampling.kept ? "kept" : "dropped (no signal: advantages 0)"}`
      : "DAPO dynamic sampling: off",
  );
  if (e.rolloutIndex !== null) {
    const r = e.rollouts[e.rolloutIndex]!;
    L.push("");
    L.push(`advantage of ${r.rolloutId}: ${r.advantage}`);
  }
  L.push(
    e.reproduced
      ? "recomputed with the trainer's engine: identical to the applied advantages"
      : "WARNING: the engine now gives other advantages than the trainer applied",
  );
  L.push(
    `trace ${/^0*$/.test(e.traceId) ? "(not traced: telemetry was off)" : e.traceId}${e.traceUrl ? `  ${e.traceUrl}` : ""}`,
  );
  return `${L.join("\n")}\n`;
}
