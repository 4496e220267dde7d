/**
 * The code-exec service end to end: its real process entrypoint (bwrap sandbox), real NATS, real gRPC;
 * a drain on SIGTERM that leaves no sandbox behind.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { ComponentStatus, createGrpcClient, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import { type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";
import { cases, twoSum } from "./cases.js";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const SANDBOX_UID = 57_000 + (process.pid % 4_000);
let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "code-exec-test");
  service = await startServiceProcess(main, {
    envPrefix: "CODE_EXEC",
    natsUrl: nats.url,
    env: {
      SANDBOX_BACKEND: "bwrap",
      // A uid of its own, so "no sandbox left" cannot see those of test files running in parallel.
      SANDBOX_BWRAP_UID: String(SANDBOX_UID),
      SANDBOX_CONCURRENCY: "2",
      LOG_LEVEL: "info",
    },
  });
});

after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
});

it("logs the sandbox backend it chose at start", () => {
  assert.match(service.stderr(), /"msg":"sandbox backend: bwrap \(bubblewrap/);
});

it("scores over gRPC; a candidate's crash is a component status, not a gRPC error", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const crash = cases.find((x) => x.name.startsWith("runtime error"))!;
    const res = await c.score({
      rollout: makeRollout({
        response: crash.response,
        task: { id: "t", kind: { case: "code", value: crash.task } },
      }),
    });
    assert.deepEqual(
      res.components.map((x) => [x.name, x.value]),
      [
        ["format", 1],
        ["syntax", 1],
        ["compile", 1],
        ["runtime", 0],
        ["pass", 0],
        ["pass_rate", 0],
      ],
    );
    assert.equal(res.components[3]!.status, ComponentStatus.ERROR);
    await assert.rejects(
      c.score({
        rollout: makeRollout({
          task: { id: "t", kind: { case: "code", value: { language: "rust", test: "x" } } },
        }),
      }),
      (e: { code: number; details: string }) =>
        e.code === 3 && /rollout\.task\.code\.language/.test(e.details),
    );
  } finally {
    c.close();
  }
});

it("scores code rollouts published on JetStream", async () => {
  const runId = "code-exec-e2e";
  const ok = cases[0]!;
  const sent = [
    makeRollout({ runId, response: ok.response, task: { id: "a", kind: { case: "code", value: twoSum } } }),
    makeRollout({ runId, response: "no code", task: { id: "b", kind: { case: "code", value: twoSum } } }),
  ];
  for (const r of sent) await publishRollout(bus.js, r);
  const got = await readStream(
    bus,
    Streams.rewards,
    `mesh.rewards.${runId}.code-exec.*`,
    (d) => fromBinary(RewardResultSchema, d),
    2,
  );
  const pass = new Map(
    got.map((m) => [m.value.rolloutId, m.value.components.find((c) => c.name === "pass")!.value]),
  );
  assert.equal(pass.get(sent[0]!.id), 1);
  assert.equal(pass.get(sent[1]!.id), 0);
});

it("drains and exits 0 on SIGTERM, leaving no sandbox process behind", async () => {
  assert.equal(await service.stop(), 0);
  let left = "";
  try {
    left = execFileSync("ps", ["-u", String(SANDBOX_UID), "-o", "stat=,args="], { encoding: "utf8" });
  } catch {
    // none
  }
  assert.deepEqual(
    left.split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("Z")),
    [],
  );
});
