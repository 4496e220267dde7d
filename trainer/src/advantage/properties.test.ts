/**
 * Seeded property tests on random groups: CorrGRPO vs GRPO proportionality, invariance of
 * CorrGRPO's denominator to positive weight scaling, permutation equivariance (rollouts, components,
 * groups), the Figure 2 reconstruction, and the anti-correlation blow-up with the floor that tames it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { computeAdvantages } from "./engine.js";
import {
  assertClose,
  isClose,
  loadVectors,
  mulberry32,
  randInt,
  randomRewards,
  randomWeights,
} from "./testing.js";
import type { AdvantageConfig, AdvantageEstimatorName } from "./types.js";
import { AdvantageEstimatorNames } from "./types.js";

const TRIALS = 300;

function advantages(rewards: number[][], weights: number[], config: AdvantageConfig): number[] {
  return computeAdvantages({ groups: [{ rewards }], weights }, config).groups[0]!.advantages;
}

function shuffle<T>(rand: () => number, xs: readonly T[]): { items: T[]; perm: number[] } {
  const perm = xs.map((_, i) => i);
  for (let i = perm.length - 1; i > 0; i--) {
    const j = randInt(rand, 0, i);
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  return { items: perm.map((p) => xs[p]!), perm };
}

describe("CorrGRPO = positive constant × GRPO within a group", () => {
  it(`holds on ${TRIALS} random groups whenever both are defined`, () => {
    const rand = mulberry32(0xc0ffee);
    let compared = 0;
    for (let t = 0; t < TRIALS; t++) {
      const G = randInt(rand, 2, 16);
      const K = randInt(rand, 1, 7);
      const R = randomRewards(rand, G, K);
      const w = randomWeights(rand, K);
      const corr = advantages(R, w, { estimator: "corr_grpo" });
      const grpo = advantages(R, w, { estimator: "grpo" });
      const scale = Math.max(...grpo.map(Math.abs));
      if (scale === 0) {
        assert.ok(
          corr.every((x) => x === 0),
          `trial ${t}: GRPO is all-zero (constant total) but CorrGRPO is ${corr}`,
        );
        continue;
      }
      const pivot = grpo.findIndex((x) => Math.abs(x) === scale);
      const c = corr[pivot]! / grpo[pivot]!;
      assert.ok(c > 0, `trial ${t}: ratio ${c} is not positive`);
      grpo.forEach((g, i) => {
        assert.ok(
          Math.abs(corr[i]! - c * g) <= 1e-9 * Math.max(1, Math.abs(corr[pivot]!)),
          `trial ${t} rollout ${i}: CorrGRPO ${corr[i]} ≠ ${c} × GRPO ${g}`,
        );
      });
      compared++;
    }
    assert.ok(compared > TRIALS / 2, `only ${compared} groups had a varying total`);
  });
});

describe("CorrGRPO's denominator is invariant to positive weight scaling", () => {
  it(`holds on ${TRIALS} random groups (per-component positive factors); GRPO's is not`, () => {
    const rand = mulberry32(42);
    let grpoChanged = 0;
    for (let t = 0; t < TRIALS; t++) {
      const G = randInt(rand, 3, 16);
      const K = randInt(rand, 2, 7);
      const R = randomRewards(rand, G, K);
      const w = randomWeights(rand, K);
      const scaled = w.map((x) => x * (0.01 + rand() * 50));
      // The paper's denominator: the degenerate-group guard (GRPO's scale, which moves with the
      // weights by design) is off here.
      const run = (weights: number[], estimator: "corr_grpo" | "grpo") =>
        computeAdvantages(
          { groups: [{ rewards: R }], weights },
          (estimator === "grpo"
            ? { estimator }
            : { estimator, options: { coefficientSumFallbackBelow: 0 } }) as AdvantageConfig,
          { diagnostics: true },
        ).groups[0]!.diagnostics!;
      const a = run(w, "corr_grpo");
      const b = run(scaled, "corr_grpo");
      assertClose(b.coefficientSum, a.coefficientSum, `trial ${t} coefficientSum`);
      assertClose(b.denominator, a.denominator!, `trial ${t} denominator`);
      assertClose(b.correlation, a.correlation, `trial ${t} correlation`);
      const ga = run(w, "grpo").denominator!;
      const gb = run(scaled, "grpo").denominator!;
      if (!isClose(ga, gb)) grpoChanged++;
    }
    assert.ok(
      grpoChanged > TRIALS / 2,
      "GRPO's denominator should move with the weights (test would be vacuous)",
    );
  });
});

describe("permutation equivariance", () => {
  const configs: AdvantageConfig[] = [
    ...AdvantageEstimatorNames.map((estimator) => ({ estimator }) as AdvantageConfig),
    { estimator: "grpo", options: { scale: "batch" } },
    { estimator: "gdpo", options: { batchNorm: "token" } },
    { estimator: "corr_grpo", options: { epsilonPlacement: "outside", coefficientSumFloor: 0.5 } },
    { estimator: "grpo", sgrpo: { p: 0.1 }, dynamicSampling: true },
  ];
  for (const config of configs) {
    const label = `${config.estimator} ${JSON.stringify(config.options ?? {})}${config.sgrpo ? " +sgrpo+dapo" : ""}`;
    it(`${label}: permuting rollouts permutes advantages; permuting components leaves them unchanged`, () => {
      const rand = mulberry32(7 + config.estimator.length);
      for (let t = 0; t < 100; t++) {
        const B = randInt(rand, 1, 3);
        const K = randInt(rand, 1, 6);
        const w = randomWeights(rand, K);
        const groups = Array.from({ length: B }, () => {
          const G = randInt(rand, 3, 12);
          return {
            rewards: randomRewards(rand, G, K),
            lengths: Array.from({ length: G }, () => randInt(rand, 1, 50)),
          };
        });
        const base = computeAdvantages({ groups, weights: w }, config).groups.map((g) => g.advantages);

        const rowPerms = groups.map((g) => shuffle(rand, g.rewards).perm);
        const permutedRows = groups.map((g, gi) => ({
          rewards: rowPerms[gi]!.map((p) => g.rewards[p]!),
          lengths: rowPerms[gi]!.map((p) => g.lengths[p]!),
        }));
        const rowResult = computeAdvantages({ groups: permutedRows, weights: w }, config).groups;
        rowResult.forEach((g, gi) => {
          assertClose(
            g.advantages,
            rowPerms[gi]!.map((p) => base[gi]![p]!),
            `trial ${t} group ${gi} rows`,
          );
        });

        const { perm: colPerm } = shuffle(
          rand,
          w.map((_, k) => k),
        );
        const permutedCols = groups.map((g) => ({
          rewards: g.rewards.map((row) => colPerm.map((p) => row[p]!)),
          lengths: g.lengths,
        }));
        const colResult = computeAdvantages(
          { groups: permutedCols, weights: colPerm.map((p) => w[p]!) },
          config,
        ).groups;
        colResult.forEach((g, gi) => {
          assertClose(g.advantages, base[gi]!, `trial ${t} group ${gi} components`);
        });

        const { perm: groupPerm } = shuffle(rand, groups);
        const groupResult = computeAdvantages(
          { groups: groupPerm.map((p) => groups[p]!), weights: w },
          config,
        ).groups;
        groupResult.forEach((g, gi) => {
          assertClose(g.advantages, base[groupPerm[gi]!]!, `trial ${t} group order`);
        });
      }
    });
  }
});

describe("Figure 2 reconstruction (CorrGRPO project page)", () => {
  const f = loadVectors().f_figure2_reconstruction_G4;
  const run = (estimator: AdvantageEstimatorName) =>
    computeAdvantages(
      { groups: [{ rewards: f.rewards }], weights: f.weights },
      { estimator } as AdvantageConfig,
      {
        diagnostics: true,
      },
    ).groups[0]!.diagnostics!;
  it("component 3 carries 91.1 % (= 41/45) of GRPO's variance", () => {
    const d = run("grpo");
    assert.equal((d.grpoShares.diagonalShare[2]! * 100).toFixed(1), "91.1");
    assertClose(d.grpoShares.diagonalShare[2]!, 41 / 45, "41/45");
    assertClose(d.grpoShares.rowShare, [1 / 30, 1 / 30, 14 / 15], "GRPO row shares 3.3/3.3/93.3 %");
  });
  it("the strong pair is 8.89× (= 80/9) each weak pair; S = 221/41", () => {
    const d = run("grpo_covariance_coefficient");
    const ratio = d.correlation[0]![1]! / d.correlation[0]![2]!;
    assert.equal(ratio.toFixed(2), "8.89");
    assertClose(ratio, 80 / 9, "80/9");
    assertClose(d.correlation[0]![1]!, 40 / 41, "ρ12");
    assertClose(d.correlation[0]![2]!, 9 / 82, "ρ13");
    assertClose(d.coefficientSum, 221 / 41, "S");
    assertClose(
      d.corrGrpoShares.rowShare,
      [0.3868778280542986, 0.3868778280542986, 0.2262443438914027],
      "rows",
    );
  });
  it("multipliers 0.2536 (GRPO) vs 0.4307 (CorrGRPO)", () => {
    const d = run("grpo_covariance_coefficient");
    const grpoMultiplier = 1 / Math.sqrt(d.grpoShares.total);
    const corrMultiplier = 1 / Math.sqrt(d.coefficientSum);
    assert.equal(grpoMultiplier.toFixed(4), "0.2536");
    assert.equal(corrMultiplier.toFixed(4), "0.4307");
    const grpo = run("grpo").advantages;
    const corr = d.advantages;
    assertClose(grpo, [-1.0954, 0.5477, 1.0954, -0.5477], "GRPO A", 1e-4);
    assertClose(corr, [-1.8607, 0.9304, 1.8607, -0.9304], "CorrGRPO A", 1e-4);
  });
});

describe("anti-correlation blow-up and coefficientSumFloor", () => {
  const c6 = loadVectors().c6_perfect_anticorrelation_G4;
  it("c6: perfectly anti-correlated components give S = 0 and, in the paper's form, A = 1000 × the centred total", () => {
    const r = computeAdvantages(
      { groups: [{ rewards: c6.rewards }], weights: c6.weights },
      { estimator: "corr_grpo", options: { coefficientSumFallbackBelow: 0 } },
      { diagnostics: true },
    ).groups[0]!;
    assert.equal(r.diagnostics!.coefficientSum, 0);
    assert.equal(r.corrFallback, false);
    assertClose(r.advantages, [250, -250, 250, -250], "blow-up");
    assertClose(
      advantages(c6.rewards, c6.weights, { estimator: "grpo" }),
      c6.expected.grpo_verl,
      "GRPO stays ±0.866",
    );
  });
  it("c6: the default guard divides by the total's std instead: GRPO's ±0.866, flagged", () => {
    const r = computeAdvantages(
      { groups: [{ rewards: c6.rewards }], weights: c6.weights },
      { estimator: "corr_grpo" },
      { diagnostics: true },
    ).groups[0]!;
    assert.equal(r.corrFallback, true);
    assert.equal(r.diagnostics!.corrFallback, true);
    assertClose(r.advantages, c6.expected.grpo_verl, "GRPO scale", 1e-5);
  });
  it("c6: an explicit floor takes precedence over the guard (floor 1 caps it at the Dr. GRPO scale)", () => {
    const tamed = advantages(c6.rewards, c6.weights, {
      estimator: "corr_grpo",
      options: { coefficientSumFloor: 1 },
    });
    assertClose(
      tamed,
      c6.expected.dr_grpo.map((x: number) => x / Math.sqrt(1 + 1e-6)),
      "floored",
    );
  });
  it("G = 2: every pair has ρ = ±1, so blow-ups are routine; the floor bounds |A| by |centred total|/sqrt(floor)", () => {
    const rand = mulberry32(2);
    let blowUps = 0;
    let guardFired = 0;
    for (let t = 0; t < TRIALS; t++) {
      const G = t % 2 === 0 ? 2 : randInt(rand, 3, 8);
      const K = randInt(rand, 2, 5);
      const R = randomRewards(rand, G, K);
      const w = randomWeights(rand, K);
      const dr = advantages(R, w, { estimator: "dr_grpo" });
      const raw = advantages(R, w, { estimator: "corr_grpo", options: { coefficientSumFallbackBelow: 0 } });
      if (raw.some((x, i) => Math.abs(x) > 30 * Math.abs(dr[i]!) && Math.abs(dr[i]!) > 1e-12)) blowUps++;
      // The default: |A| ≤ 10·|centred total| (S ≥ 0.01), or the guard's GRPO scale (|A| < sqrt(G − 1)).
      const guarded = computeAdvantages({ groups: [{ rewards: R }], weights: w }, { estimator: "corr_grpo" })
        .groups[0]!;
      guarded.advantages.forEach((x, i) => {
        const bound = guarded.corrFallback
          ? Math.sqrt(G - 1)
          : (Math.abs(dr[i]!) / Math.sqrt(0.01)) * (1 + 1e-9);
        assert.ok(Math.abs(x) <= bound + 1e-12, `trial ${t}: default |A| ${Math.abs(x)} > ${bound}`);
      });
      if (guarded.corrFallback) guardFired++;
      for (const floor of [0.25, 1, 4]) {
        const a = advantages(R, w, { estimator: "corr_grpo", options: { coefficientSumFloor: floor } });
        a.forEach((x, i) => {
          assert.ok(
            Math.abs(x) <= (Math.abs(dr[i]!) / Math.sqrt(floor)) * (1 + 1e-9) + 1e-12,
            `trial ${t} floor ${floor}: |A| ${Math.abs(x)} > |n|/sqrt(floor) ${Math.abs(dr[i]!) / Math.sqrt(floor)}`,
          );
        });
      }
    }
    assert.ok(blowUps > 10, `expected some ≥30× blow-ups without a floor, saw ${blowUps}`);
    assert.ok(guardFired > 10, `expected the default guard to fire on G = 2 groups, saw ${guardFired}`);
  });
});
