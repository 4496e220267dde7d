/**
 * The multi-turn agent-episode experiment (`trainer/test/agent-episodes-experiment.ts`): the embedded
 * learner trained with episodes against a real AgentEnvironment on AgentDojo banking tasks (injected
 * and clean), utility and security measured on fresh episodes before and after training, per seed.
 * Prints JSON (per seed, and the mean over seeds).
 *
 * Run: `node --import tsx bench/agent-episodes.ts` (≈ 10–25 s per seed at 40 steps on 2 cores). Knobs:
 * SEEDS (1,2,3), STEPS (30), EVAL_EPISODES (32); with AGENTDOJO_DATA_DIR set, the benchmark's other
 * suites join when this build's agentdojo package loads them (two user tasks each, injected and clean).
 */
import { runAgentEpisodesExperiment } from "../trainer/test/agent-episodes-experiment.js";

const seeds = (process.env["SEEDS"] ?? "1,2,3").split(",").map(Number);
const steps = Number(process.env["STEPS"] ?? 30);
const evalEpisodes = Number(process.env["EVAL_EPISODES"] ?? 32);
const results = await runAgentEpisodesExperiment({
  seeds,
  steps,
  evalEpisodes,
  // With AGENTDOJO_DATA_DIR (and a build whose agentdojo package loads the benchmark suites): those too.
  benchmarkSuites: true,
});
const avg = (f: (r: (typeof results)[number]) => number) =>
  results.reduce((a, r) => a + f(r), 0) / results.length;
const round = (x: number) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify(
    {
      experiment: "agent-episodes",
      steps,
      seeds,
      evalEpisodesPerTask: evalEpisodes,
      tasks: Object.keys(results[0]?.after.perTask ?? {}),
      mean: {
        utility: { before: round(avg((r) => r.before.utility)), after: round(avg((r) => r.after.utility)) },
        security: {
          before: round(avg((r) => r.before.security)),
          after: round(avg((r) => r.after.security)),
        },
        meanTurns: {
          before: round(avg((r) => r.before.meanTurns)),
          after: round(avg((r) => r.after.meanTurns)),
        },
      },
      perSeed: results,
    },
    null,
    2,
  ),
);
