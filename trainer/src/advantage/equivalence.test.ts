/**
 * Seeded equivalence of the optimised engine (typed-array kernels, reused workspace) with the
 * plain reference implementation in `reference.ts` (verl `test_grpo_and_vectorized_equivalence`
 * style), over random batches with constant columns, NOT_APPLICABLE entries, singleton groups,
 * lengths, dynamic sampling and S-GRPO — for every estimator and option value.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { packBatch, packFlatBatch } from "./batch.js";
import { compileAdvantageConfig, createAdvantageEngine } from "./engine.js";
import type { ReferenceConfig, ReferenceGroup } from "./reference.js";
import { referenceAdvantages } from "./reference.js";
import { sgrpoWeight } from "./sgrpo.js";
import { assertClose, mulberry32, randInt, randomRewards, randomWeights } from "./testing.js";
import type { AdvantageConfig } from "./types.js";

interface Case {
  readonly config: AdvantageConfig;
  readonly reference: ReferenceConfig;
}

const CASES: Case[] = [
  { config: { estimator: "grpo" }, reference: { estimator: "grpo" } },
  {
    config: { estimator: "grpo", options: { stdMode: "population", epsilon: 1e-4 } },
    reference: { estimator: "grpo", stdMode: "population", epsilon: 1e-4 },
  },
  {
    config: { estimator: "grpo", options: { scale: "batch" } },
    reference: { estimator: "grpo", scale: "batch" },
  },
  { config: { estimator: "grpo", options: { scale: "none" } }, reference: { estimator: "dr_grpo" } },
  {
    config: { estimator: "grpo", options: { singleton: "verl" } },
    reference: { estimator: "grpo", singleton: "verl" },
  },
  { config: { estimator: "dr_grpo" }, reference: { estimator: "dr_grpo" } },
  { config: { estimator: "corr_grpo" }, reference: { estimator: "grpo_covariance_coefficient" } },
  {
    config: { estimator: "grpo_covariance_coefficient", options: { coefficientSumFloor: 1, epsilon: 1e-3 } },
    reference: { estimator: "grpo_covariance_coefficient", coefficientSumFloor: 1, epsilon: 1e-3 },
  },
  {
    config: {
      estimator: "grpo_covariance_coefficient",
      options: { epsilonPlacement: "outside", coefficientSumFloor: 0.1 },
    },
    reference: {
      estimator: "grpo_covariance_coefficient",
      epsilonPlacement: "outside",
      coefficientSumFloor: 0.1,
    },
  },
  {
    config: { estimator: "grpo_covariance_coefficient", options: { normByStd: false } },
    reference: { estimator: "grpo_covariance_coefficient", normByStd: false },
  },
  { config: { estimator: "mo_grpo" }, reference: { estimator: "mo_grpo" } },
  {
    config: { estimator: "mo_grpo", options: { stdMode: "population" } },
    reference: { estimator: "mo_grpo", stdMode: "population" },
  },
  { config: { estimator: "gdpo" }, reference: { estimator: "gdpo" } },
  {
    config: { estimator: "gdpo", options: { batchNorm: "token" } },
    reference: { estimator: "gdpo", batchNorm: "token" },
  },
  {
    config: { estimator: "gdpo", options: { batchNorm: "none", epsilon: 1e-4 } },
    reference: { estimator: "gdpo", batchNorm: "none", epsilon: 1e-4 },
  },
  {
    config: { estimator: "gdpo_covariance_coefficient" },
    reference: { estimator: "gdpo_covariance_coefficient" },
  },
  {
    config: { estimator: "gdpo_covariance_coefficient", options: { coefficientSumFloor: 2 } },
    reference: { estimator: "gdpo_covariance_coefficient", coefficientSumFloor: 2 },
  },
  {
    config: { estimator: "grpo", sgrpo: { p: 0.15 }, dynamicSampling: true },
    reference: { estimator: "grpo", sgrpo: { p: 0.15 }, dynamicSampling: -1 },
  },
  {
    config: { estimator: "corr_grpo", sgrpo: { p: 0.1, variant: "dr_grpo", component: 0 } },
    reference: {
      estimator: "grpo_covariance_coefficient",
      sgrpo: { p: 0.1, variant: "dr_grpo", component: 0 },
    },
  },
  {
    config: {
      estimator: "gdpo",
      sgrpo: { p: 0.2, successThreshold: 0.5 },
      dynamicSampling: { component: 0 },
    },
    reference: { estimator: "gdpo", sgrpo: { p: 0.2, successThreshold: 0.5 }, dynamicSampling: 0 },
  },
  {
    config: { estimator: "gdpo_covariance_coefficient", dynamicSampling: true },
    reference: { estimator: "gdpo_covariance_coefficient", dynamicSampling: -1 },
  },
];

function randomGroup(rand: () => number, K: number, withMask: boolean): ReferenceGroup {
  const G = rand() < 0.1 ? 1 : randInt(rand, 2, 16);
  const rewards = randomRewards(rand, G, K);
  if (rand() < 0.1) {
    for (const row of rewards) row.fill(rewards[0]![0]!); // an all-equal group
  }
  const lengths = Array.from({ length: G }, () => (rand() < 0.05 ? 0 : randInt(rand, 1, 300)));
  if (!withMask) return { rewards, lengths };
  const wholeGroup = randInt(rand, -1, K - 1);
  const notApplicable = rewards.map(() =>
    Array.from({ length: K }, (_, k) => k === wholeGroup || rand() < 0.08),
  );
  if (rand() < 0.2) notApplicable[0]!.fill(true); // an unscorable rollout
  return { rewards, lengths, notApplicable };
}

describe("optimised engine ≡ plain reference (seeded)", () => {
  const engine = createAdvantageEngine({ maxGroupSize: 4, maxComponents: 2 }); // forces workspace growth
  for (const [ci, c] of CASES.entries()) {
    const label = `${c.config.estimator} ${JSON.stringify({ ...c.config, estimator: undefined })}`;
    it(label, () => {
      const rand = mulberry32(1000 + ci);
      const compiled = compileAdvantageConfig(c.config);
      for (let t = 0; t < 60; t++) {
        const K = randInt(rand, 1, 7);
        const weights = randomWeights(rand, K);
        const withMask = t % 3 === 0;
        const groups = Array.from({ length: randInt(rand, 1, 6) }, () => randomGroup(rand, K, withMask));
        const want = referenceAdvantages(groups, weights, c.reference);
        const batch = packBatch({ groups, weights });
        const run = engine.run(batch, compiled);
        want.forEach((a, g) => {
          const got = run.advantages.subarray(batch.groupOffsets[g]!, batch.groupOffsets[g + 1]!);
          assertClose(got, a, `trial ${t} group ${g}`);
        });
      }
    });
  }

  it("packFlatBatch and packBatch give identical runs (and a reused `out` buffer is written in place)", () => {
    const rand = mulberry32(99);
    const compiled = compileAdvantageConfig({ estimator: "corr_grpo" });
    const out = new Float64Array(1024);
    const flags = new Uint8Array(64);
    for (let t = 0; t < 30; t++) {
      const K = randInt(rand, 1, 7);
      const groups = Array.from({ length: randInt(rand, 1, 8) }, () => randomGroup(rand, K, t % 2 === 0));
      const weights = randomWeights(rand, K);
      const nested = engine.run(packBatch({ groups, weights }), compiled);
      const values = new Float64Array(groups.flatMap((g) => g.rewards.flat()));
      const mask = Uint8Array.from(
        groups.flatMap((g) => (g.notApplicable ?? g.rewards.map((r) => r.map(() => false))).flat()),
        Number,
      );
      const flat = packFlatBatch({
        values,
        groupSizes: groups.map((g) => g.rewards.length),
        components: K,
        weights,
        notApplicable: mask,
      });
      const run = engine.run(flat, compiled, { out, flags });
      assert.equal(run.advantages, out);
      assert.deepEqual(Array.from(out.subarray(0, flat.rolloutCount)), Array.from(nested.advantages));
      assert.deepEqual(Array.from(flags.subarray(0, flat.groupCount)), Array.from(nested.flags));
    }
  });

  it("the checked S-GRPO weight equals the reference formula on a grid", () => {
    for (let n = 1; n <= 16; n++) {
      for (let k = 0; k <= n; k++) {
        for (const p of [0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45]) {
          const q = k / n;
          const tt = Math.min(1, Math.max(0, (q - p) / (1 - 2 * p)));
          const den = Math.sqrt(q * (1 - q) + 1e-8) * Math.sqrt(tt * (1 - tt) + 1e-8);
          const want = den === 0 ? 0 : ((1 - 2 * p) * tt * (1 - tt)) / den;
          assertClose(sgrpoWeight(n, k, p), want, `w*(${n},${k},${p})`);
        }
      }
    }
  });
});
