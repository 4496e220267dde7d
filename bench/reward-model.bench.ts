/**
 * Reward-model throughput: scored rollouts per second with 32 concurrent requests, the service's model
 * calls at batch 1 (`REWARD_MODEL_MAX_BATCH=1`) against dynamic batching (max batch 32, max wait 2 ms),
 * measured two ways: in-process (`scoreRollout`: validation, tokenization, batcher, ONNX Runtime) and
 * through gRPC (real grpc-js servers on free ports, unary calls from a client in this process, whose
 * per-request cost batching cannot remove). Both modes run side by side; their timed windows alternate,
 * so a busy machine slows both alike. Figures are medians over REPEATS windows; the ratio is dynamic /
 * batch 1 (goal ≥ 5×).
 *
 * Models: `tiny` (the committed test model: 1 layer, d = 32) and, when /usr/bin/python3 has torch,
 * `bench` (2 layers, d = 128, d_ff = 512; built into a temporary directory by `model/build.py --size bench`).
 * Rollouts are ~60-120 tokens. Writes `bench/results/reward-model.json` and prints a table.
 *
 * Run: `npm run bench:reward-model` (≈ 1 min; `BENCH_WINDOW_MS` sets the window, default 1500).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createGrpcClient, type Rollout, RewardService } from "@reward-mesh/proto";
import { BUNDLED_MODEL_DIR, createRewardModelService, loadConfig } from "@reward-mesh/reward-model";
import { createLimiter, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { machineInfo, writeBenchResult } from "./results.js";

const REPEATS = 5;
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 1500);
const CONCURRENCY = 32;
const MAX_WAIT_MS = 2;
const PYTHON = "/usr/bin/python3";
/** The same for both modes; 1 by default (a shared CI machine), `BENCH_INTRA_OP_THREADS` to change. */
const INTRA_OP_THREADS = Number(process.env["BENCH_INTRA_OP_THREADS"] ?? 1);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const WORDS =
  "the answer is four because two plus two equals four so the result is correct please check the code function return list sum of numbers first second third step solve problem explain reason".split(
    " ",
  );
/** 64 rollouts of 20-40 prompt words and 30-80 response words (deterministic). */
function rollouts(): Rollout[] {
  let x = 12345;
  const rand = (n: number) => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % n;
  };
  const text = (n: number) => Array.from({ length: n }, () => WORDS[rand(WORDS.length)]).join(" ");
  return Array.from({ length: 64 }, () =>
    makeRollout({
      response: text(30 + rand(50)),
      task: { id: "t", prompt: text(20 + rand(20)), kind: { case: "custom", value: {} } },
    }),
  );
}

type Transport = "in-process" | "grpc";

async function startMode(modelDir: string, maxBatch: number, transport: Transport) {
  const def = createRewardModelService({
    ...loadConfig({}),
    modelDir,
    maxBatch,
    maxWaitMs: MAX_WAIT_MS,
    intraOpThreads: INTRA_OP_THREADS,
  });
  await def.ready;
  const server = await startGrpcServer(def, {
    port: 0,
    limiter: createLimiter(CONCURRENCY),
    logger: silentLogger,
  });
  const client = createGrpcClient(RewardService, server.address);
  const score =
    transport === "grpc"
      ? (rollout: Rollout) => client.score({ rollout })
      : (rollout: Rollout) => def.scoreRollout(rollout);
  return {
    def,
    /** Rollouts per second over one window of CONCURRENCY closed-loop callers. */
    async window(rs: readonly Rollout[], ms: number): Promise<number> {
      let n = 0;
      const t0 = performance.now();
      const worker = async (w: number) => {
        for (let i = w; performance.now() - t0 < ms; i += CONCURRENCY) {
          await score(rs[i % rs.length]!);
          n++;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
      return n / ((performance.now() - t0) / 1000);
    },
    async close() {
      client.close();
      await server.close();
      await def.close();
    },
  };
}

async function benchModel(name: string, modelDir: string, transport: Transport) {
  const rs = rollouts();
  const single = await startMode(modelDir, 1, transport);
  const dynamic = await startMode(modelDir, CONCURRENCY, transport);
  try {
    await single.window(rs, 300); // warm-up: connections, JIT, ORT allocations
    await dynamic.window(rs, 300);
    const a: number[] = [];
    const b: number[] = [];
    const before = dynamic.def.batchStats();
    for (let r = 0; r < REPEATS; r++) {
      a.push(await single.window(rs, WINDOW_MS));
      b.push(await dynamic.window(rs, WINDOW_MS));
    }
    const after = dynamic.def.batchStats();
    const batch1 = median(a);
    const dyn = median(b);
    return {
      model: name,
      transport,
      batch1RolloutsPerSec: Math.round(batch1),
      dynamicRolloutsPerSec: Math.round(dyn),
      ratio: Number((dyn / batch1).toFixed(2)),
      meanDynamicBatch: Number(((after.items - before.items) / (after.batches - before.batches)).toFixed(1)),
      largestDynamicBatch: after.largestBatch,
      samples: { batch1: a.map(Math.round), dynamic: b.map(Math.round) },
    };
  } finally {
    await single.close();
    await dynamic.close();
  }
}

const models: { name: string; dir: string }[] = [{ name: "tiny", dir: BUNDLED_MODEL_DIR }];
const buildDir = mkdtempSync(join(tmpdir(), "rm-bench-reward-model-"));
let skipped: string | undefined;
if (spawnSync(PYTHON, ["-c", "import torch"], { stdio: "ignore" }).status === 0) {
  const r = spawnSync(PYTHON, [join(BUNDLED_MODEL_DIR, "build.py"), buildDir, "--size", "bench"], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`build.py --size bench failed:\n${r.stderr}`);
  models.push({ name: "bench", dir: buildDir });
} else {
  skipped = `bench-size model skipped: ${PYTHON} has no torch`;
}
try {
  const results = [];
  for (const m of models)
    for (const t of ["in-process", "grpc"] as const) results.push(await benchModel(m.name, m.dir, t));
  const out = {
    benchmark: "reward-model",
    description: `rollouts/s with ${CONCURRENCY} concurrent requests (in-process scoreRollout, and unary gRPC calls): max batch 1 vs dynamic (max ${CONCURRENCY}, wait ${MAX_WAIT_MS} ms); ${INTRA_OP_THREADS} ONNX Runtime intra-op thread(s); medians of ${REPEATS} × ${WINDOW_MS} ms`,
    goal: "ratio >= 5 at 32 concurrent requests",
    machine: machineInfo(),
    ...(skipped ? { skipped } : {}),
    results,
  };
  const path = writeBenchResult("reward-model", out);
  console.log("model   transport   batch1/s  dynamic/s  ratio  mean batch");
  for (const r of results)
    console.log(
      `${r.model.padEnd(7)} ${r.transport.padEnd(10)} ${String(r.batch1RolloutsPerSec).padStart(8)}  ${String(r.dynamicRolloutsPerSec).padStart(9)}  ${String(r.ratio).padStart(5)}  ${r.meanDynamicBatch}`,
    );
  if (skipped) console.log(skipped);
  console.log(`wrote ${path}`);
} finally {
  rmSync(buildDir, { recursive: true, force: true });
}
