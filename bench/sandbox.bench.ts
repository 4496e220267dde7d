/**
 * Sandbox overhead: per-execution latency and executions/s of `python3 -c pass` for each backend,
 * against bare `/usr/bin/python3 -c pass` spawned the same way from Node, in one run on one machine.
 * Also the latency of a full harness run (a small LeetCode-style program with three asserts).
 *
 * Latencies are sequential and interleaved (bare, bwrap, docker, bare, …) so background load hits all
 * alike; throughput runs `SANDBOX_CONCURRENCY` (default: CPUs) executions at once.
 * Writes `bench/results/sandbox.json` and prints a summary.
 *
 * HumanEval-style workload: scored rollouts/s — `runPythonTests` (harness, judge + candidate process,
 * every assert decided) of the 24 tasks of `humaneval-style.ts` — against the same programs
 * (`prompt + solution + test + check(entry)`) run by a bare `/usr/bin/python3 -c`, at the same
 * concurrency, in the same run: 7 rounds of a bare batch of 24 right before each backend's batch of 24,
 * the ratio taken per round, its median reported.
 *
 * `bwrap` keeps its warm pool of harness sandboxes (`SANDBOX_BWRAP_WARM`, default the concurrency);
 * `bwrapCold` is the same backend with it off (`0`, the behaviour before it), measured side by side.
 *
 * Run: `npm run bench:sandbox` (as root, after `scripts/bootstrap.sh`; ≈ 1 min; `BENCH_RUNS` changes N).
 * Goals: bwrap median ≤ 1.5 × bare Python start; Docker median ≤ 150 ms per execution; HumanEval-style
 * scored rollouts/s ≥ 0.6 × the bare interpreter's.
 */
import { spawn } from "node:child_process";
import {
  createSandbox,
  loadSandboxConfig,
  type PythonProgram,
  runPythonTests,
  type Sandbox,
  type SandboxConfig,
} from "@reward-mesh/sandbox";
import { ensureDockerForTests } from "@reward-mesh/sandbox/testing";
import { HUMANEVAL_STYLE } from "./humaneval-style.js";
import { machineInfo, writeBenchResult } from "./results.js";

const RUNS = Number(process.env["BENCH_RUNS"] ?? 60);
const WARMUP = 5;
const GOALS = { bwrapRatioToBare: 1.5, dockerMedianMs: 150, rolloutsRatioToBare: 0.6 };

const program: PythonProgram = {
  prompt: "from typing import *",
  solution:
    "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n",
  test: "def check(candidate):\n    assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]\n    assert candidate(nums=[3, 2, 4], target=6) == [1, 2]\n    assert candidate(nums=[3, 3], target=6) == [0, 1]\n",
  entryPoint: "Solution().twoSum",
  ioTests: [],
  timeLimitMs: 5_000,
  memoryLimitMb: 256,
};

function bare(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const c = spawn("/usr/bin/python3", ["-c", "pass"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: "/usr/bin:/bin" },
    });
    c.stdout.resume();
    c.stderr.resume();
    c.on("error", reject);
    c.on("close", (code) =>
      code === 0 ? resolve(performance.now() - t) : reject(new Error(`python3 exited ${code}`)),
    );
  });
}

async function sandboxed(s: Sandbox): Promise<number> {
  const t = performance.now();
  const r = await s.run({ argv: ["python3", "-c", "pass"] });
  if (r.exitCode !== 0) throw new Error(`${s.backend}: exit ${r.exitCode} ${r.stderr.toString()}`);
  return performance.now() - t;
}

/** The HumanEval-style programs, as the harness gets them and as one bare Python program. */
const rollouts: PythonProgram[] = HUMANEVAL_STYLE.map((t) => ({
  prompt: "",
  solution: t.solution,
  test: t.test,
  entryPoint: t.entry,
  ioTests: [],
  timeLimitMs: 5_000,
  memoryLimitMb: 256,
}));
const bareSources = rollouts.map((p) => `${p.solution}\n\n${p.test}\n\ncheck(${p.entryPoint})\n`);

function bareProgram(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn("/usr/bin/python3", ["-c", bareSources[i % bareSources.length]!], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: "/usr/bin:/bin" },
    });
    c.stdout.resume();
    c.stderr.resume();
    c.on("error", reject);
    c.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`bare program ${i} exited ${code}`))));
  });
}

async function scoredRollout(s: Sandbox, i: number): Promise<void> {
  const r = await runPythonTests(s, rollouts[i % rollouts.length]!);
  if (r.status !== "passed") throw new Error(`${s.backend}: rollout ${i}: ${r.summary}`);
}

async function harness(s: Sandbox): Promise<number> {
  const t = performance.now();
  const r = await runPythonTests(s, program);
  if (r.status !== "passed") throw new Error(`${s.backend}: harness ${r.summary}`);
  return performance.now() - t;
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    n: s.length,
    medianMs: r(q(0.5)),
    p10Ms: r(q(0.1)),
    p90Ms: r(q(0.9)),
    minMs: r(s[0]!),
    maxMs: r(s.at(-1)!),
  };
}

async function throughput(fn: (i: number) => Promise<unknown>, n: number, concurrency: number) {
  const t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
  return Math.round((n / ((performance.now() - t) / 1000)) * 10) / 10;
}

const base = loadSandboxConfig();
const backends: Array<{ name: "bwrap" | "bwrapCold" | "docker"; sandbox: Sandbox }> = [];
const skipped: Record<string, string> = {};
backends.push({ name: "bwrap", sandbox: await createSandbox({ ...base, backend: "bwrap" }) });
// The same backend without its warm pool (SANDBOX_BWRAP_WARM=0, the behaviour before it), side by side.
backends.push({
  name: "bwrapCold",
  sandbox: await createSandbox({ ...base, backend: "bwrap", bwrapWarm: 0 }),
});
const docker = await ensureDockerForTests();
if (docker.ok) {
  const cfg: SandboxConfig = { ...docker.config, concurrency: base.concurrency };
  backends.push({ name: "docker", sandbox: await createSandbox(cfg) });
} else skipped["docker"] = docker.reason;

const lat: Record<string, number[]> = { bare: [] };
const harnessLat: Record<string, number[]> = {};
for (const b of backends) {
  lat[b.name] = [];
  harnessLat[b.name] = [];
}
for (let i = 0; i < WARMUP; i++) {
  await bare();
  for (const b of backends) await sandboxed(b.sandbox);
}
for (let i = 0; i < RUNS; i++) {
  lat["bare"]!.push(await bare());
  for (const b of backends) {
    // Docker is ~10× slower than the others: fewer samples keep the run short.
    if (b.name === "docker" && i % 2 === 1) continue;
    lat[b.name]!.push(await sandboxed(b.sandbox));
  }
}
for (let i = 0; i < Math.ceil(RUNS / 3); i++)
  for (const b of backends) harnessLat[b.name]!.push(await harness(b.sandbox));

const concurrency = base.concurrency;
const perSecond: Record<string, number> = { bare: await throughput(bare, RUNS, concurrency) };
for (const b of backends)
  perSecond[b.name] = await throughput(
    () => sandboxed(b.sandbox),
    b.name === "docker" ? RUNS / 2 : RUNS,
    concurrency,
  );
// HumanEval-style rollouts: short batches, a bare batch right before each backend's, many rounds; the
// ratio is taken per round (backend vs the bare batch next to it) and its median reported, so the load
// of a shared machine, which drifts within seconds, hits both sides of each ratio alike.
const ROUNDS = 7;
const batch = rollouts.length;
const rolloutRates: Record<string, number[]> = { bare: [] };
const roundRatios: Record<string, number[]> = {};
for (const b of backends) {
  rolloutRates[b.name] = [];
  roundRatios[b.name] = [];
}
for (let round = 0; round < ROUNDS; round++) {
  for (const b of backends) {
    const bareRate = await throughput(bareProgram, batch, concurrency);
    const rate = await throughput((i) => scoredRollout(b.sandbox, i), batch, concurrency);
    rolloutRates["bare"]!.push(bareRate);
    rolloutRates[b.name]!.push(rate);
    roundRatios[b.name]!.push(rate / bareRate);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const b of backends) await b.sandbox.close();

const bareStats = stats(lat["bare"]!);
const result: Record<string, unknown> = {
  benchmark: "sandbox",
  date: new Date().toISOString(),
  machine: machineInfo(),
  runs: RUNS,
  concurrency,
  bare: {
    command: "/usr/bin/python3 -c pass",
    latency: bareStats,
    executionsPerSecond: perSecond["bare"],
    humanEvalStyleProgramsPerSecond: median(rolloutRates["bare"]!),
  },
  goals: GOALS,
  skipped,
};
for (const b of backends) {
  const s = stats(lat[b.name]!);
  result[b.name] = {
    description: b.sandbox.description,
    latency: s,
    medianOverheadMs: Math.round((s.medianMs - bareStats.medianMs) * 100) / 100,
    ratioToBare: Math.round((s.medianMs / bareStats.medianMs) * 100) / 100,
    executionsPerSecond: perSecond[b.name],
    harnessRun: stats(harnessLat[b.name]!),
    humanEvalStyle: {
      scoredRolloutsPerSecond: median(rolloutRates[b.name]!),
      roundsPerSecond: rolloutRates[b.name],
      roundRatios: roundRatios[b.name]!.map((x) => Math.round(x * 100) / 100),
      ratioToBare: Math.round(median(roundRatios[b.name]!) * 100) / 100,
    },
  };
}
const bw = result["bwrap"] as { ratioToBare: number } | undefined;
const dk = result["docker"] as { latency: { medianMs: number } } | undefined;
const he = (name: string) =>
  (result[name] as { humanEvalStyle: { ratioToBare: number } } | undefined)?.humanEvalStyle.ratioToBare;
result["goalsMet"] = {
  bwrapRollouts: he("bwrap") === undefined ? null : he("bwrap")! >= GOALS.rolloutsRatioToBare,
  dockerRollouts: he("docker") === undefined ? null : he("docker")! >= GOALS.rolloutsRatioToBare,
  bwrap: bw ? bw.ratioToBare <= GOALS.bwrapRatioToBare : null,
  docker: dk ? dk.latency.medianMs <= GOALS.dockerMedianMs : null,
};

writeBenchResult("sandbox", result);

const row = (name: string, s: ReturnType<typeof stats>, extra: string) =>
  console.log(
    `${name.padEnd(8)} median ${s.medianMs.toFixed(1).padStart(6)} ms  p90 ${s.p90Ms.toFixed(1).padStart(6)} ms  ${extra}`,
  );
row("bare", bareStats, `${perSecond["bare"]} exec/s`);
for (const b of backends) {
  const r = result[b.name] as {
    latency: ReturnType<typeof stats>;
    ratioToBare: number;
    medianOverheadMs: number;
    harnessRun: ReturnType<typeof stats>;
  };
  row(
    b.name,
    r.latency,
    `${perSecond[b.name]} exec/s  ×${r.ratioToBare} of bare (+${r.medianOverheadMs} ms)  harness run median ${r.harnessRun.medianMs} ms`,
  );
}
console.log(`HumanEval-style programs: bare ${median(rolloutRates["bare"]!)}/s`);
for (const b of backends) {
  const h = (result[b.name] as { humanEvalStyle: { scoredRolloutsPerSecond: number; ratioToBare: number } })
    .humanEvalStyle;
  console.log(`  ${b.name}: ${h.scoredRolloutsPerSecond} scored rollouts/s = ×${h.ratioToBare} of bare`);
}
for (const [k, v] of Object.entries(skipped)) console.log(`${k}: skipped (${v})`);
console.log(`goals: ${JSON.stringify(result["goalsMet"])}  → bench/results/sandbox.json`);
