/** The JetStream worker against a real `nats-server -js` (started per suite on a free port). */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { context, trace } from "@opentelemetry/api";
import { DeadLetterSchema, RewardResultSchema, RolloutSchema } from "@reward-mesh/proto";
import {
  createLimiter,
  defineRewardService,
  INSTANCE_HEADER,
  type MeshBus,
  openBus,
  publishReward,
  publishRollout,
  type RunningWorker,
  Streams,
  silentLogger,
  startWorker,
} from "../src/index.js";
import {
  type LocalNats,
  makeRollout,
  readStream,
  startTestNats,
  testBusOptions,
} from "../src/testing/index.js";
import { serverAtLeast } from "../src/worker.js";
import { createEchoService, installTestTracing } from "./fixtures.js";

const { exporter, provider } = installTestTracing();

describe("JetStream worker", () => {
  let nats: LocalNats;
  let bus: MeshBus;
  const workers: RunningWorker[] = [];
  const buses: MeshBus[] = [];
  let run = 0;
  let runId = "";

  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "test-publisher");
  });
  after(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop(1000)));
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await bus.close();
    await nats.stop();
  });
  beforeEach(async () => {
    // Each test: its own run id, and a clean consumer (stopping workers first).
    await Promise.all(workers.splice(0).map((w) => w.stop(1000)));
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await bus.jsm.consumers.delete(Streams.rollouts, "echo--custom").catch(() => {});
    await bus.jsm.streams.purge(Streams.rollouts);
    runId = `run${++run}`;
  });

  async function worker(
    def = createEchoService(),
    opts: { instance?: string; maxDeliver?: number; concurrency?: number } = {},
  ) {
    const b = await openBus(testBusOptions(nats.url), opts.instance ?? "worker");
    buses.push(b);
    const w = await startWorker(def, {
      bus: b,
      limiter: createLimiter(opts.concurrency ?? 4),
      logger: silentLogger,
      instance: opts.instance ?? "w1",
      ackWaitMs: 2_000,
      maxDeliver: opts.maxDeliver ?? 5,
      nakBackoffMs: 20,
      nakBackoffMaxMs: 100,
    });
    workers.push(w);
    return w;
  }

  const rewards = (n: number) =>
    readStream(bus, Streams.rewards, `mesh.rewards.${runId}.>`, (d) => fromBinary(RewardResultSchema, d), n);

  it("publishes each reward on mesh.rewards.<run>.<service>.<rollout> with the publisher's trace", async () => {
    await worker();
    exporter.reset();
    const parent = trace.getTracer("test").startSpan("trainer.publish");
    const ctx = trace.setSpan(context.active(), parent);
    const sent = Array.from({ length: 10 }, (_, i) => makeRollout({ runId, response: "x".repeat(i) }));
    for (const r of sent) await publishRollout(bus.js, r, ctx);
    parent.end();
    const got = await rewards(10);
    assert.equal(got.length, 10);
    const traceId = parent.spanContext().traceId;
    for (const m of got) {
      assert.equal(m.subject, `mesh.rewards.${runId}.echo.${m.value.rolloutId}`);
      assert.equal(m.headers["Nats-Msg-Id"], undefined, "no stream-wide id another publisher could claim");
      assert.ok(
        m.headers["traceparent"]?.includes(traceId),
        `traceparent ${m.headers["traceparent"]} carries ${traceId}`,
      );
      const r = sent.find((s) => s.id === m.value.rolloutId)!;
      assert.equal(m.value.components.find((c) => c.name === "chars")?.value, r.response.length);
    }
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const consume = spans.filter((s) => s.name === "reward/echo/consume");
    const score = spans.filter((s) => s.name === "reward/echo/score");
    const publish = spans.filter((s) => s.name === "reward/echo/publish");
    assert.equal(consume.length, 10);
    assert.equal(score.length, 10);
    assert.equal(publish.length, 10);
    for (const s of consume) {
      assert.equal(s.spanContext().traceId, traceId);
      assert.equal(s.parentSpanContext?.spanId, parent.spanContext().spanId);
    }
    const consumeIds = new Set(consume.map((s) => s.spanContext().spanId));
    for (const s of [...score, ...publish])
      assert.ok(consumeIds.has(s.parentSpanContext?.spanId ?? ""), `${s.name} is a child of consume`);
  });

  it("sends undecodable and invalid messages to mesh.dlq.<service> with the reason, and keeps scoring", async () => {
    await worker();
    const h = natsHeaders();
    await bus.js.publish(`mesh.rollouts.custom.${runId}`, new Uint8Array([0xff, 0xff, 0xff, 0x01]), {
      msgID: `${runId}-garbage`,
      headers: h,
    });
    const invalid = makeRollout({ runId, groupSize: 0 });
    await bus.js.publish(`mesh.rollouts.custom.${runId}`, toBinary(RolloutSchema, invalid), {
      msgID: invalid.id,
    });
    const good = makeRollout({ runId, response: "after the bad ones" });
    await publishRollout(bus.js, good);
    const got = await rewards(1);
    assert.deepEqual(
      got.map((m) => m.value.rolloutId),
      [good.id],
    );
    const dlq = await readStream(
      bus,
      Streams.dlq,
      "mesh.dlq.echo",
      (d) => fromBinary(DeadLetterSchema, d),
      2,
    );
    const mine = dlq.filter((m) => m.value.subject === `mesh.rollouts.custom.${runId}`);
    assert.equal(mine.length, 2);
    const garbage = mine.find((m) => m.value.payload.length === 4)!;
    assert.match(garbage.value.reason, /not a rewardmesh\.v1\.Rollout/);
    assert.deepEqual([...garbage.value.payload], [0xff, 0xff, 0xff, 0x01]);
    const bad = mine.find((m) => m.value.payload.length !== 4)!;
    assert.match(bad.value.reason, /'rollout\.group_size' must be >= 1/);
    assert.equal(fromBinary(RolloutSchema, bad.value.payload).id, invalid.id);
    assert.equal(bad.value.service, "echo");
  });

  it("dead-letters a bad message once: terminated, not redelivered after ack_wait", async () => {
    await worker();
    const invalid = makeRollout({ runId, groupSize: 0 });
    await bus.js.publish(`mesh.rollouts.custom.${runId}`, toBinary(RolloutSchema, invalid), {
      msgID: invalid.id,
    });
    const letters = () =>
      readStream(bus, Streams.dlq, "mesh.dlq.echo", (d) => fromBinary(DeadLetterSchema, d), 0, 0).then((l) =>
        l.filter((m) => m.value.subject === `mesh.rollouts.custom.${runId}`),
      );
    const deadline = Date.now() + 10_000;
    while ((await letters()).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    // Well past the worker's ack_wait (2 s): a message whose TERM the server did not take would be back.
    await new Promise((r) => setTimeout(r, 5_000));
    const c = await bus.jsm.consumers.info(Streams.rollouts, "echo--custom");
    assert.equal(c.num_ack_pending, 0, "the message is terminated");
    assert.equal(c.num_redelivered, 0, "and never redelivered");
    assert.equal((await letters()).length, 1, "one dead letter");
  });

  it("serverAtLeast compares NATS versions", () => {
    assert.equal(serverAtLeast("2.9.10", [2, 10, 4]), false);
    assert.equal(serverAtLeast("2.10.4", [2, 10, 4]), true);
    assert.equal(serverAtLeast("2.11.0", [2, 10, 4]), true);
    assert.equal(serverAtLeast("v3.0.0-beta", [2, 10, 4]), true);
    assert.equal(serverAtLeast(undefined, [2, 10, 4]), false);
  });

  it("retries infrastructure failures with back-off, then dead-letters after maxDeliver", async () => {
    const flaky = makeRollout({ runId, response: "flaky" });
    const doomed = makeRollout({ runId, response: "doomed" });
    await worker(
      createEchoService({
        failFirst: new Map([
          [flaky.id, 2],
          [doomed.id, 99],
        ]),
      }),
      { maxDeliver: 3 },
    );
    await publishRollout(bus.js, flaky);
    await publishRollout(bus.js, doomed);
    const got = await rewards(1);
    assert.deepEqual(
      got.map((m) => m.value.rolloutId),
      [flaky.id],
    );
    // The DLQ already holds earlier tests' letters, so poll for this rollout's own letter: its third
    // delivery (after back-off) may come well after the flaky rollout's result.
    const doomedLetter = async () =>
      (await readStream(bus, Streams.dlq, "mesh.dlq.echo", (d) => fromBinary(DeadLetterSchema, d), 1)).find(
        (m) =>
          m.value.subject === `mesh.rollouts.custom.${runId}` &&
          fromBinary(RolloutSchema, m.value.payload).id === doomed.id,
      );
    const deadline = Date.now() + 20_000;
    let letter = await doomedLetter();
    while (!letter && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      letter = await doomedLetter();
    }
    assert.ok(letter, "doomed rollout dead-lettered");
    assert.match(letter.value.reason, /gave up after 3 deliveries: simulated infrastructure failure/);
    assert.equal(letter.value.deliveries, 3);
  });

  it("two replicas share one durable consumer and score every rollout exactly once", async () => {
    const scoredBy = new Map<string, string[]>();
    const track = (instance: string) => (id: string) =>
      scoredBy.set(id, [...(scoredBy.get(id) ?? []), instance]);
    await worker(createEchoService({ delayMs: 2, onScore: track("a") }), { instance: "a" });
    await worker(createEchoService({ delayMs: 2, onScore: track("b") }), { instance: "b" });
    const sent = Array.from({ length: 300 }, () => makeRollout({ runId }));
    await Promise.all(sent.map((r) => publishRollout(bus.js, r)));
    const got = await rewards(300);
    assert.equal(got.length, 300);
    assert.equal(new Set(got.map((m) => m.value.rolloutId)).size, 300);
    for (const r of sent) assert.equal(scoredBy.get(r.id)?.length, 1, `${r.id} scored once`);
    const instances = new Set(got.map((m) => m.headers[INSTANCE_HEADER]));
    assert.deepEqual([...instances].sort(), ["a", "b"]);
  });

  it("keeps every domain's consume loop going under load, and stops (regression: one waiter per loop)", async () => {
    const def = defineRewardService({
      name: "twodom",
      version: "1",
      domains: ["custom", "code"],
      components: [{ name: "n", description: "length", min: 0, max: 1e9 }],
      score: async (r) => {
        await new Promise((res) => setTimeout(res, 2));
        return [{ name: "n", value: r.response.length }];
      },
    });
    await bus.jsm.consumers.delete(Streams.rollouts, "twodom--custom").catch(() => {});
    await bus.jsm.consumers.delete(Streams.rollouts, "twodom--code").catch(() => {});
    const b = await openBus(testBusOptions(nats.url), "twodom");
    buses.push(b);
    // Capacity 1 → at most 2 in flight: both loops block on a free slot again and again.
    const w = await startWorker(def, {
      bus: b,
      limiter: createLimiter(1),
      logger: silentLogger,
      instance: "t",
    });
    const sent = [
      ...Array.from({ length: 60 }, () => makeRollout({ runId })),
      ...Array.from({ length: 60 }, () =>
        makeRollout({ runId, task: { id: "c", kind: { case: "code", value: {} } } }),
      ),
    ];
    await Promise.all(sent.map((r) => publishRollout(bus.js, r)));
    const got = await readStream(
      bus,
      Streams.rewards,
      `mesh.rewards.${runId}.twodom.*`,
      (d) => fromBinary(RewardResultSchema, d),
      120,
    );
    assert.equal(got.length, 120);
    const t0 = Date.now();
    await w.stop(2_000);
    assert.ok(Date.now() - t0 < 10_000, "stop() returned, not hung");
  });

  it("stores a re-published result once: its subject already holds one", async () => {
    const w = await worker();
    const r = makeRollout({ runId });
    await publishRollout(bus.js, r);
    const [first] = await rewards(1);
    assert.ok(first);
    const ack = await publishReward(bus.js, first.value, "again");
    assert.equal(ack.duplicate, true);
    assert.equal((await rewards(1)).length, 1);
    assert.equal(w.stats().scored, 1);
  });

  it("stop() drains: in-flight rollouts finish and are acked, nothing is lost", async () => {
    // 30 ms a rollout, 2 at a time: when 5 are stored the other 195 need ~3 s more, so stop() cannot race
    // the end of the batch on a loaded machine (with 40 rollouts the margin was ~0.5 s).
    const w = await worker(createEchoService({ delayMs: 30 }), { concurrency: 2 });
    const sent = Array.from({ length: 200 }, () => makeRollout({ runId }));
    await Promise.all(sent.map((r) => publishRollout(bus.js, r)));
    await rewards(5);
    await w.stop(5_000);
    workers.splice(workers.indexOf(w), 1);
    const partial = (await rewards(0)).length;
    assert.ok(partial >= 5 && partial < 200, `stopped mid-batch (${partial} scored)`);
    await worker(createEchoService(), { instance: "second" });
    const all = await rewards(200);
    assert.equal(all.length, 200);
    assert.equal(new Set(all.map((m) => m.value.rolloutId)).size, 200);
  });

  it("dead-letters a rollout whose id cannot end its result's subject", async () => {
    const letters = () =>
      readStream(bus, Streams.dlq, "mesh.dlq.echo", (d) => fromBinary(DeadLetterSchema, d), 0, 0);
    const before = (await letters()).length;
    await worker();
    const odd = makeRollout({ runId, id: "has.a dot" });
    await bus.js.publish(`mesh.rollouts.custom.${runId}`, toBinary(RolloutSchema, odd), {
      msgID: `${runId}-odd`,
    });
    await assert.rejects(publishRollout(bus.js, odd), /'rollout\.id' must match \[A-Za-z0-9_-\]\+/);
    const dlq = await readStream(
      bus,
      Streams.dlq,
      "mesh.dlq.echo",
      (d) => fromBinary(DeadLetterSchema, d),
      before + 1,
    );
    const letter = dlq.find((m) => m.value.subject === `mesh.rollouts.custom.${runId}`);
    assert.ok(letter, "dead-lettered");
    assert.equal(fromBinary(RolloutSchema, letter.value.payload).id, odd.id);
    assert.match(letter.value.reason, /'rollout_id' must match \[A-Za-z0-9_-\]\+/);
  });
});
