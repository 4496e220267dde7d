/**
 * The tool-call service over real transports: an in-process gRPC server on port 0 (Describe, Score,
 * ScoreStream, INVALID_ARGUMENT), then its real process entrypoint with a real NATS (JetStream worker).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { createGrpcClient, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import {
  createLimiter,
  type MeshBus,
  openBus,
  publishRollout,
  readStream,
  type RunningGrpcServer,
  silentLogger,
  Streams,
  startGrpcServer,
} from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";
import { createToolCallService } from "../src/index.js";

const task = {
  id: "t",
  kind: {
    case: "toolCall" as const,
    value: { format: "rlla", groundTruth: [{ name: "GetNews", argumentsJson: '{"page": "1"}' }] },
  },
};
const answer = (page: string) =>
  `<think>x</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "${page}"}}\n</tool_call>`;

describe("gRPC (in-process server)", () => {
  let server: RunningGrpcServer;
  before(async () => {
    server = await startGrpcServer(createToolCallService(), {
      port: 0,
      limiter: createLimiter(4),
      logger: silentLogger,
    });
  });
  after(() => server.close(1000));

  it("describes its components with their ranges", async () => {
    const c = createGrpcClient(RewardService, server.address);
    try {
      const d = await c.describe({});
      assert.deepEqual(
        d.components.map((x) => [x.name, x.min, x.max]),
        [
          ["format", 0, 1],
          ["function_name", -0.5, 0.5],
          ["parameter_name", -1, 1],
          ["parameter_value", -1.5, 1.5],
          ["exact_match", 0, 1],
        ],
      );
      assert.deepEqual(d.domains, ["tool_call"]);
    } finally {
      c.close();
    }
  });

  it("scores one rollout and a stream in order; a bad task is INVALID_ARGUMENT", async () => {
    const c = createGrpcClient(RewardService, server.address);
    try {
      const one = await c.score({ rollout: makeRollout({ response: answer("1"), task }) });
      assert.equal(one.components.find((x) => x.name === "exact_match")!.value, 1);
      const pages = ["1", "2", "1", "3"];
      async function* reqs() {
        for (const p of pages) yield { rollout: makeRollout({ response: answer(p), task }) };
      }
      const got: number[] = [];
      for await (const r of c.scoreStream(reqs()))
        got.push(r.components.find((x) => x.name === "parameter_value")!.value);
      assert.deepEqual(got, [1.5, -1.5, 1.5, -1.5]);
      await assert.rejects(
        c.score({
          rollout: makeRollout({
            response: "x",
            task: { ...task, kind: { ...task.kind, value: { format: "yaml" } } },
          }),
        }),
        (e: { code: number; details: string }) =>
          e.code === 3 && /rollout\.task\.tool_call\.format/.test(e.details),
      );
    } finally {
      c.close();
    }
  });
});

describe("process entrypoint with JetStream", () => {
  let nats: LocalNats;
  let bus: MeshBus;
  let service: ServiceProcess;
  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "tool-call-test");
    service = await startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)), {
      envPrefix: "TOOL_CALL",
      natsUrl: nats.url,
    });
  });
  after(async () => {
    await service.stop();
    await bus.close();
    await nats.stop();
  });

  it("scores tool_call rollouts published on JetStream and exits 0 on SIGTERM", async () => {
    const runId = "tool-call-e2e";
    const sent = [
      makeRollout({ runId, response: answer("1"), task }),
      makeRollout({ runId, response: "garbage", task }),
    ];
    for (const r of sent) await publishRollout(bus.js, r);
    const got = await readStream(
      bus,
      Streams.rewards,
      `mesh.rewards.${runId}.tool-call.*`,
      (d) => fromBinary(RewardResultSchema, d),
      2,
    );
    const exact = new Map(got.map((m) => [m.value.rolloutId, m.value.components.map((c) => c.value)]));
    assert.deepEqual(exact.get(sent[0]!.id), [1, 0.5, 1, 1.5, 1]);
    assert.deepEqual(exact.get(sent[1]!.id), [0, -0.5, -1, -1.5, 0]);
    assert.equal(await service.stop(), 0);
  });
});
