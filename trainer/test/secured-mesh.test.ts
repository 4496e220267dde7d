/**
 * Training through a NATS server with the mesh's generated users (what `reward-mesh up` runs): the
 * trainer and the length service each connect with their own NKEY credentials, and a second service that
 * forges length's results on its own subject — the attack a stream-wide `Nats-Msg-Id` let through —
 * changes nothing: every group completes with length's real values.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { createLengthService } from "@reward-mesh/length";
import { ComponentStatus, RewardResultSchema } from "@reward-mesh/proto";
import {
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import {
  type SecuredTestNats,
  startSecuredTestNats,
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

const length = createLengthService({ maxLength: 20_480, cacheLength: 4_096, penaltyFactor: 1 });
let nats: SecuredTestNats;
let trainer: MeshBus;
let forger: MeshBus;
let service: RunningService;
let dir: string;

before(async () => {
  nats = await startSecuredTestNats([
    { name: length.name, domains: length.domains },
    { name: "forger", domains: ["custom"] },
  ]);
  const options = (auth: NonNullable<typeof nats.auth.services.x>) => ({ ...testBusOptions(nats.url), auth });
  await (await openBus(options(nats.auth.admin), "provision")).close();
  trainer = await openBus(options(nats.auth.trainer), "trainer");
  forger = await openBus(options(nats.auth.services["forger"]!), "forger");
  service = await startRewardService(
    length,
    { ...testRuntimeOptions(nats.url), bus: options(nats.auth.services[length.name]!) },
    silentLogger,
  );
  dir = mkdtempSync(join(tmpdir(), "rm-secured-"));
});
after(async () => {
  await service?.close(1000);
  await forger?.close();
  await trainer?.close();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("trains with credentials; results forged by another service are ignored, not preferred", async () => {
  const runId = "secured";
  const config = resolveRunConfig({
    run: { id: runId, seed: 3, outputDir: dir },
    tasks: { sets: ["custom"] },
    groupSize: 4,
    promptsPerStep: 2,
    steps: 2,
    components: [{ service: "length", component: "length", weight: 1 }],
    estimator: { name: "grpo" },
    groups: { deadlineMs: 20_000 },
  });
  // Before the run, the forger publishes "length" results for every rollout of step 1 (ids are
  // predictable), on its own subject and with the msg-id length's results used to carry.
  let forged = 0;
  for (let p = 0; p < config.promptsPerStep; p++)
    for (let i = 0; i < config.groupSize; i++) {
      const rolloutId = `${runId}-s1-p${p}-${i}`;
      const fake = create(RewardResultSchema, {
        rolloutId,
        runId,
        step: 1,
        groupId: `s1-p${p}`,
        index: i,
        groupSize: config.groupSize,
        service: "length",
        serviceVersion: "forged",
        components: [
          { name: "length", value: 1e6, status: ComponentStatus.OK },
          { name: "overlong", value: 0, status: ComponentStatus.OK },
        ],
      });
      await forger.js.publish(
        `mesh.rewards.${runId}.forger.${rolloutId}`,
        toBinary(RewardResultSchema, fake),
        {
          msgID: `${rolloutId}:length`,
        },
      );
      forged++;
    }
  const learner = createEmbeddedLearner({ seed: config.seed });
  try {
    const r = await runTraining({ config, tasks: builtinTasks(["custom"]), bus: trainer, learner });
    assert.equal(r.lastStep, 2);
  } finally {
    await learner.close();
  }
  const lines = readMetrics(join(dir, runId, "metrics.jsonl"));
  assert.equal(lines.length, 2);
  for (const l of lines) {
    const m = l as unknown as {
      groups: { used: number };
      components: Record<string, { mean: number }>;
      assembler: { mismatched: number };
    };
    assert.equal(m.groups.used, 2, `step ${l.step}: every group completed`);
    assert.ok(m.components["length/length"]!.mean < 1e5, `step ${l.step}: real lengths, not the forged 1e6`);
  }
  const first = lines[0] as unknown as { assembler: { mismatched: number } };
  assert.equal(first.assembler.mismatched, forged, "each forgery was seen and ignored");
});
