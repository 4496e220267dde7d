/**
 * A text-policy training run end to end: a task file (text prompts, tool-call gold calls) → the PyTorch
 * learner's `builtin:tiny` (its own Python process, real gRPC) generates completions → real nats-server →
 * the real tool-call service scores the completion *text* → advantages → TrainStep → checkpoint. Then the
 * run is resumed in a fresh learner process from its checkpoint.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { RolloutSchema } from "@reward-mesh/proto";
import {
  type MeshBus,
  openBus,
  readStream,
  type RunningService,
  Streams,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import { createToolCallService } from "@reward-mesh/tool-call";
import {
  checkTorchAvailable,
  createEmbeddedLearner,
  createRemoteLearner,
  loadRunTasks,
  readMetrics,
  resolveRunConfig,
  runPaths,
  runTraining,
  startTorchLearner,
  TaskPolicyMismatchError,
} from "../src/index.js";

checkTorchAvailable();

let nats: LocalNats;
let bus: MeshBus;
let service: RunningService;
let dir: string;

const TOOLS = JSON.stringify([
  { name: "get_time", parameters: { type: "object", properties: { city: {} } } },
]);
const TASKS = [
  { id: "time-tokyo", prompt: "What time is it in Tokyo?", city: "Tokyo" },
  { id: "time-paris", messages: [{ role: "user", content: "Time in Paris, please." }], city: "Paris" },
].map(({ id, city, ...prompt }) => ({
  id,
  ...prompt,
  toolCall: {
    format: "rlla",
    toolsJson: TOOLS,
    groundTruth: [{ name: "get_time", argumentsJson: JSON.stringify({ city }) }],
  },
}));

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "train-text-test");
  service = await startRewardService(createToolCallService(), testRuntimeOptions(nats.url), silentLogger);
  dir = mkdtempSync(join(tmpdir(), "rm-train-text-"));
  writeFileSync(join(dir, "tasks.jsonl"), `${TASKS.map((t) => JSON.stringify(t)).join("\n")}\n`);
});
after(async () => {
  await service.close(1000);
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const doc = (steps: number) => ({
  run: { id: "text-run", seed: 5, outputDir: dir },
  tasks: { source: "jsonl", path: join(dir, "tasks.jsonl") },
  groupSize: 4,
  promptsPerStep: 2,
  steps,
  components: "rlla-tool",
  estimator: "grpo",
  loss: { type: "dapo" },
  optim: { lr: 0.001 },
  generation: { maxNewTokens: 24, temperature: 1 },
  learner: { kind: "torch", model: "builtin:tiny", dtype: "float32", device: "cpu", threads: 1 },
  groups: { deadlineMs: 60_000 },
});

async function train(steps: number, resume: boolean) {
  const config = resolveRunConfig(doc(steps));
  const paths = runPaths(config.outputDir, config.runId);
  const proc = await startTorchLearner({
    model: "builtin:tiny",
    dtype: "float32",
    device: "cpu",
    threads: 1,
    seed: config.seed,
    ...(resume ? { resume: paths.learnerCheckpointDir } : {}),
  });
  const learner = createRemoteLearner(proc.address);
  try {
    const r = await runTraining({ config, tasks: loadRunTasks(config), bus, learner });
    return { r, info: await learner.info(), paths };
  } finally {
    await learner.close();
    await proc.stop();
  }
}

describe("a text-policy run through the real mesh", () => {
  it("scores the completion text, updates the policy each step, and resumes from the checkpoint", async () => {
    const first = await train(2, false);
    assert.equal(first.r.lastStep, 2);
    assert.equal(first.info.policyVersion, 2);
    assert.equal(first.info.tokenizer, "byte-level");
    const metrics = readMetrics(first.paths.metrics);
    assert.equal(metrics.length, 2);
    for (const m of metrics) {
      assert.equal((m as { samples?: number }).samples, 8, "2 prompts × G = 4 samples reached the learner");
      assert.ok(Number.isFinite(m.loss) && Number.isFinite(m.entropy));
      assert.ok("tool-call/format" in (m.components ?? {}));
    }
    // The rollouts carry the completion text and its token count, and the prompts as given.
    const rollouts = (
      await readStream(bus, Streams.rollouts, "mesh.rollouts.>", (d) => fromBinary(RolloutSchema, d), 16)
    ).map((x) => x.value);
    assert.equal(rollouts.length, 16);
    assert.ok(rollouts.every((r) => r.responseTokens > 0 && r.responseTokens <= 24));
    assert.ok(rollouts.some((r) => r.response.length > 0));
    assert.deepEqual(new Set(rollouts.map((r) => r.task?.id)), new Set(["time-tokyo", "time-paris"]));
    // Resume: a fresh learner process restores the checkpointed policy and the run continues at step 3.
    const second = await train(3, true);
    assert.equal(second.r.resumedFrom, 2);
    assert.equal(second.r.lastStep, 3);
    assert.equal(second.info.policyVersion, 3);
    assert.equal(readFileSync(second.paths.metrics, "utf8").trim().split("\n").length, 3);
  });

  it("refuses text tasks for a fragment policy, naming the task", async () => {
    const config = resolveRunConfig({
      ...doc(1),
      run: { id: "frag", seed: 1, outputDir: dir },
      learner: "embedded",
    });
    const learner = createEmbeddedLearner({ seed: 1 });
    await assert.rejects(
      runTraining({ config, tasks: loadRunTasks(config), bus, learner }),
      (err: Error) => err instanceof TaskPolicyMismatchError && /time-tokyo/.test(err.message),
    );
  });
});
