/**
 * Every reference vector in `trainer/test/fixtures/advantage-vectors.json`, for every estimator it covers,
 * at the spec's tolerance `|got − want| ≤ 1e-9·max(1, |want|)`. Loss vectors (`j_*`, `k_*`) belong
 * to the learner and are skipped. A coverage check fails if a vector key is neither tested nor
 * explicitly skipped, so new vectors cannot be silently ignored.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dapoKeepGroup, dapoOverlongPenalty } from "./dapo.js";
import { computeAdvantages } from "./engine.js";
import { sgrpoWeight } from "./sgrpo.js";
import { assertClose, isClose, loadVectors } from "./testing.js";
import type { AdvantageConfig, GroupDiagnostics } from "./types.js";

const V = loadVectors();

/** Expected key → configuration reproducing it (single-group vectors). */
const GROUP_CONFIGS: Record<string, AdvantageConfig> = {
  grpo_verl: { estimator: "grpo" },
  grpo_trl: { estimator: "grpo", options: { epsilon: 1e-4 } },
  grpo_population: { estimator: "grpo", options: { stdMode: "population" } },
  grpo_recommended: { estimator: "grpo" },
  grpo_verl_semantics: { estimator: "grpo", options: { singleton: "verl" } },
  dr_grpo: { estimator: "dr_grpo" },
  // The vectors are the paper's (released code's) semantics: the degenerate-group guard off.
  corr_grpo: { estimator: "grpo_covariance_coefficient", options: { coefficientSumFallbackBelow: 0 } },
  corr_grpo_paper_eps: {
    estimator: "corr_grpo",
    options: { epsilonPlacement: "outside", coefficientSumFallbackBelow: 0 },
  },
  mo_grpo: { estimator: "mo_grpo" },
  gdpo_trl_single_group: { estimator: "gdpo", options: { epsilon: 1e-4 } },
};

/** Expected keys of single-group vectors checked through diagnostics or other helpers below. */
const DIAGNOSTIC_KEYS = new Set([
  "corr_grpo_detail",
  "corr_grpo_naive_var_gt_0",
  "dapo_keep_group",
  "grpo_covariance_shares",
  "corr_grpo_correlation_shares",
  "grpo_multiplier",
  "corr_grpo_multiplier",
  "corr_grpo_multiplier_no_eps",
  "strong_pair_over_weak_pair",
  "std_ratio_3_over_1",
]);

const BATCH_CONFIGS: Record<string, AdvantageConfig> = {
  gdpo_trl: { estimator: "gdpo", options: { epsilon: 1e-4 } },
  gdpo_verl: { estimator: "gdpo", options: { batchNorm: "token" } },
  gdpo_no_batch_norm: { estimator: "gdpo", options: { batchNorm: "none", epsilon: 1e-4 } },
  grpo_trl_scale_batch: { estimator: "grpo", options: { scale: "batch", epsilon: 1e-4 } },
  grpo_trl_scale_group: { estimator: "grpo", options: { epsilon: 1e-4 } },
  corr_grpo: { estimator: "corrgrpo", options: { coefficientSumFallbackBelow: 0 } },
  gdpo_covariance_coefficient: {
    estimator: "gdpo_covariance_coefficient",
    options: { coefficientSumFallbackBelow: 0 },
  },
};

/** CorrGRPO as the paper and its released code compute it (the degenerate-group guard off). */
const PAPER_CORR: AdvantageConfig = { estimator: "corr_grpo", options: { coefficientSumFallbackBelow: 0 } };

const SKIPPED_VECTORS = new Set(["j_ppo_clip_higher_token_loss", "j_cispo_token_loss", "k_loss_aggregation"]);
const SPECIAL_VECTORS = new Set([
  "h_two_group_batch",
  "e_sgrpo_weights_G8",
  "e2_sgrpo_advantage_G8",
  "e3_sgrpo_single_success_G8",
  "i_dapo_overlong",
  "i_dapo_dynamic_sampling",
]);

const singleGroupIds = Object.keys(V).filter((id) => !SKIPPED_VECTORS.has(id) && !SPECIAL_VECTORS.has(id));

function diagnose(rewards: number[][], weights: number[], config: AdvantageConfig): GroupDiagnostics {
  const r = computeAdvantages({ groups: [{ rewards }], weights }, config, { diagnostics: true });
  return r.groups[0]!.diagnostics!;
}

describe("reference vectors: coverage", () => {
  it("tests or explicitly skips every vector and every expected key", () => {
    for (const id of Object.keys(V)) {
      if (SKIPPED_VECTORS.has(id) || SPECIAL_VECTORS.has(id)) continue;
      for (const key of Object.keys(V[id].expected)) {
        assert.ok(key in GROUP_CONFIGS || DIAGNOSTIC_KEYS.has(key), `${id}.expected.${key} is not covered`);
      }
    }
    for (const key of Object.keys(V.h_two_group_batch.expected)) {
      assert.ok(key in BATCH_CONFIGS, `h_two_group_batch.expected.${key} is not covered`);
    }
    assert.ok(singleGroupIds.length >= 13, "expected the a/b/c/d/f/g single-group vectors");
  });
});

describe("reference vectors: single-group estimators", () => {
  for (const id of singleGroupIds) {
    const v = V[id];
    for (const [key, config] of Object.entries(GROUP_CONFIGS)) {
      if (!(key in v.expected)) continue;
      it(`${id} ${key} (${config.estimator})`, () => {
        const r = computeAdvantages({ groups: [{ rewards: v.rewards }], weights: v.weights }, config);
        assertClose(r.groups[0]!.advantages, v.expected[key], `${id}.${key}`);
      });
    }
  }

  it("c3: the naive `var > 0` port's answer is NOT reproduced (exact constant rule)", () => {
    const v = V.c3_float_trap_constant_0p1_G3;
    const got = computeAdvantages(
      { groups: [{ rewards: v.rewards }], weights: v.weights },
      { estimator: "corr_grpo" },
    ).groups[0]!.advantages;
    const naive: number[] = v.expected.corr_grpo_naive_var_gt_0;
    assert.ok(
      naive.some((want, i) => !isClose(got[i]!, want)),
      "CorrGRPO matched the naive var>0 result: the constant 0.1 column leaked into the denominator",
    );
    assertClose(got, v.expected.corr_grpo, "c3.corr_grpo");
  });

  it("g: a singleton group is flagged degenerate for every estimator", () => {
    const v = V.g_singleton_group_G1;
    for (const estimator of [
      "grpo",
      "dr_grpo",
      "corr_grpo",
      "mo_grpo",
      "gdpo",
      "gdpo_covariance_coefficient",
    ]) {
      const r = computeAdvantages({ groups: [{ rewards: v.rewards }], weights: v.weights }, {
        estimator,
      } as AdvantageConfig);
      assert.equal(r.groups[0]!.degenerate, true, estimator);
      assert.deepEqual(r.groups[0]!.advantages, [0], estimator);
    }
  });
});

describe("reference vectors: CorrGRPO detail and shares (diagnostics)", () => {
  for (const id of singleGroupIds) {
    const v = V[id];
    const detail = v.expected.corr_grpo_detail;
    if (detail === undefined) continue;
    it(`${id} corr_grpo_detail`, () => {
      const d = diagnose(v.rewards, v.weights, PAPER_CORR);
      assertClose(d.covariance, detail.covariance, `${id}.covariance`);
      assertClose(d.correlation, detail.correlation, `${id}.correlation`);
      assertClose(d.coefficientSum, detail.coefficientSum, `${id}.coefficientSum`);
      assertClose(d.denominator, detail.denominator, `${id}.denominator`);
      assertClose(d.centeredTotal, detail.centeredTotal, `${id}.centeredTotal`);
    });
  }

  for (const id of singleGroupIds) {
    const v = V[id];
    const e = v.expected;
    if (e.grpo_covariance_shares === undefined) continue;
    it(`${id} shares and multipliers`, () => {
      const d = diagnose(v.rewards, v.weights, PAPER_CORR);
      for (const [got, want, label] of [
        [d.grpoShares, e.grpo_covariance_shares, "grpo"],
        [d.corrGrpoShares, e.corr_grpo_correlation_shares, "corr"],
      ] as const) {
        assertClose(got.total, want.total, `${id}.${label}.total`);
        assertClose(got.diagonalShare, want.diagonalShare, `${id}.${label}.diagonalShare`);
        assertClose(got.rowShare, want.rowShare, `${id}.${label}.rowShare`);
      }
      assertClose(1 / Math.sqrt(d.grpoShares.total), e.grpo_multiplier, `${id}.grpo_multiplier`);
      if (e.corr_grpo_multiplier !== undefined) {
        assertClose(1 / d.denominator!, e.corr_grpo_multiplier, `${id}.corr_grpo_multiplier`);
      }
      if (e.corr_grpo_multiplier_no_eps !== undefined) {
        assertClose(1 / Math.sqrt(d.coefficientSum), e.corr_grpo_multiplier_no_eps, `${id}.no_eps`);
        assertClose(
          d.correlation[0]![1]! / d.correlation[0]![2]!,
          e.strong_pair_over_weak_pair,
          `${id}.pair`,
        );
        assertClose(
          Math.sqrt(d.covariance[2]![2]! / d.covariance[0]![0]!),
          e.std_ratio_3_over_1,
          `${id}.std_ratio`,
        );
      }
    });
  }

  it("d: DAPO dynamic sampling drops the all-equal group", () => {
    const v = V.d_all_equal_group_G4;
    const r = computeAdvantages(
      { groups: [{ rewards: v.rewards }], weights: v.weights },
      { estimator: "grpo", dynamicSampling: true },
    );
    assert.equal(r.groups[0]!.kept, v.expected.dapo_keep_group);
    assert.equal(v.expected.dapo_keep_group, false);
  });
});

describe("reference vectors: two-group batch (h)", () => {
  const v = V.h_two_group_batch;
  for (const [key, config] of Object.entries(BATCH_CONFIGS)) {
    it(`h ${key} (${config.estimator})`, () => {
      const groups = v.groups.map((rewards: number[][]) => ({ rewards }));
      const r = computeAdvantages({ groups, weights: v.weights }, config);
      assertClose(
        r.groups.map((g) => g.advantages),
        v.expected[key],
        `h.${key}`,
      );
    });
  }

  it("h gdpo_verl with explicit equal one-token lengths matches too", () => {
    const groups = v.groups.map((rewards: number[][]) => ({ rewards, lengths: rewards.map(() => 1) }));
    const r = computeAdvantages({ groups, weights: v.weights }, BATCH_CONFIGS.gdpo_verl!);
    assertClose(
      r.groups.map((g) => g.advantages),
      v.expected.gdpo_verl,
      "h.gdpo_verl(lengths)",
    );
  });
});

describe("reference vectors: S-GRPO (e, e2, e3)", () => {
  const e = V.e_sgrpo_weights_G8;
  for (const [p, weights] of Object.entries(e.expected.weightsByP_k0to8 as Record<string, number[]>)) {
    it(`e w*(G=8, k, p=${p}) for k = 0…8`, () => {
      assertClose(
        weights.map((_, k) => sgrpoWeight(e.G, k, Number(p), e.eps)),
        weights,
        `e.p=${p}`,
      );
    });
  }

  const e2 = V.e2_sgrpo_advantage_G8;
  const rewards2 = (e2.rewards as number[]).map((r) => [r]);
  it("e2 advantage_code = w*·GRPO(ε = 1e-8), weight reported in diagnostics", () => {
    const r = computeAdvantages(
      { groups: [{ rewards: rewards2 }] },
      { estimator: "grpo", options: { epsilon: 1e-8 }, sgrpo: { p: e2.p } },
      { diagnostics: true },
    );
    assertClose(r.groups[0]!.advantages, e2.expected.advantage_code, "e2.code");
    assertClose(r.groups[0]!.diagnostics!.sgrpo!.weight, e2.expected.weight, "e2.weight");
    assert.equal(r.groups[0]!.diagnostics!.sgrpo!.successes, 3);
    assert.equal(r.groups[0]!.diagnostics!.sgrpo!.gated, false);
  });
  for (const estimator of ["dr_grpo", "grpo", "corr_grpo"] as const) {
    it(`e2 advantage_dr_grpo_reading with variant dr_grpo on top of ${estimator}`, () => {
      const r = computeAdvantages({ groups: [{ rewards: rewards2 }] }, {
        estimator,
        sgrpo: { p: e2.p, variant: "dr_grpo" },
      } as AdvantageConfig);
      assertClose(r.groups[0]!.advantages, e2.expected.advantage_dr_grpo_reading, "e2.dr");
    });
  }
  it("e2 dr_grpo variant = code variant on top of dr_grpo", () => {
    const r = computeAdvantages(
      { groups: [{ rewards: rewards2 }] },
      { estimator: "dr_grpo", sgrpo: { p: e2.p } },
    );
    assertClose(r.groups[0]!.advantages, e2.expected.advantage_dr_grpo_reading, "e2.dr-code");
  });
  it("e2 base advantages (grpo_verl, dr_grpo)", () => {
    const g = computeAdvantages({ groups: [{ rewards: rewards2 }] }, { estimator: "grpo" });
    assertClose(g.groups[0]!.advantages, e2.expected.grpo_verl, "e2.grpo_verl");
    const d = computeAdvantages({ groups: [{ rewards: rewards2 }] }, { estimator: "dr_grpo" });
    assertClose(d.groups[0]!.advantages, e2.expected.dr_grpo, "e2.dr_grpo");
  });

  const e3 = V.e3_sgrpo_single_success_G8;
  for (const [label, expected] of Object.entries(
    e3.expected as Record<string, { weight: number; advantage_code: number[] }>,
  )) {
    const p = Number(label.slice(2));
    it(`e3 single success, ${label}: weight ${expected.weight}, gate ${expected.weight === 0}`, () => {
      const r = computeAdvantages(
        { groups: [{ rewards: (e3.rewards as number[]).map((x) => [x]) }] },
        { estimator: "grpo", options: { epsilon: 1e-8 }, sgrpo: { p } },
        { diagnostics: true },
      );
      const s = r.groups[0]!.diagnostics!.sgrpo!;
      assertClose(s.weight, expected.weight, "e3.weight");
      assert.equal(s.gated, expected.weight === 0);
      assertClose(r.groups[0]!.advantages, expected.advantage_code, "e3.code");
    });
  }
});

describe("reference vectors: CorrGRPO's default degenerate-group guard", () => {
  // The default config differs from the paper only where S < 0.01 while the total varies (c6, c7):
  // there the divisor is the total's sample std with ε inside the root, i.e. GRPO's scale.
  for (const id of singleGroupIds) {
    const v = V[id];
    const detail = v.expected.corr_grpo_detail;
    if (detail === undefined) continue;
    it(`${id}: default corr_grpo`, () => {
      const r = computeAdvantages(
        { groups: [{ rewards: v.rewards }], weights: v.weights },
        { estimator: "corr_grpo" },
        { diagnostics: true },
      ).groups[0]!;
      const centred: number[] = detail.centeredTotal;
      const degenerate = detail.coefficientSum < 0.01 && centred.some((c) => c !== 0);
      assert.equal(r.corrFallback, degenerate, `${id}: corrFallback`);
      assert.equal(r.diagnostics!.corrFallback, degenerate, `${id}: diagnostics.corrFallback`);
      if (!degenerate) {
        assertClose(r.advantages, v.expected.corr_grpo, `${id}: paper value`);
        return;
      }
      const variance = centred.reduce((t, c) => t + c * c, 0) / (centred.length - 1);
      const d = Math.sqrt(variance + 1e-6);
      assertClose(r.diagnostics!.denominator, d, `${id}: GRPO-scale denominator`);
      assertClose(
        r.advantages,
        centred.map((c) => c / d),
        `${id}: guarded advantages`,
      );
      // GRPO's own advantages (σ + ε) agree to ~1e-6: the guard lands on GRPO's scale.
      for (const [i, a] of r.advantages.entries()) {
        assert.ok(
          Math.abs(a - v.expected.grpo_verl[i]) < 1e-5,
          `${id}[${i}]: ${a} vs GRPO ${v.expected.grpo_verl[i]}`,
        );
      }
    });
  }
});

describe("reference vectors: DAPO (i)", () => {
  const o = V.i_dapo_overlong;
  it("i_dapo_overlong via the shared sdk function", () => {
    for (const [length, want] of Object.entries(o.expected as Record<string, number>)) {
      const got = dapoOverlongPenalty(Number(length), {
        maxLength: o.L_max,
        cacheLength: o.L_cache,
        factor: o.factor,
      });
      assertClose(got, want, `overlong(${length})`);
    }
  });
  it("i_dapo_dynamic_sampling keep decisions", () => {
    const ds = V.i_dapo_dynamic_sampling.expected as Record<string, boolean>;
    assert.ok(Object.keys(ds).length >= 4);
    for (const [values, keep] of Object.entries(ds)) {
      assert.equal(dapoKeepGroup(JSON.parse(values) as number[]), keep, values);
      const rewards = (JSON.parse(values) as number[]).map((x) => [x]);
      const r = computeAdvantages({ groups: [{ rewards }] }, { estimator: "grpo", dynamicSampling: true });
      assert.equal(r.groups[0]!.kept, keep, `engine ${values}`);
    }
  });
});
