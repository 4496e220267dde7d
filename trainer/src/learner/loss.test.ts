/**
 * The per-token losses and the aggregation modes against the spec's reference vectors
 * (`trainer/test/fixtures/advantage-vectors.json`: `j_ppo_clip_higher_token_loss`, `j_cispo_token_loss`,
 * `k_loss_aggregation`) at `|got − want| ≤ 1e-9·max(1, |want|)`, plus the properties the gradient
 * code relies on.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertClose, loadVectors } from "../advantage/testing.js";
import {
  aggregateLoss,
  aggregationWeights,
  cispoTokenLoss,
  importanceRatio,
  k3Kl,
  ppoClipTokenLoss,
  rolloutIsWeight,
} from "./loss.js";
import { aggregationFor, LossAggregations, type LossType, LossTypes } from "./types.js";

const V = loadVectors();

describe("j_ppo_clip_higher_token_loss", () => {
  const vec = V.j_ppo_clip_higher_token_loss;
  const rows = vec.expected as { ratio: number; A: number; loss: number; loss_dual_clip_c3: number }[];
  it("has the vectors", () => assert.equal(rows.length, 7));
  rows.forEach((r, i) => {
    it(`row ${i}: ratio ${r.ratio}, A ${r.A}`, () => {
      const opts = { epsLow: vec.eps_low, epsHigh: vec.eps_high };
      assertClose(ppoClipTokenLoss(r.ratio, r.A, opts).loss, r.loss, "loss");
      assertClose(
        ppoClipTokenLoss(r.ratio, r.A, { ...opts, dualClipC: 3 }).loss,
        r.loss_dual_clip_c3,
        "dual",
      );
    });
  });
  it("zeroes the gradient exactly where a clip binds", () => {
    const opts = { epsLow: 0.2, epsHigh: 0.28, dualClipC: 3 };
    assert.deepEqual(ppoClipTokenLoss(1.5, 1, opts), { loss: -1.28, dLossDRatio: 0, clip: "high" });
    assert.deepEqual(ppoClipTokenLoss(0.5, -1, opts), { loss: 0.8, dLossDRatio: 0, clip: "low" });
    assert.deepEqual(ppoClipTokenLoss(4, -1, opts), { loss: 3, dLossDRatio: 0, clip: "dual" });
    assert.deepEqual(ppoClipTokenLoss(1.5, -1, opts), { loss: 1.5, dLossDRatio: 1, clip: "none" });
    assert.deepEqual(ppoClipTokenLoss(0.5, 1, opts), { loss: -0.5, dLossDRatio: -1, clip: "none" });
  });
});

describe("j_cispo_token_loss", () => {
  const vec = V.j_cispo_token_loss;
  const rows = vec.expected as {
    ratio: number;
    A: number;
    mode?: string;
    loss: number;
    gradCoefWrtLogp: number;
    clippedWeight: number;
  }[];
  it("has both modes", () => {
    assert.ok(rows.some((r) => r.mode === "trl_eps_max_5"));
    assert.ok(rows.some((r) => r.mode === undefined));
  });
  rows.forEach((r, i) => {
    it(`row ${i}: ratio ${r.ratio}, A ${r.A}${r.mode ? ` (${r.mode})` : ""}`, () => {
      const opts =
        r.mode === "trl_eps_max_5"
          ? { epsLow: vec.eps_low, epsHigh: 5, mode: "upper-cap" as const }
          : { epsLow: vec.eps_low, epsHigh: vec.eps_high, mode: "two-sided" as const };
      const got = cispoTokenLoss(r.ratio, r.A, vec.logp, opts);
      assertClose(got.loss, r.loss, "loss");
      assertClose(got.gradCoefWrtLogp, r.gradCoefWrtLogp, "gradCoefWrtLogp");
      assertClose(got.clippedWeight, r.clippedWeight, "clippedWeight");
    });
  });
});

describe("k_loss_aggregation", () => {
  const vec = V.k_loss_aggregation;
  const perTokenLoss = vec.perTokenLoss as number[][];
  for (const mode of LossAggregations) {
    it(mode, () => {
      const want = vec.expected[mode] as number;
      assertClose(aggregateLoss(perTokenLoss, mode, { maxCompletionLength: vec.L_max }), want, mode);
      // The per-token weights the gradient uses give the same number.
      const w = aggregationWeights(
        perTokenLoss.map((l) => l.map(() => 1)),
        mode,
        { maxCompletionLength: vec.L_max },
      );
      let viaWeights = 0;
      perTokenLoss.forEach((l, i) => {
        l.forEach((x, t) => {
          viaWeights += w[i]![t]! * x;
        });
      });
      assertClose(viaWeights, want, `${mode} via weights`);
    });
  }
  it("covers every mode in the vector", () => {
    assert.deepEqual(Object.keys(vec.expected).sort(), [...LossAggregations].sort());
  });
  it("masks tokens out and still counts fully masked sequences in B", () => {
    const masks = [[1, 0, 1], [0]];
    assertClose(aggregateLoss(perTokenLoss, "token-mean", { masks }), 2.5 / 2, "token-mean");
    assertClose(aggregateLoss(perTokenLoss, "seq-mean-token-mean", { masks }), 2.5 / 2 / 2, "seq-mean");
    assertClose(aggregateLoss(perTokenLoss, "seq-mean-token-sum", { masks }), 2.5 / 2, "seq-sum");
  });
});

describe("loss types map to aggregation modes (learner.md §3.3)", () => {
  const want: Record<LossType, string> = {
    grpo: "seq-mean-token-mean",
    dr_grpo: "seq-mean-token-sum-norm",
    dapo: "token-mean",
    cispo: "token-mean",
    bnpo: "token-mean",
  };
  for (const t of LossTypes) it(t, () => assert.equal(aggregationFor(t), want[t]));
});

describe("k3 KL and ratios", () => {
  it("k3 is 0 with zero slope at logp = ref and positive elsewhere", () => {
    assert.deepEqual(k3Kl(-1.3, -1.3), { value: 0, dValueDLogp: 0 });
    for (const [lp, ref] of [
      [-0.5, -2],
      [-3, -0.1],
    ] as const) {
      const k = k3Kl(lp, ref);
      assert.ok(k.value > 0);
      const h = 1e-6;
      assertClose(
        k.dValueDLogp,
        (k3Kl(lp + h, ref).value - k3Kl(lp - h, ref).value) / (2 * h),
        "slope",
        1e-6,
      );
    }
  });
  it("the log-ratio is clamped at ±20 with no gradient beyond", () => {
    assert.deepEqual(importanceRatio(-1, -30), { ratio: Math.exp(20), dRatioDLogp: 0 });
    assert.deepEqual(importanceRatio(-30, -1), { ratio: Math.exp(-20), dRatioDLogp: 0 });
    const r = importanceRatio(-1, -1.5);
    assert.equal(r.ratio, Math.exp(0.5));
    assert.equal(r.dRatioDLogp, r.ratio);
  });
  it("rollout importance weights are truncated at the cap", () => {
    assertClose(rolloutIsWeight(-1, -1.5, 2), Math.exp(0.5), "below cap");
    assert.equal(rolloutIsWeight(-0.1, -5, 2), 2);
  });
});
