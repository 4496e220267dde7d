/**
 * Exactness rules, NOT_APPLICABLE handling, degenerate groups, step semantics, input validation,
 * the registry and error types.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { packBatch, packFlatBatch } from "./batch.js";
import { dapoKeepGroup } from "./dapo.js";
import {
  compileAdvantageConfig,
  compileUntypedAdvantageConfig,
  computeAdvantages,
  createAdvantageEngine,
} from "./engine.js";
import {
  AdvantageInputError,
  AdvantageOptionsError,
  EstimatorRegistryError,
  isAdvantageError,
  UnknownEstimatorError,
} from "./errors.js";
import {
  ADVANTAGE_ESTIMATORS,
  createEstimatorRegistry,
  getAdvantageEstimator,
  resolveEstimatorName,
} from "./estimators.js";
import { sgrpoWeight } from "./sgrpo.js";
import { assertClose } from "./testing.js";
import type { AdvantageBatchInput, AdvantageConfig } from "./types.js";
import { AdvantageEstimatorNames, GroupFlags } from "./types.js";

const ALL: AdvantageConfig[] = AdvantageEstimatorNames.map((estimator) => ({ estimator }) as AdvantageConfig);

function adv(input: AdvantageBatchInput, config: AdvantageConfig): number[][] {
  return computeAdvantages(input, config).groups.map((g) => g.advantages);
}

describe("exact constant rule", () => {
  // Components vary but the weighted total is exactly 1 for every rollout; the centred columns
  // still sum to ±1e-16, which a non-exact implementation would amplify by 1/sqrt(ε) = 1000.
  const rewards = [0.3, 0.2, 0.9].map((x) => [x, 1 - x]);
  it("a group whose weighted total is exactly constant gets exactly 0 (GRPO, Dr. GRPO, CorrGRPO both ε placements)", () => {
    for (const config of [
      { estimator: "grpo" },
      { estimator: "dr_grpo" },
      { estimator: "corr_grpo" },
      { estimator: "corr_grpo", options: { epsilonPlacement: "outside" } },
    ] as AdvantageConfig[]) {
      const a = adv({ groups: [{ rewards }] }, config)[0]!;
      assert.ok(
        a.every((x) => x === 0),
        `${JSON.stringify(config)} gave ${a}`,
      );
    }
  });
  it("… and DAPO dynamic sampling drops it", () => {
    const r = computeAdvantages({ groups: [{ rewards }] }, { estimator: "corr_grpo", dynamicSampling: true });
    assert.equal(r.groups[0]!.kept, false);
  });
  it("a constant 0.1 column is reported constant and has a zero row and column (c3)", () => {
    const d = computeAdvantages(
      {
        groups: [
          {
            rewards: [
              [1, 0.1],
              [0, 0.1],
              [0, 0.1],
            ],
          },
        ],
      },
      { estimator: "corr_grpo" },
      { diagnostics: true },
    ).groups[0]!.diagnostics!;
    assert.deepEqual(d.constantComponents, [false, true]);
    assert.deepEqual(d.correlation[1], [0, 0]);
    assertClose(d.coefficientSum, 1, "S");
  });
});

describe("NOT_APPLICABLE", () => {
  const rewards = [
    [1, 0.4, 7],
    [0, 0.9, 3],
    [1, 0.2, 5],
    [0, 0.5, 2],
  ];
  const weights = [1, 0.5, 0.1];
  const components = ["pass", "ast", "len"];
  it("a component N/A for the whole group drops out (= weight 0 there) and is reported", () => {
    const notApplicable = rewards.map(() => [false, true, false]);
    for (const config of ALL) {
      const withNa = computeAdvantages(
        { groups: [{ rewards, notApplicable }], weights, components },
        config,
        { diagnostics: true },
      ).groups[0]!;
      const zeroWeight = adv({ groups: [{ rewards }], weights: [1, 0, 0.1] }, config)[0]!;
      assertClose(withNa.advantages, zeroWeight, config.estimator);
      assert.deepEqual(withNa.diagnostics!.notApplicable.droppedComponents, ["ast"]);
      assert.deepEqual(withNa.diagnostics!.weights, [1, 0, 0.1]);
    }
  });
  it("a component N/A for some rollouts counts as 0 and is counted per component", () => {
    const notApplicable = [
      [false, true, false],
      [false, false, false],
      [false, true, true],
      [false, false, false],
    ];
    const zeroed = rewards.map((row, i) => row.map((v, k) => (notApplicable[i]![k] ? 0 : v)));
    for (const config of ALL) {
      const r = computeAdvantages({ groups: [{ rewards, notApplicable }], weights, components }, config, {
        diagnostics: true,
      }).groups[0]!;
      assertClose(
        r.advantages,
        adv({ groups: [{ rewards: zeroed }], weights }, config)[0]!,
        config.estimator,
      );
      assert.deepEqual(r.diagnostics!.notApplicable.partialCounts, [0, 2, 1]);
      assert.deepEqual(r.diagnostics!.notApplicable.droppedComponents, []);
    }
  });
  it("null means N/A, and a NaN flagged N/A is accepted", () => {
    const withNull = rewards.map((row, i) => (i === 1 ? [row[0]!, null, row[2]!] : row));
    const withNaN = rewards.map((row, i) => (i === 1 ? [row[0]!, Number.NaN, row[2]!] : row));
    const flags = rewards.map((_, i) => [false, i === 1, false]);
    const a = adv({ groups: [{ rewards: withNull }], weights }, { estimator: "corr_grpo" });
    const b = adv(
      { groups: [{ rewards: withNaN, notApplicable: flags }], weights },
      { estimator: "corr_grpo" },
    );
    assert.deepEqual(a, b);
  });
  it("a rollout with every component N/A is unscorable: advantage 0, reported, flag set", () => {
    const notApplicable = rewards.map((_, i) => [i === 2, i === 2, i === 2]);
    const r = computeAdvantages(
      { groups: [{ rewards, notApplicable }], weights },
      { estimator: "grpo" },
      {
        diagnostics: true,
      },
    ).groups[0]!;
    assert.equal(r.advantages[2], 0);
    assert.ok(r.advantages.some((x) => x !== 0));
    assert.deepEqual(r.diagnostics!.notApplicable.unscorableRollouts, [2]);
    const run = createAdvantageEngine().run(
      packBatch({ groups: [{ rewards, notApplicable }], weights }),
      compileAdvantageConfig({ estimator: "grpo" }),
    );
    assert.equal(run.flags[0]! & GroupFlags.notApplicable, GroupFlags.notApplicable);
  });
});

describe("degenerate groups and steps", () => {
  it("singleton groups give 0 with the degenerate flag, and stay out of batch statistics", () => {
    const groups = [
      { rewards: [[1, 0.5]] },
      {
        rewards: [
          [1, 0],
          [0, 1],
          [1, 1],
        ],
      },
    ];
    for (const config of ALL) {
      const r = computeAdvantages({ groups }, config);
      assert.deepEqual(r.groups[0]!.advantages, [0], config.estimator);
      assert.equal(r.groups[0]!.degenerate, true);
      assert.equal(r.groups[1]!.degenerate, false);
      assertClose(r.groups[1]!.advantages, adv({ groups: [groups[1]!] }, config)[0]!, config.estimator);
    }
  });
  it("dynamic sampling on a named component drops the group, zeroes it and keeps it out of GDPO's batch stage", () => {
    const constantPass = {
      rewards: [
        [1, 0.2],
        [1, 0.9],
        [1, 0.5],
      ],
    };
    const varying = {
      rewards: [
        [1, 0.2],
        [0, 0.9],
        [1, 0.4],
        [0, 0.1],
      ],
    };
    const other = {
      rewards: [
        [0, 0.3],
        [1, 0.3],
        [1, 0.8],
      ],
    };
    const config: AdvantageConfig = { estimator: "gdpo", dynamicSampling: { component: "pass" } };
    const components = ["pass", "q"];
    const r = computeAdvantages({ groups: [constantPass, varying, other], components }, config);
    assert.deepEqual(
      r.groups.map((g) => g.kept),
      [false, true, true],
    );
    assert.deepEqual(r.groups[0]!.advantages, [0, 0, 0]);
    const without = computeAdvantages({ groups: [varying, other], components }, config);
    assertClose(r.groups[1]!.advantages, without.groups[0]!.advantages, "batch stats exclude dropped");
    const byTotal = computeAdvantages(
      { groups: [constantPass], components },
      { estimator: "gdpo", dynamicSampling: true },
    );
    assert.equal(byTotal.groups[0]!.kept, true, "the weighted total varies, so it is kept");
  });
  it("S-GRPO gates a group with a single success at p = 0.15 and sets the flag", () => {
    const rewards = [1, 0, 0, 0, 0, 0, 0, 0].map((x) => [x]);
    const run = createAdvantageEngine().run(
      packBatch({ groups: [{ rewards }] }),
      compileAdvantageConfig({ estimator: "corr_grpo", sgrpo: { p: 0.15 } }),
    );
    assert.equal(run.flags[0]! & GroupFlags.sgrpoGated, GroupFlags.sgrpoGated);
    assert.ok(Array.from(run.advantages).every((x) => x === 0));
    assert.equal(run.diagnostics, null, "diagnostics are not computed unless requested");
  });
  it("S-GRPO on a non-binary total with every rollout > 0 silences the group and reports the gate", () => {
    const rewards = [
      [0.1, 0.18, 0.8],
      [0.18, 0.1, 7.28],
      [0.82, 0.9, 8.0],
      [0.9, 0.82, 1.52],
    ];
    const d = computeAdvantages(
      { groups: [{ rewards }] },
      { estimator: "corr_grpo", sgrpo: { p: 0.1 } },
      {
        diagnostics: true,
      },
    ).groups[0]!.diagnostics!;
    assert.equal(d.sgrpo!.successes, 4);
    assert.equal(d.sgrpo!.weight, 0);
    assert.equal(d.sgrpo!.gated, true);
    const binarised = computeAdvantages(
      { groups: [{ rewards }] },
      {
        estimator: "corr_grpo",
        sgrpo: { p: 0.1, component: 0, successThreshold: 0.5 },
      },
      { diagnostics: true },
    ).groups[0]!.diagnostics!;
    assert.equal(binarised.sgrpo!.successes, 2);
    assert.equal(binarised.sgrpo!.gated, false);
  });
  it("S-GRPO can binarise one named component with a threshold", () => {
    const rewards = [
      [0.9, 1],
      [0.2, 0],
      [0.7, 1],
      [0.1, 1],
    ];
    const r = computeAdvantages(
      { groups: [{ rewards }], components: ["score", "fmt"] },
      {
        estimator: "dr_grpo",
        sgrpo: { p: 0.1, component: "score", successThreshold: 0.5 },
      },
      { diagnostics: true },
    );
    assert.equal(r.groups[0]!.diagnostics!.sgrpo!.successes, 2);
    assertClose(r.groups[0]!.diagnostics!.sgrpo!.weight, sgrpoWeight(4, 2, 0.1), "w*");
  });
});

describe("input validation", () => {
  it("NaN names group, rollout and component", () => {
    const groups = [0, 1, 2].map((g) => ({
      rewards: Array.from({ length: 6 }, (_, i) => [1, 0, i, g === 2 && i === 5 ? Number.NaN : 0.5]),
    }));
    assert.throws(
      () => packBatch({ groups, components: ["fmt", "syntax", "runtime", "pass"] }),
      (err: unknown) => {
        assert.ok(err instanceof AdvantageInputError);
        assert.equal(err.message, "groups[2].rewards[5][3] is NaN (component 'pass')");
        assert.equal(err.path, "groups[2].rewards[5][3]");
        assert.equal(err.retryable, false);
        assert.ok(isAdvantageError(err));
        return true;
      },
    );
  });
  it("±Infinity is rejected, in nested and flat input", () => {
    assert.throws(
      () => packBatch({ groups: [{ rewards: [[1], [Number.POSITIVE_INFINITY]] }] }),
      /groups\[0\]\.rewards\[1\]\[0\] is Infinity \(component '0'\)/,
    );
    assert.throws(
      () =>
        packFlatBatch({
          values: Float64Array.of(1, 2, 3, Number.NEGATIVE_INFINITY),
          groupSizes: [2, 2],
          components: 1,
        }),
      /groups\[1\]\.rewards\[1\]\[0\] is -Infinity/,
    );
  });
  it("shape errors name the path", () => {
    const cases: [AdvantageBatchInput, RegExp][] = [
      [{ groups: [{ rewards: [[1, 2], [3]] }] }, /groups\[0\]\.rewards\[1\] has 1 entries, expected K=2/],
      [
        { groups: [{ rewards: [[1, 2]] }], weights: [1] },
        /groups\[0\]\.rewards\[0\] has 2 entries, expected K=1/,
      ],
      [{ groups: [{ rewards: [] }] }, /groups\[0\]\.rewards is empty/],
      [{ groups: [{ rewards: [[1]] }], weights: [Number.NaN] }, /weights\[0\] is NaN/],
      [
        { groups: [{ rewards: [["x" as unknown as number]] }] },
        /groups\[0\]\.rewards\[0\]\[0\] must be a number or null, got string/,
      ],
      [
        { groups: [{ rewards: [[1], [2]], lengths: [1, -1] }] },
        /groups\[0\]\.lengths\[1\] must be a finite number ≥ 0/,
      ],
      [
        { groups: [{ rewards: [[1], [2]], notApplicable: [[false]] }] },
        /groups\[0\]\.notApplicable must have one row per rollout/,
      ],
      [
        { groups: [{ rewards: [[1]] }], components: ["a", "b"] },
        /groups\[0\]\.rewards\[0\] has 1 entries, expected K=2/,
      ],
      [{ groups: [{ rewards: [[1, 2]] }], components: ["a", "a"] }, /components\[1\] 'a' is a duplicate/],
    ];
    for (const [input, re] of cases) assert.throws(() => packBatch(input), re);
  });
  it("the engine rejects a too-short out buffer and unknown component references", () => {
    const batch = packBatch({ groups: [{ rewards: [[1], [0]] }], components: ["pass"] });
    const engine = createAdvantageEngine();
    assert.throws(
      () => engine.run(batch, compileAdvantageConfig({ estimator: "grpo" }), { out: new Float64Array(1) }),
      /out has length 1, need ≥ N=2/,
    );
    assert.throws(
      () =>
        engine.run(batch, compileAdvantageConfig({ estimator: "grpo", sgrpo: { p: 0.1, component: "acc" } })),
      /sgrpo\.component 'acc' is not a component; components: pass/,
    );
  });
  it("dapoKeepGroup rejects non-finite values and does not keep an empty group", () => {
    assert.throws(() => dapoKeepGroup([1, Number.NaN]), AdvantageInputError);
    assert.equal(dapoKeepGroup([]), false);
  });
});

describe("registry and options", () => {
  it("aliases resolve to the canonical name", () => {
    assert.equal(resolveEstimatorName("corr_grpo"), "grpo_covariance_coefficient");
    assert.equal(resolveEstimatorName("corrgrpo"), "grpo_covariance_coefficient");
    assert.equal(getAdvantageEstimator("corr_grpo"), ADVANTAGE_ESTIMATORS.grpo_covariance_coefficient);
    assert.deepEqual(Object.keys(ADVANTAGE_ESTIMATORS).sort(), [...AdvantageEstimatorNames].sort());
  });
  it("an unknown name throws listing every supported name", () => {
    assert.throws(
      () => compileUntypedAdvantageConfig({ estimator: "ppo" }),
      (err: unknown) => {
        assert.ok(err instanceof UnknownEstimatorError);
        assert.equal(err.name, "UnknownEstimatorError");
        for (const n of [...AdvantageEstimatorNames, "corr_grpo", "corrgrpo"])
          assert.ok(err.message.includes(n), n);
        assert.equal(err.requested, "ppo");
        return true;
      },
    );
  });
  it("registering a name twice throws; so does a missing name", () => {
    const defs = Object.values(ADVANTAGE_ESTIMATORS);
    assert.throws(
      () => createEstimatorRegistry([...defs, ADVANTAGE_ESTIMATORS.grpo]),
      /'grpo' is registered twice/,
    );
    assert.throws(() => createEstimatorRegistry(defs.slice(1)), EstimatorRegistryError);
    assert.doesNotThrow(() => createEstimatorRegistry(defs));
  });
  it("option errors name the key and list what is accepted", () => {
    const cases: [Parameters<typeof compileUntypedAdvantageConfig>[0], RegExp][] = [
      [
        { estimator: "grpo", options: { epsilonPlacement: "inside" } },
        /'options\.epsilonPlacement' is not an option of grpo; accepted: stdMode, epsilon, scale, singleton/,
      ],
      [{ estimator: "dr_grpo", options: { epsilon: 1 } }, /accepted: none/],
      [
        { estimator: "grpo", options: { scale: "global" } },
        /'options\.scale' must be one of group \| batch \| none/,
      ],
      [{ estimator: "mo_grpo", options: { epsilon: -1 } }, /'options\.epsilon' must be a finite number ≥ 0/],
      [
        { estimator: "corr_grpo", options: { epsilon: 0, coefficientSumFallbackBelow: 0 } },
        /'options\.epsilon' must be > 0 unless/,
      ],
      [
        { estimator: "corr_grpo", options: { coefficientSumFallbackBelow: -0.5 } },
        /'options\.coefficientSumFallbackBelow' must be a finite number ≥ 0, got -0\.5/,
      ],
      [{ estimator: "corr_grpo", options: { normByStd: "yes" } }, /'options\.normByStd' must be a boolean/],
      [{ estimator: "grpo", sgrpo: { p: 0.5 } }, /'sgrpo\.p' must be a number in \[0, 0\.5\)/],
      [
        { estimator: "grpo", sgrpo: { p: 0.1, variant: "paper" as "code" } },
        /'sgrpo\.variant' must be one of code \| dr_grpo/,
      ],
      [{ estimator: "grpo", sgrpo: { p: 0.1, q: 1 } as never }, /'sgrpo\.q' is not an S-GRPO option/],
      [{ estimator: "grpo", dynamicSampling: "yes" as never }, /'dynamicSampling' must be a boolean/],
    ];
    for (const [config, re] of cases) {
      assert.throws(
        () => compileUntypedAdvantageConfig(config),
        (err: unknown) => {
          assert.ok(err instanceof AdvantageOptionsError, String(err));
          assert.match(err.message, re);
          return true;
        },
      );
    }
    assert.doesNotThrow(() =>
      compileUntypedAdvantageConfig({
        estimator: "corr_grpo",
        options: { epsilon: 0, coefficientSumFloor: 1 },
      }),
    );
  });
  it("sgrpoWeight validates n, k and p", () => {
    assert.throws(() => sgrpoWeight(8, 9, 0.1), /'k' must be an integer in \[0, n=8\]/);
    assert.throws(() => sgrpoWeight(8, 1, -0.1), /'p' must be a number in \[0, 0\.5\)/);
    assert.equal(sgrpoWeight(0, 0, 0.1), 0);
  });
  it("errors carry a cause", () => {
    const cause = new Error("root");
    const err = new AdvantageInputError("groups", "bad", { cause });
    assert.equal(err.cause, cause);
    assert.equal(isAdvantageError({ name: "AdvantageInputError", message: "x" }), true);
    assert.equal(isAdvantageError(new Error("x")), false);
  });
});

describe("S-GRPO in mixed-domain batches", () => {
  it("leaves a group alone when its S-GRPO component is NOT_APPLICABLE for every rollout", () => {
    // Group 0 has the binary outcome (component 0); group 1 (another domain) has only component 1.
    const input: AdvantageBatchInput = {
      components: ["pass", "format"],
      groups: [
        {
          rewards: [
            [1, 1],
            [0, 1],
            [0, 0],
            [0, 1],
            [1, 0],
            [0, 1],
            [0, 0],
            [0, 1],
          ],
        },
        {
          rewards: [
            [null, 1],
            [null, 0],
            [null, 0],
            [null, 1],
          ],
        },
      ],
    };
    const plain = computeAdvantages(input, { estimator: "grpo" });
    const noisy = computeAdvantages(
      input,
      { estimator: "grpo", sgrpo: { p: 0.1, component: "pass" } },
      { diagnostics: true },
    );
    assert.deepEqual(noisy.groups[1]!.advantages, plain.groups[1]!.advantages, "unweighted");
    assert.equal(noisy.groups[1]!.diagnostics!.sgrpo!.weight, 1);
    const w = sgrpoWeight(8, 2, 0.1);
    assert.ok(w > 0 && w < 1);
    noisy.groups[0]!.advantages.forEach((a, i) => {
      assertClose(a, w * plain.groups[0]!.advantages[i]!, `rollout ${i}`);
    });
  });
});
