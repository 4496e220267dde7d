/**
 * What the math-verify comparisons share (`math-verify.test.ts` on the agreement set, `heldout.test.ts`
 * on the held-out set): running `tools/math_verify_compare.py` once over pair files, the service's and
 * math-verify's outcome per pair, their scores against the labels, and the list of known
 * disagreements — checking it, comparing a run with it, and writing it anew from a run.
 *
 * A disagreement list (`math-verify-disagreements.json`, `heldout/disagreements.json`) is
 * `{ families, disagreements }`: each family names whose documented convention explains its
 * differences and what math-verify does instead; each entry is one pair (its text and task fields),
 * both graders' outcomes and its family. A run must differ exactly where the list says.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type AgreementPair, judge, pairInput } from "../src/index.js";

/** The script that runs math-verify (its configuration is documented there and in the README). */
export const SCRIPT = fileURLToPath(new URL("../tools/math_verify_compare.py", import.meta.url));
export const README = fileURLToPath(new URL("../README.md", import.meta.url));
export const BOOTSTRAP = "bash scripts/bootstrap.sh --with-torch";
/** Wall-clock seconds math-verify gets per pair (the slowest verdict on the sets takes ~0.3 s). */
export const PAIR_TIMEOUT_S = 3;
/**
 * Set to `1` to make a comparison test write its disagreement list from the run (see
 * {@link updatedList}) before it checks it: how the lists are regenerated after a grader changes.
 */
export const WRITE_LIST_ENV = "MATH_VERIFY_WRITE_DISAGREEMENTS";
/** The family a regenerated list gives a new difference: the test fails until a person assigns one. */
export const UNASSIGNED = "TODO";

/** What a grader made of a pair: a verdict, or why there is none (math-verify only). */
export type Outcome = "accept" | "reject" | "timeout" | "error" | "gold_unparsed";
export const OUTCOMES: readonly Outcome[] = ["accept", "reject", "timeout", "error", "gold_unparsed"];

/** A labelled pair as both graders see it (agreement pairs and held-out cases). */
export interface GradedPair {
  readonly response: string;
  readonly reference: string;
  readonly expected: boolean;
  readonly answer_type?: string;
  readonly answer_format?: string;
  readonly tolerance?: number;
}

/** One line of the script's output for a pair. */
export interface MathVerifyRow {
  readonly type: "result";
  readonly index: number;
  readonly status: "ok" | "timeout" | "error" | "gold_unparsed";
  readonly verdict?: boolean;
  readonly gold?: string;
  readonly answer?: string;
  readonly error?: string;
  readonly stage?: string;
}

/** A known difference: the pair (by its fields), both outcomes and the family that explains it. */
export interface KnownDisagreement {
  readonly family: string;
  /** Where the pair comes from (the agreement set's class; `area/family` of a held-out case). */
  readonly class?: string;
  readonly response: string;
  readonly reference: string;
  readonly answer_type?: string;
  readonly answer_format?: string;
  readonly tolerance?: number;
  readonly expected: boolean;
  readonly service: Outcome;
  readonly mathVerify: Outcome;
  readonly note?: string;
}

export interface Family {
  /** Whose documented convention the label of the family's pairs follows: the service's (MATH/GSM8K) or math-verify's. */
  readonly explainedBy: "service" | "math-verify";
  /** That convention, citing where it is documented. */
  readonly convention: string;
  /** What math-verify (in the script's configuration) does instead, and why. */
  readonly mathVerify: string;
}

export interface DisagreementList {
  readonly description?: string;
  readonly families: Record<string, Family>;
  readonly disagreements: KnownDisagreement[];
}

/** A pair's identity: its text and the task fields that change its grading. */
export const keyOf = (p: {
  response: string;
  reference: string;
  answer_type?: string;
  answer_format?: string;
  tolerance?: number;
}) =>
  JSON.stringify([p.response, p.reference, p.answer_type ?? "", p.answer_format ?? "", p.tolerance ?? null]);

/**
 * Runs the script once over `files` (their pairs in order); its rows by index, or a failure naming
 * the fix. `python`: the project's interpreter (the test's choice: REWARD_MESH_PYTHON or `.venv`).
 */
export function runMathVerify(
  python: string,
  files: readonly string[],
  expectedRows: number,
): { meta: Record<string, unknown>; rows: MathVerifyRow[] } {
  const r = spawnSync(python, [SCRIPT, "--timeout", String(PAIR_TIMEOUT_S), ...files], {
    encoding: "utf8",
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", PYTHONDONTWRITEBYTECODE: "1" },
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ENOENT") {
    assert.fail(
      `no Python interpreter at ${python}: the math-verify comparison needs the project's Python ` +
        `environment; run \`${BOOTSTRAP}\` (npm test runs it)`,
    );
  }
  if (r.error) assert.fail(`math_verify_compare.py did not finish with ${python}: ${r.error.message}`);
  if (r.status === 3) assert.fail(r.stderr.trim());
  if (r.status !== 0) {
    assert.fail(
      `math_verify_compare.py exited with ${r.status ?? r.signal} under ${python}:\n${r.stderr.trim()}`,
    );
  }
  const lines = r.stdout.trim().split("\n");
  const meta = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
  assert.equal(meta.type, "meta", `first line is not the meta line: ${lines[0]}`);
  const rows = lines.slice(1).map((l) => JSON.parse(l) as MathVerifyRow);
  assert.equal(rows.length, expectedRows, "math-verify answered every pair");
  rows.forEach((row, i) => {
    assert.equal(row.index, i, "rows in input order");
  });
  return { meta, rows };
}

/** The line naming math-verify's versions and configuration, from the script's meta line. */
export function describeRun(meta: Record<string, unknown>): string {
  const versions = meta.versions as Record<string, string>;
  return (
    `math-verify ${versions["math-verify"]} (latex2sympy2_extended ${versions["latex2sympy2_extended"]}, ` +
    `sympy ${versions.sympy}) under ${String(meta.python)}; ${String(meta.config)}`
  );
}

export const mvOutcome = (row: MathVerifyRow): Outcome =>
  row.status === "ok" ? (row.verdict ? "accept" : "reject") : row.status;

/** The service's outcome for a pair (its defaults, as the agreement test grades). */
export const serviceOutcome = (p: GradedPair): Outcome =>
  judge(pairInput(p as unknown as AgreementPair)).correct ? "accept" : "reject";

/** Agreement, false accepts / false rejects / no verdict of one grader against the labels. */
export interface Score {
  readonly pairs: number;
  readonly positives: number;
  readonly negatives: number;
  readonly agree: number;
  readonly falseAccepts: number;
  readonly falseRejects: number;
  readonly noVerdict: number;
  readonly agreement: number;
}

export function score(outcomes: readonly Outcome[], expected: readonly boolean[]): Score {
  let agree = 0;
  let falseAccepts = 0;
  let falseRejects = 0;
  let noVerdict = 0;
  outcomes.forEach((o, i) => {
    const e = expected[i]!;
    if (o === "accept") {
      if (e) agree++;
      else falseAccepts++;
    } else if (o === "reject") {
      if (e) falseRejects++;
      else agree++;
    } else {
      noVerdict++;
    }
  });
  const positives = expected.filter(Boolean).length;
  return {
    pairs: outcomes.length,
    positives,
    negatives: outcomes.length - positives,
    agree,
    falseAccepts,
    falseRejects,
    noVerdict,
    agreement: outcomes.length === 0 ? 0 : agree / outcomes.length,
  };
}

export const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
export const oneLine = (s: string) => s.replace(/\s+/g, " ");
export const short = (s: string, n = 70) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** `agreement 99.7 % (377/378), false accepts 0/157, false rejects 1/221, no verdict 0`. */
export const describeScore = (s: Score) =>
  `agreement ${pct(s.agreement)} (${s.agree}/${s.pairs}), false accepts ${s.falseAccepts}/${s.negatives}, ` +
  `false rejects ${s.falseRejects}/${s.positives}, no verdict ${s.noVerdict}`;

/**
 * Checks a list: families argued and named in the README's math-verify section (`readmeSection`),
 * each explaining some entry; each entry a pair of `pairs`, listed once, with two different outcomes.
 */
export function checkList(list: DisagreementList, pairs: readonly GradedPair[], readmeSection: string): void {
  const keys = new Set(pairs.map(keyOf));
  const seen = new Set<string>();
  for (const [id, f] of Object.entries(list.families)) {
    assert.ok(["service", "math-verify"].includes(f.explainedBy), `family ${id}: explainedBy`);
    assert.ok(f.convention.length > 20, `family ${id} has no convention`);
    assert.ok(f.mathVerify.length > 20, `family ${id} does not say what math-verify does`);
    assert.ok(readmeSection.includes(`\`${id}\``), `README's math-verify section explains family \`${id}\``);
    assert.ok(
      list.disagreements.some((d) => d.family === id),
      `family ${id} explains no listed disagreement (remove it)`,
    );
  }
  for (const d of list.disagreements) {
    const k = keyOf(d);
    assert.ok(
      list.families[d.family],
      `unknown family '${d.family}' for ${short(d.response)} — assign a family the README documents`,
    );
    assert.ok(keys.has(k), `listed pair is not in the set: ${short(d.response)} / ${d.reference}`);
    assert.ok(!seen.has(k), `listed twice: ${short(d.response)} / ${d.reference}`);
    seen.add(k);
    assert.ok(OUTCOMES.includes(d.service) && OUTCOMES.includes(d.mathVerify), `outcomes of ${k}`);
    assert.notEqual(d.service, d.mathVerify, `not a disagreement: ${k}`);
  }
}

/** A run compared with a list: one line per difference, and what does not match the list. */
export interface Comparison {
  readonly lines: string[];
  readonly unexplained: string[];
  readonly changed: string[];
  readonly gone: string[];
  readonly differ: number;
}

/**
 * Compares a run (the service's outcomes, math-verify's rows, in `pairs`' order) with `list`.
 * `origin(p)`: where a pair comes from, for the printed line.
 */
export function compareWithList<P extends GradedPair>(
  pairs: readonly P[],
  service: readonly Outcome[],
  rows: readonly MathVerifyRow[],
  list: DisagreementList,
  origin: (p: P) => string,
): Comparison {
  const listed = new Map(list.disagreements.map((d) => [keyOf(d), d]));
  const lines: string[] = [];
  const unexplained: string[] = [];
  const changed: string[] = [];
  const differ = new Set<string>();
  pairs.forEach((p, i) => {
    const sv = service[i]!;
    const row = rows[i]!;
    const mv = mvOutcome(row);
    if (sv === mv) return;
    const k = keyOf(p);
    differ.add(k);
    const d = listed.get(k);
    const line =
      `[${d && d.family !== UNASSIGNED ? d.family : "NEW"}] ${origin(p)}: ${short(JSON.stringify(p.response))} vs ` +
      `${JSON.stringify(p.reference)}${p.answer_type ? ` (${p.answer_type})` : ""}` +
      `${p.answer_format ? ` (${p.answer_format})` : ""} — expected ${p.expected ? "accept" : "reject"}; ` +
      `service ${sv}, math-verify ${mv}` +
      (row.status === "ok"
        ? ` (gold ${oneLine(row.gold ?? "")}, answer ${oneLine(row.answer ?? "")})`
        : row.error
          ? ` (${row.error})`
          : "");
    lines.push(line);
    if (!d || !list.families[d.family]) unexplained.push(line);
    else if (d.service !== sv || d.mathVerify !== mv || d.expected !== p.expected)
      changed.push(`${line}; listed as service ${d.service}, math-verify ${d.mathVerify}`);
  });
  const gone = list.disagreements
    .filter((d) => !differ.has(keyOf(d)))
    .map((d) => `[${d.family}] ${short(JSON.stringify(d.response))} vs ${JSON.stringify(d.reference)}`);
  return { lines, unexplained, changed, gone, differ: differ.size };
}

/** `gsm8k-hashes 24, last-box-wins 2, …`: how many listed entries each family explains. */
export function familyCounts(list: DisagreementList): string {
  const n = new Map<string, number>();
  for (const d of list.disagreements) n.set(d.family, (n.get(d.family) ?? 0) + 1);
  return [...n].map(([f, k]) => `${f} ${k}`).join(", ");
}

/**
 * The list a run implies: every pair where the graders differ, in the pairs' order, with the family
 * and note of its listed entry when it had one (outcomes updated), else family {@link UNASSIGNED};
 * families that explain no entry any more are dropped. `classOf(p)`: the entry's `class`.
 */
export function updatedList<P extends GradedPair>(
  pairs: readonly P[],
  service: readonly Outcome[],
  rows: readonly MathVerifyRow[],
  list: DisagreementList,
  classOf: (p: P) => string,
): DisagreementList {
  const listed = new Map(list.disagreements.map((d) => [keyOf(d), d]));
  const disagreements: KnownDisagreement[] = [];
  pairs.forEach((p, i) => {
    const sv = service[i]!;
    const mv = mvOutcome(rows[i]!);
    if (sv === mv) return;
    const old = listed.get(keyOf(p));
    disagreements.push({
      family: old?.family ?? UNASSIGNED,
      class: classOf(p),
      response: p.response,
      reference: p.reference,
      ...(p.answer_type ? { answer_type: p.answer_type } : {}),
      ...(p.answer_format ? { answer_format: p.answer_format } : {}),
      ...(p.tolerance !== undefined ? { tolerance: p.tolerance } : {}),
      expected: p.expected,
      service: sv,
      mathVerify: mv,
      ...(old?.note ? { note: old.note } : {}),
    });
  });
  const used = new Set(disagreements.map((d) => d.family));
  const families = Object.fromEntries(Object.entries(list.families).filter(([id]) => used.has(id)));
  return { ...(list.description ? { description: list.description } : {}), families, disagreements };
}

/** Writes a list as the repository keeps it (one-space JSON indent, a final newline). */
export function writeList(file: string, list: DisagreementList): void {
  writeFileSync(file, `${JSON.stringify(list, null, 1)}\n`);
}
