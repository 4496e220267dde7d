/**
 * The embedded learner actually learns: a toy two-context problem where a completion's reward is
 * the fraction of its `maxTokens` slots filled with that context's "good" token. One context has a
 * stop token, so lengths vary and the aggregation modes differ. GRPO advantages from the advantage
 * engine (Dr. GRPO's for `dr_grpo`), three epochs of two mini-batches per step (so old ≠ current
 * and clipping binds), β > 0. For every loss type the mean reward must rise clearly within 60 steps.
 * Seeded and deterministic.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { computeAdvantages } from "../advantage/engine.js";
import { createEmbeddedLearner } from "./embedded.js";
import { type Completion, type LossConfig, LossTypes, type PromptSpec, type Sample } from "./types.js";

const PROMPTS: readonly (PromptSpec & { good: number })[] = [
  {
    promptId: "alpha",
    contextKey: "toy/alpha",
    vocabulary: ["good", "u", "v", "w", "x", "y"],
    maxTokens: 6,
    good: 0,
  },
  {
    promptId: "beta",
    contextKey: "toy/beta",
    vocabulary: ["p", "q", "GOOD", "r", "s", "<eos>"],
    maxTokens: 6,
    stopToken: 5,
    separator: " ",
    good: 2,
  },
];
const G = 8;
const STEPS = 60;

const reward = (c: Completion) => {
  const p = PROMPTS.find((x) => x.promptId === c.promptId)!;
  return c.tokenIds.filter((t) => t === p.good).length / p.maxTokens!;
};

async function train(loss: LossConfig): Promise<{ curve: number[]; clipFraction: number }> {
  const learner = createEmbeddedLearner({ seed: 2024 });
  const curve: number[] = [];
  let clipFraction = 0;
  for (let step = 0; step < STEPS; step++) {
    const completions = await learner.generate({ prompts: PROMPTS, n: G });
    const rewards = completions.map(reward);
    curve.push(rewards.reduce((a, b) => a + b, 0) / rewards.length);
    const adv = computeAdvantages(
      { groups: PROMPTS.map((_, g) => ({ rewards: rewards.slice(g * G, (g + 1) * G).map((r) => [r]) })) },
      loss.lossType === "dr_grpo" ? { estimator: "dr_grpo" } : { estimator: "grpo" },
    ).groups.flatMap((g) => g.advantages);
    const samples: Sample[] = completions.map((c, i) => ({
      sampleId: `${step}/${c.promptId}/${c.index}`,
      groupId: `${step}/${c.promptId}`,
      contextKey: c.contextKey,
      vocabularySize: PROMPTS.find((p) => p.promptId === c.promptId)!.vocabulary!.length,
      tokenIds: c.tokenIds,
      rolloutLogprobs: c.logprobs,
      advantage: adv[i]!,
      policyVersion: c.policyVersion,
      truncated: c.truncated,
    }));
    const res = await learner.trainStep({
      step,
      idempotencyKey: `toy/${step}`,
      samples,
      loss,
      optim: { lr: 0.15, epochs: 3, miniBatches: 2 },
    });
    assert.equal(res.policyVersion, step + 1);
    clipFraction += res.metrics.clipFraction / STEPS;
    for (const [k, v] of Object.entries(res.metrics)) assert.ok(Number.isFinite(v), `metric ${k} = ${v}`);
  }
  await learner.close();
  return { curve, clipFraction };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("toy learning: mean reward rises within 60 steps for every loss type", () => {
  for (const lossType of LossTypes) {
    it(lossType, async (t) => {
      const loss: LossConfig = {
        lossType,
        epsLow: 0.2,
        epsHigh: lossType === "dapo" ? 0.28 : 0.2,
        klBeta: 0.01,
        maxCompletionLength: 6,
      };
      const { curve, clipFraction } = await train(loss);
      const start = curve[0]!;
      const end = mean(curve.slice(-5));
      t.diagnostic(
        `mean reward ${start.toFixed(3)} → ${end.toFixed(3)} (steps 0,10,…,50: ${curve
          .filter((_, i) => i % 10 === 0)
          .map((x) => x.toFixed(2))
          .join(" ")}; mean clip fraction ${clipFraction.toFixed(4)})`,
      );
      assert.ok(start < 0.35, `starts near chance (${start})`);
      assert.ok(end > 0.8, `ends high (${end})`);
      assert.ok(end - start > 0.5, `rises clearly (${start} → ${end})`);
      assert.ok(clipFraction > 0, "clipping bound on some tokens");
    });
  }
});
