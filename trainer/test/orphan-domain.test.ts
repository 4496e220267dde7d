/**
 * The trainer refuses to publish rollouts on a domain no service consumes (they would sit in the stream,
 * never scored): the run fails before step 1 with an error naming the domain, and nothing is published.
 * Real nats-server, a real service consuming another domain, the embedded learner.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createToolCallService } from "@reward-mesh/tool-call";
import {
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  Streams,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import { builtinTasks, createEmbeddedLearner, resolveRunConfig, runTraining } from "../src/index.js";

let nats: LocalNats;
let bus: MeshBus;
let service: RunningService;
let dir: string;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "orphan-test");
  // Consumes tool_call only.
  service = await startRewardService(createToolCallService(), testRuntimeOptions(nats.url), silentLogger);
  dir = mkdtempSync(join(tmpdir(), "rm-orphan-"));
});
after(async () => {
  await service.close(1000);
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a run on a domain no service consumes", () => {
  it("fails before step 1 naming the domain, and publishes nothing", async () => {
    const config = resolveRunConfig({
      run: { id: "orphan", seed: 1, outputDir: dir },
      tasks: { sets: ["custom"] },
      groupSize: 2,
      promptsPerStep: 1,
      steps: 2,
      components: [{ service: "length", component: "overlong", weight: 1 }],
      estimator: { name: "corr_grpo" },
      groups: { deadlineMs: 5_000 },
    });
    const learner = createEmbeddedLearner({ seed: 1 });
    try {
      await assert.rejects(
        runTraining({ config, tasks: builtinTasks(["custom"]), bus, learner }),
        (err: Error) => {
          assert.match(
            err.message,
            /^no service consumes domain 'custom': nothing reads mesh\.rollouts\.custom\.<run>/,
          );
          assert.match(err.message, /durable consumers on MESH_ROLLOUTS: tool-call--tool_call\b/);
          return true;
        },
      );
    } finally {
      await learner.close();
    }
    const info = await bus.jsm.streams.info(Streams.rollouts, { subjects_filter: "mesh.rollouts.>" });
    assert.deepEqual(info.state.subjects ?? {}, {}, "no rollout was published");
  });
});
