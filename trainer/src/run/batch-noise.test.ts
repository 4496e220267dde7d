/**
 * Injected label noise (`rewardNoise`): the engine sees the flipped values, the metrics record both
 * the observed (flipped) and the clean (reported) value of each noisy component, so curves are not
 * shrunk by (1 − 2p).
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ComponentStatus, type RewardResult, RewardResultSchema } from "@reward-mesh/proto";
import type { AdvantageBatchResult } from "../advantage/types.js";
import type { AssembledGroup } from "./assembler.js";
import { prepareGroups, rewardMetrics } from "./batch.js";
import { resolveRunConfig } from "./config.js";

const G = 8;

function group(gi: number, correct: readonly number[]): AssembledGroup {
  const results = correct.map(
    (v) =>
      new Map<string, RewardResult>([
        [
          "math",
          create(RewardResultSchema, {
            service: "math",
            components: [
              { name: "correct", value: v, status: ComponentStatus.OK },
              { name: "format", value: 1, status: ComponentStatus.OK },
            ],
          }),
        ],
      ]),
  );
  return {
    group: {
      groupId: `g${gi}`,
      step: 1,
      rolloutIds: correct.map((_, i) => `g${gi}-${i}`),
      services: ["math"],
    },
    results,
    resultSpans: [],
    complete: true,
    missing: [],
  };
}

const config = (p: number) =>
  resolveRunConfig({
    tasks: { sets: ["math"] },
    groupSize: G,
    promptsPerStep: 4,
    steps: 1,
    components: [
      { service: "math", component: "correct", weight: 1 },
      { service: "math", component: "format", weight: 0.5 },
    ],
    rewardNoise: { p, components: p > 0 ? ["math/correct"] : [] },
  });

// 200 groups, each with 3 of 8 correct: the clean mean of `correct` is 0.375.
const groups = Array.from({ length: 200 }, (_, gi) => group(gi, [1, 1, 1, 0, 0, 0, 0, 0]));
const noResult = { groups: [] } as unknown as AdvantageBatchResult;

it("keeps the reported values next to the flipped ones and counts the flips", () => {
  const c = config(0.3);
  const { prepared } = prepareGroups(groups, c, () => "math", 1);
  let flips = 0;
  for (const g of prepared) {
    assert.ok(g.clean, "noise on: the clean matrix is kept");
    g.clean.forEach((row, i) => {
      assert.deepEqual([row[0], row[1]], [i < 3 ? 1 : 0, 1], "clean = what the service reported");
      if (row[0] !== g.rewards[i]![0]) flips++;
      assert.equal(g.rewards[i]![1], 1, "a component not listed in rewardNoise is never flipped");
    });
    assert.equal(g.flipped, g.clean.filter((row, i) => row[0] !== g.rewards[i]![0]).length);
  }
  // Seeded flips at p = 0.3 over 1600 values: within 4 standard deviations of 480.
  assert.ok(Math.abs(flips - 480) < 4 * Math.sqrt(1600 * 0.3 * 0.7), `${flips} flips`);

  const m = rewardMetrics(prepared, noResult, c) as {
    weightedReward: number;
    weightedRewardClean: number;
    rewardNoise: { p: number; flipped: number };
    components: Record<string, { mean: number; cleanMean?: number }>;
  };
  assert.equal(m.components["math/correct"]!.cleanMean, 0.375);
  assert.equal(m.components["math/format"]!.cleanMean, undefined, "only noisy components get a clean mean");
  assert.equal(m.weightedRewardClean, 0.375 + 0.5);
  assert.equal(m.rewardNoise.flipped, flips);
  // The observed mean is pulled towards 1/2: p + (1 − 2p)·0.375 = 0.45 in expectation.
  const observed = m.components["math/correct"]!.mean;
  assert.ok(Math.abs(observed - 0.45) < 0.05, `observed ${observed}`);
  assert.ok(Math.abs(m.weightedReward - (observed + 0.5)) < 1e-12);
});

it("without noise keeps no copy and adds no clean fields", () => {
  const c = config(0);
  const { prepared } = prepareGroups(groups.slice(0, 3), c, () => "math", 1);
  assert.ok(prepared.every((g) => g.clean === undefined));
  const m = rewardMetrics(prepared, noResult, c);
  assert.equal("weightedRewardClean" in m, false);
  assert.equal("rewardNoise" in m, false);
});
