/**
 * The training loop end to end: real nats-server, the real length, tool-call and agentdojo services (gRPC
 * + JetStream workers), the embedded learner; and a trainer process killed mid-run (SIGKILL) that resumes from its checkpoint.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import {
  agentEnvironmentService,
  createAgentDojoService,
  createSessionManager,
  DEFAULT_AGENTDOJO_OPTIONS,
} from "@reward-mesh/agentdojo";
import { createLengthService } from "@reward-mesh/length";
import { AdvantageBatchSchema } from "@reward-mesh/proto";
import { createToolCallService } from "@reward-mesh/tool-call";
import {
  type MeshBus,
  openBus,
  readStream,
  type RunningService,
  silentLogger,
  Streams,
  startRewardService,
} from "@reward-mesh/sdk";
import {
  type LocalNats,
  neverScoringService,
  startTestNats,
  testBusOptions,
  testRuntimeOptions,
} from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  loadBuiltinTasks,
  explainRollout,
  readExplainRecords,
  readMetrics,
  renderRunReport,
  resolveRunConfig,
  runTraining,
  type StepReport,
} from "../src/index.js";

let nats: LocalNats;
let bus: MeshBus;
let services: RunningService[] = [];
let dir: string;
// The agentdojo service hosts AgentEnvironment on its port, as its process does: the agent set is listed there.
const sessions = createSessionManager({
  ...DEFAULT_AGENTDOJO_OPTIONS,
  maxSessions: 16,
  idleTimeoutMs: 60_000,
});

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "train-test");
  const runtime = testRuntimeOptions(nats.url);
  // Real services with their JetStream workers (in this process; their own processes are tested elsewhere).
  services = await Promise.all(
    [
      createLengthService({ maxLength: 20_480, cacheLength: 4_096, penaltyFactor: 1 }),
      createToolCallService(),
      createAgentDojoService(),
    ].map((def) =>
      startRewardService(
        def,
        runtime,
        silentLogger,
        def.name === "agentdojo" ? { extraServices: [agentEnvironmentService(sessions)] } : {},
      ),
    ),
  );
  dir = mkdtempSync(join(tmpdir(), "rm-train-"));
});
after(async () => {
  await Promise.all(services.map((s) => s.close(1000)));
  sessions.stop();
  await bus.close();
  await nats.stop();
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
});

const doc = (id: string, steps: number) => ({
  run: { id, seed: 3, outputDir: dir },
  tasks: { sets: ["custom"] },
  groupSize: 8,
  promptsPerStep: 2,
  steps,
  components: [{ service: "length", component: "overlong", weight: 1 }],
  estimator: { name: "corr_grpo", options: { coefficientSumFloor: 1 } },
  loss: { type: "dapo", klBeta: 0.01 },
  optim: { lr: 0.1 },
  groups: { deadlineMs: 20_000 },
});

describe("training through the mesh", () => {
  it("learns: the weighted reward of the last steps is above the first (fixed seed)", async () => {
    const config = resolveRunConfig(doc("e2e", 16));
    const learner = createEmbeddedLearner({ seed: config.seed });
    const reports: StepReport[] = [];
    try {
      const r = await runTraining({
        config,
        tasks: builtinTasks(["custom"]),
        bus,
        learner,
        onStep: (s) => reports.push(s),
      });
      assert.equal(r.lastStep, 16);
    } finally {
      await learner.close();
    }
    // Each step reports its groups to listeners (the live page's "last groups").
    assert.deepEqual(
      reports.map((s) => s.step),
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    const g = reports[0]!.groups!;
    assert.deepEqual(
      g.map((x) => x.groupId),
      ["s1-p0", "s1-p1"],
    );
    for (const x of g) {
      assert.equal(x.domain, "custom");
      assert.ok(x.taskId.length > 0);
      assert.equal(x.weightedRewards.length, 8);
      assert.equal(x.advantages.length, 8);
    }
    const lines = readMetrics(join(dir, "e2e", "metrics.jsonl"));
    assert.deepEqual(
      lines.map((l) => l.step),
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(lines.slice(0, 4).map((l) => l.weightedReward!));
    const last = mean(lines.slice(-4).map((l) => l.weightedReward!));
    assert.ok(last > first + 0.05, `weighted reward ${first.toFixed(3)} -> ${last.toFixed(3)}`);
    assert.ok(
      lines.every((l) => (l as unknown as { groups: { used: number } }).groups.used === 2),
      "no group lost",
    );
    // Advantages were published per step on mesh.advantages.<run>.
    const adv = await readStream(
      bus,
      Streams.advantages,
      "mesh.advantages.e2e",
      (d) => fromBinary(AdvantageBatchSchema, d),
      16,
    );
    assert.equal(adv.length, 16);
    assert.equal(adv[0]!.value.groups.length, 2);
    assert.equal(adv[0]!.value.groups[0]!.rollouts.length, 8);
    assert.equal(adv[15]!.value.policyVersion, 16);
  });

  it("learns on tool-call and AgentDojo tasks scored by their real services (fixed seed)", async () => {
    const config = resolveRunConfig({
      ...doc("tools", 24),
      tasks: { sets: ["tool_call", "agent"] },
      promptsPerStep: 4,
      components: ["rlla-tool", "agentdojo"],
    });
    const learner = createEmbeddedLearner({ seed: config.seed });
    try {
      const agentdojo = services[2]!; // createAgentDojoService above
      const tasks = await loadBuiltinTasks(["tool_call", "agent"], { address: agentdojo.grpc.address });
      await runTraining({ config, tasks, bus, learner });
    } finally {
      await learner.close();
    }
    const lines = readMetrics(join(dir, "tools", "metrics.jsonl"));
    assert.equal(lines.length, 24);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(lines.slice(0, 6).map((l) => l.weightedReward!));
    const last = mean(lines.slice(-6).map((l) => l.weightedReward!));
    assert.ok(last > first + 0.2, `weighted reward ${first.toFixed(3)} -> ${last.toFixed(3)}`);
    const comps = Object.keys(lines[0]!.components ?? {});
    assert.deepEqual(comps, [
      "tool-call/format",
      "tool-call/function_name",
      "tool-call/parameter_name",
      "tool-call/parameter_value",
      "agentdojo/utility",
      "agentdojo/security",
    ]);
    assert.ok(
      lines.every((l) => Object.keys(l.rejectedResults ?? {}).length === 0),
      "the real services' results all match their Describe",
    );
  });

  it("a service that never returns results: groups are dropped at the deadline (or imputed) and the run goes on", async (t) => {
    // "ghost" scores the custom domain and answers Describe, but its scoring never finishes.
    const ghost = await startRewardService(
      neverScoringService({
        name: "ghost",
        version: "1.0.0",
        domains: ["custom"],
        components: [{ name: "x", description: "never computed", min: 0, max: 1 }],
      }),
      testRuntimeOptions(nats.url),
      silentLogger,
    );
    t.after(() => ghost.close(200));
    const base = {
      ...doc("ghost-drop", 2),
      services: { ghost: ["custom"] },
      components: [
        { service: "length", component: "overlong", weight: 1 },
        { service: "ghost", component: "x", weight: 1 },
      ],
      // Wide enough that the real length service answers all 16 rollouts of a step on a loaded machine
      // (10–71 ms measured): the only results missing at the deadline are then the ghost's.
      groups: { deadlineMs: 2000 },
    };
    for (const missing of ["drop", "impute"] as const) {
      const config = resolveRunConfig({
        ...base,
        run: { id: `ghost-${missing}`, seed: 3, outputDir: dir },
        groups: { deadlineMs: 2000, missing },
      });
      const learner = createEmbeddedLearner({ seed: config.seed });
      try {
        const r = await runTraining({ config, tasks: builtinTasks(["custom"]), bus, learner });
        assert.equal(r.lastStep, 2);
      } finally {
        await learner.close();
      }
      const lines = readMetrics(join(dir, `ghost-${missing}`, "metrics.jsonl")) as unknown as Array<{
        droppedGroups: number;
        policyVersion: number;
        groups: { used: number; imputed: number };
        missingResults: Record<string, number>;
        deadlineMs: number;
      }>;
      // 2 groups × 8 rollouts the ghost never scored, per step; the length service answered every one.
      assert.deepEqual(
        lines.map((l) => [l.missingResults, l.deadlineMs]),
        [
          [{ ghost: 16 }, 2000],
          [{ ghost: 16 }, 2000],
        ],
        "the step metrics name the service whose results were missing at the deadline",
      );
      if (missing === "drop") {
        // The report of a run whose every group was dropped says so, and whose results it waited for.
        const html = renderRunReport(
          `ghost-${missing}`,
          readMetrics(join(dir, `ghost-${missing}`, "metrics.jsonl")),
        );
        assert.match(html, /No step trained: every group was dropped in all 2 steps/);
        assert.match(html, /4 groups were dropped at the deadline \(groups\.deadlineMs = 2000 ms\)/);
        assert.match(html, /Missing at the deadline: 32 results from service 'ghost'/);
      } else {
        // Imputed: the run trained, and the report says on what.
        const html = renderRunReport(
          `ghost-${missing}`,
          readMetrics(join(dir, `ghost-${missing}`, "metrics.jsonl")),
        );
        assert.match(html, /Groups were incomplete at the deadline in 2 of 2 steps/);
        assert.match(
          html,
          /4 groups were imputed at the deadline \(groups\.deadlineMs = 2000 ms; groups\.missing = impute\)/,
        );
        assert.match(html, /Missing at the deadline: 32 results from service 'ghost'/);
      }
      if (missing === "drop") {
        assert.deepEqual(
          lines.map((l) => [l.droppedGroups, l.groups.used, l.policyVersion]),
          [
            [2, 0, 0],
            [2, 0, 0],
          ],
          "no update without a group",
        );
      } else {
        assert.deepEqual(
          lines.map((l) => [l.droppedGroups, l.groups.used, l.groups.imputed, l.policyVersion]),
          [
            [0, 2, 2, 1],
            [0, 2, 2, 2],
          ],
        );
      }
    }
  });

  it("a trainer killed mid-run resumes from its checkpoint: every step applied exactly once", async () => {
    const cfgPath = join(dir, "restart.yaml");
    // The kill lands after step 3 with 97 steps (~3–7 s at 30–70 ms a step) still to go:
    // on a loaded machine the first trainer must not finish before it is killed.
    const steps = 100;
    writeFileSync(cfgPath, JSON.stringify(doc("restart", steps))); // JSON is YAML
    const bin = fileURLToPath(new URL("../../cli/bin/reward-mesh.mjs", import.meta.url));
    const metrics = join(dir, "restart", "metrics.jsonl");
    const start = () =>
      spawn(process.execPath, [bin, "train", "--config", cfgPath, "--quiet"], {
        env: { ...process.env, NATS_URL: nats.url },
        stdio: ["ignore", "pipe", "pipe"],
      });
    const lineCount = () =>
      existsSync(metrics) ? readFileSync(metrics, "utf8").trim().split("\n").filter(Boolean).length : 0;
    const first: ChildProcess = start();
    const until = Date.now() + 60_000;
    while (lineCount() < 3 && Date.now() < until && first.exitCode === null)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(first.exitCode, null, "first trainer still running when killed");
    const killed = new Promise((r) => first.once("exit", r));
    first.kill("SIGKILL");
    await killed;
    const before = lineCount();
    assert.ok(before >= 3 && before < steps, `killed mid-run after ${before} steps`);

    const second = start();
    let out = "";
    second.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    second.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => second.once("exit", (c) => r(c)));
    assert.equal(code, 0, out);
    assert.match(out, /resumed after step \d+/);
    const lines = readMetrics(metrics);
    const everyStep = Array.from({ length: steps }, (_, i) => i + 1);
    assert.deepEqual(
      lines.map((l) => l.step),
      everyStep,
    );
    assert.deepEqual(
      lines.map((l) => (l as unknown as { policyVersion: number }).policyVersion),
      everyStep,
      "each step updated the policy exactly once",
    );
    assert.ok(
      lines.every((l) => (l as unknown as { groups: { used: number } }).groups.used === 2),
      "no complete group lost",
    );
    // explain.jsonl was reconciled like metrics.jsonl: every step's record exactly once, each explainable.
    assert.deepEqual(
      readExplainRecords(dir, "restart").map((r) => r.step),
      everyStep,
    );
    assert.equal(explainRollout(dir, "restart", { rolloutId: "restart-s4-p0-1" }).reproduced, true);
    assert.ok(existsSync(join(dir, "restart", "report.html")));
  });
});
