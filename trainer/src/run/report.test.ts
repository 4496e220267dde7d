import assert from "node:assert/strict";
import { it } from "node:test";
import { type MetricsLine, renderExperimentReport, renderRunReport, smooth } from "./report.js";

const line = (step: number, w: number | null): MetricsLine => ({
  step,
  weightedReward: w,
  weightedRewardStd: 0.1,
  estimator: "grpo_covariance_coefficient",
  components: { "a/x": { mean: w, std: 0 }, "b/y": { mean: step % 2 ? null : 1, std: null } },
  correlation: {
    components: ["a/x", "b/y"],
    matrix: [
      [1, step % 2 ? null : 0.5],
      [0.5, 1],
    ],
  },
  denominatorShares: { components: ["a/x", "b/y"], grpoRow: [0.9, 0.1], corrGrpoRow: [0.5, 0.5] },
  entropy: 1 - step / 100,
  loss: 0.01,
  kl: 0.001,
  clipFraction: 0,
});

it("renders a self-contained run report with every chart and the start/end table", () => {
  const html = renderRunReport(
    "r<1>",
    Array.from({ length: 20 }, (_, i) => line(i + 1, i / 10)),
    "note & more",
  );
  assert.match(html, /^<!doctype html>/);
  assert.ok(!html.includes("<script"), "no scripts");
  assert.ok(!/NaN|undefined/.test(html), "no NaN or undefined in the page");
  assert.match(html, /reward-mesh run r&lt;1&gt;/, "titles are escaped");
  assert.match(html, /note &amp; more/);
  assert.equal(
    (html.match(/<svg/g) ?? []).length,
    7,
    "reward, components, heatmap, two share charts, entropy, losses",
  );
  // first 10 steps average 0.45, last 10 average 1.45
  assert.match(html, /<th>weighted reward<\/th><td>0\.4500<\/td><td>1\.4500<\/td>/);
  assert.match(html, /a\/x × b\/y/);
});

it("smooths over defined values only", () => {
  const s = smooth(
    {
      name: "s",
      points: [
        [1, 1],
        [2, null],
        [3, 3],
        [4, 5],
      ],
    },
    2,
  );
  assert.deepEqual(s.points, [
    [1, 1],
    [2, 1],
    [3, 2],
    [4, 4],
  ]);
});

it("renders an experiment comparison with one row per estimator", () => {
  const runs = ["grpo", "corr_grpo"].flatMap((e, k) =>
    [1, 2].map((seed) => ({
      estimator: e,
      seed,
      lines: Array.from({ length: 12 }, (_, i) => line(i + 1, k + seed / 10)),
    })),
  );
  const html = renderExperimentReport("exp", runs, "2 × 2");
  assert.match(html, /<tr><th>grpo<\/th><td>0\.1500 ± 0\.0707 \(n=2\)<\/td><\/tr>/);
  assert.match(html, /<tr><th>corr_grpo<\/th><td>1\.1500 ± 0\.0707 \(n=2\)<\/td><\/tr>/);
});

it("lists the rejected results of the run per service and reason, or says there were none", () => {
  const lines: MetricsLine[] = [
    { ...line(1, 0.1), rejectedResults: { "tool-call": { "out-of-range": 2, "non-finite": 1 } } },
    { ...line(2, 0.2), rejectedResults: {} },
    {
      ...line(3, 0.3),
      rejectedResults: { "tool-call": { "out-of-range": 1 }, "x<y": { "wrong-version": 4 } },
    },
  ];
  const html = renderRunReport("r", lines);
  assert.match(html, /<h2>Rejected results<\/h2>/);
  assert.match(html, /<tr><th>tool-call<\/th><td>non-finite<\/td><td>1<\/td><\/tr>/);
  assert.match(html, /<tr><th>tool-call<\/th><td>out-of-range<\/td><td>3<\/td><\/tr>/);
  assert.match(html, /<tr><th>x&lt;y<\/th><td>wrong-version<\/td><td>4<\/td><\/tr>/);
  assert.match(renderRunReport("r", [line(1, 0.1)]), /Rejected results: none/);
});
