/**
 * Multi-turn training: `runTraining` with `episodes` plays the AgentDojo banking tasks (injected and
 * clean) as episodes against a real AgentEnvironment, scores them through the mesh (real nats-server,
 * the agentdojo service) and trains the embedded learner on one masked sample per episode; utility and
 * security, measured on fresh episodes before and after, both rise (fixed seed; the experiment in
 * `bench/agent-episodes.ts` runs several seeds).
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { join } from "node:path";
import { createEmbeddedLearner, type Learner, readMetrics, runTraining } from "../src/index.js";
import {
  benchmarkSuitesSkip,
  EXPERIMENT_EPISODES,
  experimentConfig,
  experimentTasks,
  runAgentEpisodesExperiment,
  startAgentMesh,
} from "./agent-episodes-experiment.js";

it("trains on multi-turn episodes: utility and security both rise (seed 3, 30 steps)", async () => {
  const [r] = await runAgentEpisodesExperiment({ seeds: [3], steps: 30, evalEpisodes: 16 });
  const { before, after } = r!;
  const show = `utility ${before.utility.toFixed(3)} -> ${after.utility.toFixed(3)}, security ${before.security.toFixed(3)} -> ${after.security.toFixed(3)}`;
  assert.ok(after.utility > before.utility + 0.15, show);
  assert.ok(after.security > before.security + 0.1, show);
  // The training steps' own (per-step, noisier) means rise too.
  assert.ok(r!.trainingLast.utility > r!.trainingFirst.utility, JSON.stringify(r));
  assert.ok(r!.trainingLast.security > r!.trainingFirst.security, JSON.stringify(r));
  // Every rollout of a step was an episode (4 prompts × G = 8), each ended for a reason.
  const eps = r!.lastStepEpisodes as {
    count: number;
    meanTurns: number;
    stopReasons: Record<string, number>;
  };
  assert.equal(eps.count, 32);
  assert.equal(
    Object.values(eps.stopReasons).reduce((a, b) => a + b, 0),
    32,
  );
  // Episodes are multi-turn: the policy calls tools, reads (opaque) replies and calls again.
  assert.ok(after.meanTurns > 1.5, `mean turns ${after.meanTurns}`);
});

const multiSkip = benchmarkSuitesSkip();
if (multiSkip) console.log(`# the four-suite episode run is skipped: ${multiSkip}`);

it("trains on episodes of all four suites: utility and security both rise (seed 3, 80 steps)", {
  skip: multiSkip,
}, async () => {
  const [r] = await runAgentEpisodesExperiment({
    seeds: [3],
    steps: 80,
    evalEpisodes: 16,
    benchmarkSuites: true,
  });
  const suites = new Set(Object.keys(r!.after.perTask).map((id) => id.split("-")[0]));
  assert.deepEqual([...suites].sort(), ["banking", "slack", "travel", "workspace"]);
  const { before, after } = r!;
  const show = `utility ${before.utility.toFixed(3)} -> ${after.utility.toFixed(3)}, security ${before.security.toFixed(3)} -> ${after.security.toFixed(3)}`;
  assert.ok(after.utility > before.utility + 0.1, show);
  assert.ok(after.security > before.security + 0.05, show);
});

it("a run stopped while it plays episodes closes every session, and resumes to its last step", async () => {
  const mesh = await startAgentMesh();
  try {
    const config = experimentConfig(mesh, 5, 3, EXPERIMENT_EPISODES);
    const tasks = experimentTasks();
    const inner = createEmbeddedLearner({ seed: 5 });
    const stop = new AbortController();
    let trained = 0;
    let afterUpdate = 0;
    // The learner as the loop sees it: the run is stopped in the middle of step 2's episodes.
    const learner: Learner = {
      ...inner,
      async trainStep(req) {
        trained++;
        return inner.trainStep(req);
      },
      async generate(req) {
        if (trained === 1 && ++afterUpdate === 20) stop.abort();
        return inner.generate(req);
      },
    };
    const first = await runTraining({
      config,
      tasks,
      bus: mesh.bus,
      learner,
      environment: mesh.env,
      signal: stop.signal,
    });
    assert.deepEqual([first.stopped, first.lastStep], [true, 1]);
    assert.equal(mesh.manager.size, 0, "no session left open by the stopped episodes");
    const resumed = await runTraining({
      config,
      tasks,
      bus: mesh.bus,
      learner: inner,
      environment: mesh.env,
    });
    assert.deepEqual([resumed.stopped, resumed.resumedFrom, resumed.lastStep], [false, 1, 3]);
    assert.equal(mesh.manager.size, 0);
    const lines = readMetrics(join(mesh.dir, config.runId, "metrics.jsonl"));
    assert.deepEqual(
      lines.map((l) => [l.step, (l as unknown as { episodes: { count: number } }).episodes.count]),
      [
        [1, 32],
        [2, 32],
        [3, 32],
      ],
    );
  } finally {
    await mesh.close();
  }
});
