/**
 * The code-exec service end to end: its real process entrypoint (bwrap sandbox), real NATS, real gRPC;
 * a drain on SIGTERM that leaves no sandbox behind.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import {
  ComponentStatus,
  createGrpcClient,
  health,
  RewardResultSchema,
  RewardService,
} from "@reward-mesh/proto";
import { freePort, type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import { type LocalNats, makeRollout, startTestNats } from "@reward-mesh/sdk/testing";
import { cases, twoSum } from "./cases.js";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const SANDBOX_UID = 57_000 + (process.pid % 4_000);
let nats: LocalNats;
let bus: MeshBus;
let child: ChildProcess;
let address = "";
let stderr = "";

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
    "code-exec-test",
  );
  address = `127.0.0.1:${await freePort()}`;
  child = spawn(process.execPath, ["--import", "tsx", main], {
    env: {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      NATS_URL: nats.url,
      CODE_EXEC_GRPC_PORT: address.split(":")[1],
      SANDBOX_BACKEND: "bwrap",
      // A uid of its own, so "no sandbox left" cannot see those of test files running in parallel.
      SANDBOX_BWRAP_UID: String(SANDBOX_UID),
      SANDBOX_CONCURRENCY: "2",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const h = createGrpcClient(health.Health, address);
  const deadline = Date.now() + 30_000;
  while (true) {
    assert.ok(Date.now() < deadline, `code-exec did not become SERVING:\n${stderr}`);
    assert.equal(child.exitCode, null, `code-exec exited:\n${stderr}`);
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

it("logs the sandbox backend it chose at start", () => {
  assert.match(stderr, /"msg":"sandbox backend: bwrap \(bubblewrap/);
});

it("scores over gRPC; a candidate's crash is a component status, not a gRPC error", async () => {
  const c = createGrpcClient(RewardService, address);
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
    `mesh.rewards.${runId}.code-exec`,
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
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill("SIGTERM");
  assert.equal(await exited, 0);
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
