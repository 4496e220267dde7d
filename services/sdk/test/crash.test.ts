/**
 * A worker process killed mid-batch (SIGKILL, no clean stop) loses no rollout and double-counts none
 * after a restart: unacked messages are redelivered, re-published results are de-duplicated.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { RewardResultSchema } from "@reward-mesh/proto";
import { type MeshBus, openBus, publishRollout, Streams } from "../src/index.js";
import {
  type LocalNats,
  makeRollout,
  readStream,
  startTestNats,
  testBusOptions,
} from "../src/testing/index.js";

const fixture = fileURLToPath(new URL("./worker-process.fixture.ts", import.meta.url));
let nats: LocalNats;
let bus: MeshBus;
const children: ChildProcess[] = [];

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "crash-test");
});
after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await bus.close();
  await nats.stop();
});

/** Starts a worker process; resolves once it prints `ready`. `scored` collects its scored ids. */
function startWorkerProcess(instance: string, scored: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", fixture, nats.url, instance, "40"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === "ready") resolve(child);
        else if (line.startsWith("scored ")) scored.push(line.slice(7));
        nl = buf.indexOf("\n");
      }
    });
    child.once("exit", (code) => reject(new Error(`worker ${instance} exited early (${code})`)));
  });
}

it("SIGKILL mid-batch, restart: every rollout rewarded exactly once", async () => {
  const n = 400;
  const runId = "crash";
  const first: string[] = [];
  const second: string[] = [];
  const w1 = await startWorkerProcess("w1", first);
  const sent = Array.from({ length: n }, () => makeRollout({ runId }));
  await Promise.all(sent.map((r) => publishRollout(bus.js, r)));
  // Wait until the first worker is well into the batch, then kill it without warning.
  const until = Date.now() + 20_000;
  while (first.length < 60 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  const exited = new Promise((r) => w1.once("exit", r));
  w1.kill("SIGKILL");
  await exited;
  const info = await bus.jsm.consumers.info(Streams.rollouts, "echo--custom");
  assert.ok(first.length >= 60 && first.length < n, `killed mid-batch after ${first.length} of ${n}`);
  assert.ok(
    info.num_ack_pending > 0,
    `messages were in flight at the kill (${info.num_ack_pending} unacked)`,
  );

  const w2 = await startWorkerProcess("w2", second);
  const got = await readStream(
    bus,
    Streams.rewards,
    `mesh.rewards.${runId}.>`,
    (d) => fromBinary(RewardResultSchema, d),
    n,
    60_000,
  );
  assert.equal(got.length, n, "exactly one stored reward per rollout");
  assert.deepEqual(new Set(got.map((m) => m.value.rolloutId)), new Set(sent.map((r) => r.id)));
  // Everything the first worker never acked was scored by the second.
  const scored = new Set([...first, ...second]);
  assert.equal(scored.size, n);
  const w2exit = new Promise((r) => w2.once("exit", r));
  w2.kill("SIGTERM");
  await w2exit;
  const after = await bus.jsm.consumers.info(Streams.rollouts, "echo--custom");
  assert.equal(after.num_ack_pending, 0);
  assert.equal(after.num_pending, 0);
});
