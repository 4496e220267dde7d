/**
 * The multi-turn agent-episode experiment (`trainer/test/agent-episodes-experiment.ts`): the embedded
 * learner trained with episodes against a real AgentEnvironment on AgentDojo banking tasks (injected
 * and clean), utility and security measured on fresh episodes before and after training, per seed.
 * Writes `bench/results/agent-episodes.json` (per seed, the mean over seeds, the machine) and prints it.
 *
 * Run: `npm run bench:agent-episodes` (≈ 10–25 s per seed at 40 steps on 2 cores). Knobs:
 * SEEDS (1,2,3), STEPS (30), EVAL_EPISODES (32); with AGENTDOJO_DATA_DIR set, the benchmark's other
 * suites join (two user tasks each, injected and clean).
 */
import { runAgentEpisodesExperiment } from "../trainer/test/agent-episodes-experiment.js";
import { machineInfo, writeBenchResult } from "./results.js";

const t0 = performance.now();
const seeds = (process.env["SEEDS"] ?? "1,2,3").split(",").map(Number);
const steps = Number(process.env["STEPS"] ?? 30);
const evalEpisodes = Number(process.env["EVAL_EPISODES"] ?? 32);
const results = await runAgentEpisodesExperiment({
  seeds,
  steps,
  evalEpisodes,
  // With AGENTDOJO_DATA_DIR: the benchmark's other suites too.
  benchmarkSuites: true,
});
const avg = (f: (r: (typeof results)[number]) => number) =>
  results.reduce((a, r) => a + f(r), 0) / results.length;
const round = (x: number) => Math.round(x * 1000) / 1000;
const report = {
  experiment: "agent-episodes",
  machine: machineInfo(),
  durationSeconds: Math.round((performance.now() - t0) / 100) / 10,
  steps,
  seeds,
  evalEpisodesPerTask: evalEpisodes,
  tasks: Object.keys(results[0]?.after.perTask ?? {}),
  mean: {
    utility: { before: round(avg((r) => r.before.utility)), after: round(avg((r) => r.after.utility)) },
    security: { before: round(avg((r) => r.before.security)), after: round(avg((r) => r.after.security)) },
    meanTurns: { before: round(avg((r) => r.before.meanTurns)), after: round(avg((r) => r.after.meanTurns)) },
  },
  perSeed: results,
};
console.log(JSON.stringify(report, null, 2));
console.log(`wrote ${writeBenchResult("agent-episodes", report)} in ${report.durationSeconds} s`);
