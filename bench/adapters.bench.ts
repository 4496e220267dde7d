/**
 * Python adapters vs TypeScript over gRPC: rollouts/s scored through reward_mesh.trl's reward functions
 * (Python, Debian's grpcio; every component function called per batch as GRPOTrainer does, one
 * `ScoreBatch` call per service per batch) against the same batches sent by a TypeScript client (grpc-js,
 * the services in parallel) in both of its ways — one `ScoreStream` per service per batch, and one
 * `ScoreBatch` per service per batch — the faster median being the baseline. Same machine, same services
 * (the length and math services' real entrypoints, each its own process), same batches (256 rollouts:
 * 128 math, 128 custom), each client in its own process; short windows alternate (so every side sees the
 * same load on a shared machine; their order rotates each repeat), the figure is the median of REPEATS.
 * The JSON keeps a summary of every run of this setup (`runs`, the last 10), the latest last.
 *
 * Symmetric work in each timed window: both sides are connected before it (Python builds its Mesh —
 * channels plus Describe — before its clock starts; TypeScript calls Describe on each client before its
 * clock starts), and both parse the batch's tasks from proto JSON inside it, each distinct task once per
 * batch (TRL hands the adapter the dataset's `task` column with every batch; the TypeScript side does the
 * same with `fromJson`).
 * Goal: Python ≥ 80 % of TypeScript. Writes `bench/results/adapters.json`.
 *
 * Run: `npm run bench:adapters` (≈ 75 s; `BENCH_WINDOW_MS` sets the window).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import {
  createGrpcClient,
  RewardService,
  type Rollout,
  RolloutSchema,
  ScoreRequestSchema,
  TaskSchema,
} from "@reward-mesh/proto";
import { type ServiceProcess, startServiceProcess } from "@reward-mesh/sdk/testing";
import { DEFAULT_PYTHON } from "@reward-mesh/trainer";
import { machineInfo, writeBenchResult } from "./results.js";

const REPEATS = 8;
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 2000);
/** The repository's .venv (bash scripts/bootstrap.sh --with-torch), or `REWARD_MESH_PYTHON`. */
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
const BATCH = 256;
const COMPONENTS = ["math/correct", "math/format", "length/length", "length/overlong"];
const root = fileURLToPath(new URL("..", import.meta.url));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** 32 prompts × 8 completions: half math tasks (right, wrong, unmarked answers), half custom. */
function rows() {
  const out: Array<{ prompt: string; completion: string; task: JsonObject }> = [];
  for (let p = 0; p < BATCH / 8; p++) {
    const math = p % 2 === 0;
    const prompt = math ? `What is ${p} + ${p}?` : `Write a short greeting number ${p}.`;
    const task: JsonObject = math ? { math: { answers: [String(2 * p)] }, prompt } : { custom: {}, prompt };
    for (let g = 0; g < 8; g++) {
      const completion = math
        ? [`The sum is \\boxed{${2 * p}}.`, `\\boxed{${2 * p + 1}}`, `It is ${2 * p}`][g % 3]!
        : `Hello there, friend ${g}! `.repeat(1 + (g % 4));
      out.push({ prompt, completion, task });
    }
  }
  return out;
}

/**
 * The TypeScript client: per batch, one ScoreStream (`stream`) or one ScoreBatch (`batch`) call per service
 * (math rollouts → math, custom → length), the services in parallel.
 */
async function tsWindow(
  addresses: Record<string, string>,
  batch: ReturnType<typeof rows>,
  windowMs: number,
  rpc: "stream" | "batch",
) {
  const clients = Object.fromEntries(
    Object.entries(addresses).map(([n, a]) => [n, createGrpcClient(RewardService, a)]),
  );
  // Connected before the clock starts, as the Python side (its Mesh calls Describe).
  await Promise.all(Object.values(clients).map((c) => c.describe({}, { timeoutMs: 30_000 })));
  let n = 0;
  let b = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  try {
    while (performance.now() - t0 < windowMs) {
      // The tasks parsed per batch, each distinct one once (as reward_mesh.trl parses the task column).
      const parsed = new Map<string, ReturnType<typeof fromJson<typeof TaskSchema>>>();
      const tasks = batch.map((r) => {
        const key = JSON.stringify(r.task);
        const known = parsed.get(key);
        if (known) return known;
        const t = fromJson(TaskSchema, r.task);
        parsed.set(key, t);
        return t;
      });
      const rollouts: Rollout[] = batch.map((r, i) =>
        create(RolloutSchema, {
          id: `ts-${b}-${i}`,
          runId: "bench",
          groupId: `g${i >> 3}`,
          index: i % 8,
          groupSize: 8,
          task: tasks[i]!,
          response: `${r.completion} #${b}`,
        }),
      );
      const byService = {
        math: rollouts.filter((r) => r.task?.kind.case === "math"),
        length: rollouts.filter((r) => r.task?.kind.case !== "math"),
      };
      await Promise.all(
        Object.entries(byService).map(async ([name, rs]) => {
          if (rpc === "batch") {
            const res = await clients[name]!.scoreBatch(
              { requests: rs.map((r) => create(ScoreRequestSchema, { rollout: r })) },
              { timeoutMs: 120_000 },
            );
            if (res.results.length !== rs.length || res.errors.length > 0)
              throw new Error(
                `${name}: ${res.results.length} results (${res.errors.length} errors) for ${rs.length}`,
              );
            return;
          }
          let got = 0;
          async function* reqs() {
            for (const r of rs) yield create(ScoreRequestSchema, { rollout: r });
          }
          for await (const _ of clients[name]!.scoreStream(reqs(), { timeoutMs: 120_000 })) got++;
          if (got !== rs.length) throw new Error(`${name}: ${got} results for ${rs.length} rollouts`);
        }),
      );
      n += rollouts.length;
      b++;
    }
    const cpu = process.cpuUsage(c0);
    return { perSecond: n / ((performance.now() - t0) / 1000), cpuUsPerRollout: (cpu.user + cpu.system) / n };
  } finally {
    for (const c of Object.values(clients)) c.close();
  }
}

/** Rollouts/s and the client's CPU time per rollout (µs) of one window. */
interface Window {
  readonly perSecond: number;
  readonly cpuUsPerRollout: number;
}

function pyWindow(specPath: string, windowMs: number): Promise<Window> {
  return new Promise((resolve, reject) => {
    const c = spawn(
      PYTHON,
      [join(root, "bench", "adapters_trl.py"), specPath, String(windowMs / 1000)],
      {
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", PYTHONDONTWRITEBYTECODE: "1" },
      },
    );
    let out = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    c.stderr.on("data", (d: Buffer) => (out += d.toString()));
    c.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`adapters_trl.py exited ${code}:\n${out}`));
      const r = JSON.parse(out.trim().split("\n").pop()!) as {
        rollouts: number;
        seconds: number;
        cpuSeconds: number;
      };
      resolve({ perSecond: r.rollouts / r.seconds, cpuUsPerRollout: (r.cpuSeconds * 1e6) / r.rollouts });
    });
  });
}

const started: ServiceProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), "bench-adapters-"));
try {
  const service = (name: string, prefix: string, env: Record<string, string>) =>
    startServiceProcess(join(root, "services", name, "src", "main.ts"), {
      envPrefix: prefix,
      natsUrl: "nats://127.0.0.1:1", // unused: gRPC only
      env: { [`${prefix}_WORKER`]: "false", ...env },
    }).then((s) => {
      started.push(s);
      return s;
    });
  const [length, math] = await Promise.all([
    service("length", "LENGTH", { LENGTH_MAX_LENGTH: "64", LENGTH_CACHE_LENGTH: "32" }),
    service("math", "MATH", {}),
  ]);
  const addresses = { length: length.address, math: math.address };
  const batch = rows();
  const specPath = join(dir, "spec.json");
  writeFileSync(specPath, JSON.stringify({ services: addresses, components: COMPONENTS, rows: batch }));
  // Warm both (JIT, connections, the math service's judging threads).
  const loadBefore = loadavg();
  await tsWindow(addresses, batch, 500, "stream");
  await tsWindow(addresses, batch, 500, "batch");
  await pyWindow(specPath, 500);
  const tsStream: Window[] = [];
  const tsBatch: Window[] = [];
  const py: Window[] = [];
  // The three windows of a repeat in a rotated order (stream, batch, Python; then batch, Python, stream;
  // ...): none of them always runs first (a cold cache, the load left by the previous window).
  const windows = [
    async () => tsStream.push(await tsWindow(addresses, batch, WINDOW_MS, "stream")),
    async () => tsBatch.push(await tsWindow(addresses, batch, WINDOW_MS, "batch")),
    async () => py.push(await pyWindow(specPath, WINDOW_MS)),
  ];
  for (let i = 0; i < REPEATS; i++) {
    for (let k = 0; k < windows.length; k++) await windows[(i + k) % windows.length]!();
  }
  const tsStreamMedian = median(tsStream.map((w) => w.perSecond));
  const tsBatchMedian = median(tsBatch.map((w) => w.perSecond));
  // The baseline is the fastest TypeScript way to call the same services.
  const baseline = tsBatchMedian >= tsStreamMedian ? "ScoreBatch" : "ScoreStream";
  const ts = baseline === "ScoreBatch" ? tsBatch : tsStream;
  const tsMedian = Math.max(tsStreamMedian, tsBatchMedian);
  const pyMedian = median(py.map((w) => w.perSecond));
  const tsCpu = median(ts.map((w) => w.cpuUsPerRollout));
  // Each repeat's Python window runs next to its TypeScript windows: their ratio shares the
  // machine's load of that moment (a second view of the same samples, less swayed by load that changes
  // between repeats; the goal is on the ratio of the medians).
  const paired = py.map((w, i) => w.perSecond / ts[i]!.perSecond);
  const pyCpu = median(py.map((w) => w.cpuUsPerRollout));
  const report = {
    benchmark: "adapters",
    date: new Date().toISOString(),
    machine: machineInfo(),
    setup: {
      services:
        "length (LENGTH_MAX_LENGTH 64, cache 32) and math (defaults), real entrypoints, one process each, gRPC only",
      batch: `${BATCH} rollouts (32 prompts × 8): 128 math → math, 128 custom → length`,
      python: `reward_mesh.trl reward functions for ${COMPONENTS.join(", ")}, all called per batch (per-batch cache; one ScoreBatch per service per batch), ${PYTHON}`,
      typescript:
        "grpc-js client (@reward-mesh/proto), one ScoreStream — or one ScoreBatch — per service per batch, services in parallel; the faster median is the baseline",
      symmetry:
        "both connected (Describe) before the timed window; both parse each distinct task from proto JSON once per batch inside it",
      windowMs: WINDOW_MS,
      repeats: REPEATS,
      windowOrder:
        "rotated each repeat (stream, batch, python; batch, python, stream; python, stream, batch)",
    },
    typescriptBaseline: baseline,
    typescriptRolloutsPerSecond: { median: tsMedian, samples: ts.map((w) => w.perSecond) },
    typescriptScoreStreamRolloutsPerSecond: {
      median: tsStreamMedian,
      samples: tsStream.map((w) => w.perSecond),
      cpuMicrosecondsPerRollout: median(tsStream.map((w) => w.cpuUsPerRollout)),
    },
    typescriptScoreBatchRolloutsPerSecond: {
      median: tsBatchMedian,
      samples: tsBatch.map((w) => w.perSecond),
      cpuMicrosecondsPerRollout: median(tsBatch.map((w) => w.cpuUsPerRollout)),
    },
    pythonTrlRolloutsPerSecond: { median: pyMedian, samples: py.map((w) => w.perSecond) },
    ratio: pyMedian / tsMedian,
    pairedRatios: { median: median(paired), samples: paired },
    loadAverage1m: { before: loadBefore[0], after: loadavg()[0] },
    clientCpuMicrosecondsPerRollout: {
      note: "the client process's own CPU (user + system) per scored rollout; the services run in their own processes",
      typescript: tsCpu,
      python: pyCpu,
      samples: { typescript: ts.map((w) => w.cpuUsPerRollout), python: py.map((w) => w.cpuUsPerRollout) },
    },
    goal: "python ≥ 0.8 × typescript",
    goalMet: pyMedian / tsMedian >= 0.8,
  };
  // Every run of this setup (the rotated order) is kept, the latest last: on a shared machine one run's
  // figures say little alone.
  const summary = {
    date: report.date,
    loadAverage1m: report.loadAverage1m,
    typescriptRolloutsPerSecond: tsMedian,
    typescriptScoreStreamRolloutsPerSecond: tsStreamMedian,
    typescriptScoreBatchRolloutsPerSecond: tsBatchMedian,
    pythonTrlRolloutsPerSecond: pyMedian,
    ratio: report.ratio,
    pairedRatiosMedian: median(paired),
  };
  const resultsPath = join(root, "bench", "results", "adapters.json");
  let earlier: (typeof summary)[] = [];
  try {
    const previous = JSON.parse(readFileSync(resultsPath, "utf8")) as {
      setup?: { windowOrder?: string };
      runs?: (typeof summary)[];
    };
    if (previous.setup?.windowOrder === report.setup.windowOrder) earlier = previous.runs ?? [];
  } catch {
    // no earlier result of this setup
  }
  const runs = [...earlier, summary].slice(-10);
  const path = writeBenchResult("adapters", { ...report, runs });
  const show = (ws: Window[]) => ws.map((w) => w.perSecond.toFixed(0)).join(", ");
  console.log(`TypeScript ScoreStream ${tsStreamMedian.toFixed(0)} rollouts/s (${show(tsStream)})`);
  console.log(`TypeScript ScoreBatch  ${tsBatchMedian.toFixed(0)} rollouts/s (${show(tsBatch)})`);
  console.log(
    `TypeScript baseline (${baseline}) ${tsMedian.toFixed(0)} rollouts/s; client CPU ${tsCpu.toFixed(0)} µs/rollout`,
  );
  console.log(
    `Python TRL funcs ${pyMedian.toFixed(0)} rollouts/s (${show(py)}); client CPU ${pyCpu.toFixed(0)} µs/rollout`,
  );
  console.log(
    `ratio ${(report.ratio * 100).toFixed(1)} % (goal ≥ 80 %); paired ratios' median ${(median(paired) * 100).toFixed(1)} %; load ${loadBefore[0].toFixed(1)} → ${loadavg()[0].toFixed(1)} → ${path}`,
  );
} finally {
  await Promise.all(started.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
}
