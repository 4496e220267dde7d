/**
 * Math answer judging throughput: comparisons per second over the labelled agreement pairs
 * (`services/math/test/agreement-pairs.json`), side by side in one run —
 *  - `judge()` in-process, per comparison step (`exact` normal-form strings, `numeric`, `full` with the
 *    symbolic and structured steps): what each step costs;
 *  - the service's worker-thread pool (`createJudgePool`, 2 workers, deadline per judgement), the path
 *    the service scores on, with the structured-clone hop to the worker included;
 * with the agreement rates (false positives / negatives) of each step; and, as the candidate the
 * design was measured against, the same extraction and normalisation with `@cortex-js/compute-engine`'s
 * `isEqual` as the equivalence step (one pass over the pairs: its agreement and comparisons/s). The
 * figure is the median over REPEATS timed windows. Writes `bench/results/math.json` and prints a table.
 *
 * Run: `npm run bench:math` (≈ 15 s; `BENCH_WINDOW_MS` shortens or lengthens the windows).
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { ComputeEngine } from "@cortex-js/compute-engine";
import {
  type AgreementPair,
  createJudgePool,
  extractAnswer,
  judge,
  measureAgreement,
  normalizeAnswer,
  pairInput,
} from "@reward-mesh/math";
import { machineInfo, writeBenchResult } from "./results.js";

const REPEATS = 5;
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 1000);
const POOL_WORKERS = 2;
const POOL_IN_FLIGHT = 16;

const pairs = (
  JSON.parse(
    readFileSync(new URL("../services/math/test/agreement-pairs.json", import.meta.url), "utf8"),
  ) as { pairs: AgreementPair[] }
).pairs;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function inProcess(steps: "exact" | "numeric" | "full"): number[] {
  const inputs = pairs.map((p) => pairInput(p, steps));
  const rates: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < WINDOW_MS) {
      judge(inputs[n % inputs.length]!);
      n++;
    }
    rates.push((n * 1000) / (performance.now() - t0));
  }
  return rates;
}

async function pooled(): Promise<number[]> {
  const pool = createJudgePool({ workers: POOL_WORKERS, timeLimitMs: 5000 });
  const inputs = pairs.map((p) => pairInput(p));
  // Warm-up: every worker started (tsx registered) before timing.
  await Promise.all(inputs.slice(0, POOL_WORKERS * 4).map((x) => pool.judge(x)));
  const rates: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    let n = 0;
    const t0 = performance.now();
    const lane = async (k: number) => {
      for (let i = k; performance.now() - t0 < WINDOW_MS; i += POOL_IN_FLIGHT) {
        await pool.judge(inputs[i % inputs.length]!);
        n++;
      }
    };
    await Promise.all(Array.from({ length: POOL_IN_FLIGHT }, (_, k) => lane(k)));
    rates.push((n * 1000) / (performance.now() - t0));
  }
  await pool.close();
  return rates;
}

/** The candidate: our extraction and normal forms, compute-engine's `isEqual` for equivalence. */
function computeEngineCandidate() {
  const ce = new ComputeEngine();
  let fp = 0;
  let fn = 0;
  const t0 = performance.now();
  for (const p of pairs) {
    const found = extractAnswer(p.response, p.answer_format ?? "auto", false);
    let equal = false;
    if (found) {
      const a = normalizeAnswer(found.answer);
      const b = normalizeAnswer(p.reference);
      try {
        equal = a === b || ce.parse(a).isEqual(ce.parse(b)) === true;
      } catch {
        equal = false;
      }
    }
    if (equal && !p.expected) fp++;
    if (!equal && p.expected) fn++;
  }
  const seconds = (performance.now() - t0) / 1000;
  const positives = pairs.filter((p) => p.expected).length;
  const negatives = pairs.length - positives;
  return {
    path: "candidate: compute-engine isEqual (one pass)",
    comparisonsPerSecond: Math.round(pairs.length / seconds),
    agreement: {
      pairs: pairs.length,
      positives,
      negatives,
      falsePositives: fp,
      falseNegatives: fn,
      fpRate: fp / negatives,
      fnRate: fn / positives,
      agreement: (pairs.length - fp - fn) / pairs.length,
    },
    samples: [],
  };
}

const started = performance.now();
const results = [];
for (const steps of ["exact", "numeric", "full"] as const) {
  const samples = inProcess(steps);
  results.push({
    path: `in-process, steps=${steps}`,
    comparisonsPerSecond: Math.round(median(samples)),
    agreement: measureAgreement(pairs, steps).rates,
    samples: samples.map(Math.round),
  });
}
const poolSamples = await pooled();
results.push({
  path: `worker pool (${POOL_WORKERS} threads, ${POOL_IN_FLIGHT} in flight), steps=full`,
  comparisonsPerSecond: Math.round(median(poolSamples)),
  agreement: measureAgreement(pairs, "full").rates,
  samples: poolSamples.map(Math.round),
});
results.push(computeEngineCandidate());
const full = results[2]!.comparisonsPerSecond;

const report = {
  benchmark: "math",
  date: new Date().toISOString(),
  machine: machineInfo(),
  settings: { repeats: REPEATS, windowMs: WINDOW_MS, statistic: "median", pairs: pairs.length },
  durationSeconds: Math.round((performance.now() - started) / 100) / 10,
  results,
  ratios: {
    fullVsExact: Math.round((full / results[0]!.comparisonsPerSecond) * 1000) / 1000,
    poolVsInProcessFull: Math.round((results[3]!.comparisonsPerSecond / full) * 1000) / 1000,
  },
};
writeBenchResult("math", report);

console.log(
  `math judging, comparisons/s (median of ${REPEATS}), ${report.machine.cpu}, node ${process.version}`,
);
console.log(`${"path".padEnd(58)}${"cmp/s".padStart(10)}${"FP".padStart(6)}${"FN".padStart(6)}`);
for (const r of results)
  console.log(
    `${r.path.padEnd(58)}${String(r.comparisonsPerSecond).padStart(10)}${String(r.agreement.falsePositives).padStart(6)}${String(r.agreement.falseNegatives).padStart(6)}`,
  );
console.log(`wrote bench/results/math.json in ${report.durationSeconds} s`);
