/** The reward-model service end to end: its real process entrypoint, real NATS, real gRPC. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { createGrpcClient, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import { type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const reference = JSON.parse(readFileSync(new URL("../model/reference.json", import.meta.url), "utf8")) as {
  cases: { prompt: string; response: string; score: number }[];
};
let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;

const rolloutOf = (c: { prompt: string; response: string }, init: Parameters<typeof makeRollout>[0] = {}) =>
  makeRollout({
    response: c.response,
    task: { id: "t", prompt: c.prompt, kind: { case: "custom", value: {} } },
    ...init,
  });

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "reward-model-test");
  service = await startServiceProcess(main, {
    envPrefix: "REWARD_MODEL",
    natsUrl: nats.url,
    env: {
      REWARD_MODEL_MAX_BATCH: "8",
      REWARD_MODEL_MAX_WAIT_MS: "20",
      REWARD_MODEL_CALIBRATION: "sigmoid",
      REWARD_MODEL_CALIBRATION_SHIFT: "0.75",
      REWARD_MODEL_CALIBRATION_SCALE: "0.1",
      REWARD_MODEL_INTRA_OP_THREADS: "1",
    },
  });
});

after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
});

it("scores concurrent gRPC requests as the PyTorch reference did", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const d = await c.describe({});
    assert.deepEqual(
      d.components.map((x) => x.name),
      ["score", "score_calibrated"],
    );
    assert.deepEqual(d.domains, ["custom", "code", "tool_call", "agent"]);
    const results = await Promise.all(reference.cases.map((x) => c.score({ rollout: rolloutOf(x) })));
    results.forEach((res, i) => {
      const want = reference.cases[i]!.score;
      const [score, calibrated] = res.components;
      assert.ok(Math.abs(score!.value - want) <= 1e-5, `case ${i}: ${score!.value} vs ${want}`);
      assert.ok(Math.abs(calibrated!.value - 1 / (1 + Math.exp(-(want - 0.75) / 0.1))) <= 1e-4);
    });
  } finally {
    c.close();
  }
});

it("scores rollouts of each text domain published on JetStream", async () => {
  const runId = "reward-model-e2e";
  const c0 = reference.cases[0]!;
  const sent = [
    rolloutOf(c0, { runId }),
    makeRollout({
      runId,
      response: c0.response,
      task: {
        id: "c",
        domain: "code",
        kind: { case: "code", value: { language: "python", prompt: c0.prompt } },
      },
    }),
    makeRollout({
      runId,
      response: c0.response,
      task: {
        id: "t",
        domain: "tool_call",
        prompt: c0.prompt,
        kind: { case: "toolCall", value: { format: "json" } },
      },
    }),
  ];
  for (const r of sent) await publishRollout(bus.js, r);
  const got = await readStream(
    bus,
    Streams.rewards,
    `mesh.rewards.${runId}.reward-model.*`,
    (d) => fromBinary(RewardResultSchema, d),
    3,
  );
  assert.equal(got.length, 3);
  // Same (prompt, response) in each domain: the same score as the reference.
  for (const m of got) {
    const score = m.value.components.find((x) => x.name === "score")!.value;
    assert.ok(Math.abs(score - c0.score) <= 1e-5, `${m.value.rolloutId}: ${score}`);
  }
});

it("drains and exits 0 on SIGTERM", async () => {
  assert.equal(await service.stop(), 0);
});

it("fails start-up naming a missing model file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-reward-model-missing-"));
  try {
    await assert.rejects(
      startServiceProcess(main, {
        envPrefix: "REWARD_MODEL",
        natsUrl: nats.url,
        env: { REWARD_MODEL_MODEL_DIR: dir },
      }),
      (e: Error) => e.message.includes(`reward model file '${join(dir, "tokenizer.json")}' does not exist`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
