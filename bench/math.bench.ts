/**
 * Math answer judging throughput: comparisons per second over the labelled agreement pairs
 * (`services/math/test/agreement-pairs.json`), side by side in one run —
 *  - `judge()` in-process, per comparison step (`exact` normal-form strings, `numeric`, `full` with the
 *    symbolic and structured steps): what each step costs;
 *  - the service's worker-thread pool (`createJudgePool`, 2 workers, deadline per judgement), the path
 *    the service scores on, with the structured-clone hop to the worker included;
 * with the agreement rates (false positives / negatives) of each step; and, as the candidate the
 * design was measured against, the same extraction and normalisation with `@cortex-js/compute-engine`'s
 * `isEqual` as the equivalence step (one pass over the pairs: its agreement and comparisons/s); and
 * math-verify in TRL's configuration (`services/math/tools/math_verify_compare.py --bench`, the same
 * script and configuration as the comparison tests), measured in the same run: one Python process,
 * one untimed pass, then MATH_VERIFY_PASSES timed passes with its caches cleared before each, timed
 * inside the process (interpreter start-up and imports excluded); its figure is the median pass. The
 * service's figure is the median over REPEATS timed windows. Writes `bench/results/math.json` and
 * prints a table.
 *
 * Run: `npm run bench:math` (≈ 1 min on 2 shared cores, most of it math-verify; `BENCH_WINDOW_MS`
 * shortens or lengthens the windows, `BENCH_MATH_VERIFY_PASSES` sets the passes, 0 skips math-verify;
 * the Python is `REWARD_MESH_PYTHON`, else the repository's `.venv`).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
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
const MATH_VERIFY_PASSES = Number(process.env["BENCH_MATH_VERIFY_PASSES"] ?? 3);
/** math-verify's wall-clock limit per pair, as in the comparison tests. */
const MATH_VERIFY_TIMEOUT_S = 3;
const PYTHON =
  process.env["REWARD_MESH_PYTHON"] || fileURLToPath(new URL("../.venv/bin/python", import.meta.url));
const PAIRS_FILE = fileURLToPath(new URL("../services/math/test/agreement-pairs.json", import.meta.url));
const MATH_VERIFY_SCRIPT = fileURLToPath(
  new URL("../services/math/tools/math_verify_compare.py", import.meta.url),
);

const pairs = (JSON.parse(readFileSync(PAIRS_FILE, "utf8")) as { pairs: AgreementPair[] }).pairs;

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

/**
 * The agreement fields of a row from outcomes per pair, counted as the comparison tests count them: a
 * pair without a verdict (timeout, error) is neither agreement nor a false accept / reject.
 */
function rates(outcomes: readonly string[]) {
  let fp = 0;
  let fn = 0;
  let agree = 0;
  pairs.forEach((p, i) => {
    const o = outcomes[i];
    if (o === "accept") {
      if (p.expected) agree++;
      else fp++;
    } else if (o === "reject") {
      if (p.expected) fn++;
      else agree++;
    }
  });
  const positives = pairs.filter((p) => p.expected).length;
  const negatives = pairs.length - positives;
  return {
    pairs: pairs.length,
    positives,
    negatives,
    falsePositives: fp,
    falseNegatives: fn,
    fpRate: fp / negatives,
    fnRate: fn / positives,
    agreement: agree / pairs.length,
    noVerdict: pairs.length - agree - fp - fn,
  };
}

interface MathVerifyBench {
  readonly passes: {
    seconds: number;
    timeouts: number;
    comparisonsPerSecond: number;
    withVerdictPerSecond: number;
  }[];
  readonly median: number;
  readonly medianWithVerdict: number;
  readonly outcomes: string[];
}

/** math-verify in TRL's configuration, timed inside its Python process; undefined (with the reason printed) when it cannot run. */
function mathVerify() {
  if (MATH_VERIFY_PASSES <= 0) return undefined;
  const r = spawnSync(
    PYTHON,
    [
      MATH_VERIFY_SCRIPT,
      "--bench",
      String(MATH_VERIFY_PASSES),
      "--timeout",
      String(MATH_VERIFY_TIMEOUT_S),
      PAIRS_FILE,
    ],
    {
      encoding: "utf8",
      timeout: 900_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", PYTHONDONTWRITEBYTECODE: "1" },
    },
  );
  if (r.error || r.status !== 0) {
    console.error(
      `math-verify not measured: ${r.error?.message ?? r.stderr.trim()} (run \`bash scripts/bootstrap.sh --with-torch\`)`,
    );
    return undefined;
  }
  const lines = r.stdout.trim().split("\n");
  const meta = JSON.parse(lines[0]!) as { versions: Record<string, string>; config: string };
  const bench = JSON.parse(lines[lines.length - 1]!) as MathVerifyBench;
  return {
    path: `math-verify ${meta.versions["math-verify"]}, TRL config (${MATH_VERIFY_TIMEOUT_S} s limit/pair)`,
    comparisonsPerSecond: Math.round(bench.median),
    comparisonsPerSecondWithVerdict: Math.round(bench.medianWithVerdict),
    agreement: rates(bench.outcomes),
    samples: bench.passes.map((p) => Math.round(p.comparisonsPerSecond)),
    passes: bench.passes,
    config: meta.config,
    versions: meta.versions,
  };
}

const started = performance.now();
const loadBefore = loadavg();
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
const mv = mathVerify();
if (mv) results.push(mv);
const loadAfter = loadavg();

const report = {
  benchmark: "math",
  date: new Date().toISOString(),
  machine: machineInfo(),
  settings: {
    repeats: REPEATS,
    windowMs: WINDOW_MS,
    statistic: "median",
    pairs: pairs.length,
    mathVerifyPasses: MATH_VERIFY_PASSES,
  },
  /** 1-minute load average before and after the run (the machine is shared: absolute rates depend on it). */
  loadAverage: {
    before: loadBefore.map((x) => Math.round(x * 10) / 10),
    after: loadAfter.map((x) => Math.round(x * 10) / 10),
  },
  durationSeconds: Math.round((performance.now() - started) / 100) / 10,
  results,
  ratios: {
    fullVsExact: Math.round((full / results[0]!.comparisonsPerSecond) * 1000) / 1000,
    poolVsInProcessFull: Math.round((results[3]!.comparisonsPerSecond / full) * 1000) / 1000,
    ...(mv ? { inProcessFullVsMathVerify: Math.round((full / mv.comparisonsPerSecond) * 10) / 10 } : {}),
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
if (mv) {
  console.log(
    `math-verify: ${mv.comparisonsPerSecond}/s over every pair (timed-out pairs at their ${MATH_VERIFY_TIMEOUT_S} s limit), ` +
      `${mv.comparisonsPerSecondWithVerdict}/s over the pairs with a verdict; passes ${mv.samples.join(", ")}`,
  );
}
console.log(
  `load average (1 min) ${report.loadAverage.before[0]} before, ${report.loadAverage.after[0]} after; ` +
    `wrote bench/results/math.json in ${report.durationSeconds} s`,
);
