/** The length service end to end: its real process entrypoint, real NATS, real gRPC. */
import assert from "node:assert/strict";
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
let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "length-test");
  service = await startServiceProcess(main, {
    envPrefix: "LENGTH",
    natsUrl: nats.url,
    env: { LENGTH_MAX_LENGTH: "16", LENGTH_CACHE_LENGTH: "8" },
  });
});

after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
});

it("scores over gRPC with the configured limits", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const res = await c.score({ rollout: makeRollout({ response: "x".repeat(12) }) });
    assert.deepEqual(
      res.components.map((x) => [x.name, x.value]),
      [
        ["length", 12],
        ["overlong", -0.5],
      ],
    );
  } finally {
    c.close();
  }
});

it("scores rollouts of every domain published on JetStream", async () => {
  const runId = "length-e2e";
  const sent = [
    makeRollout({ runId, response: "short" }),
    makeRollout({
      runId,
      response: "x".repeat(20),
      task: { id: "c", kind: { case: "code", value: { language: "python" } } },
    }),
    makeRollout({
      runId,
      response: "abc",
      task: { id: "t", kind: { case: "toolCall", value: { format: "json" } } },
    }),
  ];
  for (const r of sent) await publishRollout(bus.js, r);
  const got = await readStream(
    bus,
    Streams.rewards,
    `mesh.rewards.${runId}.length.*`,
    (d) => fromBinary(RewardResultSchema, d),
    3,
  );
  assert.equal(got.length, 3);
  const overlong = new Map(
    got.map((m) => [m.value.rolloutId, m.value.components.find((c) => c.name === "overlong")!.value]),
  );
  assert.equal(overlong.get(sent[0]!.id), 0);
  assert.equal(overlong.get(sent[1]!.id), -1);
  assert.equal(overlong.get(sent[2]!.id), 0);
});

it("drains and exits 0 on SIGTERM", async () => {
  assert.equal(await service.stop(), 0);
});
