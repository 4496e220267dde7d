import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import {
  experimentSummary,
  experimentWindows,
  explainRun,
  type MetricsLine,
  PALETTE,
  readMetrics,
  renderExperimentReport,
  renderRunReport,
  seriesStyle,
  smooth,
} from "./report.js";

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
  assert.match(html, /<th>weighted reward, steps 1–6 \(mean ± sd over seeds\)<\/th>/);
  assert.match(
    html,
    /<tr><th>grpo<\/th><td>0\.1500 ± 0\.0707 \(n=2\)<\/td><td>0\.1500 ± 0\.0707 \(n=2\)<\/td><\/tr>/,
  );
  assert.match(
    html,
    /<tr><th>corr_grpo<\/th><td>1\.1500 ± 0\.0707 \(n=2\)<\/td><td>1\.1500 ± 0\.0707 \(n=2\)<\/td><\/tr>/,
  );
  assert.ok(!html.includes("True flip rate"), "one condition: no per-condition sections");
});

it("experimentWindows: the last 10 steps, and the 10 steps that end at the midpoint", () => {
  assert.deepEqual(experimentWindows(40), { early: [11, 20], final: [31, 40] });
  assert.deepEqual(experimentWindows(20), { early: [1, 10], final: [11, 20] });
  assert.deepEqual(experimentWindows(3), { early: [1, 1], final: [1, 3] });
});

it("summarises an experiment per true flip rate and arm: clean reward, early and final window, mean ± sd over seeds", () => {
  // Arm a: clean reward = step/40 + seed/100; arm b (S-GRPO at p 0.1): half of it. Observed = clean − 0.2 under noise.
  const run = (estimator: string, noise: number, seed: number, scale: number, assumedP?: number) => ({
    estimator,
    seed,
    noise,
    ...(assumedP !== undefined ? { assumedP } : {}),
    lines: Array.from({ length: 40 }, (_, i): MetricsLine => {
      const clean = scale * ((i + 1) / 40 + seed / 100);
      return {
        step: i + 1,
        weightedReward: noise > 0 ? clean - 0.2 : clean,
        ...(noise > 0
          ? { weightedRewardClean: clean, rewardNoise: { p: noise, components: ["m/c"], flipped: 1 } }
          : {}),
        ...(assumedP !== undefined ? { sgrpo: { meanWeight: 0.5, gatedGroups: i % 2 } } : {}),
      };
    }),
  });
  const runs = [0, 0.2].flatMap((noise) =>
    [1, 2].flatMap((seed) => [run("a", noise, seed, 1), run("s_grpo@0.1", noise, seed, 0.5, 0.1)]),
  );
  const conditions = experimentSummary(runs);
  assert.deepEqual(
    conditions.map((c) => c.noise),
    [0, 0.2],
  );
  const close = (x: number | undefined, y: number) =>
    assert.ok(Math.abs((x ?? Number.NaN) - y) < 1e-12, `${x} ≠ ${y}`);
  for (const c of conditions) {
    const a = c.arms["a"]!;
    const b = c.arms["s_grpo@0.1"]!;
    assert.equal(a.seeds, 2);
    assert.equal(a.assumedP, undefined);
    assert.equal(b.assumedP, 0.1);
    // Steps 11–20: mean step/40 = 15.5/40; seeds 1, 2 add 0.01, 0.02.
    close(a.clean.early?.mean, 15.5 / 40 + 0.015);
    close(a.clean.early?.sd, Math.sqrt(0.00005));
    close(a.clean.final?.mean, 35.5 / 40 + 0.015);
    close(b.clean.final?.mean, 0.5 * (35.5 / 40 + 0.015));
    close(a.observed.final?.mean, 35.5 / 40 + 0.015 - (c.noise > 0 ? 0.2 : 0));
    assert.equal(a.clean.final?.n, 2);
    assert.deepEqual(b.sgrpo, { meanWeight: 0.5, gatedGroupsPerStep: 0.5 });
  }
  const html = renderExperimentReport("exp", runs, "sweep");
  assert.match(html, /<h2>Clean weighted reward by true flip rate<\/h2>/);
  assert.match(html, /<th>p = 0\.2, early<\/th><th>p = 0\.2, final<\/th>/);
  assert.match(html, /<h2>True flip rate p = 0<\/h2>/);
  assert.match(html, /<h2>True flip rate p = 0\.2<\/h2>/);
  assert.match(html, /<tr><th>s_grpo@0\.1<\/th><td>0\.1<\/td>/, "the assumed p is a column");
  assert.match(html, /Clean weighted reward \(the services' values, before the injected noise\), p = 0\.2/);
  assert.match(html, /Weighted reward, p = 0: mean over seeds/);
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

/** CIELAB of an sRGB hex colour (D65), to check the palette's colours lie apart. */
function lab(hex: string): [number, number, number] {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  const f = (t: number) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

it("24 components get 24 distinct colours, far apart in CIELAB; 72 get distinct (colour, dash) styles", () => {
  assert.ok(PALETTE.length >= 24);
  const styles = Array.from({ length: 24 }, (_, i) => seriesStyle(i));
  assert.equal(new Set(styles.map((s) => `${s.color}|${s.dash}`)).size, 24);
  assert.equal(new Set(styles.map((s) => s.color.toLowerCase())).size, 24, "distinct by colour alone");
  let closest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 24; i++)
    for (let j = i + 1; j < 24; j++) {
      const [a, b] = [lab(styles[i]!.color), lab(styles[j]!.color)];
      closest = Math.min(closest, Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]));
    }
  assert.ok(closest >= 25, `closest pair ΔE*ab ${closest.toFixed(1)} < 25`);
  const many = Array.from({ length: 72 }, (_, i) => seriesStyle(i));
  assert.equal(new Set(many.map((s) => `${s.color}|${s.dash}`)).size, 72);
});

/** `name → legend colour` of each chart (figure) in the page, by caption. */
function legends(html: string): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const fig of html.matchAll(/<figure><figcaption>([^<]*)<\/figcaption>([\s\S]*?)<\/figure>/g)) {
    const entries = [
      ...fig[2]!.matchAll(/<i style="border-top:3px (\w+) (#[0-9a-f]{6})"><\/i>([^<]*)<\/span>/g),
    ];
    out.set(fig[1]!, new Map(entries.map((e) => [e[3]!, `${e[2]} ${e[1]}`])));
  }
  return out;
}

it("a component keeps one colour in every chart of a report, and 24 components stay distinct", () => {
  const names = Array.from({ length: 24 }, (_, i) => `svc${i % 3}/c${i}`);
  // The share charts list the components in reverse: colours follow the name, not the position.
  const lines: MetricsLine[] = Array.from({ length: 6 }, (_, s) => ({
    step: s + 1,
    weightedReward: s / 10,
    components: Object.fromEntries(names.map((n, k) => [n, { mean: k + s / 10, std: 0 }])),
    denominatorShares: {
      components: [...names].reverse(),
      grpoRow: names.map(() => 1 / 24),
      corrGrpoRow: names.map(() => 1 / 24),
    },
  }));
  const charts = legends(renderRunReport("r", lines));
  const comp = charts.get("Per-component mean reward (moving average over 5 steps)")!;
  assert.equal(comp.size, 24);
  assert.equal(new Set(comp.values()).size, 24, "24 distinct styles in one chart");
  let shareCharts = 0;
  for (const [caption, legend] of charts) {
    if (!caption.includes("share of the denominator")) continue;
    shareCharts++;
    assert.equal(legend.size, 24);
    for (const [n, style] of legend) assert.equal(style, comp.get(n), `${n} in '${caption}'`);
  }
  assert.equal(shareCharts, 2);
});

it("every point, line and heatmap cell carries a title with the step and the exact value", () => {
  const lines = Array.from({ length: 8 }, (_, i) => line(i + 1, i / 10));
  lines[2] = {
    ...lines[2]!,
    weightedReward: 1 / 3,
    components: { "a/x": { mean: 0.1234567890123, std: 0 }, "b/y": { mean: 1, std: null } },
    correlation: {
      components: ["a/x", "b/y"],
      matrix: [
        [1, 0.987654321012],
        [0.987654321012, 1],
      ],
    },
  };
  const html = renderRunReport("r", lines);
  const svgs = [...html.matchAll(/<svg[\s\S]*?<\/svg>/g)].map((m) => m[0]);
  assert.equal(svgs.length, 7);
  let points = 0;
  for (const svg of svgs) {
    for (const el of svg.matchAll(/<(circle|path|rect)\b[^>]*?(\/>|>([\s\S]*?)<\/\1>)/g)) {
      assert.notEqual(el[2], "/>", `untitled ${el[0].slice(0, 80)}`);
      assert.match(el[3]!, /^<title>[^<]+<\/title>$/, el[0].slice(0, 80));
      if (el[1] === "circle") {
        points++;
        assert.match(el[3]!, /· step \d+: (-?\d|n\/a)/);
      }
    }
  }
  // reward (raw + moving average), 2 components, 2 × 2 shares, entropy, loss/kl/clip: 8 steps each,
  // less b/y's moving average at step 1 (no value yet: a gap, no point)
  assert.equal(points, 8 * (2 + 2 + 4 + 1 + 3) - 1);
  assert.match(
    html,
    /<title>weighted reward \(band: ± std over rollouts\) · step 3: 0\.3333333333333333 \(band 0\.2333333333333333 … 0\.43333333333333335\)<\/title>/,
  );
  assert.match(html, /<title>a\/x · step 3: [0-9.]+ \(this step 0\.1234567890123\)<\/title>/);
  assert.match(html, /<title>a\/x × b\/y · step 3: 0\.987654321012<\/title>/);
  assert.match(html, /<title>a\/x × b\/y · step 1: n\/a \(no group where both varied\)<\/title>/);
  assert.match(html, /<title>entropy: 8 steps, 0\.92 … 0\.99<\/title>/, "a line's title names its range");
});

const idleLine = (step: number, extra: Partial<MetricsLine> = {}): MetricsLine => ({
  step,
  weightedReward: null,
  estimator: "grpo",
  components: { "length/overlong": { mean: null, std: null }, "ghost/x": { mean: null, std: null } },
  droppedGroups: 2,
  groups: { used: 0 },
  samples: 0,
  missingResults: { ghost: 16, length: 1 },
  deadlineMs: 300,
  rejectedResults: {},
  assembler: { received: 40, late: 0, unexpected: 0, mismatched: 0, rejected: 0 },
  ...extra,
});

it("explains a run whose every group was dropped: the deadline, the missing services, the rejected results", () => {
  const lines = [
    idleLine(1, { rejectedResults: { ghost: { "out-of-range": 2 } } }),
    idleLine(2, { assembler: { received: 40, late: 3, unexpected: 0, mismatched: 1, rejected: 2 } }),
  ];
  const why = explainRun(lines);
  assert.deepEqual(why, [
    "No step trained: every group was dropped in all 2 steps, so the policy was never updated.",
    "4 groups were dropped at the deadline (groups.deadlineMs = 300 ms) with results still missing.",
    "Missing at the deadline: 32 results from service 'ghost', 2 results from service 'length' — a service that is down, overloaded or slower than the deadline (is it running? raise groups.deadlineMs?).",
    "Rejected results (their slots stay empty, so their groups could not complete): service 'ghost' out-of-range: 2.",
    "1 result named another run, service or rollout than its subject and was ignored (assembler.mismatched).",
    "3 results arrived after their step was applied (assembler.late): scored after the deadline.",
  ]);
  const html = renderRunReport("r", lines);
  assert.match(html, /<div class="notice" role="alert"><p><b>No step trained: every group was dropped/);
  assert.match(html, /<li>Missing at the deadline: 32 results from service 'ghost'/);
  assert.match(html, /2 steps \(0 trained\)/);
  assert.ok(!/NaN|undefined/.test(html));
});

it("names the steps that trained nothing in a run that otherwise trained, and says nothing when all trained", () => {
  const ok = (s: number): MetricsLine => ({ ...line(s, 0.5), groups: { used: 2 }, samples: 16 });
  const why = explainRun([ok(1), idleLine(2, { missingResults: { ghost: 16 } }), ok(3)]);
  assert.equal(why[0], "1 of 3 steps trained nothing (every group dropped): step 2.");
  assert.match(why[2]!, /^Missing at the deadline: 16 results from service 'ghost' —/);
  assert.deepEqual(explainRun([ok(1), ok(2)]), []);
  // Steps that trained but lost a group at the deadline are named too.
  const lossy = explainRun([
    ok(1),
    { ...ok(2), droppedGroups: 1, missingResults: { ghost: 8 }, deadlineMs: 300 },
    { ...ok(3), groups: { used: 2, imputed: 1 }, missingResults: { ghost: 2 }, deadlineMs: 300 },
  ]);
  assert.deepEqual(lossy.slice(0, 3), [
    "Groups were incomplete at the deadline in 2 of 3 steps (steps 2, 3); the run trained on the rest.",
    "1 group was dropped at the deadline (groups.deadlineMs = 300 ms) with results still missing.",
    "1 group was imputed at the deadline (groups.deadlineMs = 300 ms; groups.missing = impute): a missing result takes its group's mean, so that component carried no signal there.",
  ]);
  assert.match(lossy[3]!, /^Missing at the deadline: 10 results from service 'ghost' —/);
  assert.ok(!renderRunReport("r", [ok(1), ok(2)]).includes('class="notice"'));
  // Metrics written before missingResults existed: say that they do not record it.
  const { missingResults: _m, ...old } = idleLine(1);
  assert.match(explainRun([old]).join(" "), /do not record which service was missing/);
});

it("explains a run that stopped before step 1: an empty metrics.jsonl", () => {
  const dir = mkdtempSync(join(tmpdir(), "report-"));
  try {
    const path = join(dir, "metrics.jsonl");
    writeFileSync(path, "");
    const lines = readMetrics(path);
    assert.deepEqual(lines, []);
    const html = renderRunReport("r", lines, "Learner x");
    assert.match(html, /No step finished: metrics\.jsonl has no lines, so the run stopped before step 1/);
    assert.ok(!html.includes("<svg"), "no empty charts");
    assert.match(html, /Learner x/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("an experiment report names the runs that trained nothing and why", () => {
  const html = renderExperimentReport(
    "exp",
    [
      { estimator: "grpo", seed: 1, lines: [line(1, 0.5)] },
      { estimator: "grpo", seed: 2, lines: [idleLine(1)] },
    ],
    "",
  );
  assert.match(html, /<li>grpo, seed 2: No step trained: every group was dropped in all 1 step,/);
  assert.ok(!html.includes("seed 1:"));
});
