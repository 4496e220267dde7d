/** The length service end to end: its real process entrypoint, real NATS, real gRPC. */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { createGrpcClient, health, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import { freePort, type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import { type LocalNats, makeRollout, startTestNats } from "@reward-mesh/sdk/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let nats: LocalNats;
let bus: MeshBus;
let child: ChildProcess;
let address = "";

before(async () => {
  nats = await startTestNats();
  bus = await openBus(
    {
      natsUrl: nats.url,
      streamMaxAgeSeconds: 3600,
      streamMaxBytes: -1,
      duplicateWindowMs: 120_000,
      streamReplicas: 1,
    },
    "length-test",
  );
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  child = spawn(process.execPath, ["--import", "tsx", main], {
    env: {
      PATH: "/usr/bin:/bin",
      NATS_URL: nats.url,
      LENGTH_GRPC_PORT: String(port),
      LENGTH_MAX_LENGTH: "16",
      LENGTH_CACHE_LENGTH: "8",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  // Poll gRPC health until SERVING (never sleep for a fixed time).
  const h = createGrpcClient(health.Health, address);
  const deadline = Date.now() + 30_000;
  while (true) {
    assert.ok(Date.now() < deadline, "length service did not become SERVING");
    assert.equal(child.exitCode, null, "length service exited");
    const ok = await h.check({ service: "" }, { timeoutMs: 500 }).then(
      (r) => r.status === health.HealthCheckResponse_ServingStatus.SERVING,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  h.close();
});

after(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  await bus.close();
  await nats.stop();
});

it("scores over gRPC with the configured limits", async () => {
  const c = createGrpcClient(RewardService, address);
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
    `mesh.rewards.${runId}.length`,
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
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill("SIGTERM");
  assert.equal(await exited, 0);
});
