/**
 * `reward-mesh explain`: why a rollout got its advantage.
 *
 * Per step the trainer appends one line to `runs/<id>/explain.jsonl` ({@link ExplainStepRecord}): the
 * engine's input (per rollout, each component's value or null for NOT_APPLICABLE, its status, the
 * response length) and what it gave (advantages), plus the step's trace id and, per rollout whose span
 * was sampled, the id of the rollout's own trace. {@link explainRollout}
 * re-runs the same engine (`computeAdvantages` with the run's compiled configuration, diagnostics on)
 * on that stored batch, so every figure it prints — correlation, denominator shares under GRPO and
 * CorrGRPO, S-GRPO weight and gate, DAPO decision, final advantage — is the trainer's own code's, and it
 * checks that the advantages it recomputes are the ones the trainer applied.
 * @module
 */
import { appendFileSync, closeSync, existsSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { computeAdvantages } from "../advantage/engine.js";
import type { GroupDiagnostics } from "../advantage/types.js";
import type { PreparedGroup } from "./batch.js";
import { compileAdvantage, type RunConfig } from "./config.js";
import { runPaths } from "./state.js";

/** One group as stored for explain (record version 2). */
export interface ExplainGroupRecord {
  readonly groupId: string;
  readonly taskId: string;
  readonly domain: string;
  /** Only when they are not the trainer's `<runId>-<groupId>-<index>` (they are derived otherwise). */
  readonly rolloutIds?: readonly string[];
  /** `G×K`: the engine's input, `null` = NOT_APPLICABLE (imputed values included), full precision. */
  readonly rewards: readonly (readonly (number | null)[])[];
  /** `G×K`: each component's status as a code ({@link EXPLAIN_STATUS_NAMES}). */
  readonly statuses: readonly (readonly number[])[];
  /** Per rollout: the length passed to the engine. */
  readonly lengths: readonly number[];
  readonly imputed: boolean;
  /** The advantages the trainer applied. */
  readonly advantages: readonly number[];
  /**
   * Per rollout, the id of its own trace (32 hex digits), `null` when its span was not sampled; absent
   * when none of the group's rollouts was (tracing off).
   */
  readonly traceIds?: readonly (string | null)[];
  /**
   * Per rollout, the response text the services scored (past {@link EXPLAIN_RESPONSE_MAX_CHARS} characters,
   * cut there and ending in a note saying how many were not stored); absent in records of older trainers.
   */
  readonly responses?: readonly string[];
  /**
   * `G×K`: each component's `details` as its service reported them ("" for none; past
   * {@link EXPLAIN_DETAILS_MAX_CHARS} characters, cut as responses are); absent when no component had any.
   */
  readonly details?: readonly (readonly string[])[];
}

/** Characters of a response stored per rollout in `explain.jsonl` (a longer one is cut, and says so). */
export const EXPLAIN_RESPONSE_MAX_CHARS = 16_384;
/** Characters of a component's `details` stored in `explain.jsonl` (a longer one is cut, and says so). */
export const EXPLAIN_DETAILS_MAX_CHARS = 2_048;

/** `text`, or its first `max` characters (code points) and a note of how many more there were. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, max).join("")}… [${chars.length - max} more characters not stored]`;
}

/**
 * Status codes of {@link ExplainGroupRecord.statuses}: 0–4 are the proto's `ComponentStatus`; then
 * `MISSING` (the service owed a result and none came), `NOT_SCORED` (no service scores the domain),
 * `ABSENT` (the service answered without this component).
 */
export const EXPLAIN_STATUS_NAMES = [
  "UNSPECIFIED",
  "OK",
  "NOT_APPLICABLE",
  "ERROR",
  "TIMEOUT",
  "MISSING",
  "NOT_SCORED",
  "ABSENT",
] as const;

/** The advantage settings a step was computed with (what `compileAdvantage` reads from the run config). */
export interface ExplainAdvantageSettings {
  readonly estimator: RunConfig["estimator"];
  readonly sgrpo: RunConfig["sgrpo"];
  readonly dynamicSampling: RunConfig["dynamicSampling"];
}

/** One step of `explain.jsonl` (one JSON line; `v` and `step` come first so readers can prefilter lines). */
export interface ExplainStepRecord {
  readonly v: 2;
  readonly step: number;
  readonly estimator: string;
  /** The advantage settings of this step (a resumed run may have changed the config since). */
  readonly advantage: ExplainAdvantageSettings;
  /** The step's trace id, present only when the step span was sampled (so the trace was exported). */
  readonly traceId?: string;
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

/** The explain record version this trainer writes and reads. */
export const EXPLAIN_RECORD_VERSION = 2;

/** The advantage settings of a run config, as stored per step. */
export function advantageSettingsOf(c: RunConfig): ExplainAdvantageSettings {
  return { estimator: c.estimator, sgrpo: c.sgrpo, dynamicSampling: c.dynamicSampling };
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
  traceIds: readonly (string | undefined)[] = [],
  responses?: readonly string[],
): ExplainGroupRecord {
  const statuses = g.source.results.map((byService) =>
    config.components.map((c) => {
      const r = byService.get(c.service);
      if (!r) return (config.serviceDomains[c.service] ?? []).includes(domain) ? MISSING : NOT_SCORED;
      const comp = r.components.find((x) => x.name === c.component);
      return comp ? comp.status : ABSENT;
    }),
  );
  const details = g.source.results.map((byService) =>
    config.components.map((c) =>
      capText(
        byService.get(c.service)?.components.find((x) => x.name === c.component)?.details ?? "",
        EXPLAIN_DETAILS_MAX_CHARS,
      ),
    ),
  );
  const { groupId, rolloutIds } = g.source.group;
  const derivable = rolloutIds.every((id, i) => id === `${config.runId}-${groupId}-${i}`);
  return {
    groupId,
    taskId,
    domain,
    ...(derivable ? {} : { rolloutIds }),
    rewards: g.rewards,
    statuses,
    lengths,
    imputed: g.imputed,
    advantages,
    ...(traceIds.some((t) => t !== undefined) ? { traceIds: traceIds.map((t) => t ?? null) } : {}),
    ...(responses ? { responses: responses.map((r) => capText(r, EXPLAIN_RESPONSE_MAX_CHARS)) } : {}),
    ...(details.some((row) => row.some((d) => d !== "")) ? { details } : {}),
  };
}

const MISSING = 5;
const NOT_SCORED = 6;
const ABSENT = 7;
function statusName(s: number): string {
  return EXPLAIN_STATUS_NAMES[s] ?? String(s);
}

/** The rollout ids of a stored group (derived from run, group and index when not stored). */
export function rolloutIdsOf(runId: string, g: ExplainGroupRecord): readonly string[] {
  return g.rolloutIds ?? g.advantages.map((_, i) => `${runId}-${g.groupId}-${i}`);
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
  readonly rollouts: readonly ExplainedRollout[];
  /** The group mean of the rollouts' weighted totals (what each total is compared with). */
  readonly groupMean: number;
  /**
   * Per component, the group mean of its raw values, a value that did not apply counted 0 (as in the
   * weighted total, so that `Σ_k weight_k · componentMeans[k]` is `groupMean`).
   */
  readonly componentMeans: readonly number[];
  readonly correlation: readonly (readonly number[])[];
  /**
   * Per component `k`, its row's share of the estimator's normaliser: `Σ_l M_kl / Σ_kl M_kl` with `M` the
   * covariance matrix of the weighted components (GRPO: `Σ_kl Cov_kl` is the total's variance) or their
   * correlation matrix (CorrGRPO: `Σ_kl ρ_kl` is the coefficient sum). The shares sum to 1 over components
   * (all 0 when the sum is 0); a component anti-correlated with the others has a share below 0, and the
   * others then above their part (e.g. 2 and −1).
   */
  readonly denominatorShares: { readonly grpo: readonly number[]; readonly corrGrpo: readonly number[] };
  readonly coefficientSum: number;
  readonly denominator: number | null;
  readonly sgrpo: { readonly weight: number; readonly successes: number; readonly gated: boolean } | null;
  /** DAPO dynamic sampling: null when off. */
  readonly dynamicSampling: { readonly kept: boolean } | null;
  readonly degenerate: boolean;
  /** CorrGRPO's degenerate-group guard divided the group by the weighted total's std instead of sqrt(S). */
  readonly corrFallback: boolean;
  readonly imputed: boolean;
  /** True when the re-run engine gives the advantages the trainer applied (to 1e-12). */
  readonly reproduced: boolean;
  /** The step's trace id (all zeros when the step span was not sampled). */
  readonly traceId: string;
  /** The step's trace link built from the URL template (`{traceId}`), when one was given and the step was traced. */
  readonly traceUrl: string | null;
  /** The trace of the rollout asked for (its own trace), when its span was sampled. */
  readonly rolloutTraceId: string | null;
  /** That trace's link from the URL template, when one was given. */
  readonly rolloutTraceUrl: string | null;
}

/** One rollout of a {@link GroupExplanation}. */
export interface ExplainedRollout {
  readonly rolloutId: string;
  /** Per component: its raw value, `null` where it did not apply (NOT_APPLICABLE). */
  readonly values: readonly (number | null)[];
  readonly statuses: readonly string[];
  /** `Σ_k weight_k · value_k` with the configured weights, a value that did not apply counted 0. */
  readonly weightedTotal: number;
  readonly advantage: number;
  /** The response text the services scored; `null` when the record does not hold it (an older trainer). */
  readonly response: string | null;
  /** Per component: the `details` its service reported ("" for none, or when the record holds none). */
  readonly details: readonly string[];
  /**
   * Per component `k`: its part of `weightedTotal − groupMean`, `weight_k · value_k` minus that product's
   * group mean (a value that did not apply counted 0, as in the total); the parts sum to the difference.
   */
  readonly parts: readonly number[];
  /**
   * Per component: `|parts[k]| / Σ_l |parts[l]|`, how much of the rollout's distance from the group mean
   * the component accounts for (sums to 1 over components; the sign of `parts[k]` says whether it raised or
   * lowered the total). All `null` when the rollout's total is the group mean in every component (no part).
   */
  readonly shares: readonly (number | null)[];
}

/**
 * Each rollout's per-component parts of its distance from the group mean of the weighted total, and their
 * shares (see {@link ExplainedRollout.parts}, {@link ExplainedRollout.shares}).
 */
export function rolloutParts(
  rewards: readonly (readonly (number | null)[])[],
  weights: readonly number[],
): Array<{ parts: number[]; shares: (number | null)[] }> {
  const G = rewards.length;
  const weighted = rewards.map((row) => weights.map((w, k) => (row[k] == null ? 0 : w * row[k]!)));
  const means = weights.map((_, k) => weighted.reduce((s, row) => s + row[k]!, 0) / Math.max(1, G));
  // Below this, a part is rounding noise of a component equal to its mean (a share of it would be noise too).
  const scale = Math.max(1, ...weighted.flat().map(Math.abs));
  return weighted.map((row) => {
    const parts = row.map((x, k) => (Math.abs(x - means[k]!) <= 1e-12 * scale ? 0 : x - means[k]!));
    const sum = parts.reduce((s, p) => s + Math.abs(p), 0);
    return { parts, shares: parts.map((p) => (sum === 0 ? null : Math.abs(p) / sum)) };
  });
}

/** Raised when `explain.jsonl` holds a line that is not a record this trainer reads: names file and line. */
export class ExplainFileError extends Error {
  override readonly name = "ExplainFileError";
}

/** One line of a JSONL file: its text, 1-based number, and whether it ended without a newline. */
interface FileLine {
  readonly text: string;
  readonly lineNo: number;
  readonly unterminated: boolean;
}

const CHUNK = 1 << 20;

/** Splits byte chunks into lines (bytes, so a multi-byte character across chunks is not torn). */
class LineSplitter {
  private rest: Buffer = Buffer.alloc(0);
  private n = 0;
  push(chunk: Buffer): FileLine[] {
    const buf = this.rest.length ? Buffer.concat([this.rest, chunk]) : chunk;
    const out: FileLine[] = [];
    let start = 0;
    for (let i = buf.indexOf(10, start); i >= 0; i = buf.indexOf(10, start)) {
      out.push({ text: buf.toString("utf8", start, i), lineNo: ++this.n, unterminated: false });
      start = i + 1;
    }
    this.rest = Buffer.from(buf.subarray(start));
    return out;
  }
  end(): FileLine[] {
    return this.rest.length
      ? [{ text: this.rest.toString("utf8"), lineNo: ++this.n, unterminated: true }]
      : [];
  }
}

/** The lines of `file`, read in 1 MiB chunks (never the whole file in one string). */
function* linesOf(file: string): Generator<FileLine> {
  const fd = openSync(file, "r");
  try {
    const split = new LineSplitter();
    const buf = Buffer.alloc(CHUNK);
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null))
      yield* split.push(buf.subarray(0, n));
    yield* split.end();
  } finally {
    closeSync(fd);
  }
}

/** {@link linesOf} without blocking the event loop (the Trainer service's reads). */
async function* linesOfAsync(file: string): AsyncGenerator<FileLine> {
  const fh = await open(file, "r");
  try {
    const split = new LineSplitter();
    const buf = Buffer.alloc(CHUNK);
    for (let r = await fh.read(buf, 0, CHUNK, null); r.bytesRead > 0; r = await fh.read(buf, 0, CHUNK, null))
      yield* split.push(buf.subarray(0, r.bytesRead));
    yield* split.end();
  } finally {
    await fh.close();
  }
}

/**
 * Parses one line of `file`. A line that ended without a newline and is not valid JSON is a torn last
 * append (the trainer died mid-write): `null`. Any other bad line is an {@link ExplainFileError}.
 */
function parseRecordLine(file: string, line: FileLine): ExplainStepRecord | null {
  let v: unknown;
  try {
    v = JSON.parse(line.text);
  } catch (err) {
    if (line.unterminated) return null;
    throw new ExplainFileError(`${file}:${line.lineNo}: not valid JSON (${(err as Error).message})`);
  }
  const r = v as Partial<ExplainStepRecord> | null;
  if (typeof r !== "object" || r === null || Array.isArray(r))
    throw new ExplainFileError(`${file}:${line.lineNo}: not a JSON object`);
  if (r.v !== EXPLAIN_RECORD_VERSION)
    throw new ExplainFileError(
      `${file}:${line.lineNo}: record version ${JSON.stringify(r.v)} is not supported (this trainer reads version ${EXPLAIN_RECORD_VERSION})`,
    );
  if (!Number.isInteger(r.step) || !Array.isArray(r.groups) || !Array.isArray(r.dropped) || !r.advantage)
    throw new ExplainFileError(
      `${file}:${line.lineNo}: not a step record (step, advantage, groups, dropped)`,
    );
  return r as ExplainStepRecord;
}

const LEADING_STEP = /^\{"v":\d+,"step":(\d+),/;

/** Reads every step record of a run (none when it stored none); a torn last line is skipped. */
export function readExplainRecords(outputDir: string, runId: string): ExplainStepRecord[] {
  const file = explainPath(outputDir, runId);
  if (!existsSync(file)) return [];
  const out: ExplainStepRecord[] = [];
  for (const line of linesOf(file)) {
    if (line.text.trim() === "") continue;
    const r = parseRecordLine(file, line);
    if (r) out.push(r);
  }
  return out;
}

/**
 * Makes `explain.jsonl` agree with the trainer checkpoint on resume (like `metrics.jsonl`): keeps the
 * records of steps ≤ `checkpointStep` (the last one of a step if it was written twice), drops later
 * steps (written before a checkpoint that never came: the step is redone) and a torn last line. The
 * record is appended before the checkpoint, so a checkpointed step always has its record.
 */
export function reconcileExplain(file: string, checkpointStep: number): void {
  if (!existsSync(file)) return;
  const tmp = `${file}.tmp`;
  const keep: Array<{ step: number; text: string }> = [];
  for (const line of linesOf(file)) {
    if (line.text.trim() === "") continue;
    const m = LEADING_STEP.exec(line.text);
    let step: number;
    if (m && !line.unterminated) step = Number(m[1]);
    else {
      const r = parseRecordLine(file, line);
      if (!r) continue;
      step = r.step;
    }
    if (step <= checkpointStep) keep.push({ step, text: line.text });
  }
  const lastOf = new Map(keep.map((k, i) => [k.step, i]));
  const fd = openSync(tmp, "w");
  try {
    keep.forEach((k, i) => {
      if (lastOf.get(k.step) === i) writeSync(fd, `${k.text}\n`);
    });
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/**
 * Finds the record that holds `target` while lines stream by: only lines that can hold it (a cheap
 * substring check of the step, rollout or group id) are parsed; the last matching record wins (a
 * step redone after a resume).
 */
class RecordFinder {
  private match: ExplainStepRecord | undefined;
  private readonly steps: number[] = [];
  private readonly needles: string[];
  constructor(
    private readonly file: string,
    private readonly runId: string,
    private readonly target: ExplainTarget,
  ) {
    if ("rolloutId" in target) {
      const id = target.rolloutId;
      this.needles = [JSON.stringify(id)];
      const m = /^(.*)-(\d+)$/.exec(id);
      if (m && m[1]!.startsWith(`${runId}-`))
        this.needles.push(`"groupId":${JSON.stringify(m[1]!.slice(runId.length + 1))},`);
    } else this.needles = [`"step":${target.step},`];
  }
  consider(line: FileLine): void {
    if (line.text.trim() === "") return;
    const m = LEADING_STEP.exec(line.text);
    if (m) this.steps.push(Number(m[1]));
    if (!this.needles.some((n) => line.text.includes(n))) return;
    const r = parseRecordLine(this.file, line);
    if (!r) return;
    if ("rolloutId" in this.target) {
      const id = this.target.rolloutId;
      if (
        r.groups.some((g) => rolloutIdsOf(this.runId, g).includes(id)) ||
        r.dropped.some((d) => d.rolloutIds.includes(id))
      )
        this.match = r;
    } else if (r.step === this.target.step) this.match = r;
  }
  result(): { record: ExplainStepRecord; gi: number; rolloutIndex: number | null } {
    const { target, match: record } = this;
    if (!record) {
      if (this.steps.length === 0)
        throw new ExplainNotFoundError(`run '${this.runId}' stored no explain records (${this.file})`);
      throw new ExplainNotFoundError(
        "rolloutId" in target
          ? `no stored step holds rollout '${target.rolloutId}'`
          : `step ${target.step} is not stored (stored steps: ${[...new Set(this.steps)].join(", ")})`,
      );
    }
    if ("rolloutId" in target) {
      for (let gi = 0; gi < record.groups.length; gi++) {
        const i = rolloutIdsOf(this.runId, record.groups[gi]!).indexOf(target.rolloutId);
        if (i >= 0) return { record, gi, rolloutIndex: i };
      }
      const dropped = record.dropped.find((d) => d.rolloutIds.includes(target.rolloutId))!;
      throw new ExplainNotFoundError(
        `rollout '${target.rolloutId}' belongs to group '${dropped.groupId}' of step ${record.step}, dropped before the advantages (missing at the deadline: ${dropped.missing.join(", ")})`,
      );
    }
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

function explainFiles(outputDir: string, runId: string): string {
  const paths = runPaths(outputDir, runId);
  if (!existsSync(paths.config))
    throw new ExplainNotFoundError(`no run '${runId}' in ${outputDir} (${paths.config} does not exist)`);
  const file = explainPath(outputDir, runId);
  if (!existsSync(file)) throw new ExplainNotFoundError(`run '${runId}' stored no explain records (${file})`);
  return file;
}

/**
 * Explains one group of a finished (or running) run from its directory: `outputDir/runId/` must hold
 * `resolved-config.json` and `explain.jsonl`. Everything the engine needs (advantage settings, weights)
 * comes from the step's own record, so a run resumed with another config explains earlier steps right.
 */
export function explainRollout(
  outputDir: string,
  runId: string,
  target: ExplainTarget,
  options: { readonly traceUrlTemplate?: string } = {},
): GroupExplanation {
  const file = explainFiles(outputDir, runId);
  const finder = new RecordFinder(file, runId, target);
  for (const line of linesOf(file)) finder.consider(line);
  return explainFound(runId, finder.result(), options);
}

/** {@link explainRollout} reading the file without blocking the event loop (for the Trainer service). */
export async function explainRolloutAsync(
  outputDir: string,
  runId: string,
  target: ExplainTarget,
  options: { readonly traceUrlTemplate?: string } = {},
): Promise<GroupExplanation> {
  const file = explainFiles(outputDir, runId);
  const finder = new RecordFinder(file, runId, target);
  for await (const line of linesOfAsync(file)) finder.consider(line);
  return explainFound(runId, finder.result(), options);
}

function explainFound(
  runId: string,
  found: { record: ExplainStepRecord; gi: number; rolloutIndex: number | null },
  options: { readonly traceUrlTemplate?: string },
): GroupExplanation {
  const { record, gi, rolloutIndex } = found;
  const settings = record.advantage;
  // The whole step again (batch-level estimators and GRPO's batch scale look at every group).
  const result = computeAdvantages(
    {
      groups: record.groups.map((g) => ({ rewards: g.rewards.map((r) => [...r]), lengths: [...g.lengths] })),
      weights: [...record.weights],
      components: [...record.components],
    },
    compileAdvantage(settings as unknown as RunConfig),
    { diagnostics: true },
  );
  const g = record.groups[gi]!;
  const r = result.groups[gi]!;
  const d = r.diagnostics as GroupDiagnostics;
  const reproduced = r.advantages.every(
    (a, i) => Math.abs(a - g.advantages[i]!) <= 1e-12 * Math.max(1, Math.abs(a)),
  );
  const traceId = record.traceId ?? "0".repeat(32);
  const traced = !/^0*$/.test(traceId);
  const rolloutTraceId = rolloutIndex === null ? null : (g.traceIds?.[rolloutIndex] ?? null);
  const link = (id: string) => options.traceUrlTemplate!.replaceAll("{traceId}", id);
  const parts = rolloutParts(g.rewards, record.weights);
  const rollouts = rolloutIdsOf(runId, g).map(
    (id, i): ExplainedRollout => ({
      rolloutId: id,
      values: g.rewards[i]!,
      statuses: g.statuses[i]!.map(statusName),
      weightedTotal: g.rewards[i]!.reduce<number>(
        (s, v, k) => (v === null ? s : s + record.weights[k]! * v),
        0,
      ),
      advantage: r.advantages[i]!,
      response: g.responses?.[i] ?? null,
      details: g.details?.[i] ?? record.components.map(() => ""),
      parts: parts[i]!.parts,
      shares: parts[i]!.shares,
    }),
  );
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
    rollouts,
    groupMean: rollouts.reduce((s, x) => s + x.weightedTotal, 0) / Math.max(1, rollouts.length),
    componentMeans: record.components.map(
      (_, k) => g.rewards.reduce((s, row) => s + (row[k] ?? 0), 0) / Math.max(1, g.rewards.length),
    ),
    correlation: d.correlation,
    denominatorShares: { grpo: d.grpoShares.rowShare, corrGrpo: d.corrGrpoShares.rowShare },
    coefficientSum: d.coefficientSum,
    denominator: d.denominator,
    sgrpo: d.sgrpo ? { weight: d.sgrpo.weight, successes: d.sgrpo.successes, gated: d.sgrpo.gated } : null,
    dynamicSampling: settings.dynamicSampling ? { kept: r.kept } : null,
    degenerate: r.degenerate,
    corrFallback: r.corrFallback,
    imputed: g.imputed,
    reproduced,
    traceId,
    traceUrl: traced && options.traceUrlTemplate ? link(traceId) : null,
    rolloutTraceId,
    rolloutTraceUrl: rolloutTraceId && options.traceUrlTemplate ? link(rolloutTraceId) : null,
  };
}

export { type RenderOptions, renderExplanation } from "./explain-render.js";
