/**
 * The math service beside math-verify (Hugging Face's grader, as TRL's `accuracy_reward` calls it) on
 * the agreement set `test/agreement-pairs.json`: both grade every pair, the summary (agreement with the
 * label, false accepts / false rejects of each, every pair where they differ) is printed, and the
 * differences must be exactly the known ones in `test/math-verify-disagreements.json`, each in a family
 * whose convention the README's "math-verify" section explains. A new difference fails (explain it or
 * fix the grader); so does a listed one whose outcomes changed or that no longer differs (the list stays
 * true).
 *
 * math-verify runs in one Python process for all pairs (`tools/math_verify_compare.py`, its
 * configuration is written there), with the project's interpreter (`.venv`, made by
 * `bash scripts/bootstrap.sh --with-torch`, which `npm test` runs). A missing interpreter or package
 * fails the test with that command: the comparison is part of the service's documented figures.
 *
 * Regenerating the list after a grader change: `MATH_VERIFY_WRITE_DISAGREEMENTS=1 node
 * scripts/run-tests.mjs math-verify.test` rewrites it from the run (listed entries keep their family,
 * vanished ones go, new ones get family `TODO` and keep failing until a family is assigned).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import type { AgreementPair } from "../src/index.js";
import {
  checkList,
  compareWithList,
  type DisagreementList,
  describeRun,
  describeScore,
  familyCounts,
  mvOutcome,
  README,
  runMathVerify,
  score,
  serviceOutcome,
  updatedList,
  WRITE_LIST_ENV,
  writeList,
} from "./math-verify-harness.js";

/** The project's Python (REWARD_MESH_PYTHON, else the repository's .venv, as the learner and the client tests use). */
const PYTHON =
  process.env["REWARD_MESH_PYTHON"] || fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));

const PAIRS_FILE = fileURLToPath(new URL("./agreement-pairs.json", import.meta.url));
const KNOWN_FILE = fileURLToPath(new URL("./math-verify-disagreements.json", import.meta.url));

const pairs = (JSON.parse(readFileSync(PAIRS_FILE, "utf8")) as { pairs: AgreementPair[] }).pairs;
const known = JSON.parse(readFileSync(KNOWN_FILE, "utf8")) as DisagreementList;
const readme = readFileSync(README, "utf8");

describe("math-verify beside the math service (agreement set)", () => {
  it("the known-disagreements list is well formed: families, outcomes, pairs of the set", () => {
    assert.ok(readme.includes("## math-verify"), "README.md has a 'math-verify' section");
    checkList(known, pairs, readme.slice(readme.indexOf("## math-verify")));
  });

  it("grades every pair with both; they differ exactly where the list says", (t) => {
    const { meta, rows } = runMathVerify(PYTHON, [PAIRS_FILE], pairs.length);
    const service = pairs.map(serviceOutcome);
    const expected = pairs.map((p) => p.expected);
    t.diagnostic(describeRun(meta));
    t.diagnostic(`service    : ${describeScore(score(service, expected))}`);
    t.diagnostic(`math-verify: ${describeScore(score(rows.map(mvOutcome), expected))}`);

    let list = known;
    if (process.env[WRITE_LIST_ENV] === "1") {
      list = updatedList(pairs, service, rows, known, (p) => p.class);
      writeList(KNOWN_FILE, list);
      t.diagnostic(`wrote ${KNOWN_FILE} from this run (${WRITE_LIST_ENV}=1)`);
    }
    const c = compareWithList(pairs, service, rows, list, (p) => p.class);
    for (const line of c.lines) t.diagnostic(line);
    t.diagnostic(`${c.differ} differences (${familyCounts(list)}); listed ${list.disagreements.length}`);

    // All three at once, so that one run shows everything to fix.
    assert.deepEqual(
      { unexplained: c.unexplained, changed: c.changed, gone: c.gone },
      { unexplained: [], changed: [], gone: [] },
      "the disagreements with math-verify are not the listed ones. unexplained: new ones — explain each in " +
        "test/math-verify-disagreements.json (a family the README's math-verify section documents) or fix " +
        "the grader; changed: listed ones whose outcomes changed — update the entry; gone: listed ones that " +
        `no longer disagree — remove them (${WRITE_LIST_ENV}=1 rewrites the list from the run)`,
    );
  });
});
