/**
 * `reward-mesh advantages`, called as a pure function: flags and JSON options, output shape,
 * diagnostics, steps, and one-line errors with exit code 2.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runAdvantagesCli } from "./cli.js";
import { assertClose, loadVectors } from "./testing.js";

const V = loadVectors();
const f = V.f_figure2_reconstruction_G4;
const figure2 = JSON.stringify({ groups: [{ rewards: f.rewards }], weights: f.weights });

async function ok(argv: string[], stdin: string) {
  const r = await runAdvantagesCli(argv, stdin);
  assert.equal(r.stderr, "", r.stderr);
  assert.equal(r.exitCode, 0);
  assert.ok(r.stdout.endsWith("}\n"), "output ends with a newline");
  // biome-ignore lint/suspicious/noExplicitAny: parsed CLI JSON.
  return JSON.parse(r.stdout) as any;
}

async function fails(argv: string[], stdin: string, re: RegExp) {
  const r = await runAdvantagesCli(argv, stdin);
  assert.equal(r.exitCode, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^reward-mesh advantages: [^\n]+\n$/, "exactly one line on stderr");
  assert.match(r.stderr, re);
}

describe("reward-mesh advantages", () => {
  it("computes CorrGRPO for the Figure 2 group via an alias", async () => {
    const out = await ok(["--estimator", "corr_grpo"], figure2);
    assert.equal(out.estimator, "grpo_covariance_coefficient");
    assert.equal(out.groups.length, 1);
    assertClose(out.groups[0].advantages, f.expected.corr_grpo, "advantages");
    assert.equal(out.groups[0].diagnostics, undefined, "no diagnostics unless asked");
  });

  it("--diagnostics adds matrices and shares (without repeating the advantages)", async () => {
    const out = await ok(["--estimator=grpo_covariance_coefficient", "--diagnostics"], figure2);
    const d = out.groups[0].diagnostics;
    assertClose(d.correlation, f.expected.corr_grpo_detail.correlation, "correlation");
    assertClose(d.grpoShares.diagonalShare, f.expected.grpo_covariance_shares.diagonalShare, "shares");
    assert.equal(d.advantages, undefined);
  });

  it("flags override the JSON; --epsilon, --weights and --epsilon-placement reach the estimator", async () => {
    const a1 = V.a1_two_binary_components_G4;
    const input = JSON.stringify({
      estimator: "dr_grpo",
      weights: [5, 5],
      groups: [{ rewards: a1.rewards }],
    });
    const trl = await ok(["--estimator", "grpo", "--weights", "1,0.5", "--epsilon", "1e-4"], input);
    assertClose(trl.groups[0].advantages, a1.expected.grpo_trl, "grpo_trl");
    const paper = await ok(
      ["--estimator", "corrgrpo", "--weights", "1,0.5", "--epsilon-placement", "outside"],
      input,
    );
    assertClose(paper.groups[0].advantages, a1.expected.corr_grpo_paper_eps, "paper eps");
    const fromJson = await ok([], input);
    assert.equal(fromJson.estimator, "dr_grpo");
    assertClose(fromJson.groups[0].advantages, [5, 0, 0, -5], "json weights (5, 5)");
  });

  it("accepts estimator options, p and S-GRPO settings in the JSON", async () => {
    const e2 = V.e2_sgrpo_advantage_G8;
    const input = JSON.stringify({
      estimator: "grpo",
      options: { epsilon: 1e-8 },
      p: e2.p,
      groups: [{ rewards: (e2.rewards as number[]).map((x) => [x]) }],
    });
    const code = await ok(["--diagnostics"], input);
    assertClose(code.groups[0].advantages, e2.expected.advantage_code, "code");
    assertClose(code.groups[0].diagnostics.sgrpo.weight, e2.expected.weight, "weight");
    const dr = await ok(["--sgrpo-variant", "dr_grpo"], input);
    assertClose(dr.groups[0].advantages, e2.expected.advantage_dr_grpo_reading, "dr reading");
    const flagP = await ok(
      ["--p", "0.15", "--epsilon", "1e-8"],
      JSON.stringify({ ...JSON.parse(input), p: undefined }),
    );
    assertClose(flagP.groups[0].advantages, e2.expected.advantage_code, "--p");
  });

  it("reports kept with dynamic sampling, degenerate singleton groups, N/A flags and lengths", async () => {
    const input = JSON.stringify({
      components: ["pass", "fmt"],
      groups: [
        {
          rewards: [
            [1, 1],
            [1, 1],
          ],
        },
        { rewards: [[1, 0.5]] },
        {
          rewards: [
            [1, null],
            [0, 1],
            [0.5, 1],
          ],
          notApplicable: [
            [false, false],
            [false, false],
            [false, true],
          ],
          lengths: [3, 4, 5],
        },
      ],
    });
    const out = await ok(
      ["--estimator", "gdpo", "--batch-norm", "token", "--dynamic-sampling", "--diagnostics"],
      input,
    );
    assert.deepEqual(
      out.groups.map((g: { kept: boolean }) => g.kept),
      [false, true, true],
    );
    assert.equal(out.groups[1].degenerate, true);
    assert.equal(out.groups[0].degenerate, undefined);
    assert.deepEqual(out.groups[2].diagnostics.notApplicable.partialCounts, [0, 2]);
  });

  it("--help prints usage listing the estimators", async () => {
    const r = await runAdvantagesCli(["--help"], "");
    assert.equal(r.exitCode, 0);
    assert.match(r.stdout, /usage: reward-mesh advantages --estimator <name>/);
    assert.match(r.stdout, /gdpo_covariance_coefficient/);
  });

  it("errors are one line on stderr with exit code 2", async () => {
    await fails(
      ["--estimator", "ppo"],
      figure2,
      /unknown advantage estimator 'ppo'; supported: grpo, dr_grpo, .*corrgrpo/,
    );
    await fails([], figure2, /--estimator is required/);
    await fails(["--estimator", "grpo"], "", /no input on stdin/);
    await fails(["--estimator", "grpo"], "{not json", /stdin is not valid JSON/);
    await fails(["--estimator", "grpo", "--bogus"], figure2, /unknown flag '--bogus'/);
    // Fuzz finding: names of Object members were found on the flag table's prototype (internal error).
    await fails(["--estimator", "grpo", "__proto__", "x"], figure2, /: unexpected argument '__proto__'/);
    await fails(["--estimator", "grpo", "--constructor"], figure2, /: unknown flag '--constructor'/);
    await fails(["--estimator"], figure2, /--estimator needs a value/);
    await fails(["--estimator", "grpo", "--p", "abc"], figure2, /--p expects a finite number, got 'abc'/);
    await fails(["--estimator", "grpo", "--p", "0.5"], figure2, /'sgrpo\.p' must be a number in \[0, 0\.5\)/);
    await fails(
      ["--estimator", "grpo", "--weights", "1,2"],
      figure2,
      /groups\[0\]\.rewards\[0\] has 3 entries, expected K=2/,
    );
    await fails(["--estimator", "grpo", "--sgrpo-variant", "code"], figure2, /S-GRPO options need --p/);
    await fails(
      ["--estimator", "grpo", "--epsilon-placement", "inside"],
      figure2,
      /'options\.epsilonPlacement' is not an option of grpo/,
    );
    await fails(
      ["--estimator", "grpo"],
      JSON.stringify({ groups: [], weight: [1] }),
      /unknown input key 'weight'/,
    );
    await fails(
      ["--estimator", "grpo", "--components", "a,b,c"],
      '{"groups":[{"rewards":[[1,2,3],[0,2,1e400]]}]}',
      /groups\[0\]\.rewards\[1\]\[2\] is Infinity \(component 'c'\)/,
    );
  });

  it("an empty batch gives an empty result", async () => {
    const out = await ok(["--estimator", "mo_grpo"], JSON.stringify({ groups: [] }));
    assert.deepEqual(out.groups, []);
  });
});
