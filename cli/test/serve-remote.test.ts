/**
 * `reward-mesh serve --remote`: a reward service written in Python (examples/python-reward-service,
 * the repository's .venv (or REWARD_MESH_PYTHON) with grpcio, stubs generated from proto/) joins the mesh through the sidecar process and
 * takes part in a short training run; the bus semantics are the SDK worker's (a rollout the remote
 * refuses is dead-lettered naming the field; every result carries the remote's components, checked
 * against its Describe). Its ScoreBatch, called directly, follows the contract: per-request errors with
 * Score's code and message under `requests[<i>]`, the 1..1024 size cap. Real nats-server, real Python gRPC
 * server, the real CLI process.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { DeadLetterSchema, grpc, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import {
  createRewardServiceClient,
  grpcService,
  type MeshBus,
  openBus,
  publishRollout,
  readStream,
  scoreBatch,
  Streams,
  silentLogger,
  startGrpcServices,
} from "@reward-mesh/sdk";
import { type LocalNats, makeRollout, startTestNats, testBusOptions } from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  readMetrics,
  DEFAULT_PYTHON,
  resolveRunConfig,
  runTraining,
} from "@reward-mesh/trainer";

const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
const example = fileURLToPath(
  new URL("../../examples/python-reward-service/reward_service.py", import.meta.url),
);
const cli = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
const noGrpc = spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"]).status !== 0;

/** A child process, its output so far, and a wait for a line of it. */
function child(cmd: string, args: string[], env: Record<string, string>) {
  const c: ChildProcess = spawn(cmd, args, { env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...env } });
  let out = "";
  c.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  c.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => c.once("exit", (code) => r(code)));
  const waitFor = (re: RegExp, ms = 60_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => {
        const m = re.exec(out);
        if (m) return resolve(m);
        if (c.exitCode !== null) return reject(new Error(`${cmd} exited ${c.exitCode}:\n${out}`));
        if (Date.now() - t0 > ms) return reject(new Error(`no ${re} from ${cmd} within ${ms} ms:\n${out}`));
        setTimeout(tick, 25);
      };
      tick();
    });
  /** Ends it (SIGTERM) and waits for its exit code; `stop(false)` only waits. */
  const stop = async (term = true) => {
    if (term && c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    return exited;
  };
  return { waitFor, stop, output: () => out };
}

describe("`reward-mesh serve --remote` and this build's own services", () => {
  it("refuses a remote whose Describe name is one of this build's services (it would share its consumers)", async () => {
    const impostor = await startGrpcServices(
      [
        grpcService(RewardService, {
          describe: async () => ({
            name: "length",
            version: "9.9.9",
            domains: ["custom"],
            components: [{ name: "x", description: "", min: 0, max: 1 }],
          }),
          score: async () => {
            throw new Error("not called");
          },
          async *scoreStream() {},
          scoreBatch: async () => {
            throw new Error("not called");
          },
        }),
      ],
      { logger: silentLogger },
    );
    try {
      const sidecar = child(process.execPath, [cli, "serve", "--remote", impostor.address], {
        NATS_URL: "nats://127.0.0.1:1",
        OTEL_TRACES_EXPORTER: "none",
        OTEL_METRICS_EXPORTER: "none",
        OTEL_LOGS_EXPORTER: "none",
      });
      const code = await sidecar.stop(false);
      assert.notEqual(code, 0, sidecar.output());
      assert.match(
        sidecar.output(),
        new RegExp(
          `the reward service at ${impostor.address} is named 'length' \\(its Describe\\), like this build's own 'length' service`,
        ),
      );
    } finally {
      await impostor.close(0);
    }
  });
});

describe("a Python reward service through `reward-mesh serve --remote`", {
  skip: noGrpc && `${PYTHON} has no grpcio/protobuf (bash scripts/bootstrap.sh --with-torch)`,
}, () => {
  let nats: LocalNats;
  let bus: MeshBus;
  let python: ReturnType<typeof child>;
  let pythonAddress: string;
  let sidecar: ReturnType<typeof child>;
  let dir: string;

  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "serve-remote-test");
    python = child(PYTHON, [example, "--port", "0"], { PYTHONDONTWRITEBYTECODE: "1" });
    const address = (await python.waitFor(/listening on (\S+)/))[1]!;
    pythonAddress = address;
    sidecar = child(process.execPath, [cli, "serve", "--remote", address], {
      NATS_URL: nats.url,
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
      PY_BREVITY_ACK_WAIT_MS: "2000",
    });
    await sidecar.waitFor(/py-brevity ready/);
    dir = mkdtempSync(join(tmpdir(), "rm-remote-"));
  });
  after(async () => {
    const code = await sidecar?.stop();
    await python?.stop();
    await bus?.close();
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 0, `the sidecar drains and exits 0 on SIGTERM:\n${sidecar?.output()}`);
  });

  it("takes part in a training run (its components, named in the run's `services:`)", async () => {
    const config = resolveRunConfig({
      run: { id: "py-remote", seed: 5, outputDir: dir },
      tasks: { sets: ["custom"] },
      services: { "py-brevity": ["custom"] },
      groupSize: 4,
      promptsPerStep: 2,
      steps: 3,
      components: [
        { service: "py-brevity", component: "brevity", weight: 1 },
        { service: "py-brevity", component: "politeness", weight: 0.5 },
      ],
      groups: { deadlineMs: 20_000 },
    });
    const learner = createEmbeddedLearner({ seed: config.seed });
    try {
      const r = await runTraining({
        config,
        tasks: builtinTasks(["custom"]),
        bus,
        learner,
        startWaitSeconds: 30,
      });
      assert.equal(r.lastStep, 3);
    } finally {
      await learner.close();
    }
    const lines = readMetrics(join(dir, "py-remote", "metrics.jsonl"));
    assert.equal(lines.length, 3);
    for (const l of lines) {
      assert.equal(typeof l.weightedReward, "number", `step ${l.step} was scored`);
      assert.ok(l.weightedReward! > 0, `step ${l.step}: brevity of short fragments is positive`);
    }
  });

  it("scores over the bus with the remote's result and dead-letters what the remote refuses", async () => {
    const runId = "py-bus";
    const good = makeRollout({ runId, id: "py-bus-good", response: "Thanks!" });
    const bad = makeRollout({ runId, id: "py-bus-bad", metadata: { "brevity.budget": "lots" } });
    await publishRollout(bus.js, bad);
    await publishRollout(bus.js, good);
    const [res] = await readStream(
      bus,
      Streams.rewards,
      `mesh.rewards.${runId}.py-brevity.*`,
      (d) => fromBinary(RewardResultSchema, d),
      1,
    );
    assert.equal(res!.value.rolloutId, good.id);
    assert.equal(res!.value.serviceVersion, "1.0.0");
    assert.deepEqual(
      res!.value.components.map((c) => [c.name, c.value]),
      [
        ["brevity", 1 - 7 / 48],
        ["politeness", 1],
      ],
    );
    const dlq = await readStream(
      bus,
      Streams.dlq,
      "mesh.dlq.py-brevity",
      (d) => fromBinary(DeadLetterSchema, d),
      1,
    );
    const letter = dlq.find((m) => m.value.subject === `mesh.rollouts.custom.${runId}`);
    assert.ok(letter, "the refused rollout is dead-lettered");
    assert.match(
      letter.value.reason,
      /'rollout\.metadata\["brevity\.budget"\]' must be a positive integer, got 'lots'/,
    );
  });

  it("answers ScoreBatch as the contract says: Score's errors per request under requests[<i>], 1 to 1024", async () => {
    const client = createRewardServiceClient(pythonAddress, { timeoutMs: 30_000 });
    try {
      const good = makeRollout({ id: "py-batch-good", response: "Thanks!" });
      const badBudget = makeRollout({
        id: "py-batch-budget",
        groupId: "g7",
        index: 2,
        groupSize: 4,
        step: 3,
        metadata: { "brevity.budget": "lots" },
      });
      const noId = makeRollout({ id: "", response: "hello there" });
      const short = makeRollout({
        id: "py-batch-short",
        response: "ok",
        metadata: { "brevity.budget": "4" },
      });
      const rollouts = [good, badBudget, noId, short];
      const out = await client.scoreBatch({ requests: rollouts.map((rollout) => ({ rollout })) });
      assert.equal(out.results.length, 4);
      assert.deepEqual(
        out.errors.map((e) => [e.index, e.code, e.message]),
        [
          [
            1,
            grpc.status.INVALID_ARGUMENT,
            `'requests[1].rollout.metadata["brevity.budget"]' must be a positive integer, got 'lots'`,
          ],
          [2, grpc.status.INVALID_ARGUMENT, "'requests[2].rollout.id' is required"],
        ],
      );
      // Each error has the code and message Score gives for the same rollout, the field under requests[<i>].
      for (const e of out.errors) {
        await assert.rejects(client.score({ rollout: rollouts[e.index]! }), (err: grpc.ServiceError) => {
          assert.equal(err.code, e.code);
          assert.equal(e.message, err.details.replace(/^'/, `'requests[${e.index}].`));
          return true;
        });
      }
      // A refused request's result holds only its rollout's identity; the others are Score's results.
      const refused = out.results[1]!;
      assert.deepEqual(
        [
          refused.rolloutId,
          refused.groupId,
          refused.index,
          refused.groupSize,
          refused.step,
          refused.service,
          refused.components.length,
        ],
        ["py-batch-budget", "g7", 2, 4, 3, "py-brevity", 0],
      );
      for (const i of [0, 3]) {
        const one = await client.score({ rollout: rollouts[i]! });
        assert.equal(out.results[i]!.rolloutId, rollouts[i]!.id);
        assert.deepEqual(
          out.results[i]!.components.map((c) => [c.name, c.value, c.status]),
          one.components.map((c) => [c.name, c.value, c.status]),
        );
      }
      assert.deepEqual(
        out.results[3]!.components.map((c) => [c.name, c.value]),
        [
          ["brevity", 0.5],
          ["politeness", 0],
        ],
      );
      // The size cap: an empty batch and one over 1024 fail the call; 1024 is scored.
      await assert.rejects(
        client.scoreBatch({ requests: [] }),
        (err: grpc.ServiceError) =>
          err.code === grpc.status.INVALID_ARGUMENT &&
          /'requests' must hold at least one ScoreRequest/.test(err.details),
      );
      const many = (n: number) =>
        Array.from({ length: n }, (_, i) => ({
          rollout: makeRollout({ id: `py-many-${i}`, response: "x".repeat(i % 50) }),
        }));
      await assert.rejects(
        client.scoreBatch({ requests: many(1025) }),
        (err: grpc.ServiceError) =>
          err.code === grpc.status.INVALID_ARGUMENT &&
          err.details ===
            "'requests' must hold at most 1024 ScoreRequests, got 1025: split the batch (or use ScoreStream)",
      );
      const full = await client.scoreBatch({ requests: many(1024) });
      assert.equal(full.errors.length, 0);
      assert.deepEqual(
        full.results.map((r) => r.rolloutId),
        many(1024).map((r) => r.rollout.id),
      );
      // The SDK's client helper uses it (no fallback to ScoreStream) and splits past the cap.
      const helped = await scoreBatch(client, [...many(1030).map((r) => r.rollout), badBudget]);
      assert.equal(helped.rpc, "ScoreBatch");
      assert.equal(helped.results.length, 1031);
      assert.deepEqual(
        helped.errors.map((e) => [e.index, e.code]),
        [[1030, grpc.status.INVALID_ARGUMENT]],
      );
    } finally {
      client.close();
    }
  });
});
