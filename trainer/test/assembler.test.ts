/** GroupAssembler edge cases against a real nats-server. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { headers } from "@nats-io/transport-node";
import { propagation } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { ComponentStatus, RewardResultSchema } from "@reward-mesh/proto";
import { type MeshBus, openBus, publishReward } from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions } from "@reward-mesh/sdk/testing";
import { createGroupAssembler } from "../src/run/assembler.js";

let nats: LocalNats;
let bus: MeshBus;
before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "assembler-test");
});
after(async () => {
  await bus.close();
  await nats.stop();
});

const result = (runId: string, step: number, groupId: string, index: number, service: string, value = 1) =>
  create(RewardResultSchema, {
    rolloutId: `${runId}-${groupId}-${index}`,
    runId,
    step,
    groupId,
    index,
    groupSize: 2,
    service,
    components: [{ name: "c", value, status: ComponentStatus.OK }],
  });

// Rollout ids are unique per run (the trainer prefixes the run id): a result's subject ends with it.
const group = (runId: string, step: number, groupId: string) => ({
  groupId,
  step,
  rolloutIds: [`${runId}-${groupId}-0`, `${runId}-${groupId}-1`],
  services: ["a", "b"],
});

describe("GroupAssembler", () => {
  it("completes a group when every rollout has every service's result; ignores duplicates and strangers", async () => {
    const asm = await createGroupAssembler({ bus, runId: "asm1" });
    try {
      asm.expect(group("asm1", 1, "g1"));
      await publishReward(bus.js, result("asm1", 1, "g1", 0, "a"), "t");
      // A re-published result (same subject) is stored once; one that bypassed the check is ignored by key.
      assert.equal((await publishReward(bus.js, result("asm1", 1, "g1", 0, "a", 5), "t2")).duplicate, true);
      await bus.js.publish(
        "mesh.rewards.asm1.a.asm1-g1-0",
        toBinary(RewardResultSchema, result("asm1", 1, "g1", 0, "a", 7)),
      );
      await publishReward(bus.js, result("asm1", 1, "g1", 1, "a"), "t");
      await publishReward(bus.js, result("asm1", 1, "g1", 0, "b"), "t");
      await publishReward(bus.js, result("asm1", 1, "g1", 0, "zzz"), "t"); // a service the group does not expect
      await publishReward(bus.js, result("asm1", 1, "g1", 1, "b"), "t");
      const [g] = await asm.collect(["g1"], Date.now() + 10_000);
      assert.equal(g!.complete, true);
      assert.deepEqual(g!.missing, []);
      assert.equal(
        g!.results[0]!.get("a")!.components[0]!.value,
        1,
        "the first result wins; the re-published one is a duplicate",
      );
      const s = asm.stats();
      assert.ok(s.duplicates >= 1);
      assert.equal(s.unexpected, 1);
    } finally {
      await asm.close();
    }
  });

  it("ignores a result whose payload claims another service, run or rollout than its subject", async () => {
    const asm = await createGroupAssembler({ bus, runId: "asm9" });
    try {
      asm.expect(group("asm9", 1, "g1"));
      // Service c's subject, but the payload says it is b's result (a forgery NATS permissions allow c).
      await bus.js.publish(
        "mesh.rewards.asm9.c.asm9-g1-0",
        toBinary(RewardResultSchema, result("asm9", 1, "g1", 0, "b", 99)),
      );
      // ... and under another rollout's subject.
      await bus.js.publish(
        "mesh.rewards.asm9.b.asm9-elsewhere",
        toBinary(RewardResultSchema, result("asm9", 1, "g1", 0, "b", 98)),
      );
      for (const [i, s] of [
        [0, "a"],
        [1, "a"],
        [0, "b"],
        [1, "b"],
      ] as const)
        await publishReward(bus.js, result("asm9", 1, "g1", i, s), "t");
      const [g] = await asm.collect(["g1"], Date.now() + 10_000);
      assert.equal(g!.complete, true);
      assert.equal(g!.results[0]!.get("b")!.components[0]!.value, 1, "b's real result is the one used");
      assert.equal(asm.stats().mismatched, 2);
    } finally {
      await asm.close();
    }
  });

  it("holds results that arrive before their group is expected (out of order)", async () => {
    const asm = await createGroupAssembler({ bus, runId: "asm2" });
    try {
      for (const [i, s] of [
        [0, "a"],
        [1, "a"],
        [0, "b"],
        [1, "b"],
      ] as const)
        await publishReward(bus.js, result("asm2", 1, "g1", i, s), "t");
      const until = Date.now() + 5_000;
      while (asm.stats().outOfOrder < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      asm.expect(group("asm2", 1, "g1"));
      const [g] = await asm.collect(["g1"], Date.now() + 5_000);
      assert.equal(g!.complete, true);
      assert.equal(asm.stats().outOfOrder, 4);
    } finally {
      await asm.close();
    }
  });

  it("returns an incomplete group at the deadline naming what is missing, and drops late results of applied steps", async () => {
    const asm = await createGroupAssembler({ bus, runId: "asm3" });
    try {
      asm.expect(group("asm3", 1, "g1"));
      await publishReward(bus.js, result("asm3", 1, "g1", 0, "a"), "t");
      await publishReward(bus.js, result("asm3", 1, "g1", 1, "a"), "t");
      await publishReward(bus.js, result("asm3", 1, "g1", 0, "b"), "t");
      // The three results have arrived (however busy the machine) before the 400 ms deadline starts.
      const arrived = Date.now() + 30_000;
      while (asm.stats().received < 3 && Date.now() < arrived) await new Promise((r) => setTimeout(r, 10));
      assert.equal(asm.stats().received, 3);
      const t0 = Date.now();
      const [g] = await asm.collect(["g1"], Date.now() + 400);
      assert.ok(Date.now() - t0 >= 350);
      assert.equal(g!.complete, false);
      assert.deepEqual(g!.missing, ["1/b"]);
      asm.markApplied(1);
      await publishReward(bus.js, result("asm3", 1, "g1", 1, "b"), "t");
      const until = Date.now() + 5_000;
      while (asm.stats().late < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      assert.equal(asm.stats().late, 1);
    } finally {
      await asm.close();
    }
  });

  it("holds a result's span context only while its step is unapplied (duplicates and late results hold none)", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const asm = await createGroupAssembler({ bus, runId: "asm5" });
    try {
      // Results published with a trace context, as a traced service does.
      const traced = async (step: number, groupId: string, index: number, service: string, n: number) => {
        const h = headers();
        h.set("traceparent", `00-${"ab".repeat(16)}-${n.toString(16).padStart(16, "0")}-01`);
        await bus.js.publish(
          `mesh.rewards.asm5.${service}.asm5-${groupId}-${index}`,
          toBinary(RewardResultSchema, result("asm5", step, groupId, index, service)),
          { headers: h },
        );
      };
      const settled = async (received: number) => {
        const until = Date.now() + 5_000;
        while (asm.stats().received < received && Date.now() < until)
          await new Promise((r) => setTimeout(r, 10));
        assert.equal(asm.stats().received, received);
      };
      asm.expect(group("asm5", 1, "g1"));
      await traced(1, "g1", 0, "a", 1);
      await traced(1, "g1", 0, "a", 2); // a duplicate: never collected
      await traced(1, "g1", 0, "zzz", 3); // a service the group does not expect
      await settled(3);
      assert.equal(asm.stats().heldSpans, 1);
      const [g] = await asm.collect(["g1"], Date.now() + 200);
      assert.equal(g!.resultSpans.length, 1);
      assert.equal(asm.stats().heldSpans, 0);
      // Results of an applied step (late) hold nothing; an out-of-order result of a dropped group is
      // purged when its step is applied.
      asm.markApplied(1);
      await traced(1, "g1", 1, "b", 4);
      await traced(2, "g2", 0, "a", 5);
      await settled(5);
      assert.equal(asm.stats().heldSpans, 1);
      asm.markApplied(2);
      assert.equal(asm.stats().heldSpans, 0);
    } finally {
      await asm.close();
      propagation.disable();
    }
  });

  it("a restarted assembler recovers the step in progress from the stream", async () => {
    const first = await createGroupAssembler({ bus, runId: "asm4" });
    const since = Date.now();
    first.expect(group("asm4", 2, "g1"));
    for (const [i, s] of [
      [0, "a"],
      [1, "a"],
      [0, "b"],
    ] as const)
      await publishReward(bus.js, result("asm4", 2, "g1", i, s), "t");
    const until = Date.now() + 5_000;
    while (first.stats().received < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await first.close(); // the process "dies": those three were consumed and acked
    const second = await createGroupAssembler({ bus, runId: "asm4" });
    try {
      second.markApplied(1);
      second.expect(group("asm4", 2, "g1"));
      assert.equal(await second.replaySince(since - 1000), 3);
      await publishReward(bus.js, result("asm4", 2, "g1", 1, "b"), "t");
      const [g] = await second.collect(["g1"], Date.now() + 5_000);
      assert.equal(g!.complete, true);
    } finally {
      await second.close();
    }
  });
});
