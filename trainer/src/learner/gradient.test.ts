/**
 * Hand-derived gradients against central finite differences, for every loss type (and both CISPO
 * modes, every aggregation mode, dual-clip, rollout importance weights), at a point where clipping
 * binds: θ is perturbed away from the step-start θ_old so that ratios ≠ 1, with β > 0, token masks,
 * a fully masked sample and mixed sequence lengths over two contexts. Also checks that the
 * objective's value equals a plain re-implementation from the per-token losses and `aggregateLoss`.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertClose } from "../advantage/testing.js";
import { aggregateLoss, cispoTokenLoss, importanceRatio, k3Kl, ppoClipTokenLoss } from "./loss.js";
import { evaluateObjective, type ObjectiveConfig, type PreparedSample } from "./objective.js";
import { type ContextParams, sequenceLogprobs } from "./policy.js";
import { createPrng, normal } from "./prng.js";
import { aggregationFor, type LossAggregation, LossAggregations, LossTypes } from "./types.js";

interface Fixture {
  contexts: ContextParams[];
  samples: PreparedSample[];
}

/** Two contexts, seven samples of lengths 1–7; θ moved away from θ_old so that clips bind. */
function fixture(seed: number, withIsWeights: boolean): Fixture {
  const rng = createPrng(seed);
  const mk = (key: string, v: number): ContextParams => {
    const n = (v + 1) * v;
    const theta = Float64Array.from({ length: n }, () => 0.8 * normal(rng));
    const reference = Float64Array.from({ length: n }, () => 0.8 * normal(rng));
    return { key, vocabularySize: v, theta, reference };
  };
  const contexts = [mk("ctx-a", 4), mk("ctx-b", 5)];
  const lengths = [1, 7, 3, 5, 2, 6, 4];
  const samples: PreparedSample[] = lengths.map((len, i) => {
    const params = contexts[i % 2]!;
    const v = params.vocabularySize;
    const tokenIds = Int32Array.from({ length: len }, () => Math.floor(rng.next() * v));
    const mask = Float64Array.from({ length: len }, (_, t) => (i === 4 ? 0 : t % 3 === 2 ? 0 : 1));
    const advantage = (rng.next() < 0.5 ? -1 : 1) * (0.3 + 1.7 * rng.next());
    const oldLogprobs = sequenceLogprobs(params.theta, v, tokenIds);
    const isWeights = withIsWeights ? Float64Array.from({ length: len }, () => 0.5 + rng.next()) : null;
    return { sampleId: `s${i}`, params, tokenIds, mask, advantage, oldLogprobs, isWeights };
  });
  // Move θ away from θ_old (old logprobs stay fixed): ratios ≠ 1, so clipping is active.
  for (const c of contexts)
    for (let k = 0; k < c.theta.length; k++) c.theta[k] = c.theta[k]! + 0.6 * normal(rng);
  return { contexts, samples };
}

function currentLogprobs(samples: readonly PreparedSample[]): Float64Array[] {
  return samples.map((s) => sequenceLogprobs(s.params.theta, s.params.vocabularySize, s.tokenIds));
}

/** The objective from first principles: per-token losses, then `aggregateLoss`. */
function referenceLoss(samples: readonly PreparedSample[], cfg: ObjectiveConfig): number {
  const lps = currentLogprobs(samples);
  const perToken = samples.map((s, i) =>
    Array.from(s.tokenIds, (_, t) => {
      const lp = lps[i]![t]!;
      const r = importanceRatio(lp, s.oldLogprobs[t]!).ratio;
      const pg =
        cfg.lossType === "cispo"
          ? cispoTokenLoss(r, s.advantage, lp, {
              epsLow: cfg.epsLow,
              epsHigh: cfg.epsHigh,
              mode: cfg.cispoMode,
            }).loss
          : ppoClipTokenLoss(r, s.advantage, cfg).loss;
      const ref = s.params.reference!;
      const refLp = sequenceLogprobs(ref, s.params.vocabularySize, s.tokenIds)[t]!;
      return (s.isWeights?.[t] ?? 1) * pg + cfg.klBeta * k3Kl(lp, refLp).value;
    }),
  );
  return aggregateLoss(perToken, cfg.aggregation, {
    maxCompletionLength: cfg.maxCompletionLength,
    masks: samples.map((s) => s.mask),
  });
}

interface CheckResult {
  maxAbsError: number;
  maxAbsGrad: number;
  nClipped: number;
  nDualClipped: number;
  nTokens: number;
}

function checkGradient(fx: Fixture, cfg: ObjectiveConfig): CheckResult {
  const grads = new Map(fx.contexts.map((c) => [c.key, new Float64Array(c.theta.length)]));
  const detachedLogprobs = currentLogprobs(fx.samples);
  const stats = evaluateObjective(fx.samples, cfg, { grads, detachedLogprobs });
  assertClose(stats.loss, referenceLoss(fx.samples, cfg), "objective vs reference loss", 1e-12);
  const h = 1e-5;
  let maxAbsError = 0;
  let maxAbsGrad = 0;
  for (const c of fx.contexts) {
    const g = grads.get(c.key)!;
    for (let k = 0; k < c.theta.length; k++) {
      const x = c.theta[k]!;
      c.theta[k] = x + h;
      const up = evaluateObjective(fx.samples, cfg, { detachedLogprobs }).loss;
      c.theta[k] = x - h;
      const down = evaluateObjective(fx.samples, cfg, { detachedLogprobs }).loss;
      c.theta[k] = x;
      const fd = (up - down) / (2 * h);
      maxAbsError = Math.max(maxAbsError, Math.abs(fd - g[k]!));
      maxAbsGrad = Math.max(maxAbsGrad, Math.abs(g[k]!));
    }
  }
  return {
    maxAbsError,
    maxAbsGrad,
    nClipped: stats.nClipped,
    nDualClipped: stats.nDualClipped,
    nTokens: stats.nTokens,
  };
}

function config(overrides: Partial<ObjectiveConfig> & Pick<ObjectiveConfig, "lossType">): ObjectiveConfig {
  return {
    aggregation: aggregationFor(overrides.lossType),
    epsLow: 0.2,
    epsHigh: overrides.lossType === "dapo" ? 0.28 : 0.2,
    dualClipC: 0,
    klBeta: 0.05,
    maxCompletionLength: 8,
    cispoMode: "two-sided",
    ...overrides,
  };
}

/** Tolerance on |FD − analytic|, relative to the gradient's scale. */
const TOLERANCE = 1e-8;

describe("finite-difference gradient checks (clipping active, β > 0, masks, mixed lengths)", () => {
  const cases: { name: string; cfg: ObjectiveConfig; isWeights?: boolean; dual?: boolean }[] = [
    ...LossTypes.map((t) => ({ name: t, cfg: config({ lossType: t }) })),
    {
      name: "cispo upper-cap (TRL)",
      cfg: config({ lossType: "cispo", cispoMode: "upper-cap", epsHigh: 1.3 }),
    },
    { name: "dapo + dual-clip c = 1.5", cfg: config({ lossType: "dapo", dualClipC: 1.5 }), dual: true },
    { name: "grpo + rollout IS weights", cfg: config({ lossType: "grpo" }), isWeights: true },
    { name: "cispo + rollout IS weights", cfg: config({ lossType: "cispo" }), isWeights: true },
    ...LossAggregations.map((a: LossAggregation) => ({
      name: `dapo objective, ${a} aggregation`,
      cfg: config({ lossType: "dapo", aggregation: a }),
    })),
  ];
  for (const c of cases) {
    it(c.name, (t) => {
      const r = checkGradient(fixture(7, c.isWeights ?? false), c.cfg);
      t.diagnostic(
        `max |FD − analytic| = ${r.maxAbsError.toExponential(2)} (max |grad| ${r.maxAbsGrad.toFixed(3)}, ` +
          `${r.nClipped}/${r.nTokens} tokens clipped${c.dual ? `, ${r.nDualClipped} dual-clipped` : ""})`,
      );
      assert.ok(r.maxAbsGrad > 1e-3, "the gradient is not trivially zero");
      assert.ok(r.nClipped > 0 && r.nClipped < r.nTokens, `clipping active on some tokens: ${r.nClipped}`);
      if (c.dual) assert.ok(r.nDualClipped > 0, "the dual clip binds on some token");
      assert.ok(
        r.maxAbsError <= TOLERANCE * Math.max(1, r.maxAbsGrad),
        `max |FD − analytic| = ${r.maxAbsError} > ${TOLERANCE}`,
      );
    });
  }

  it("would catch a wrong gradient (a sign flip in the KL term fails the check)", () => {
    const fx = fixture(7, false);
    const cfg = config({ lossType: "dapo", klBeta: 0.5 });
    const grads = new Map(fx.contexts.map((c) => [c.key, new Float64Array(c.theta.length)]));
    evaluateObjective(fx.samples, { ...cfg, klBeta: -0.5 }, { grads });
    const c = fx.contexts[0]!;
    const g = grads.get(c.key)!;
    let maxErr = 0;
    const h = 1e-5;
    for (let k = 0; k < c.theta.length; k++) {
      const x = c.theta[k]!;
      c.theta[k] = x + h;
      const up = evaluateObjective(fx.samples, cfg).loss;
      c.theta[k] = x - h;
      const down = evaluateObjective(fx.samples, cfg).loss;
      c.theta[k] = x;
      maxErr = Math.max(maxErr, Math.abs((up - down) / (2 * h) - g[k]!));
    }
    assert.ok(maxErr > 1e-3, `a wrong gradient must be detected (err ${maxErr})`);
  });
});
