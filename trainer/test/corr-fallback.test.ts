/**
 * CorrGRPO's degenerate-group guard through the whole loop (issue: a new keyword reward that came out
 * perfectly anti-correlated with another component at group size 4 gave S = 0 and advantages of
 * hundreds, silently). A real nats-server, a real reward service (in this process, with its JetStream
 * worker) whose two components are exactly anti-correlated, the embedded learner. With the default
 * options the guard divides those groups by GRPO's std, counts them per step in metrics.jsonl, warns
 * once per step, and the report says so; with the guard off the same groups blow up (the paper's form).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  defineRewardService,
  type LogFields,
  type Logger,
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  readMetrics,
  renderRunReport,
  resolveRunConfig,
  runTraining,
  type StepReport,
} from "../src/index.js";

let nats: LocalNats;
let bus: MeshBus;
let service: RunningService;
let dir: string;

/** `hit` is 1 when the response has an even number of characters, `miss` is 1 − hit: ρ = −1 exactly. */
const keyword = defineRewardService({
  name: "keyword",
  version: "1.0.0",
  domains: ["custom"],
  components: [
    { name: "hit", description: "1 when the response length is even", min: 0, max: 1 },
    { name: "miss", description: "1 − hit", min: 0, max: 1 },
  ],
  score: async (rollout) => {
    const hit = rollout.response.length % 2 === 0 ? 1 : 0;
    return [
      { name: "hit", value: hit },
      { name: "miss", value: 1 - hit },
    ];
  },
});

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "corr-fallback-test");
  service = await startRewardService(keyword, testRuntimeOptions(nats.url), silentLogger);
  dir = mkdtempSync(join(tmpdir(), "rm-corr-fallback-"));
});
after(async () => {
  await service.close(1000);
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: Array<{ fields: LogFields; msg: string }> } {
  const warnings: Array<{ fields: LogFields; msg: string }> = [];
  const l = {
    warnings,
    debug: () => {},
    info: () => {},
    warn: (fields: LogFields, msg: string) => warnings.push({ fields, msg }),
    error: () => {},
    child: () => l,
  };
  return l;
}

async function run(id: string, options: Record<string, unknown>) {
  const config = resolveRunConfig({
    run: { id, seed: 5, outputDir: dir },
    tasks: { sets: ["custom"] },
    services: { keyword: ["custom"] },
    groupSize: 4,
    promptsPerStep: 6,
    steps: 3,
    components: [
      { service: "keyword", component: "hit", weight: 1 },
      { service: "keyword", component: "miss", weight: 0.5 },
    ],
    estimator: { name: "corr_grpo", options },
    optim: { lr: 0.05 },
    groups: { deadlineMs: 20_000 },
  });
  const learner = createEmbeddedLearner({ seed: config.seed });
  const logger = recordingLogger();
  const reports: StepReport[] = [];
  try {
    await runTraining({
      config,
      tasks: builtinTasks(["custom"]),
      bus,
      learner,
      logger,
      onStep: (s) => reports.push(s),
    });
  } finally {
    await learner.close();
  }
  const groups = reports.flatMap((r) => r.groups ?? []);
  // A group whose `hit` varies is exactly the degenerate one: S = 0 while the total (0.5 + 0.5·hit) varies.
  const varying = groups.filter((g) => new Set(g.weightedRewards).size > 1);
  return { reports, groups, varying, logger, lines: readMetrics(join(dir, id, "metrics.jsonl")) };
}

describe("CorrGRPO's degenerate-group guard in a training run", () => {
  it("default options: anti-correlated groups get GRPO's scale, are counted per step, warned about and reported", async () => {
    const r = await run("guarded", {});
    assert.ok(r.varying.length >= 3, `expected groups whose keyword varies, got ${r.varying.length}`);
    for (const g of r.groups) {
      const varies = new Set(g.weightedRewards).size > 1;
      assert.equal(g.corrFallback, varies, `${g.groupId}: flagged iff its total varies`);
      // GRPO's scale: unit sample std, so |A| ≤ (G − 1)/sqrt(G) = 1.5 at G = 4.
      for (const a of g.advantages)
        assert.ok(Math.abs(a) <= 1.5 + 1e-9, `${g.groupId}: |A| = ${Math.abs(a)}`);
    }
    // Per step in metrics.jsonl, and the same count as the groups the loop reported.
    for (const rep of r.reports) {
      const line = r.lines.find((l) => l.step === rep.step)!;
      const want = (rep.groups ?? []).filter((g) => g.corrFallback).length;
      assert.equal(line.groups?.corrFallback, want, `step ${rep.step}: groups.corrFallback`);
    }
    // One warning per step in which it fired, naming the groups, S and the avoided magnitude.
    const stepsHit = r.reports.filter((rep) => (rep.groups ?? []).some((g) => g.corrFallback));
    const warnings = r.logger.warnings.filter((w) => "corrFallback" in w.fields);
    assert.equal(warnings.length, stepsHit.length);
    for (const w of warnings) {
      assert.match(w.msg, /grpo_covariance_coefficient: \d+ of 6 groups had a correlation sum S below 0\.01/);
      assert.match(w.msg, /Set options\.coefficientSumFallbackBelow: 0 for the paper's behaviour/);
      const groups = w.fields["corrFallback"] as Array<{
        coefficientSum: number;
        maxAdvantageWithoutGuard: number;
      }>;
      for (const g of groups) {
        assert.ok(Math.abs(g.coefficientSum) < 1e-12, `S = ${g.coefficientSum}`);
        assert.ok(g.maxAdvantageWithoutGuard > 100, `avoided |A| ${g.maxAdvantageWithoutGuard}`);
      }
    }
    const html = renderRunReport("guarded", r.lines);
    const total = r.lines.reduce((a, l) => a + (l.groups?.corrFallback ?? 0), 0);
    assert.match(html, new RegExp(`degenerate-group guard fired for ${total} groups`));
  });

  it("guard off (the paper's form): the same groups blow up, and nothing is flagged", async () => {
    const r = await run("paper", { coefficientSumFallbackBelow: 0 });
    assert.ok(r.varying.length >= 3);
    const worst = Math.max(...r.varying.flatMap((g) => g.advantages.map(Math.abs)));
    // centred total ±0.25 or ±0.125 over sqrt(0 + 1e-6) = 1e-3: hundreds.
    assert.ok(worst >= 125, `expected the blow-up without the guard, got max |A| ${worst}`);
    assert.ok(r.groups.every((g) => !g.corrFallback));
    assert.ok(r.lines.every((l) => (l.groups?.corrFallback ?? 0) === 0));
    assert.doesNotMatch(renderRunReport("paper", r.lines), /degenerate-group guard fired/);
  });
});
