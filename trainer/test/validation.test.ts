/**
 * Result validation end to end: a real nats-server, the real length service (gRPC + JetStream worker +
 * Describe on the bus), the embedded learner. A run whose configuration the services cannot honour fails
 * before step 1 naming what is wrong; forged results published on the bus are rejected, counted, and
 * never trained on.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { createLengthService, LENGTH_SERVICE_VERSION } from "@reward-mesh/length";
import { ComponentStatus, RewardResultSchema } from "@reward-mesh/proto";
import {
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import {
  type LocalNats,
  neverScoringService,
  startTestNats,
  testBusOptions,
  testRuntimeOptions,
} from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  readMetrics,
  resolveRunConfig,
  runTraining,
} from "../src/index.js";

let nats: LocalNats;
let bus: MeshBus;
let length: RunningService;
let dir: string;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "validation-test");
  length = await startRewardService(
    createLengthService({ maxLength: 20_480, cacheLength: 4_096, penaltyFactor: 1 }),
    testRuntimeOptions(nats.url),
    silentLogger,
  );
  dir = mkdtempSync(join(tmpdir(), "rm-validate-"));
});
after(async () => {
  await length.close(1000);
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const doc = (id: string, extra: Record<string, unknown> = {}) => ({
  run: { id, seed: 3, outputDir: dir },
  tasks: { sets: ["custom"] },
  groupSize: 2,
  promptsPerStep: 1,
  steps: 1,
  components: [
    { service: "length", component: "overlong", weight: 1 },
    { service: "length", component: "length", weight: 0.001 },
  ],
  groups: { deadlineMs: 20_000 },
  // Wide: a busy machine must not fail a run on Describe (the ghost test sets its own 1 s).
  validation: { describeTimeoutMs: 10_000 },
  ...extra,
});

/** Runs `config` with a fresh embedded learner; returns the learner's policy version afterwards. */
async function train(d: Record<string, unknown>): Promise<number> {
  const config = resolveRunConfig(d);
  const learner = createEmbeddedLearner({ seed: config.seed });
  try {
    await runTraining({ config, tasks: builtinTasks(["custom"]), bus, learner });
    return (await learner.info()).policyVersion;
  } finally {
    await learner.close();
  }
}

describe("the run checks the services' Describe before step 1", () => {
  it("a component the service does not emit fails the run, naming it", async () => {
    await assert.rejects(
      train(
        doc("no-such-component", {
          components: [
            { service: "length", component: "overlong", weight: 1 },
            { service: "length", component: "brevity", weight: 1 },
          ],
        }),
      ),
      (e: Error) =>
        e.name === "RunContractError" &&
        /'components\[1\]' names 'length\/brevity', but service 'length' 1\.\d+\.\d+ does not emit 'brevity' \(it emits: length, overlong\)/.test(
          e.message,
        ),
    );
    assert.equal(existsSync(join(dir, "no-such-component", "metrics.jsonl")), false, "no step ran");
  });

  it("a service that does not answer Describe fails the run, naming it", async () => {
    const t0 = Date.now();
    await assert.rejects(
      train(
        doc("ghost-service", {
          validation: { describeTimeoutMs: 1_000 },
          services: { ghost: ["custom"] },
          components: [
            { service: "length", component: "overlong", weight: 1 },
            { service: "ghost", component: "x", weight: 1 },
          ],
        }),
      ),
      (e: Error) =>
        e.name === "RunContractError" &&
        /service 'ghost' did not answer Describe on mesh\.describe\.ghost within 1000 ms/.test(e.message),
    );
    assert.ok(Date.now() - t0 < 10_000, "fails within the describe timeout, not at a group deadline");
    assert.equal(existsSync(join(dir, "ghost-service", "metrics.jsonl")), false, "no step ran");
  });
});

describe("a domain no service of the run scores", () => {
  it("fails the run before step 1, naming the domain and what the services score", async () => {
    const t0 = Date.now();
    await assert.rejects(
      train(doc("unscored-domain", { components: [{ service: "ast", component: "similarity", weight: 1 }] })),
      (e: Error) =>
        e.name === "RunContractError" &&
        e.message.startsWith(
          "the run has tasks of domain 'custom', but no service of its components scores 'custom' (they score: ast [code])",
        ),
    );
    assert.ok(Date.now() - t0 < 5_000, "fails at once, before any wait");
    assert.equal(existsSync(join(dir, "unscored-domain", "metrics.jsonl")), false, "no step ran");
  });
});

describe("forged results on the bus", () => {
  it("are rejected, counted per service and reason, and never trained on", async () => {
    const runId = "forged";
    const rollout0 = `${runId}-s1-p0-0`;
    const version = LENGTH_SERVICE_VERSION;
    // Published before the run starts, each on the subject its payload names (so the assembler's
    // provenance check passes and validation decides) but for a rollout id of its own: a reward subject
    // holds one result, so a forgery for rollout 0 itself would pre-empt the genuine one — that case is the
    // next test's (and NATS permissions', which let only `length` write length's subjects).
    let k = 0;
    const forge = async (
      service: string,
      components: { name: string; value: number; status?: ComponentStatus }[],
      over: { serviceVersion?: string; service?: string } = {},
    ) => {
      const rolloutId = `${rollout0}-forged${k++}`;
      const r = create(RewardResultSchema, {
        rolloutId,
        runId,
        step: 1,
        groupId: "s1-p0",
        index: 0,
        groupSize: 2,
        service: over.service ?? service,
        serviceVersion: over.serviceVersion ?? version,
        components: components.map((c) => ({ status: ComponentStatus.OK, ...c })),
      });
      await bus.js.publish(`mesh.rewards.${runId}.${service}.${rolloutId}`, toBinary(RewardResultSchema, r));
    };
    const huge = { name: "length", value: 1e6 };
    await forge("length", [{ name: "overlong", value: 3 }, huge]); // out of [-1, 0]
    await forge("length", [
      { name: "overlong", value: 0 },
      { name: "length", value: Number.NaN },
    ]);
    await forge("length", [{ name: "overlong", value: 0 }, huge], { serviceVersion: "6.6.6" });
    await forge("length", [{ name: "overlong", value: 0 }, huge, { name: "bonus", value: 1 }]);
    await forge("length", [{ name: "overlong", value: 0, status: ComponentStatus.ERROR }, huge]); // min is -1
    await forge("tool-call", [{ name: "overlong", value: 0 }, huge], { service: "length" });

    const policyVersion = await train(doc(runId));
    assert.equal(policyVersion, 1, "the step trained on the genuine results");
    const [m] = readMetrics(join(dir, runId, "metrics.jsonl")) as unknown as Array<{
      rejectedResults: Record<string, Record<string, number>>;
      components: Record<string, { mean: number }>;
      groups: { used: number };
      droppedGroups: number;
      assembler: { rejected: number; mismatched: number };
    }>;
    assert.deepEqual(m!.rejectedResults, {
      length: {
        "out-of-range": 1,
        "non-finite": 1,
        "wrong-version": 1,
        "unknown-component": 1,
        "error-not-minimum": 1,
      },
    });
    assert.equal(m!.assembler.rejected, 5);
    // Published on tool-call's subject but claiming to be length's: the subject check stops it first.
    assert.equal(m!.assembler.mismatched, 1);
    assert.equal(m!.groups.used, 1);
    assert.equal(m!.droppedGroups, 0);
    // Every forged result said length = 1e6 (or NaN): the genuine lengths of these short answers are < 1000.
    const lengthMean = m!.components["length/length"]!.mean;
    assert.ok(Number.isFinite(lengthMean) && lengthMean < 1000, `length mean ${lengthMean}`);
    const overlongMean = m!.components["length/overlong"]!.mean;
    assert.ok(overlongMean <= 0 && overlongMean >= -1, `overlong mean ${overlongMean}`);
  });

  it("a slot with only a rejected result is missing: the group is dropped at the deadline", async () => {
    // `stall` answers Describe but never finishes scoring: the only results are the forged ones.
    const stall = await startRewardService(
      neverScoringService({
        name: "stall",
        version: "1.0.0",
        domains: ["custom"],
        components: [{ name: "x", description: "never computed", min: 0, max: 1 }],
      }),
      testRuntimeOptions(nats.url),
      silentLogger,
    );
    const runId = "forged-only";
    try {
      for (const i of [0, 1]) {
        const r = create(RewardResultSchema, {
          rolloutId: `${runId}-s1-p0-${i}`,
          runId,
          step: 1,
          groupId: "s1-p0",
          index: i,
          groupSize: 2,
          service: "stall",
          serviceVersion: "1.0.0",
          // Rollout 1's result is valid; rollout 0's is out of range.
          components: [{ name: "x", value: i === 0 ? 5 : 1, status: ComponentStatus.OK }],
        });
        await bus.js.publish(`mesh.rewards.${runId}.stall.${r.rolloutId}`, toBinary(RewardResultSchema, r));
      }
      const policyVersion = await train(
        doc(runId, {
          services: { stall: ["custom"] },
          components: [{ service: "stall", component: "x", weight: 1 }],
          groups: { deadlineMs: 2_000 },
        }),
      );
      assert.equal(policyVersion, 0, "nothing trained");
      const [m] = readMetrics(join(dir, runId, "metrics.jsonl")) as unknown as Array<{
        rejectedResults: Record<string, Record<string, number>>;
        groups: { used: number };
        droppedGroups: number;
      }>;
      assert.deepEqual(m!.rejectedResults, { stall: { "out-of-range": 1 } });
      assert.equal(m!.droppedGroups, 1, "dropped like a group with a missing result");
      assert.equal(m!.groups.used, 0);
    } finally {
      await stall.close(200);
    }
  });
});
