/**
 * Reward-service throughput: scored rollouts per second for the `tool-call` and `agentdojo` services,
 * in-process (`def.scoreRollout`, one at a time, the CLI's path without I/O) and through gRPC (a real
 * grpc-js server on a free port, `ScoreStream` with the service's concurrency, the client in the same
 * process). The rollout mix per service is fixed (see `toolCallRollouts` / `agentDojoRollouts`); the
 * figure is the median over REPEATS timed windows. Writes `bench/results/rewards.json` and prints a table.
 *
 * Run: `npm run bench:rewards` (≈ 20 s; `BENCH_WINDOW_MS` shortens or lengthens the windows).
 */
import { performance } from "node:perf_hooks";
import { createAgentDojoService, resolveEpisode, SUITES, startEpisode } from "@reward-mesh/agentdojo";
import { createGrpcClient, type Rollout, RewardService } from "@reward-mesh/proto";
import { createLimiter, type RewardServiceDefinition, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { createToolCallService } from "@reward-mesh/tool-call";
import { machineInfo, writeBenchResult } from "./results.js";

const REPEATS = 5;
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 1000);
const GRPC_CONCURRENCY = 8;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** RLLA (exact, partial, malformed) and BFCL (valid, invalid) rollouts. */
function toolCallRollouts(): Rollout[] {
  const rlla = (response: string) =>
    makeRollout({
      response,
      task: {
        id: "rlla",
        kind: {
          case: "toolCall",
          value: {
            format: "rlla",
            groundTruth: [
              { name: "GetNews", argumentsJson: '{"page": "1", "topic": "science"}' },
              { name: "GetWeather", argumentsJson: '{"city": "Paris", "days": 3}' },
            ],
          },
        },
      },
    });
  const call = (page: string) =>
    `<think>Two calls are needed.</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "${page}", "topic": "science"}}\n{"name": "GetWeather", "parameters": {"city": "Paris", "days": 3}}\n</tool_call>`;
  const bfcl = (response: string) =>
    makeRollout({
      response,
      task: {
        id: "bfcl",
        kind: {
          case: "toolCall",
          value: {
            format: "json",
            toolsJson:
              '[{"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}]',
            possibleAnswersJson:
              '[{"get_weather": {"city": ["San Francisco", "SF"], "days": [3, ""]}}, {"get_weather": {"city": ["Rome"], "days": [""]}}]',
          },
        },
      },
    });
  return [
    rlla(call("1")),
    rlla(call("2")),
    rlla("<think>hmm</think> I would call GetNews."),
    bfcl('[{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "san francisco", "days": 3}}]'),
    bfcl('[{"get_weather": {"city": "Rome", "days": 2.5}}]'),
  ];
}

/** Every banking user task, clean and with one injection, as ground-truth (some attacked) trajectories. */
function agentDojoRollouts(): Rollout[] {
  const suite = SUITES.get("banking")!;
  const options = { attackModelName: "bench", defaultAttack: "important_instructions" as const };
  const out: Rollout[] = [];
  suite.userTasks.forEach((u, k) => {
    const inj = suite.injectionTasks[k % suite.injectionTasks.length]!;
    for (const injectionTaskId of ["", inj.id]) {
      const task = { suite: "banking", userTaskId: u.id, injectionTaskId, attack: "" };
      const spec = resolveEpisode(task as never, "task", options);
      const pre = startEpisode(spec).pre;
      const calls = [...u.groundTruth(pre), ...(injectionTaskId && k % 2 === 0 ? inj.groundTruth(pre) : [])];
      out.push(
        makeRollout({
          response: JSON.stringify({ calls, final_answer: u.groundTruthOutput ?? "Done." }),
          task: { id: `${u.id}:${injectionTaskId}`, kind: { case: "agent", value: task } },
        }),
      );
    }
  });
  return out;
}

async function inProcess(def: RewardServiceDefinition, rollouts: readonly Rollout[]): Promise<number[]> {
  const samples: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < WINDOW_MS) {
      for (const x of rollouts) await def.scoreRollout(x);
      n += rollouts.length;
      t = performance.now();
    }
    samples.push(n / ((t - t0) / 1000));
  }
  return samples;
}

async function viaGrpc(def: RewardServiceDefinition, rollouts: readonly Rollout[]): Promise<number[]> {
  const server = await startGrpcServer(def, {
    port: 0,
    limiter: createLimiter(GRPC_CONCURRENCY),
    logger: silentLogger,
  });
  const client = createGrpcClient(RewardService, server.address);
  try {
    const batch = 256;
    const stream = async () => {
      async function* reqs() {
        for (let i = 0; i < batch; i++) yield { rollout: rollouts[i % rollouts.length]! };
      }
      let n = 0;
      for await (const _ of client.scoreStream(reqs())) n++;
      if (n !== batch) throw new Error(`expected ${batch} results, got ${n}`);
    };
    await stream(); // warm-up: connection, JIT
    const samples: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      let n = 0;
      const t0 = performance.now();
      let t = t0;
      while (t - t0 < WINDOW_MS) {
        await stream();
        n += batch;
        t = performance.now();
      }
      samples.push(n / ((t - t0) / 1000));
    }
    return samples;
  } finally {
    client.close();
    await server.close(1000);
  }
}

const services: Array<{ name: string; def: RewardServiceDefinition; rollouts: Rollout[]; mix: string }> = [
  {
    name: "tool-call",
    def: createToolCallService(),
    rollouts: toolCallRollouts(),
    mix: "3 RLLA (exact, partial, malformed) + 2 BFCL JSON (valid parallel, invalid), 2 gold calls each",
  },
  {
    name: "agentdojo",
    def: createAgentDojoService(),
    rollouts: agentDojoRollouts(),
    mix: "16 banking user tasks × {clean, one injection}: ground-truth JSON trajectories, half of the attacked ones following the injection",
  },
];

const started = performance.now();
const results = [];
for (const s of services) {
  for (const x of s.rollouts) await s.def.scoreRollout(x); // warm-up
  const local = await inProcess(s.def, s.rollouts);
  const grpc = await viaGrpc(s.def, s.rollouts);
  results.push({
    service: s.name,
    mix: s.mix,
    rolloutsInMix: s.rollouts.length,
    inProcessRolloutsPerSecond: Math.round(median(local)),
    grpcRolloutsPerSecond: Math.round(median(grpc)),
    samples: { inProcess: local.map(Math.round), grpc: grpc.map(Math.round) },
  });
}

const report = {
  benchmark: "rewards",
  date: new Date().toISOString(),
  machine: machineInfo(),
  settings: {
    repeats: REPEATS,
    windowMs: WINDOW_MS,
    statistic: "median",
    inProcess: "scoreRollout one at a time (validation, span, result assembly included)",
    grpc: `ScoreStream batches of 256 on a grpc-js server (concurrency ${GRPC_CONCURRENCY}), client in the same process`,
  },
  durationSeconds: Math.round((performance.now() - started) / 100) / 10,
  results,
};

writeBenchResult("rewards", report);

console.log(
  `reward services, scored rollouts/s (median of ${REPEATS}), ${report.machine.cpu}, node ${process.version}`,
);
console.log(`${"service".padEnd(12)}${"in-process".padStart(12)}${"gRPC".padStart(12)}`);
for (const r of results)
  console.log(
    `${r.service.padEnd(12)}${String(r.inProcessRolloutsPerSecond).padStart(12)}${String(r.grpcRolloutsPerSecond).padStart(12)}`,
  );
console.log(`wrote bench/results/rewards.json in ${report.durationSeconds} s`);
