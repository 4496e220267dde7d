/**
 * The text `reward-mesh explain` prints for a {@link GroupExplanation}: one stage per section (header and
 * components, the rollouts' table with the group mean, each component's part and share of the rollout's
 * distance from that mean, responses and component details, correlation and the normaliser's shares, the
 * decision), each table with its column headers.
 * @module
 */
import type { ExplainedRollout, GroupExplanation } from "./explain.js";

/** How {@link renderExplanation} prints. */
export interface RenderOptions {
  /** Print each response whole (as stored) instead of its first {@link RESPONSE_PREVIEW_CHARS} characters. */
  readonly fullText?: boolean;
}

/** Characters of a response shown without `fullText` (on one line, newlines shown as `\n`). */
export const RESPONSE_PREVIEW_CHARS = 100;
/** Characters of a component's details shown (on one line); the JSON output has them whole. */
const DETAILS_PREVIEW_CHARS = 160;

const num = (v: number | null, w = 8) => (v === null ? "n/a".padStart(w) : v.toFixed(4).padStart(w));
const signed = (v: number, w = 8) =>
  `${v > 0 ? "+" : v < 0 ? "-" : " "}${Math.abs(v).toFixed(4)}`.padStart(w);
const key = (k: number) => `[${k + 1}]`;
const mark = (e: GroupExplanation, i: number) => (i === e.rolloutIndex ? "▶" : " ");

/** `text` on one line (JSON string escapes), cut at `max` characters with how long it was. */
function preview(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return JSON.stringify(text);
  return `${JSON.stringify(chars.slice(0, max).join(""))}… (${chars.length} characters)`;
}

function headerStage(e: GroupExplanation, L: string[]): void {
  L.push(`run ${e.runId}  step ${e.step}  group ${e.groupId}  task ${e.taskId} (${e.domain})`);
  L.push(
    `estimator ${e.estimator}${e.imputed ? "  (imputed results)" : ""}${e.degenerate ? "  (degenerate)" : ""}`,
  );
  L.push("");
  L.push("components (weight configured → in this group; 0 when the component applied to no rollout):");
  e.components.forEach((c, k) => {
    L.push(`  ${key(k).padEnd(4)} ${c.padEnd(28)} ${num(e.weights[k]!)} → ${num(e.effectiveWeights[k]!)}`);
  });
}

/** The rollouts' table: raw value and status per component, weighted total, its distance from the mean, advantage. */
function rolloutTableStage(e: GroupExplanation, L: string[]): void {
  const idWidth = Math.max(10, ...e.rollouts.map((r) => r.rolloutId.length));
  const statusWidth = e.components.map((_, k) =>
    Math.max(6, ...e.rollouts.map((r) => r.statuses[k]!.length)),
  );
  const valueWidth = e.components.map((_, k) => Math.max(9, `${key(k)} value`.length));
  L.push("");
  L.push(
    "rollouts (raw value and status per component; total = Σ weight·value, n/a counted 0 there and in the means):",
  );
  const head = e.components.map(
    (_, k) => `${`${key(k)} value`.padStart(valueWidth[k]!)} ${"status".padEnd(statusWidth[k]!)}`,
  );
  L.push(
    `  ${"rollout".padEnd(idWidth)} ${head.join(" ")} ${"total".padStart(8)} ${"- mean".padStart(8)} ${"advantage".padStart(10)}`,
  );
  e.rollouts.forEach((r, i) => {
    const cells = r.values.map(
      (v, k) => `${num(v, valueWidth[k])} ${r.statuses[k]!.padEnd(statusWidth[k]!)}`,
    );
    L.push(
      `${mark(e, i)} ${r.rolloutId.padEnd(idWidth)} ${cells.join(" ")} ${num(r.weightedTotal)} ${signed(r.weightedTotal - e.groupMean)} ${num(r.advantage, 10)}`,
    );
  });
  const means = e.componentMeans.map((m, k) => `${num(m, valueWidth[k])} ${"".padEnd(statusWidth[k]!)}`);
  L.push(`  ${"group mean".padEnd(idWidth)} ${means.join(" ")} ${num(e.groupMean)}`);
}

/** Per rollout and component: its part of `total − mean` and the share of the distance it accounts for. */
function sharesStage(e: GroupExplanation, L: string[]): void {
  const idWidth = Math.max(10, ...e.rollouts.map((r) => r.rolloutId.length));
  L.push("");
  L.push(
    "each component's part of total - mean (weight·value minus its group mean) and its share of the distance:",
  );
  L.push(
    "share = |part| / Σ|parts| over components (sums to 1; ↑ raised the total, ↓ lowered it; — at the mean)",
  );
  L.push(
    `  ${"rollout".padEnd(idWidth)} ${e.components.map((_, k) => `${key(k)} part    share`.padStart(18)).join("  ")}`,
  );
  e.rollouts.forEach((r, i) => {
    const cells = r.parts.map((p, k) => {
      const s = r.shares[k];
      const share =
        s === null || s === undefined
          ? "—".padStart(6)
          : `${(s * 100).toFixed(0).padStart(4)}% ${p > 0 ? "↑" : p < 0 ? "↓" : " "}`;
      return `${signed(p, 10)} ${share.padEnd(7)}`;
    });
    L.push(`${mark(e, i)} ${r.rolloutId.padEnd(idWidth)} ${cells.join("  ")}`);
  });
}

function responseLine(r: ExplainedRollout, o: RenderOptions): string {
  if (r.response === null) return "(not stored)";
  if (!o.fullText) return preview(r.response, RESPONSE_PREVIEW_CHARS);
  return `\n${r.response
    .split("\n")
    .map((line) => `      ${line}`)
    .join("\n")}`;
}

/** Each rollout's response (cut unless `fullText`) and the components' details its services reported. */
function textStage(e: GroupExplanation, L: string[], o: RenderOptions): void {
  L.push("");
  if (e.rollouts.every((r) => r.response === null))
    L.push("responses: not in this run's explain.jsonl (written by a trainer that did not store them)");
  else {
    L.push(
      o.fullText
        ? "responses (as the services scored them):"
        : `responses (first ${RESPONSE_PREVIEW_CHARS} characters on one line; --full-text prints them whole):`,
    );
    e.rollouts.forEach((r, i) => {
      L.push(`${mark(e, i)} ${r.rolloutId}  ${responseLine(r, o)}`);
    });
  }
  const details = e.rollouts.flatMap((r, i) =>
    r.details.flatMap((d, k) =>
      d === ""
        ? []
        : [
            `${mark(e, i)} ${r.rolloutId}  ${key(k)} ${e.components[k]}: ${preview(d, DETAILS_PREVIEW_CHARS)}`,
          ],
    ),
  );
  L.push(
    details.length
      ? "component details (as the services reported them):"
      : "component details: none reported",
  );
  L.push(...details);
}

/** The correlation matrix and each component's share of the estimator's normaliser. */
function normaliserStage(e: GroupExplanation, L: string[]): void {
  L.push("");
  L.push("correlation matrix of the weighted components:");
  L.push(`  ${"".padEnd(33)} ${e.components.map((_, k) => key(k).padStart(8)).join(" ")}`);
  e.correlation.forEach((row, k) => {
    L.push(`  ${key(k).padEnd(4)} ${e.components[k]!.padEnd(28)} ${row.map((v) => num(v)).join(" ")}`);
  });
  L.push("");
  L.push(
    "share of the denominator: row k of M over all of M, Σ_l M_kl / Σ_kl M_kl, with M the covariance matrix",
  );
  L.push(
    "(GRPO: Σ M = the total's variance) or the correlation matrix (CorrGRPO: Σ M = S). Sums to 1 over components;",
  );
  L.push(
    "below 0 for a component anti-correlated with the others (it lowers the denominator), above 1 then for others.",
  );
  L.push(`  ${"".padEnd(33)}     GRPO CorrGRPO`);
  e.components.forEach((c, k) => {
    L.push(
      `  ${key(k).padEnd(4)} ${c.padEnd(28)} ${num(e.denominatorShares.grpo[k]!)} ${num(e.denominatorShares.corrGrpo[k]!)}`,
    );
  });
  L.push(`coefficient sum S ${num(e.coefficientSum)}   denominator ${num(e.denominator)}`);
  if (e.corrFallback)
    L.push(
      "CorrGRPO fallback: S is near 0 (the components cancel) while the total varies, so the denominator is the weighted total's std (GRPO's scale), not sqrt(S)",
    );
}

/** S-GRPO, DAPO, the advantage asked for, whether it reproduces, and the traces. */
function decisionStage(e: GroupExplanation, L: string[]): void {
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
  if (e.rolloutIndex !== null)
    L.push(
      `rollout trace ${e.rolloutTraceId ?? "(not traced: telemetry off or the rollout not sampled)"}${e.rolloutTraceUrl ? `  ${e.rolloutTraceUrl}` : ""}`,
    );
  L.push(
    `step trace ${/^0*$/.test(e.traceId) ? "(not traced: telemetry was off)" : e.traceId}${e.traceUrl ? `  ${e.traceUrl}` : ""}`,
  );
}

/** The explanation as text (what `reward-mesh explain` prints). */
export function renderExplanation(e: GroupExplanation, o: RenderOptions = {}): string {
  const L: string[] = [];
  headerStage(e, L);
  rolloutTableStage(e, L);
  sharesStage(e, L);
  textStage(e, L, o);
  normaliserStage(e, L);
  decisionStage(e, L);
  return `${L.join("\n")}\n`;
}
