/**
 * The held-out set (`test/heldout/*.json`, issue 28): final-answer cases written apart from the
 * agreement set and not tuned to the grader — one file per area (`extraction`, `notation`,
 * `structure`, and ordinary MATH-500 / GSM8K-style cases in `gsm8k-math500`), each case
 * `{family, response, reference, expected, why}` plus the optional task fields of the agreement set.
 * Every case is graded by the service (`judge(pairInput(…))`, the agreement test's defaults) and by
 * math-verify (`tools/math_verify_compare.py`, TRL's configuration, one Python process for all files);
 * the test prints per family and overall the agreement, false accepts and false rejects of each, and
 * asserts:
 *  - the service agrees with the labels at least as often as math-verify does;
 *  - the service has no false accept (a rewarded wrong answer is learnt);
 *  - the graders differ exactly where `test/heldout/disagreements.json` says (a new unexplained
 *    difference fails, and so does a listed one that changed or vanished), each difference in a family
 *    that the README's math-verify section documents.
 *
 * Regenerating the list after a grader change: `MATH_VERIFY_WRITE_DISAGREEMENTS=1 node
 * scripts/run-tests.mjs heldout` rewrites `heldout/disagreements.json` from the run in the list's own
 * format (listed entries keep their family and note, vanished ones go, new ones get family `TODO`, which
 * fails until a person assigns a documented family).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  checkList,
  compareWithList,
  type DisagreementList,
  describeRun,
  familyCounts,
  type GradedPair,
  keyOf,
  mvOutcome,
  type Outcome,
  pct,
  README,
  runMathVerify,
  type Score,
  score,
  serviceOutcome,
  updatedList,
  WRITE_LIST_ENV,
  writeList,
} from "./math-verify-harness.js";

const PYTHON =
  process.env["REWARD_MESH_PYTHON"] || fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));
const DIR = fileURLToPath(new URL("./heldout/", import.meta.url));
const LIST_FILE = `${DIR}disagreements.json`;

/** One held-out case, with the area (its file's name) it was read from. */
interface HeldoutCase extends GradedPair {
  readonly area: string;
  readonly family: string;
  readonly why: string;
}

const FIELDS = new Set([
  "family",
  "response",
  "reference",
  "expected",
  "why",
  "answer_type",
  "answer_format",
  "tolerance",
]);
const ANSWER_TYPES = ["", "number", "expression", "equation", "interval", "set", "tuple", "matrix", "text"];
const ANSWER_FORMATS = ["", "auto", "boxed", "gsm8k", "last_number"];

const caseFiles = readdirSync(DIR)
  .filter((f) => f.endsWith(".json") && f !== "disagreements.json")
  .sort();
const cases: HeldoutCase[] = caseFiles.flatMap((f) => {
  const data = JSON.parse(readFileSync(`${DIR}${f}`, "utf8")) as { cases: Omit<HeldoutCase, "area">[] };
  return (data.cases ?? []).map((c) => ({ ...c, area: f.replace(/\.json$/, "") }));
});
const known = JSON.parse(readFileSync(LIST_FILE, "utf8")) as DisagreementList;
const group = (c: HeldoutCase) => `${c.area}/${c.family}`;

function scoreLine(name: string, s: Score): string {
  return (
    `${name} ${pct(s.agreement).padStart(7)} FA ${`${s.falseAccepts}/${s.negatives}`.padEnd(6)}` +
    ` FR ${`${s.falseRejects}/${s.positives}`.padEnd(6)}${s.noVerdict ? ` no verdict ${s.noVerdict}` : ""}`
  );
}

describe("held-out set: the service and math-verify", () => {
  it("every file holds well-formed cases; each family has both verdicts; no case twice", () => {
    assert.ok(caseFiles.length > 0, `no case files in ${DIR}`);
    const seen = new Map<string, string>();
    for (const c of cases) {
      const where = `${c.area}.json: ${JSON.stringify(c.response).slice(0, 60)}`;
      for (const k of Object.keys(c))
        assert.ok(k === "area" || FIELDS.has(k), `${where}: unknown field '${k}'`);
      assert.ok(typeof c.family === "string" && c.family !== "", `${where}: no family`);
      assert.ok(typeof c.response === "string", `${where}: no response`);
      assert.ok(typeof c.reference === "string" && c.reference.trim() !== "", `${where}: no reference`);
      assert.equal(typeof c.expected, "boolean", `${where}: expected`);
      assert.ok(typeof c.why === "string" && c.why.length > 5, `${where}: no reason`);
      assert.ok(ANSWER_TYPES.includes(c.answer_type ?? ""), `${where}: answer_type ${c.answer_type}`);
      assert.ok(ANSWER_FORMATS.includes(c.answer_format ?? ""), `${where}: answer_format ${c.answer_format}`);
      if (c.tolerance !== undefined) assert.ok(c.tolerance >= 0 && c.tolerance < 1, `${where}: tolerance`);
      const k = keyOf(c);
      assert.ok(!seen.has(k), `${where}: the same case is also in ${seen.get(k)}`);
      seen.set(k, `${c.area}.json`);
    }
    for (const g of new Set(cases.map(group))) {
      const of = cases.filter((c) => group(c) === g);
      assert.ok(of.some((c) => c.expected) && of.some((c) => !c.expected), `${g} has both verdicts`);
    }
  });

  it("the disagreement list is well formed: families the README documents, cases of the set", () => {
    const readme = readFileSync(README, "utf8");
    assert.ok(readme.includes("## math-verify"), "README.md has a 'math-verify' section");
    checkList(known, cases, readme.slice(readme.indexOf("## math-verify")));
  });

  it("grades every case with both: the service agrees at least as often, accepts nothing false, and differs where listed", (t) => {
    const { meta, rows } = runMathVerify(
      PYTHON,
      caseFiles.map((f) => `${DIR}${f}`),
      cases.length,
    );
    const service: Outcome[] = cases.map(serviceOutcome);
    const mathVerify = rows.map(mvOutcome);
    t.diagnostic(describeRun(meta));

    const groups = [...new Set(cases.map(group))];
    const width = Math.max(...groups.map((g) => g.length), "overall".length);
    t.diagnostic(`${"family".padEnd(width)}  cases  ${"service".padEnd(32)} math-verify`);
    const row = (name: string, idx: number[]) => {
      const expected = idx.map((i) => cases[i]!.expected);
      const s = score(
        idx.map((i) => service[i]!),
        expected,
      );
      const m = score(
        idx.map((i) => mathVerify[i]!),
        expected,
      );
      t.diagnostic(
        `${name.padEnd(width)}  ${String(idx.length).padStart(5)}  ${scoreLine("", s).padEnd(32)} ${scoreLine("", m)}`,
      );
      return { s, m };
    };
    const indices = (pred: (c: HeldoutCase) => boolean) => cases.flatMap((c, i) => (pred(c) ? [i] : []));
    for (const g of groups)
      row(
        g,
        indices((c) => group(c) === g),
      );
    for (const area of new Set(cases.map((c) => c.area)))
      row(
        `${area} (all)`,
        indices((c) => c.area === area),
      );
    const overall = row(
      "overall",
      indices(() => true),
    );

    let list = known;
    if (process.env[WRITE_LIST_ENV] === "1") {
      list = updatedList(cases, service, rows, known, group);
      writeList(LIST_FILE, list);
      t.diagnostic(`wrote ${LIST_FILE} from this run (${WRITE_LIST_ENV}=1)`);
    }
    const c = compareWithList(cases, service, rows, list, group);
    for (const line of c.lines) t.diagnostic(line);
    t.diagnostic(`${c.differ} differences (${familyCounts(list)}); listed ${list.disagreements.length}`);

    const falseAccepts = cases
      .filter((x, i) => service[i] === "accept" && !x.expected)
      .map(
        (x) => `${group(x)}: ${JSON.stringify(x.response).slice(0, 80)} vs ${JSON.stringify(x.reference)}`,
      );
    assert.deepEqual(
      {
        serviceAtLeastMathVerify: overall.s.agreement >= overall.m.agreement,
        falseAccepts,
        unexplained: c.unexplained,
        changed: c.changed,
        gone: c.gone,
      },
      { serviceAtLeastMathVerify: true, falseAccepts: [], unexplained: [], changed: [], gone: [] },
      `held-out: service ${pct(overall.s.agreement)} vs math-verify ${pct(overall.m.agreement)}; the service ` +
        "must agree at least as often and accept no wrong answer, and the differences must be the listed ones " +
        "(unexplained: add to test/heldout/disagreements.json with a family the README's math-verify section " +
        `documents, or fix the grader; changed/gone: update or remove the entry; ${WRITE_LIST_ENV}=1 rewrites ` +
        "the list from the run)",
    );
  });
});
