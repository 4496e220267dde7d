/**
 * The value contract every SDK service gets (ERROR / TIMEOUT carry the minimum; declared ranges; finite
 * numbers), and `Describe` over the bus against a real `nats-server -js`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import {
  type ComponentValue,
  defineRewardService,
  type MeshBus,
  openBus,
  requestDescribe,
  type RunningService,
  silentLogger,
  startRewardService,
} from "../src/index.js";
import {
  type LocalNats,
  makeRollout,
  startTestNats,
  testBusOptions,
  testRuntimeOptions,
} from "../src/testing/index.js";

/** A service returning exactly `values` for its one component `score` in [-1, 2]. */
function fixed(values: readonly ComponentValue[], name = "fixed") {
  return defineRewardService({
    name,
    version: "2.0.0",
    domains: ["custom"],
    components: [{ name: "score", description: "test", min: -1, max: 2 }],
    score: async () => values,
  });
}

const scoreOf = async (v: ComponentValue) => (await fixed([v]).scoreRollout(makeRollout())).components[0]!;

describe("component value contract (SDK)", () => {
  it("an ERROR or TIMEOUT component carries the declared minimum, whatever the service returned", async () => {
    for (const status of [ComponentStatus.ERROR, ComponentStatus.TIMEOUT]) {
      const c = await scoreOf({ name: "score", value: 1, status, details: "crashed" });
      assert.equal(c.value, -1);
      assert.equal(c.status, status);
      assert.match(c.details, /^crashed \(value 1 replaced by the minimum -1: status (ERROR|TIMEOUT)\)$/);
      const atMin = await scoreOf({ name: "score", value: -1, status, details: "crashed" });
      assert.equal(atMin.details, "crashed");
    }
  });

  it("an OK value outside the declared range is a contract error, never a result", async () => {
    await assert.rejects(
      scoreOf({ name: "score", value: 2.5 }),
      (e: Error) =>
        e.name === "ServiceContractError" &&
        /'fixed' returned 'score' = 2\.5, outside its declared \[-1, 2\]/.test(e.message),
    );
    await assert.rejects(scoreOf({ name: "score", value: -1.5 }), /outside its declared \[-1, 2\]/);
    assert.equal((await scoreOf({ name: "score", value: 2 })).value, 2);
  });

  it("non-finite values and unspecified statuses are contract errors", async () => {
    await assert.rejects(scoreOf({ name: "score", value: Number.NaN }), /non-finite 'score' \(NaN\)/);
    await assert.rejects(
      scoreOf({ name: "score", value: 0, status: ComponentStatus.UNSPECIFIED }),
      /returned 'score' with status 0/,
    );
  });

  it("a component must declare a finite minimum", () => {
    assert.throws(
      () =>
        defineRewardService({
          name: "inf",
          version: "1",
          domains: ["custom"],
          components: [{ name: "c", description: "", min: Number.NEGATIVE_INFINITY, max: 0 }],
          score: async () => [],
        }),
      /component 'c' needs a finite min, got -Infinity/,
    );
  });
});

describe("Describe over the bus", () => {
  let nats: LocalNats;
  let bus: MeshBus;
  const running: RunningService[] = [];
  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "describe-test");
  });
  after(async () => {
    await Promise.all(running.map((s) => s.close(500)));
    await bus.close();
    await nats.stop();
  });

  it("every replica answers mesh.describe.<service> with its Describe; the client gets one answer", async () => {
    const def = fixed([{ name: "score", value: 0 }], "desc");
    for (let i = 0; i < 2; i++)
      running.push(await startRewardService(def, testRuntimeOptions(nats.url), silentLogger));
    const d = await requestDescribe(bus.nc, "desc", { timeoutMs: 5_000 });
    assert.equal(d.name, "desc");
    assert.equal(d.version, "2.0.0");
    assert.deepEqual(d.domains, ["custom"]);
    assert.deepEqual(
      d.components.map((c) => [c.name, c.min, c.max]),
      [["score", -1, 2]],
    );
  });

  it("a service nobody runs fails within the timeout, naming it", async () => {
    const t0 = Date.now();
    await assert.rejects(
      requestDescribe(bus.nc, "ghost", { timeoutMs: 600, retryMs: 100 }),
      (e: Error) =>
        e.name === "UnavailableError" &&
        /service 'ghost' did not answer Describe on mesh\.describe\.ghost within 600 ms: no replica is subscribed/.test(
          e.message,
        ),
    );
    assert.ok(Date.now() - t0 < 3_000);
  });

  it("a service that starts while the client waits is found", async () => {
    const def = fixed([{ name: "score", value: 0 }], "late");
    const asked = requestDescribe(bus.nc, "late", { timeoutMs: 10_000, retryMs: 50 });
    await new Promise((r) => setTimeout(r, 300));
    running.push(await startRewardService(def, testRuntimeOptions(nats.url), silentLogger));
    assert.equal((await asked).name, "late");
  });
});
