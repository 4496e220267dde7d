/**
 * Fuzzing of `reward-mesh advantages`: any argv and any stdin give advantages (exit 0, one JSON line)
 * or exactly one error line naming the problem (exit 2), never an "internal error". Fixed seed,
 * bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  fuzzCallAsync,
  fuzzParameters,
  mutatedText,
  mutatedValue,
  nastyString,
  PROTOTYPE_KEYS,
  toJsonText,
} from "@reward-mesh/sdk/testing";
import { runAdvantagesCli } from "./cli.js";

const INPUTS: unknown[] = [
  {
    groups: [
      {
        rewards: [
          [1, 0.5],
          [0, 0.25],
          [1, 1],
          [0, 0],
        ],
      },
    ],
    weights: [1, 0.5],
  },
  {
    estimator: "gdpo",
    options: { epsilon: 1e-6 },
    components: ["pass", "format"],
    groups: [
      {
        rewards: [
          [1, 0],
          [0, 1],
        ],
        notApplicable: [
          [false, true],
          [false, false],
        ],
        lengths: [10, 20],
      },
      { rewards: [[1, 1]] },
    ],
    p: 0.1,
    dynamicSampling: { component: "pass" },
  },
];

const flag = fc.oneof(
  fc.constantFrom(
    "--estimator",
    "corr_grpo",
    "grpo",
    "dr_grpo",
    "mo_grpo",
    "--weights",
    "1,0.5",
    "--components",
    "pass,format",
    "--diagnostics",
    "--epsilon=0",
    "--p",
    "0.2",
    "--sgrpo-component",
    "1",
    "--dynamic-sampling",
    "--dynamic-sampling-component=pass",
    "--norm-by-std=maybe",
    "--std-mode",
    "population",
  ),
  fc.constantFrom(...PROTOTYPE_KEYS),
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => `--${k}`),
  nastyString(10),
);

describe("fuzz: reward-mesh advantages", () => {
  it("gives advantages or one line naming the problem, never an internal error", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(flag, { maxLength: 5 }).map((a) => ["--estimator", "grpo", ...a]),
        fc.oneof(mutatedValue(INPUTS).map(toJsonText), mutatedText(INPUTS.map((i) => JSON.stringify(i)))),
        async (argv, stdin) => {
          const r = await fuzzCallAsync("runAdvantagesCli", () => runAdvantagesCli(argv, stdin));
          assert.ok(r.ok);
          const { stdout, stderr, exitCode } = r.value;
          if (exitCode === 0) {
            assert.equal(stderr, "");
            assert.equal(typeof JSON.parse(stdout), "object");
          } else {
            assert.equal(exitCode, 2);
            assert.match(stderr, /^reward-mesh advantages: [^\n]+\n$/);
            assert.doesNotMatch(stderr, /internal error/, `${JSON.stringify(argv)} ${stdin.slice(0, 300)}`);
          }
        },
      ),
      fuzzParameters(400),
    );
  });
});
