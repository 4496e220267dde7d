/**
 * Advantage-engine throughput: groups per second for every estimator at G ∈ {8, 16, 64} and
 * K ∈ {2, 4, 7}, with and without diagnostics, on one core (one thread, synchronous runs).
 *
 * Each configuration runs a pre-packed random batch through a reused engine with caller-owned
 * `out` / `flags` buffers (the trainer's hot path; validation happens once in `packFlatBatch` and
 * is measured separately as `pack`). The figure is the median over REPEATS timed windows.
 * Writes `bench/results/advantages.json` and prints a summary table.
 *
 * Run: `node --import tsx bench/advantages.bench.ts` (≈ 30 s; `BENCH_WINDOW_MS` shortens it).
 * Goal: CorrGRPO at G = 8, K = 7 without diagnostics ≥ 1,000,000 groups/s.
 */
import { performance } from "node:perf_hooks";
import type { AdvantageEstimatorName, PackedBatch } from "@reward-mesh/trainer";
import {
  AdvantageEstimatorNames,
  compileAdvantageConfig,
  createAdvantageEngine,
  createRng,
  packFlatBatch,
} from "@reward-mesh/trainer";
import { machineInfo, writeBenchResult } from "./results.js";

const GROUP_SIZES = [8, 16, 64] as const;
const COMPONENTS = [2, 4, 7] as const;
const REPEATS = 5;
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 50);
const ROLLOUTS_PER_BATCH = 4096;
const GOAL = {
  estimator: "grpo_covariance_coefficient",
  G: 8,
  K: 7,
  diagnostics: false,
  groupsPerSecond: 1_000_000,
};

/** A batch that looks like real rewards: binary, continuous [0,1], 0–100 scale, the odd constant column. */
function makeBatch(
  G: number,
  K: number,
  B: number,
  seed: number,
): { batch: PackedBatch; values: Float64Array } {
  const rand = createRng(seed);
  const values = new Float64Array(B * G * K);
  for (let g = 0; g < B; g++) {
    const kinds = Array.from({ length: K }, () => Math.floor(rand() * 4));
    for (let i = 0; i < G; i++) {
      for (let k = 0; k < K; k++) {
        const kind = kinds[k]!;
        values[(g * G + i) * K + k] =
          kind === 0
            ? rand() < 0.5
              ? 1
              : 0
            : kind === 1
              ? rand()
              : kind === 2
                ? Math.round(rand() * 100)
                : 0.1;
      }
    }
  }
  const weights = Array.from({ length: K }, (_, k) => [0.6, 0.3, 0.25, 0.2, 0.05, 0.05, 0.05][k % 7]!);
  const batch = packFlatBatch({ values, groupSizes: new Array(B).fill(G), components: K, weights });
  return { batch, values };
}

interface Result {
  estimator: AdvantageEstimatorName | "pack";
  G: number;
  K: number;
  diagnostics: boolean;
  groupsPerSecond: number;
  samples: number[];
  groupsPerBatch: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Runs `fn` (which processes `groups` groups) in REPEATS windows of WINDOW_MS; groups/s per window. */
function measure(fn: () => void, groups: number): number[] {
  const samples: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < WINDOW_MS) {
      fn();
      n++;
      t = performance.now();
    }
    samples.push((n * groups) / ((t - t0) / 1000));
  }
  return samples;
}

const engine = createAdvantageEngine({ maxGroupSize: 64, maxComponents: 8 });
const results: Result[] = [];
const started = performance.now();

// Warm up every kernel once so that the first configurations are not measured cold.
for (const estimator of AdvantageEstimatorNames) {
  const { batch } = makeBatch(8, 4, 64, 1);
  const config = compileAdvantageConfig({ estimator } as never);
  const out = new Float64Array(batch.rolloutCount);
  const flags = new Uint8Array(batch.groupCount);
  for (let i = 0; i < 300; i++) engine.run(batch, config, { out, flags, diagnostics: i % 10 === 0 });
}

for (const estimator of AdvantageEstimatorNames) {
  const config = compileAdvantageConfig({ estimator } as never);
  for (const G of GROUP_SIZES) {
    for (const K of COMPONENTS) {
      for (const diagnostics of [false, true]) {
        const B = Math.max(1, Math.floor((diagnostics ? ROLLOUTS_PER_BATCH / 8 : ROLLOUTS_PER_BATCH) / G));
        const { batch } = makeBatch(G, K, B, G * 100 + K);
        const out = new Float64Array(batch.rolloutCount);
        const flags = new Uint8Array(batch.groupCount);
        const options = { out, flags, diagnostics };
        const samples = measure(() => engine.run(batch, config, options), B);
        results.push({
          estimator,
          G,
          K,
          diagnostics,
          groupsPerSecond: median(samples),
          samples,
          groupsPerBatch: B,
        });
      }
    }
  }
}

// Validation + packing cost (once per batch in the trainer), for context.
for (const G of GROUP_SIZES) {
  const K = 7;
  const B = Math.floor(ROLLOUTS_PER_BATCH / G);
  const { values } = makeBatch(G, K, B, 7);
  const groupSizes = new Array(B).fill(G);
  const samples = measure(() => packFlatBatch({ values, groupSizes, components: K }), B);
  results.push({
    estimator: "pack",
    G,
    K,
    diagnostics: false,
    groupsPerSecond: median(samples),
    samples,
    groupsPerBatch: B,
  });
}

const goalResult = results.find(
  (r) =>
    r.estimator === GOAL.estimator && r.G === GOAL.G && r.K === GOAL.K && r.diagnostics === GOAL.diagnostics,
)!;
const report = {
  benchmark: "advantages",
  date: new Date().toISOString(),
  machine: machineInfo(),
  settings: {
    repeats: REPEATS,
    windowMs: WINDOW_MS,
    rolloutsPerBatch: ROLLOUTS_PER_BATCH,
    statistic: "median",
  },
  goal: {
    ...GOAL,
    measured: Math.round(goalResult.groupsPerSecond),
    met: goalResult.groupsPerSecond >= GOAL.groupsPerSecond,
  },
  durationSeconds: Math.round((performance.now() - started) / 100) / 10,
  results: results.map((r) => ({
    ...r,
    groupsPerSecond: Math.round(r.groupsPerSecond),
    samples: r.samples.map(Math.round),
  })),
};

writeBenchResult("advantages", report);

const fmt = (x: number) => (x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : `${(x / 1e3).toFixed(0)}k`);
const header = ["estimator", "diag", ...GROUP_SIZES.flatMap((G) => COMPONENTS.map((K) => `G${G}K${K}`))];
const rows = [...AdvantageEstimatorNames, "pack" as const].flatMap((estimator) =>
  [false, true]
    .filter((d) => estimator !== "pack" || !d)
    .map((diagnostics) => [
      estimator,
      diagnostics ? "on" : "off",
      ...GROUP_SIZES.flatMap((G) =>
        COMPONENTS.map((K) => {
          const r = results.find(
            (x) => x.estimator === estimator && x.G === G && x.K === K && x.diagnostics === diagnostics,
          );
          return r === undefined ? "-" : fmt(r.groupsPerSecond);
        }),
      ),
    ]),
);
const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
const line = (cells: string[]) => cells.map((cell, c) => cell.padStart(widths[c]!)).join("  ");
console.log(
  `advantage engine, groups/s (median of ${REPEATS}), ${report.machine.cpu}, node ${process.version}`,
);
console.log(line(header));
for (const r of rows) console.log(line(r));
console.log(
  `goal: CorrGRPO G=8 K=7 no diagnostics ${fmt(goalResult.groupsPerSecond)} groups/s ` +
    `(${report.goal.met ? "≥" : "<"} 1M) — wrote bench/results/advantages.json in ${report.durationSeconds} s`,
);
