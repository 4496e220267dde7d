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
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type AgreementPair, judge, pairInput } from "../src/index.js";

/** The project's Python (REWARD_MESH_PYTHON, else the repository's .venv, as the learner and the client tests use). */
const PYTHON =
  process.env["REWARD_MESH_PYTHON"] || fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));

const BOOTSTRAP = "bash scripts/bootstrap.sh --with-torch";
const SCRIPT = fileURLToPath(new URL("../tools/math_verify_compare.py", import.meta.url));
const PAIRS_FILE = fileURLToPath(new URL("./agreement-pairs.json", import.meta.url));
const KNOWN_FILE = fileURLToPath(new URL("./math-verify-disagreements.json", import.meta.url));
const README = fileURLToPath(new URL("../README.md", import.meta.url));
/** Wall-clock seconds math-verify gets per pair (the slowest verdict on the set takes ~0.3 s). */
const PAIR_TIMEOUT_S = 3;

/** What a grader made of a pair: a verdict, or why there is none (math-verify only). */
type Outcome = "accept" | "reject" | "timeout" | "error" | "gold_unparsed";
const OUTCOMES: readonly Outcome[] = ["accept", "reject", "timeout", "error", "gold_unparsed"];

/** One line of the script's output for a pair. */
interface MathVerifyRow {
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
interface KnownDisagreement {
  readonly family: string;
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

interface Family {
  /** Whose documented convention the label of the family's pairs follows: the service's (MATH/GSM8K) or math-verify's. */
  readonly explainedBy: "service" | "math-verify";
  /** That convention, citing where it is documented. */
  readonly convention: string;
  /** What math-verify (in the script's configuration) does instead, and why. */
  readonly mathVerify: string;
}

/** A pair's identity: its text and the task fields that change its grading. */
const keyOf = (p: {
  response: string;
  reference: string;
  answer_type?: string;
  answer_format?: string;
  tolerance?: number;
}) =>
  JSON.stringify([p.response, p.reference, p.answer_type ?? "", p.answer_format ?? "", p.tolerance ?? null]);

const pairs = (JSON.parse(readFileSync(PAIRS_FILE, "utf8")) as { pairs: AgreementPair[] }).pairs;
const known = JSON.parse(readFileSync(KNOWN_FILE, "utf8")) as {
  families: Record<string, Family>;
  disagreements: KnownDisagreement[];
};

/** Runs the script once over every pair; its rows by index, or a failure naming the fix. */
function runMathVerify(python: string): { meta: Record<string, unknown>; rows: MathVerifyRow[] } {
  const r = spawnSync(python, [SCRIPT, "--timeout", String(PAIR_TIMEOUT_S), PAIRS_FILE], {
    encoding: "utf8",
    timeout: 120_000,
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
  assert.equal(rows.length, pairs.length, "math-verify answered every pair");
  rows.forEach((row, i) => {
    assert.equal(row.index, i, "rows in input order");
  });
  return { meta, rows };
}

const mvOutcome = (row: MathVerifyRow): Outcome =>
  row.status === "ok" ? (row.verdict ? "accept" : "reject") : row.status;

/** False accepts / false rejects / no verdict of one grader against the labels. */
function score(outcomes: readonly Outcome[]) {
  let agree = 0;
  let falseAccepts = 0;
  let falseRejects = 0;
  let noVerdict = 0;
  outcomes.forEach((o, i) => {
    const expected = pairs[i]!.expected;
    if (o === "accept") {
      if (expected) agree++;
      else falseAccepts++;
    } else if (o === "reject") {
      if (expected) falseRejects++;
      else agree++;
    } else {
      noVerdict++;
    }
  });
  return { agree, falseAccepts, falseRejects, noVerdict, agreement: agree / outcomes.length };
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const oneLine = (s: string) => s.replace(/\s+/g, " ");
const short = (s: string, n = 70) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

describe("math-verify beside the math service (agreement set)", () => {
  it("the known-disagreements list is well formed: families, outcomes, pairs of the set", () => {
    const keys = new Set(pairs.map(keyOf));
    const seen = new Set<string>();
    for (const [id, f] of Object.entries(known.families)) {
      assert.ok(["service", "math-verify"].includes(f.explainedBy), `family ${id}: explainedBy`);
      assert.ok(f.convention.length > 20, `family ${id} has no convention`);
      assert.ok(f.mathVerify.length > 20, `family ${id} does not say what math-verify does`);
    }
    for (const d of known.disagreements) {
      const k = keyOf(d);
      assert.ok(known.families[d.family], `unknown family '${d.family}' for ${short(d.response)}`);
      assert.ok(
        keys.has(k),
        `listed pair is not in agreement-pairs.json: ${short(d.response)} / ${d.reference}`,
      );
      assert.ok(!seen.has(k), `listed twice: ${short(d.response)} / ${d.reference}`);
      seen.add(k);
      assert.ok(OUTCOMES.includes(d.service) && OUTCOMES.includes(d.mathVerify), `outcomes of ${k}`);
      assert.notEqual(d.service, d.mathVerify, `not a disagreement: ${k}`);
    }
    // Each family is explained where a reader looks: the README's math-verify section names it.
    const readme = readFileSync(README, "utf8");
    const section = readme.slice(readme.indexOf("## math-verify"));
    assert.ok(readme.includes("## math-verify"), "README.md has a 'math-verify' section");
    for (const id of Object.keys(known.families)) {
      assert.ok(section.includes(`\`${id}\``), `README's math-verify section explains family \`${id}\``);
      assert.ok(
        known.disagreements.some((d) => d.family === id),
        `family ${id} explains no listed disagreement (remove it)`,
      );
    }
  });

  it("grades every pair with both; they differ exactly where the list says", (t) => {
    const { meta, rows } = runMathVerify(PYTHON);
    const service: Outcome[] = pairs.map((p) => (judge(pairInput(p)).correct ? "accept" : "reject"));
    const mathVerify = rows.map(mvOutcome);
    const s = score(service);
    const m = score(mathVerify);
    const versions = meta.versions as Record<string, string>;
    t.diagnostic(
      `math-verify ${versions["math-verify"]} (latex2sympy2_extended ${versions["latex2sympy2_extended"]}, ` +
        `sympy ${versions.sympy}) under ${String(meta.python)}; ${String(meta.config)}`,
    );
    const pos = pairs.filter((p) => p.expected).length;
    const neg = pairs.length - pos;
    for (const [name, r] of [
      ["service    ", s],
      ["math-verify", m],
    ] as const) {
      t.diagnostic(
        `${name}: agreement ${pct(r.agreement)} (${r.agree}/${pairs.length}), false accepts ${r.falseAccepts}/${neg}, ` +
          `false rejects ${r.falseRejects}/${pos}, no verdict ${r.noVerdict}`,
      );
    }

    const listed = new Map(known.disagreements.map((d) => [keyOf(d), d]));
    const unexplained: string[] = [];
    const changed: string[] = [];
    const differ = new Set<string>();
    pairs.forEach((p, i) => {
      const sv = service[i]!;
      const mv = mathVerify[i]!;
      if (sv === mv) return;
      const k = keyOf(p);
      differ.add(k);
      const row = rows[i]!;
      const d = listed.get(k);
      const line =
        `[${d?.family ?? "NEW"}] ${p.class}: ${short(JSON.stringify(p.response))} vs ${JSON.stringify(p.reference)}` +
        `${p.answer_type ? ` (${p.answer_type})` : ""}${p.answer_format ? ` (${p.answer_format})` : ""} — expected ` +
        `${p.expected ? "accept" : "reject"}; service ${sv}, math-verify ${mv}` +
        (row.status === "ok"
          ? ` (gold ${oneLine(row.gold ?? "")}, answer ${oneLine(row.answer ?? "")})`
          : row.error
            ? ` (${row.error})`
            : "");
      t.diagnostic(line);
      if (!d) unexplained.push(line);
      else if (d.service !== sv || d.mathVerify !== mv || d.expected !== p.expected)
        changed.push(`${line}; listed as service ${d.service}, math-verify ${d.mathVerify}`);
    });
    const families = new Map<string, number>();
    for (const d of known.disagreements) families.set(d.family, (families.get(d.family) ?? 0) + 1);
    t.diagnostic(
      `${differ.size} differences (${[...families].map(([f, n]) => `${f} ${n}`).join(", ")}); listed ${known.disagreements.length}`,
    );
    const gone = known.disagreements
      .filter((d) => !differ.has(keyOf(d)))
      .map((d) => `[${d.family}] ${short(JSON.stringify(d.response))} vs ${JSON.stringify(d.reference)}`);

    // All three at once, so that one run shows everything to fix.
    assert.deepEqual(
      { unexplained, changed, gone },
      { unexplained: [], changed: [], gone: [] },
      "the disagreements with math-verify are not the listed ones. unexplained: new ones — explain each in " +
        "test/math-verify-disagreements.json (a family the README's math-verify section documents) or fix " +
        "the grader; changed: listed ones whose outcomes changed — update the entry; gone: listed ones that " +
        "no longer disagree — remove them",
    );
  });
});
