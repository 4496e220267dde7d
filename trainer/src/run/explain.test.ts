import assert from "node:assert/strict";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { computeAdvantages } from "../advantage/engine.js";
import { compileAdvantage, type RunConfig, resolveRunConfig } from "./config.js";
import {
  advantageSettingsOf,
  EXPLAIN_RECORD_VERSION,
  ExplainFileError,
  type ExplainStepRecord,
  explainPath,
  explainRollout,
  explainRolloutAsync,
  readExplainRecords,
  reconcileExplain,
  renderExplanation,
  rolloutParts,
} from "./explain.js";

const root = mkdtempSync(join(tmpdir(), "rm-explain-"));
after(() => rmSync(root, { recursive: true, force: true }));

function runConfig(runId: string, estimator: unknown, weights: [number, number]): RunConfig {
  return resolveRunConfig({
    run: { id: runId, seed: 5, outputDir: root },
    tasks: { sets: ["code"] },
    groupSize: 4,
    promptsPerStep: 1,
    steps: 9,
    components: [
      { service: "length", component: "overlong", weight: weights[0] },
      { service: "code-exec", component: "pass_rate", weight: weights[1] },
    ],
    estimator,
    groups: { deadlineMs: 1000 },
  });
}

const REWARDS = [
  [0, 1],
  [1, 0.5],
  [0.5, 0],
  [0.25, 1],
];

/** A step record as the trainer writes it: the real engine's advantages under `config`. */
function record(
  config: RunConfig,
  step: number,
  traceId?: string,
  rewards: number[][] = REWARDS,
): ExplainStepRecord {
  const batch = {
    groups: [{ rewards: rewards.map((r) => [...r]), lengths: [1, 2, 3, 4] }],
    weights: config.components.map((c) => c.weight),
    components: config.components.map((c) => `${c.service}/${c.component}`),
  };
  const result = computeAdvantages(batch, compileAdvantage(config));
  return {
    v: EXPLAIN_RECORD_VERSION,
    step,
    estimator: result.estimator,
    advantage: advantageSettingsOf(config),
    ...(traceId ? { traceId } : {}),
    components: batch.components,
    weights: batch.weights,
    groups: [
      {
        groupId: `s${step}-p0`,
        taskId: "t",
        domain: "code",
        rewards,
        statuses: rewards.map(() => [1, 1]),
        lengths: [1, 2, 3, 4],
        imputed: false,
        advantages: result.groups[0]!.advantages,
      },
    ],
    dropped: [],
  };
}

function setUp(runId: string, config: RunConfig): string {
  mkdirSync(join(root, runId), { recursive: true });
  writeFileSync(join(root, runId, "resolved-config.json"), JSON.stringify(config));
  return explainPath(root, runId);
}

describe("explain.jsonl", () => {
  it("a torn last line is skipped; a bad line elsewhere is an error naming file and line", async () => {
    const config = runConfig("torn", "grpo", [1, 1]);
    const f = setUp("torn", config);
    const line = (s: number) => `${JSON.stringify(record(config, s))}\n`;
    writeFileSync(f, line(1) + line(2) + line(3).slice(0, 40));
    assert.deepEqual(
      readExplainRecords(root, "torn").map((r) => r.step),
      [1, 2],
    );
    const e = explainRollout(root, "torn", { rolloutId: "torn-s2-p0-1" });
    assert.equal(e.step, 2);
    assert.equal(e.rolloutIndex, 1);
    assert.equal(e.reproduced, true);
    assert.equal(
      (await explainRolloutAsync(root, "torn", { rolloutId: "torn-s2-p0-1" })).rollouts[1]!.advantage,
      e.rollouts[1]!.advantage,
    );
    // The torn line gets a newline (a later append): now it is corrupt, in the middle of the file.
    appendFileSync(f, `\n${line(4)}`);
    assert.throws(
      () => readExplainRecords(root, "torn"),
      (err: Error) => err instanceof ExplainFileError && err.message.startsWith(`${f}:3: not valid JSON`),
    );
    assert.throws(
      () => explainRollout(root, "torn", { step: 3, groupId: "s3-p0" }),
      /explain\.jsonl:3: not valid JSON/,
    );
    // Other steps are still explained (their lines are the only ones parsed).
    assert.equal(explainRollout(root, "torn", { step: 4, groupId: "s4-p0" }).reproduced, true);
  });

  it("a record of another version is named with its line", () => {
    const config = runConfig("ver", "grpo", [1, 1]);
    const f = setUp("ver", config);
    writeFileSync(f, `${JSON.stringify({ ...record(config, 1), v: 1 })}\n`);
    assert.throws(
      () => explainRollout(root, "ver", { step: 1, groupId: "s1-p0" }),
      new RegExp(`${f.replaceAll(".", "\\.")}:1: record version 1 is not supported`),
    );
  });

  it("resume reconciles: drops the torn tail and steps after the checkpoint, keeps the last record of a step", () => {
    const config = runConfig("rec", "grpo", [1, 1]);
    const f = setUp("rec", config);
    const line = (s: number, t?: string) => `${JSON.stringify(record(config, s, t))}\n`;
    // Step 2 written twice (the last wins), step 3 written before a checkpoint that never came, torn step 4.
    writeFileSync(f, line(1) + line(2) + line(2, "ab".repeat(16)) + line(3) + line(4).slice(0, 30));
    reconcileExplain(f, 2);
    const recs = readExplainRecords(root, "rec");
    assert.deepEqual(
      recs.map((r) => r.step),
      [1, 2],
    );
    assert.equal(recs[1]!.traceId, "ab".repeat(16));
    assert.ok(readFileSync(f, "utf8").endsWith("}\n"));
    reconcileExplain(f, 0);
    assert.equal(readFileSync(f, "utf8"), "");
  });

  it("earlier steps of a run resumed with another config are explained with their own settings and weights", () => {
    const before = runConfig("resumed", "grpo", [1, 1]);
    const now = runConfig("resumed", { name: "corr_grpo" }, [2, 0.5]);
    const f = setUp("resumed", now); // resolved-config.json is the new one
    writeFileSync(f, `${JSON.stringify(record(before, 1))}\n${JSON.stringify(record(now, 2))}\n`);
    const e1 = explainRollout(root, "resumed", { rolloutId: "resumed-s1-p0-1" });
    assert.equal(e1.reproduced, true);
    assert.deepEqual(e1.weights, [1, 1]);
    assert.equal(e1.rollouts[1]!.weightedTotal, 1 * 1 + 1 * 0.5);
    const e2 = explainRollout(root, "resumed", { rolloutId: "resumed-s2-p0-1" });
    assert.equal(e2.reproduced, true);
    assert.equal(e2.rollouts[1]!.weightedTotal, 2 * 1 + 0.5 * 0.5);
  });

  it("links a trace only when the step stored one (it was sampled)", () => {
    const config = runConfig("sampled", "grpo", [1, 1]);
    const f = setUp("sampled", config);
    writeFileSync(
      f,
      `${JSON.stringify(record(config, 1))}\n${JSON.stringify(record(config, 2, "cd".repeat(16)))}\n`,
    );
    const t = { traceUrlTemplate: "http://tempo/{traceId}" };
    assert.equal(explainRollout(root, "sampled", { step: 1, groupId: "s1-p0" }, t).traceUrl, null);
    assert.equal(
      explainRollout(root, "sampled", { step: 2, groupId: "s2-p0" }, t).traceUrl,
      `http://tempo/${"cd".repeat(16)}`,
    );
  });

  it("links a rollout to its own trace only when that rollout's span was sampled", () => {
    const config = runConfig("own", "grpo", [1, 1]);
    const f = setUp("own", config);
    const base = record(config, 1, "cd".repeat(16));
    const traced = {
      ...base,
      groups: [{ ...base.groups[0]!, traceIds: [null, "ef".repeat(16), null, null] }],
    };
    writeFileSync(f, `${JSON.stringify(traced)}\n`);
    const t = { traceUrlTemplate: "http://tempo/{traceId}" };
    const sampled = explainRollout(root, "own", { rolloutId: "own-s1-p0-1" }, t);
    assert.equal(sampled.rolloutTraceId, "ef".repeat(16));
    assert.equal(sampled.rolloutTraceUrl, `http://tempo/${"ef".repeat(16)}`);
    assert.equal(sampled.traceUrl, `http://tempo/${"cd".repeat(16)}`);
    const text = renderExplanation(sampled);
    assert.match(text, new RegExp(`rollout trace ${"ef".repeat(16)} {2}http://tempo/${"ef".repeat(16)}`));
    assert.match(text, new RegExp(`step trace ${"cd".repeat(16)} {2}http://tempo/${"cd".repeat(16)}`));
    const unsampled = explainRollout(root, "own", { rolloutId: "own-s1-p0-0" }, t);
    assert.equal(unsampled.rolloutTraceId, null);
    assert.equal(unsampled.rolloutTraceUrl, null);
    assert.match(
      renderExplanation(unsampled),
      /rollout trace \(not traced: telemetry off or the rollout not sampled\)/,
    );
    // A group asked for has no rollout trace line: its spans are in the step's trace.
    const group = explainRollout(root, "own", { step: 1, groupId: "s1-p0" }, t);
    assert.equal(group.rolloutTraceId, null);
    assert.doesNotMatch(renderExplanation(group), /rollout trace/);
  });
});

describe("explain and CorrGRPO's degenerate-group guard", () => {
  it("says when the group was divided by GRPO's scale instead of sqrt(S), and reproduces it", () => {
    const config = runConfig("fallback", "corr_grpo", [1, 0.5]);
    const f = setUp("fallback", config);
    // Perfectly anti-correlated components with unequal weights: S = 0 while the total varies.
    const anti = [
      [1, 0],
      [0, 1],
      [1, 0],
      [0, 1],
    ];
    writeFileSync(f, `${JSON.stringify(record(config, 1, undefined, anti))}\n`);
    const e = explainRollout(root, "fallback", { step: 1, groupId: "s1-p0" });
    assert.equal(e.corrFallback, true);
    assert.equal(e.coefficientSum, 0);
    assert.equal(e.reproduced, true);
    assert.match(renderExplanation(e), /CorrGRPO fallback: S is near 0 .* the weighted total's std \(GRPO's scale\)/);
    // A group whose components do not cancel: no such line.
    writeFileSync(f, `${JSON.stringify(record(config, 2))}\n`, { flag: "a" });
    const normal = explainRollout(root, "fallback", { step: 2, groupId: "s2-p0" });
    assert.equal(normal.corrFallback, false);
    assert.doesNotMatch(renderExplanation(normal), /CorrGRPO fallback/);
  });
});

describe("reward-mesh explain's text and JSON", () => {
  /** A step whose group stored responses and details (as the trainer now writes them). */
  function withText(runId: string): void {
    const config = runConfig(runId, "grpo", [1, 1]);
    const f = setUp(runId, config);
    const base = record(config, 1);
    const long = `def f(x):\n    return x + 1\n${"# padding ".repeat(40)}`;
    const group = {
      ...base.groups[0]!,
      responses: [long, "short", "", "x"],
      details: [
        ["", "2/3 tests passed; first failure: f(2) == 4"],
        ["", ""],
        ["", ""],
        ["", "ok"],
      ],
    };
    writeFileSync(f, `${JSON.stringify({ ...base, groups: [group] })}\n`);
  }

  it("has column headers, the group mean, each rollout's response (cut unless full) and the components' details", () => {
    withText("text");
    const e = explainRollout(root, "text", { rolloutId: "text-s1-p0-1" });
    // REWARDS' weighted totals (weights 1, 1): 1, 1.5, 0.5, 1.25.
    assert.equal(e.groupMean, (1 + 1.5 + 0.5 + 1.25) / 4);
    assert.deepEqual(e.componentMeans, [(0 + 1 + 0.5 + 0.25) / 4, (1 + 0.5 + 0 + 1) / 4]);
    assert.equal(e.rollouts[0]!.response?.startsWith("def f(x):\n"), true);
    assert.deepEqual(e.rollouts[0]!.details, ["", "2/3 tests passed; first failure: f(2) == 4"]);
    const text = renderExplanation(e);
    assert.match(text, /^ {2}\[1\] {2}length\/overlong +1\.0000 → +1\.0000$/m);
    assert.match(text, /^ {2}rollout +\[1\] value status +\[2\] value status +total +- mean +advantage$/m);
    assert.match(text, /^▶ text-s1-p0-1 +1\.0000 OK +0\.5000 OK +1\.5000 +\+0\.4375 +\d\.\d{4}$/m);
    assert.match(text, /^ {2}group mean +0\.4375 +0\.6250 +1\.0625$/m);
    assert.match(
      text,
      /^ {2}text-s1-p0-0 {2}"def f\(x\):\\n {4}return x \+ 1\\n# padding .*"… \(427 characters\)$/m,
    );
    assert.match(text, /^▶ text-s1-p0-1 {2}"short"$/m);
    assert.match(text, /--full-text prints them whole/);
    assert.match(
      text,
      /^ {2}text-s1-p0-0 {2}\[2\] code-exec\/pass_rate: "2\/3 tests passed; first failure: f\(2\) == 4"$/m,
    );
    const full = renderExplanation(e, { fullText: true });
    assert.ok(
      full.includes(`\n      def f(x):\n          return x + 1\n      ${"# padding ".repeat(40)}`),
      full,
    );
    assert.doesNotMatch(full, /characters\)/);
    // --json (what the CLI prints) holds the same, whole, and keeps the earlier fields.
    const json = JSON.parse(JSON.stringify(e));
    assert.equal(json.rollouts[0].response.length, 427);
    for (const k of ["values", "statuses", "weightedTotal", "advantage"]) assert.ok(k in json.rollouts[0], k);
    assert.ok(Array.isArray(json.denominatorShares.grpo));
  });

  it("each component's share of the rollout's distance from the group mean sums to 1; its part has the sign", () => {
    withText("shares");
    const e = explainRollout(root, "shares", { step: 1, groupId: "s1-p0" });
    for (const r of e.rollouts) {
      const parts = r.parts.reduce((s, p) => s + p, 0);
      assert.ok(
        Math.abs(parts - (r.weightedTotal - e.groupMean)) < 1e-12,
        `${r.rolloutId}: Σ parts = total − mean`,
      );
      const shares = r.shares as number[];
      assert.ok(Math.abs(shares.reduce((s, x) => s + x, 0) - 1) < 1e-12, `${r.rolloutId}: Σ shares = 1`);
      assert.ok(shares.every((s) => s >= 0 && s <= 1));
    }
    // Rollout 0 (values 0, 1): overlong 0.4375 below its mean, pass_rate 0.375 above: 54 % ↓, 46 % ↑.
    assert.deepEqual(e.rollouts[0]!.parts, [-0.4375, 0.375]);
    assert.deepEqual(e.rollouts[0]!.shares, [0.4375 / 0.8125, 0.375 / 0.8125]);
    const text = renderExplanation(e);
    assert.match(text, /share = \|part\| \/ Σ\|parts\| over components \(sums to 1/);
    assert.match(text, /^ {2}shares-s1-p0-0 +-0\.4375 +54% ↓ +\+0\.3750 +46% ↑$/m);
    // The denominator's shares are labelled for what they are (row sums of the matrix; below 0 possible).
    assert.match(text, /share of the denominator: row k of M over all of M, Σ_l M_kl \/ Σ_kl M_kl/);
    assert.match(text, /below 0 for a component anti-correlated with the others/);
  });

  it("shares: none for a rollout at the group mean; a value that did not apply counts 0, as in the total", () => {
    assert.deepEqual(
      rolloutParts(
        [
          [1, 0.5],
          [1, 0.5],
        ],
        [1, 2],
      ),
      [
        { parts: [0, 0], shares: [null, null] },
        { parts: [0, 0], shares: [null, null] },
      ],
    );
    const [a, b] = rolloutParts(
      [
        [null, 1],
        [1, 1],
      ],
      [2, 1],
    );
    assert.deepEqual(a, { parts: [-1, 0], shares: [1, 0] });
    assert.deepEqual(b, { parts: [1, 0], shares: [1, 0] });
  });

  it("a record written before responses were stored says so instead of inventing them", () => {
    const config = runConfig("old", "grpo", [1, 1]);
    writeFileSync(setUp("old", config), `${JSON.stringify(record(config, 1))}\n`);
    const e = explainRollout(root, "old", { rolloutId: "old-s1-p0-1" });
    assert.equal(e.rollouts[1]!.response, null);
    assert.deepEqual(e.rollouts[1]!.details, ["", ""]);
    const text = renderExplanation(e);
    assert.match(text, /responses: not in this run's explain\.jsonl/);
    assert.match(text, /component details: none reported/);
  });
});
