/**
 * A training run whose reward is a learned reward model: real nats-server, the real reward-model service
 * in its own process (ONNX Runtime, dynamic batching; gRPC + its JetStream worker), the embedded learner.
 * Each step's rollouts are scored by the model over JetStream; the published rewards equal what the same
 * service answers over gRPC for the same rollouts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { createGrpcClient, RewardResultSchema, RewardService, RolloutSchema } from "@reward-mesh/proto";
import { type MeshBus, openBus, readStream, Streams } from "@reward-mesh/sdk";
import {
  type LocalNats,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  readMetrics,
  resolveRunConfig,
  runTraining,
} from "../src/index.js";

let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;
let dir: string;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "reward-model-train-test");
  service = await startServiceProcess(fileURLToPath(import.meta.resolve("@reward-mesh/reward-model/main")), {
    envPrefix: "REWARD_MODEL",
    natsUrl: nats.url,
    env: { REWARD_MODEL_MAX_BATCH: "8", REWARD_MODEL_MAX_WAIT_MS: "5", REWARD_MODEL_INTRA_OP_THREADS: "1" },
  });
  dir = mkdtempSync(join(tmpdir(), "rm-train-reward-model-"));
});
after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("trains on the reward model's score through the mesh", async () => {
  const steps = 3;
  const config = resolveRunConfig({
    run: { id: "rm-run", seed: 7, outputDir: dir },
    tasks: { sets: ["custom"] },
    groupSize: 4,
    promptsPerStep: 2,
    steps,
    services: { "reward-model": ["custom"] },
    components: [{ service: "reward-model", component: "score", weight: 1 }],
    estimator: "grpo",
    loss: { type: "dapo" },
    optim: { lr: 0.1 },
    groups: { deadlineMs: 30_000 },
  });
  const learner = createEmbeddedLearner({ seed: config.seed });
  try {
    const r = await runTraining({ config, tasks: builtinTasks(["custom"]), bus, learner });
    assert.equal(r.lastStep, steps);
  } finally {
    await learner.close();
  }
  const lines = readMetrics(join(dir, "rm-run", "metrics.jsonl"));
  assert.equal(lines.length, steps);
  for (const l of lines) {
    assert.equal((l as unknown as { groups: { used: number } }).groups.used, 2, "no group lost");
    const score = l.components?.["reward-model/score"];
    assert.ok(score && Number.isFinite(score.mean), JSON.stringify(l.components));
  }

  // The published rewards are the model's scores: the same rollouts over gRPC give the same values.
  const n = steps * 2 * 4;
  const rollouts = await readStream(
    bus,
    Streams.rollouts,
    "mesh.rollouts.>",
    (d) => fromBinary(RolloutSchema, d),
    n,
  );
  const rewards = await readStream(
    bus,
    Streams.rewards,
    "mesh.rewards.rm-run.reward-model.*",
    (d) => fromBinary(RewardResultSchema, d),
    n,
  );
  assert.equal(rewards.length, n);
  const published = new Map(rewards.map((m) => [m.value.rolloutId, m.value.components[0]!.value]));
  assert.ok(new Set(published.values()).size > 1, "the model tells responses apart");
  const c = createGrpcClient(RewardService, service.address);
  try {
    for (const { value: rollout } of rollouts.slice(0, 8)) {
      const direct = (await c.score({ rollout })).components[0]!.value;
      // Batched with other rollouts (padded) or alone: equal up to float32 rounding.
      assert.ok(Math.abs(published.get(rollout.id)! - direct) <= 1e-5, `${rollout.id}: ${direct}`);
    }
  } finally {
    c.close();
  }
});
