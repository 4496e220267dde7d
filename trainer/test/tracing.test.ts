/**
 * Tracing, explain and metrics end to end: a real OTLP/HTTP receiver (the mesh's own, `up --traces`),
 * a real nats-server, the length, ast and code-exec services as their own processes exporting spans to
 * it (code-exec running candidates in the bwrap sandbox), and a trainer in this process with the
 * OpenTelemetry SDK installed the way an entry point does. Checks that one rollout's spans form one
 * trace of its own, rooted at the trainer's rollout span (linked to the step span) through every
 * service (sandbox included), that the step's group spans link to the rollouts, that `explain` gives the
 * engine's numbers, and that `/metrics` of a service and of the trainer count what happened.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createGrpcClient, grpc, Trainer } from "@reward-mesh/proto";
import {
  freePort,
  type MeshBus,
  type OtlpReceiver,
  openBus,
  readStoredSpans,
  renderWaterfall,
  type StoredSpan,
  spansOfRollout,
  startOtlpReceiver,
} from "@reward-mesh/sdk";
import {
  type LocalNats,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  computeAdvantages,
  createEmbeddedLearner,
  explainRollout,
  readExplainRecords,
  rolloutIdsOf,
  renderExplanation,
  resolveRunConfig,
  runTraining,
  serveTrainer,
} from "../src/index.js";
import { compileAdvantage } from "../src/run/config.js";

const mainOf = (svc: string) => fileURLToPath(new URL(`../../services/${svc}/src/main.ts`, import.meta.url));
const SANDBOX_UID = 61_000 + (process.pid % 4_000);

let nats: LocalNats;
let bus: MeshBus;
let receiver: OtlpReceiver;
let otel: NodeSDK;
let dir: string;
let spansFile: string;
let trainerMetricsPort: number;
const services: Array<ServiceProcess & { name: string; metricsPort: number }> = [];

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

/** The value of the first sample of `metric` whose labels include every `labels` pair (0 when none). */
function sample(text: string, metric: string, labels: Record<string, string>): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "rm-tracing-"));
  spansFile = join(dir, "spans.jsonl");
  receiver = await startOtlpReceiver({ file: spansFile });
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "tracing-test");
  const envOf = async (name: string) => {
    const metricsPort = await freePort();
    return {
      metricsPort,
      env: {
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRICS_EXPORTER: "prometheus",
        OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
        OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
        ...(name === "code-exec"
          ? { SANDBOX_BACKEND: "bwrap", SANDBOX_BWRAP_UID: String(SANDBOX_UID), SANDBOX_CONCURRENCY: "2" }
          : {}),
      },
    };
  };
  for (const [name, envPrefix] of [
    ["length", "LENGTH"],
    ["ast", "AST"],
    ["code-exec", "CODE_EXEC"],
  ] as const) {
    const { env, metricsPort } = await envOf(name);
    const p = await startServiceProcess(mainOf(name), { envPrefix, natsUrl: nats.url, env });
    services.push({ ...p, name, metricsPort });
  }
  // The trainer's process: the SDK as `reward-mesh train` installs it, exporting to the same receiver.
  trainerMetricsPort = await freePort();
  otel = new NodeSDK({
    serviceName: "reward-mesh-trainer",
    spanProcessors: [
      new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.endpoint}/v1/traces` })),
    ],
    metricReader: new PrometheusExporter({ host: "127.0.0.1", port: trainerMetricsPort }),
  });
  otel.start();
});

after(async () => {
  await otel?.shutdown().catch(() => {});
  await Promise.all(services.map((s) => s.stop()));
  await bus?.close();
  await nats?.stop();
  await receiver?.close();
  if (!process.env["KEEP"]) rmSync(dir, { recursive: true, force: true });
});

const runDoc = (id: string) => ({
  run: { id, seed: 5, outputDir: dir },
  tasks: { sets: ["code"] },
  groupSize: 4,
  promptsPerStep: 2,
  steps: 3,
  components: [
    { service: "code-exec", component: "pass", weight: 0.6 },
    { service: "code-exec", component: "format", weight: 0.05 },
    { service: "ast", component: "similarity", weight: 0.3 },
    { service: "length", component: "overlong", weight: 1 },
  ],
  estimator: { name: "corr_grpo", options: { coefficientSumFloor: 1 } },
  sgrpo: { p: 0.1, component: "code-exec/pass" },
  dynamicSampling: {},
  loss: { type: "dapo" },
  optim: { lr: 0.1 },
  groups: { deadlineMs: 60_000 },
});

/** Polls the receiver's file until `done(spans)` holds (the exporters flush on a timer). */
async function spansUntil(done: (s: StoredSpan[]) => boolean, timeoutMs = 30_000): Promise<StoredSpan[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const spans = readStoredSpans(spansFile);
    if (done(spans)) return spans;
    if (Date.now() > end) return spans;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("one trace per rollout, explain and metrics", () => {
  const runId = "traced";
  let rolloutId: string;
  let step: number;
  let groupId: string;

  before(async () => {
    const config = resolveRunConfig(runDoc(runId));
    const learner = createEmbeddedLearner({ seed: config.seed });
    try {
      const r = await runTraining({ config, tasks: builtinTasks(["code"]), bus, learner });
      assert.equal(r.lastStep, 3);
    } finally {
      await learner.close();
    }
    // A rollout of a group with signal (non-zero advantages) when there is one: the most telling case.
    const records = readExplainRecords(dir, runId);
    const groups = records.flatMap((r) => r.groups.map((g) => ({ step: r.step, g })));
    const pick = groups.find(({ g }) => g.advantages.some((a) => a !== 0)) ?? groups[0]!;
    step = pick.step;
    groupId = pick.g.groupId;
    rolloutId = rolloutIdsOf(runId, pick.g)[1]!;
  });

  it("gives each rollout a trace of its own: trainer rollout → each service's consume → score (→ sandbox) → publish, linked to the step", async () => {
    const stored = readExplainRecords(dir, runId).find((r) => r.step === step)!;
    assert.match(stored.traceId ?? "", /^[0-9a-f]{32}$/);
    const stepTraceId = stored.traceId!;
    const group = stored.groups.find((g) => g.groupId === groupId)!;
    const rolloutTrace = group.traceIds?.[1] ?? "";
    assert.match(rolloutTrace, /^[0-9a-f]{32}$/, "the record stores the rollout's own trace id");
    // Two rollouts, two traces, neither the step's.
    const otherTrace = group.traceIds?.[0] ?? "";
    assert.match(otherTrace, /^[0-9a-f]{32}$/);
    assert.notEqual(otherTrace, rolloutTrace);
    assert.notEqual(rolloutTrace, stepTraceId);
    const want = (s: StoredSpan[]) => {
      const mine = spansOfRollout(s, rolloutTrace, rolloutId, groupId);
      return (
        ["length", "ast", "code-exec"].every((svc) => mine.some((x) => x.name === `reward/${svc}/publish`)) &&
        mine.some((x) => x.name === "reward/code-exec/sandbox") &&
        s.some((x) => x.traceId === stepTraceId && x.name === "trainer/train_step")
      );
    };
    const all = await spansUntil(want);
    const mine = spansOfRollout(all, rolloutTrace, rolloutId, groupId);
    // Everything of the rollout's trace is this rollout's: no other rollout's span, no group span.
    assert.deepEqual(
      mine.map((s) => s.spanId).sort(),
      all
        .filter((s) => s.traceId === rolloutTrace)
        .map((s) => s.spanId)
        .sort(),
    );
    const byId = new Map(mine.map((s) => [s.spanId, s]));
    const names = mine.map((s) => `${s.service}:${s.name}`);

    // One root: the trainer's rollout span; every other span's parent is in the same trace.
    const roots = mine.filter((s) => !byId.has(s.parentSpanId));
    assert.deepEqual(
      roots.map((s) => s.name),
      ["trainer/rollout"],
      `roots: ${roots.map((s) => s.name)}\n${renderWaterfall(mine, rolloutTrace)}`,
    );
    const rolloutSpan = roots[0]!;
    assert.equal(rolloutSpan.service, "reward-mesh-trainer");
    assert.equal(rolloutSpan.parentSpanId, "");
    assert.equal(rolloutSpan.attributes["reward.rollout_id"], rolloutId);
    // ... linked to the step span, the link carrying the step's coordinates.
    const stepSpan = all.find((s) => s.traceId === stepTraceId && s.name === "trainer/step");
    assert.ok(stepSpan, "no step span in the step's trace");
    const toStep = rolloutSpan.links.find((l) => l.traceId === stepTraceId && l.spanId === stepSpan.spanId);
    assert.ok(toStep, "the rollout span does not link to the step span");
    assert.equal(toStep.attributes?.["reward.run_id"], runId);
    assert.equal(toStep.attributes?.["reward.step"], step);
    assert.equal(toStep.attributes?.["reward.group_id"], groupId);
    assert.equal(toStep.attributes?.["reward.rollout_id"], rolloutId);
    const chain = (s: StoredSpan): string[] => {
      const out: string[] = [];
      for (let p: StoredSpan | undefined = s; p; p = byId.get(p.parentSpanId)) out.unshift(p.name);
      return out;
    };
    for (const svc of ["length", "ast", "code-exec"]) {
      const publish = mine.find((s) => s.name === `reward/${svc}/publish`);
      assert.ok(publish, `no publish span of ${svc} in ${names.join(", ")}`);
      assert.equal(publish.service, `reward-mesh-${svc}`);
      assert.deepEqual(chain(publish), ["trainer/rollout", `reward/${svc}/consume`, `reward/${svc}/publish`]);
      const score = mine.find((s) => s.name === `reward/${svc}/score`)!;
      assert.deepEqual(chain(score), ["trainer/rollout", `reward/${svc}/consume`, `reward/${svc}/score`]);
      // The attributes: run, step, group, rollout, service, each component's value and status.
      assert.equal(score.attributes["reward.run_id"], runId);
      assert.equal(score.attributes["reward.step"], step);
      assert.equal(score.attributes["reward.group_id"], groupId);
      assert.equal(score.attributes["reward.rollout_id"], rolloutId);
      assert.equal(score.attributes["reward.service"], svc);
    }
    const codeScore = mine.find((s) => s.name === "reward/code-exec/score")!;
    assert.equal(typeof codeScore.attributes["reward.component.pass.value"], "number");
    assert.match(String(codeScore.attributes["reward.component.pass.status"]), /^(OK|ERROR|TIMEOUT)$/);
    const sandbox = mine.find((s) => s.name === "reward/code-exec/sandbox")!;
    assert.deepEqual(chain(sandbox).slice(-2), ["reward/code-exec/score", "reward/code-exec/sandbox"]);
    assert.equal(sandbox.attributes["sandbox.backend"], "bwrap");

    // Group-level spans are children of the step span in the step's trace and link to this rollout's
    // span in its own trace (fan-in), with the count of their links.
    const stepSpans = spansOfRollout(all, stepTraceId, rolloutId, groupId);
    for (const name of ["trainer/assemble", "trainer/advantage", "trainer/train_step"]) {
      const g = stepSpans.find((s) => s.name === name);
      assert.ok(g, `no ${name} span`);
      assert.equal(g.parentSpanId, stepSpan.spanId);
      assert.ok(
        g.links.some((l) => l.spanId === rolloutSpan.spanId && l.traceId === rolloutTrace),
        `${name} does not link to the rollout`,
      );
      assert.equal(g.attributes["reward_mesh.links.total"], g.links.length);
    }
    const assemble = stepSpans.find((s) => s.name === "trainer/assemble")!;
    // ... to every rollout of the group (each in its own trace) and to each service's result publish.
    const rolloutLinks = assemble.links.filter((l) => group.traceIds!.includes(l.traceId));
    assert.deepEqual(new Set(rolloutLinks.map((l) => l.traceId)), new Set(group.traceIds));
    for (const svc of ["length", "ast", "code-exec"]) {
      const publish = mine.find((s) => s.name === `reward/${svc}/publish`)!;
      assert.ok(
        assemble.links.some((l) => l.spanId === publish.spanId && l.traceId === rolloutTrace),
        `assemble does not link to ${svc}'s result`,
      );
    }
    const waterfall = renderWaterfall(mine, rolloutTrace);
    assert.match(
      waterfall,
      /reward-mesh-code-exec: {2}reward\/code-exec\/sandbox|reward-mesh-code-exec: reward\/code-exec\/sandbox/,
    );
  });

  it("explain gives the advantage engine's numbers for the rollout's group", () => {
    const e = explainRollout(
      dir,
      runId,
      { rolloutId },
      { traceUrlTemplate: "http://jaeger:16686/trace/{traceId}" },
    );
    assert.equal(e.step, step);
    assert.equal(e.groupId, groupId);
    assert.equal(e.rolloutIndex, 1);
    assert.equal(e.reproduced, true);
    assert.equal(e.traceUrl, `http://jaeger:16686/trace/${e.traceId}`);
    assert.match(e.rolloutTraceId ?? "", /^[0-9a-f]{32}$/);
    assert.notEqual(e.rolloutTraceId, e.traceId);
    assert.equal(e.rolloutTraceUrl, `http://jaeger:16686/trace/${e.rolloutTraceId}`);
    // The engine on the step's batch, as the trainer called it.
    const config = JSON.parse(readFileSync(join(dir, runId, "resolved-config.json"), "utf8"));
    const rec = readExplainRecords(dir, runId).find((r) => r.step === step)!;
    const gi = rec.groups.findIndex((g) => g.groupId === groupId);
    assert.ok(
      rec.groups[gi]!.advantages.some((a) => a !== 0),
      "a group with signal was trained on",
    );
    const engine = computeAdvantages(
      {
        groups: rec.groups.map((g) => ({ rewards: g.rewards.map((r) => [...r]), lengths: [...g.lengths] })),
        weights: [...rec.weights],
        components: [...rec.components],
      },
      compileAdvantage(config),
      { diagnostics: true },
    ).groups[gi]!;
    // (=== : JSON stores -0 as 0.)
    const same = (a: readonly number[], b: readonly number[]) =>
      a.length === b.length && a.every((x, i) => x === b[i]);
    assert.ok(
      same(
        e.rollouts.map((r) => r.advantage),
        engine.advantages,
      ),
      `${e.rollouts.map((r) => r.advantage)} vs ${engine.advantages}`,
    );
    assert.ok(
      same(rec.groups[gi]!.advantages, engine.advantages),
      "the stored advantages are the applied ones",
    );
    const d = engine.diagnostics!;
    assert.deepEqual(e.correlation, d.correlation);
    assert.deepEqual(e.denominatorShares.grpo, d.grpoShares.rowShare);
    assert.deepEqual(e.denominatorShares.corrGrpo, d.corrGrpoShares.rowShare);
    assert.deepEqual(e.sgrpo, {
      weight: d.sgrpo!.weight,
      successes: d.sgrpo!.successes,
      gated: d.sgrpo!.gated,
    });
    assert.deepEqual(e.dynamicSampling, { kept: engine.kept });
    assert.deepEqual(e.components, [
      "code-exec/pass",
      "code-exec/format",
      "ast/similarity",
      "length/overlong",
    ]);
    assert.equal(e.rollouts[1]!.rolloutId, rolloutId);
    assert.equal(e.rollouts[1]!.statuses.length, 4);
    // The run stored what the services scored: every response, and code-exec's details of a failing test.
    for (const r of e.rollouts) assert.equal(typeof r.response, "string", r.rolloutId);
    assert.equal(e.rollouts[1]!.details.length, 4);
    const text = renderExplanation(e);
    assert.match(text, new RegExp(`advantage of ${rolloutId}: `));
    assert.match(text, /identical to the applied advantages/);
  });

  it("reward-mesh explain prints the explanation, --json, and the rollout's waterfall from the stored spans", async () => {
    const cli = fileURLToPath(new URL("../../cli/bin/reward-mesh.mjs", import.meta.url));
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [cli, "explain", "--run", runId, "--runs-dir", dir, ...args],
          { env: { PATH: process.env["PATH"] ?? "", REWARD_MESH_TRACE_URL: "http://tempo/trace/{traceId}" } },
          (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
        );
      });
    const text = await run(["--rollout", rolloutId, "--waterfall", "--spans", spansFile]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`step ${step} {2}group ${groupId}`));
    assert.match(text.stdout, /share of the denominator/);
    assert.match(text.stdout, /S-GRPO: weight/);
    assert.match(text.stdout, /DAPO dynamic sampling: (kept|dropped)/);
    // Links to the rollout's own trace and to the step's.
    const rec = readExplainRecords(dir, runId).find((r) => r.step === step)!;
    const rolloutTrace = rec.groups.find((g) => g.groupId === groupId)!.traceIds![1]!;
    assert.match(
      text.stdout,
      new RegExp(`rollout trace ${rolloutTrace} {2}http://tempo/trace/${rolloutTrace}`),
    );
    assert.match(text.stdout, new RegExp(`step trace ${rec.traceId} {2}http://tempo/trace/${rec.traceId}`));
    // The waterfall of the rollout's trace: where and how long, per hop, down to the sandbox.
    assert.match(text.stdout, /reward-mesh-trainer: trainer\/rollout/);
    assert.doesNotMatch(text.stdout, /trainer\/step/);
    assert.match(text.stdout, /reward-mesh-code-exec: reward\/code-exec\/sandbox/);
    const json = await run(["--step", String(step), "--group", groupId, "--json"]);
    assert.equal(json.code, 0, json.stderr);
    const e = JSON.parse(json.stdout);
    assert.deepEqual(
      e,
      JSON.parse(
        JSON.stringify(
          explainRollout(dir, runId, { step, groupId }, { traceUrlTemplate: "http://tempo/trace/{traceId}" }),
        ),
      ),
    );
    const missing = await run(["--rollout", "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no stored step holds rollout 'nope'/);
    const usage = await run(["--step", "x", "--group", groupId]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /'--step' must be a positive integer, got 'x'/);
  });

  it("Trainer.Explain over gRPC answers what explain prints; NOT_FOUND and INVALID_ARGUMENT name what is wrong", async () => {
    const server = await serveTrainer({ outputDir: dir, traceUrlTemplate: "http://jaeger/trace/{traceId}" });
    const client = createGrpcClient(Trainer, server.address);
    try {
      const res = await client.explain({ runId, rolloutId }, { timeoutMs: 10_000 });
      const e = explainRollout(
        dir,
        runId,
        { rolloutId },
        { traceUrlTemplate: "http://jaeger/trace/{traceId}" },
      );
      assert.equal(res.step, e.step);
      assert.equal(res.groupId, e.groupId);
      assert.equal(res.rolloutIndex, 1);
      assert.deepEqual(res.components, e.components);
      assert.deepEqual(
        res.rollouts.map((r) => r.advantage),
        e.rollouts.map((r) => r.advantage),
      );
      assert.deepEqual(res.correlation, e.correlation.flat());
      assert.deepEqual(res.corrGrpoShares, e.denominatorShares.corrGrpo);
      assert.equal(res.sgrpoWeight, e.sgrpo!.weight);
      assert.equal(res.kept, e.dynamicSampling!.kept);
      assert.equal(res.reproduced, true);
      assert.equal(res.traceUrl, `http://jaeger/trace/${e.traceId}`);
      assert.match(res.rolloutTraceId, /^[0-9a-f]{32}$/);
      assert.equal(res.rolloutTraceId, e.rolloutTraceId);
      assert.equal(res.rolloutTraceUrl, `http://jaeger/trace/${res.rolloutTraceId}`);
      await assert.rejects(client.explain({ runId, rolloutId: "nope" }, { timeoutMs: 10_000 }), {
        code: grpc.status.NOT_FOUND,
        details: "no stored step holds rollout 'nope'",
      });
      await assert.rejects(client.explain({ runId, step: 1 }, { timeoutMs: 10_000 }), {
        code: grpc.status.INVALID_ARGUMENT,
      });
    } finally {
      client.close();
      await server.close();
    }
  });

  it("/metrics of each service and of the trainer counts what the run did", async () => {
    for (const s of services) {
      const text = await scrape(s.metricsPort);
      // 3 steps × 2 groups × 4 rollouts, each scored once by every service.
      assert.equal(
        sample(text, "reward_mesh_rollouts_total", { service: s.name, outcome: "scored" }),
        24,
        s.name,
      );
      assert.ok(sample(text, "reward_mesh_score_duration_seconds_count", { service: s.name }) >= 24, text);
      assert.match(text, /reward_mesh_consumer_pending\{/);
    }
    const code = await scrape(services.find((s) => s.name === "code-exec")!.metricsPort);
    assert.ok(sample(code, "reward_mesh_sandbox_runs_total", { backend: "bwrap" }) > 0, code);
    assert.ok(sample(code, "reward_mesh_component_results_total", { component: "pass" }) > 0);
    const trainer = await scrape(trainerMetricsPort);
    assert.equal(sample(trainer, "reward_mesh_trainer_steps_total", { run: runId }), 3, trainer);
    assert.equal(sample(trainer, "reward_mesh_trainer_groups_total", { run: runId, outcome: "used" }), 6);
    assert.equal(
      sample(trainer, "reward_mesh_trainer_step_phase_duration_seconds_count", { phase: "score" }),
      3,
    );
    assert.match(trainer, /reward_mesh_trainer_denominator_share\{/);
    assert.match(trainer, /reward_mesh_trainer_reward_mean\{/);
  });
});
