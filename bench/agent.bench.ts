/**
 * Agent-environment throughput: episodes per second and environment calls per second at 1, 16 and 64
 * concurrent episodes, against the real agentdojo service process (its `main.ts`, AgentEnvironment on
 * its gRPC port, JetStream worker off) over gRPC, the client in this process.
 *
 * The episodes come from the service itself (`ListTasks` with ground truths), so the bench knows no
 * suite: for every suite served (banking embedded, plus the benchmark data's suites when
 * `AGENTDOJO_DATA_DIR` is set), each user task clean, and — when injectable — with one injection task
 * (k-th user task: injection task k mod n; every other one follows the injection). An episode is
 * `Reset` → one `Call` per ground-truth step → `Close`; an environment call is one of those RPCs. Each
 * concurrent worker walks the episode list from its own offset. Figures are medians over REPEATS timed
 * windows; the service's resident memory (VmRSS) is read after each level.
 *
 * Run: `npm run bench:agent` (≈ 30 s; `BENCH_WINDOW_MS`, `BENCH_REPEATS`). Writes bench/results/agent.json.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import { startServiceProcess } from "@reward-mesh/sdk/testing";
import { machineInfo, writeBenchResult } from "./results.js";

const LEVELS = [1, 16, 64];
const REPEATS = Number(process.env["BENCH_REPEATS"] ?? 3);
const WINDOW_MS = Number(process.env["BENCH_WINDOW_MS"] ?? 2000);
const DATA_DIR = process.env["AGENTDOJO_DATA_DIR"] ?? "";

interface EpisodePlan {
  readonly task: { suite: string; userTaskId: string; injectionTaskId: string; attack: string };
  readonly calls: ReadonlyArray<{ function: string; args: unknown }>;
  readonly finalAnswer: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function rssMiB(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Math.round(Number(m[1]) / 1024) : Number.NaN;
}

const main = fileURLToPath(import.meta.resolve("@reward-mesh/agentdojo/main"));
const service = await startServiceProcess(main, {
  envPrefix: "AGENTDOJO",
  natsUrl: "nats://127.0.0.1:1", // the worker is off: no NATS
  env: {
    AGENTDOJO_WORKER: "false",
    AGENTDOJO_ENV_MAX_SESSIONS: "1024",
    ...(DATA_DIR ? { AGENTDOJO_DATA_DIR: DATA_DIR } : {}),
  },
});
const env = createGrpcClient(AgentEnvironment, service.address);
const started = performance.now();
try {
  const listing = await env.listTasks({ includeGroundTruth: true });
  const plans: EpisodePlan[] = [];
  for (const s of listing.suites)
    s.userTasks.forEach((u, k) => {
      const userCalls = JSON.parse(u.groundTruthJson) as EpisodePlan["calls"];
      const finalAnswer = u.groundTruthOutput || "Done.";
      plans.push({
        task: { suite: s.name, userTaskId: u.id, injectionTaskId: "", attack: "" },
        calls: userCalls,
        finalAnswer,
      });
      if (!u.injectable) return;
      const inj = s.injectionTasks[k % s.injectionTasks.length]!;
      const follow = k % 2 === 0 ? (JSON.parse(inj.groundTruthJson) as EpisodePlan["calls"]) : [];
      plans.push({
        task: { suite: s.name, userTaskId: u.id, injectionTaskId: inj.id, attack: "important_instructions" },
        calls: [...userCalls, ...follow],
        finalAnswer,
      });
    });
  const playEpisode = async (p: EpisodePlan): Promise<number> => {
    const { sessionId } = await env.reset({ task: p.task });
    for (const c of p.calls)
      await env.call({ sessionId, function: c.function, argumentsJson: JSON.stringify(c.args) });
    const closed = await env.close({ sessionId, finalAnswer: p.finalAnswer });
    if (closed.callCount !== p.calls.length)
      throw new Error(`expected ${p.calls.length} calls, got ${closed.callCount}`);
    return p.calls.length + 2;
  };
  for (const p of plans) await playEpisode(p); // warm-up: connection, JIT, the service's caches

  const results = [];
  for (const concurrency of LEVELS) {
    const samples: Array<{ episodesPerSecond: number; callsPerSecond: number; toolCallsPerSecond: number }> =
      [];
    for (let r = 0; r < REPEATS; r++) {
      let episodes = 0;
      let calls = 0;
      const t0 = performance.now();
      const deadline = t0 + WINDOW_MS;
      await Promise.all(
        Array.from({ length: concurrency }, async (_, w) => {
          for (let i = w; performance.now() < deadline; i++) {
            const n = await playEpisode(plans[(i * 7 + w) % plans.length]!); // not `calls += await …`: lost updates
            calls += n;
            episodes++;
          }
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      samples.push({
        episodesPerSecond: episodes / secs,
        callsPerSecond: calls / secs,
        toolCallsPerSecond: (calls - 2 * episodes) / secs,
      });
    }
    results.push({
      concurrentEpisodes: concurrency,
      episodesPerSecond: Math.round(median(samples.map((s) => s.episodesPerSecond))),
      environmentCallsPerSecond: Math.round(median(samples.map((s) => s.callsPerSecond))),
      toolCallsPerSecond: Math.round(median(samples.map((s) => s.toolCallsPerSecond))),
      serviceRssMiB: rssMiB(service.child.pid!),
      samples: samples.map((s) => Math.round(s.episodesPerSecond)),
    });
  }

  const report = {
    benchmark: "agent",
    date: new Date().toISOString(),
    machine: machineInfo(),
    settings: {
      repeats: REPEATS,
      windowMs: WINDOW_MS,
      statistic: "median",
      service:
        "agentdojo main.ts as its own process (AgentEnvironment over gRPC, worker off); client in the bench process",
      episode: "Reset → Call per ground-truth step → Close (an environment call = one of those RPCs)",
    },
    suites: listing.suites.map(
      (s) =>
        `${s.name} ${s.benchmarkVersion} (${s.userTasks.length} user × ${s.injectionTasks.length} injection tasks)`,
    ),
    episodesInMix: plans.length,
    meanToolCallsPerEpisode: Number(
      (plans.reduce((a, p) => a + p.calls.length, 0) / plans.length).toFixed(2),
    ),
    durationSeconds: Math.round((performance.now() - started) / 100) / 10,
    results,
  };
  writeBenchResult("agent", report);
  console.log(
    `AgentEnvironment over gRPC (median of ${REPEATS} × ${WINDOW_MS} ms), ${report.machine.cpu}, node ${process.version}`,
  );
  console.log(
    `suites: ${report.suites.join("; ")}; ${plans.length} episodes in the mix, ${report.meanToolCallsPerEpisode} tool calls each`,
  );
  console.log(
    `${"concurrent".padEnd(12)}${"episodes/s".padStart(12)}${"env calls/s".padStart(13)}${"tool calls/s".padStart(14)}${"RSS MiB".padStart(9)}`,
  );
  for (const r of results)
    console.log(
      `${String(r.concurrentEpisodes).padEnd(12)}${String(r.episodesPerSecond).padStart(12)}${String(r.environmentCallsPerSecond).padStart(13)}${String(r.toolCallsPerSecond).padStart(14)}${String(r.serviceRssMiB).padStart(9)}`,
    );
  console.log(`wrote bench/results/agent.json in ${report.durationSeconds} s`);
} finally {
  env.raw.close();
  await service.stop();
}
