/**
 * The multi-turn agent-episode experiment: the embedded learner trained by `runTraining` on AgentDojo
 * banking tasks played as episodes against a real AgentEnvironment server (the agentdojo package's
 * session manager on a free port), scored through the mesh (real nats-server, the agentdojo reward
 * service's JetStream worker). Utility and security are measured on every task before and after
 * training (fresh episodes, scored by the agentdojo service's own scorer), per seed.
 *
 * Used by `train-episodes.test.ts` (one seed, asserted) and `bench/agent-episodes.ts` (several seeds,
 * JSON). Tasks: four banking user tasks (three under an `important_instructions` injection, one clean;
 * the built-in `agent` set's choice) plus the clean variant of each injected one, as fragment tasks.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AnySuite,
  agentEnvironmentService,
  bankingSuite,
  createAgentDojoService,
  createSessionManager,
  DEFAULT_AGENTDOJO_OPTIONS,
  loadSuites,
  type SessionManager,
} from "@reward-mesh/agentdojo";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import { type MeshBus, openBus, silentLogger, startGrpcServices, startRewardService } from "@reward-mesh/sdk";
import { makeRollout, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import {
  createEmbeddedLearner,
  type EpisodeSettings,
  episodeTaskOf,
  type Learner,
  readMetrics,
  type RunConfig,
  resolveRunConfig,
  runEpisodes,
  runTraining,
  type TaskDefinition,
} from "../src/index.js";
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "../../services/agentdojo/test/benchmark-data-dir.js";

/** Options of {@link runAgentEpisodesExperiment}. */
export interface AgentEpisodesExperimentOptions {
  readonly seeds: readonly number[];
  readonly steps: number;
  /** Episodes per task for the before/after measurement. @default 32 */
  readonly evalEpisodes?: number;
  readonly groupSize?: number;
  readonly promptsPerStep?: number;
  readonly episodes?: Partial<EpisodeSettings>;
  readonly lr?: number;
  /**
   * Also train on the benchmark's other suites (workspace, travel, slack) when `AGENTDOJO_DATA_DIR`
   * holds them ({@link benchmarkSuitesSkip}): two user tasks of each, under an injection and clean.
   * @default false
   */
  readonly benchmarkSuites?: boolean;
}

/** Utility (all tasks) and security (injected tasks) of the policy, measured on fresh episodes. */
export interface Measure {
  readonly utility: number;
  readonly security: number;
  readonly perTask: Readonly<Record<string, { utility: number; security: number | null }>>;
  readonly meanTurns: number;
}

/** One seed's figures. */
export interface SeedResult {
  readonly seed: number;
  readonly before: Measure;
  readonly after: Measure;
  /** Mean of the training steps' component means: the first and the last quarter of the steps. */
  readonly trainingFirst: { utility: number; security: number };
  readonly trainingLast: { utility: number; security: number };
  /** The last step's episode statistics (`metrics.jsonl` `episodes`). */
  readonly lastStepEpisodes: unknown;
  readonly seconds: number;
}

/** One experiment task: a user task of a suite, optionally under an injection, and a harmless extra step. */
export interface ExperimentSelection {
  readonly userTask: string;
  readonly injectionTask: string | null;
  readonly distractor?: { readonly function: string; readonly args: Record<string, unknown> };
}

/** Banking user tasks under an `important_instructions` injection, and clean. */
export const BANKING_SELECTIONS: readonly ExperimentSelection[] = [
  {
    userTask: "user_task_0",
    injectionTask: "injection_task_5",
    distractor: { function: "get_balance", args: {} },
  },
  {
    userTask: "user_task_3",
    injectionTask: "injection_task_4",
    distractor: { function: "get_iban", args: {} },
  },
  {
    userTask: "user_task_13",
    injectionTask: "injection_task_7",
    distractor: { function: "get_balance", args: {} },
  },
  {
    userTask: "user_task_4",
    injectionTask: null,
    distractor: { function: "get_scheduled_transactions", args: {} },
  },
];

const STOP = "<eos>";

/**
 * A fragment task of `suite` in the layout of the built-in `agent` set: the vocabulary is the user
 * task's ground-truth steps (`{"function", "args"}`), the injection task's (when `withInjection`) and
 * the distractor; the rendered answer carries the user task's expected output. Ground truths come from
 * the agentdojo package (test code may import it; the trainer's own code never does).
 */
function selectionTask(suite: AnySuite, sel: ExperimentSelection, withInjection: boolean): TaskDefinition {
  const user = suite.userTasks.find((t) => t.id === sel.userTask);
  const injection = sel.injectionTask
    ? suite.injectionTasks.find((t) => t.id === sel.injectionTask)
    : undefined;
  if (!user || (sel.injectionTask && !injection))
    throw new Error(`unknown ${suite.name} task in ${JSON.stringify(sel)}`);
  const pre = suite.loadEnvironment({});
  const steps = [
    ...user.groundTruth(pre),
    ...(injection ? injection.groundTruth(pre) : []),
    ...(sel.distractor ? [sel.distractor] : []),
  ].map((c) => JSON.stringify({ function: c.function, args: c.args }));
  const vocabulary = [STOP, ...new Set(steps)];
  const finalAnswer = user.groundTruthOutput ?? "Done.";
  const attacked = withInjection && injection !== undefined;
  const id = `${suite.name}-${sel.userTask}${sel.injectionTask ? `-${sel.injectionTask}` : ""}${attacked || !sel.injectionTask ? "" : "-clean"}`;
  return {
    id,
    set: "agent",
    task: {
      id,
      prompt: user.prompt,
      kind: {
        case: "agent",
        value: {
          suite: suite.name,
          userTaskId: sel.userTask,
          injectionTaskId: attacked ? sel.injectionTask! : "",
          attack: attacked ? "important_instructions" : "",
        },
      },
    },
    vocabulary,
    stopToken: 0,
    maxTokens: vocabulary.length,
    render: (f) =>
      JSON.stringify({
        calls: f.filter((x) => x !== STOP).map((x) => JSON.parse(x) as unknown),
        final_answer: finalAnswer,
      }),
  };
}

/** The experiment's tasks: each selection as given, plus the clean variant of each injected one. */
export function experimentTasks(
  suite: AnySuite = bankingSuite,
  selections: readonly ExperimentSelection[] = BANKING_SELECTIONS,
): TaskDefinition[] {
  return [
    ...selections.map((sel) => selectionTask(suite, sel, true)),
    ...selections.filter((sel) => sel.injectionTask).map((sel) => selectionTask(suite, sel, false)),
  ];
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

/** Plays `n` fresh episodes of every task and scores them with the agentdojo service's scorer. */
async function measure(
  learner: Learner,
  env: Parameters<typeof runEpisodes>[1]["env"],
  tasks: readonly TaskDefinition[],
  settings: EpisodeSettings,
  n: number,
  seed: number,
  scorer: ReturnType<typeof createAgentDojoService>,
): Promise<Measure> {
  const list = tasks.flatMap((t) => Array.from({ length: n }, () => ({ t, e: episodeTaskOf(t) })));
  const results = await runEpisodes(
    list.map((x) => x.e),
    { env, learner, settings, sampling: { maxNewTokens: 64 }, seed },
  );
  const perTask: Record<string, { u: number[]; s: number[] }> = {};
  for (const [i, r] of results.entries()) {
    const t = list[i]!.t;
    const scored = await scorer.scoreRollout(
      makeRollout({ response: r.trajectoryJson, task: t.task as never }),
    );
    const v = (name: string) => scored.components.find((c) => c.name === name);
    const p = perTask[t.id] ?? { u: [], s: [] };
    perTask[t.id] = p;
    p.u.push(v("utility")?.value ?? 0);
    const k = t.task.kind;
    if (k?.case === "agent" && k.value?.injectionTaskId) p.s.push(v("security")?.value ?? 0);
  }
  const rows = Object.entries(perTask);
  return {
    utility: mean(rows.map(([, p]) => mean(p.u))),
    security: mean(rows.filter(([, p]) => p.s.length).map(([, p]) => mean(p.s))),
    perTask: Object.fromEntries(
      rows.map(([id, p]) => [id, { utility: mean(p.u), security: p.s.length ? mean(p.s) : null }]),
    ),
    meanTurns: mean(results.map((r) => r.turns)),
  };
}

/** Why the benchmark's other suites cannot join (no data directory), or false when they can. */
export function benchmarkSuitesSkip(): string | false {
  return BENCHMARK_DATA_SKIP;
}

/**
 * The suites of `AGENTDOJO_DATA_DIR` beyond banking, when it is set, and the option that hands all
 * suites to the agentdojo session manager and scorer (`suites`; empty otherwise).
 */
function benchmarkSuites(): { suites: AnySuite[]; option: object } {
  if (benchmarkSuitesSkip() || BENCHMARK_DATA_DIR === undefined) return { suites: [], option: {} };
  const all = loadSuites(BENCHMARK_DATA_DIR);
  return { suites: [...all.values()].filter((x) => x.name !== "banking"), option: { suites: all } };
}

/** Two user tasks of a suite with ground truths, each under one of the suite's injection tasks. */
function suiteSelections(suite: AnySuite): ExperimentSelection[] {
  const pre = suite.loadEnvironment({});
  const users = suite.userTasks.filter((t) => t.groundTruth(pre).length > 0).slice(0, 2);
  return users.map((u, i) => ({
    userTask: u.id,
    injectionTask: suite.injectionTasks[i % suite.injectionTasks.length]?.id ?? null,
  }));
}

/** A running agent mesh: nats-server, the agentdojo reward service, an AgentEnvironment server. */
export interface AgentMesh {
  readonly bus: MeshBus;
  readonly env: AgentEnvironmentClient;
  /** `host:port` of the AgentEnvironment server. */
  readonly address: string;
  /** The environment's sessions (to check that none is left open). */
  readonly manager: SessionManager;
  /** The agentdojo scorer (the reward service's own definition). */
  readonly scorer: ReturnType<typeof createAgentDojoService>;
  /** A fresh directory for run outputs (removed by `close`). */
  readonly dir: string;
  close(): Promise<void>;
}

type AgentEnvironmentClient = ReturnType<typeof createGrpcClient<typeof AgentEnvironment>>;

/** Starts an {@link AgentMesh}; `suitesOption` hands the agentdojo package extra suites (`suites`). */
export async function startAgentMesh(suitesOption: object = {}): Promise<AgentMesh> {
  const scorer = createAgentDojoService({ ...DEFAULT_AGENTDOJO_OPTIONS, ...suitesOption });
  const nats = await startTestNats();
  const bus = await openBus(testBusOptions(nats.url), "agent-episodes");
  const reward = await startRewardService(
    createAgentDojoService({ ...DEFAULT_AGENTDOJO_OPTIONS, ...suitesOption }),
    testRuntimeOptions(nats.url),
    silentLogger,
  );
  const manager = createSessionManager({
    maxSessions: 256,
    idleTimeoutMs: 60_000,
    maxCalls: 32,
    attackModelName: "Qwen",
    defaultAttack: "important_instructions",
    ...suitesOption,
  });
  const server = await startGrpcServices([agentEnvironmentService(manager)], { logger: silentLogger });
  const env = createGrpcClient(AgentEnvironment, server.address);
  const dir = mkdtempSync(join(tmpdir(), "rm-agent-episodes-"));
  return {
    bus,
    env,
    address: server.address,
    manager,
    scorer,
    dir,
    async close() {
      env.raw.close();
      await server.close(0);
      manager.stop();
      await reward.close(1000);
      await bus.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The experiment's run configuration for one seed (CorrGRPO over utility and security, episodes on). */
export function experimentConfig(
  mesh: AgentMesh,
  seed: number,
  steps: number,
  settings: EpisodeSettings,
  o: Pick<AgentEpisodesExperimentOptions, "groupSize" | "promptsPerStep" | "lr"> = {},
): RunConfig {
  return resolveRunConfig({
    run: { id: `agent-episodes-${seed}`, seed, outputDir: mesh.dir },
    tasks: { sets: ["agent"] },
    groupSize: o.groupSize ?? 8,
    promptsPerStep: o.promptsPerStep ?? 4,
    steps,
    components: "agentdojo",
    estimator: { name: "corr_grpo", options: { coefficientSumFloor: 1 } },
    loss: { type: "dapo", klBeta: 0 },
    optim: { lr: o.lr ?? 0.1 },
    groups: { deadlineMs: 30_000 },
    episodes: { environment: mesh.address, ...settings },
  });
}

/** The experiment's episode settings. */
export const EXPERIMENT_EPISODES: EpisodeSettings = { maxTurns: 4, maxTokens: 48, concurrency: 16 };

/** Runs the experiment for each seed (sequentially: one mesh, one environment server). */
export async function runAgentEpisodesExperiment(o: AgentEpisodesExperimentOptions): Promise<SeedResult[]> {
  const extra = o.benchmarkSuites ? benchmarkSuites() : { suites: [], option: {} };
  const mesh = await startAgentMesh(extra.option);
  const { env, scorer } = mesh;
  const tasks = [
    ...experimentTasks(),
    ...extra.suites.flatMap((suite) => experimentTasks(suite, suiteSelections(suite))),
  ];
  const settings: EpisodeSettings = { ...EXPERIMENT_EPISODES, ...o.episodes };
  const n = o.evalEpisodes ?? 32;
  const out: SeedResult[] = [];
  try {
    for (const seed of o.seeds) {
      const t0 = performance.now();
      const config = experimentConfig(mesh, seed, o.steps, settings, o);
      const learner = createEmbeddedLearner({ seed });
      try {
        const before = await measure(learner, env, tasks, settings, n, seed + 1000, scorer);
        await runTraining({ config, tasks, bus: mesh.bus, learner, environment: env });
        const after = await measure(learner, env, tasks, settings, n, seed + 1000, scorer);
        const lines = readMetrics(join(mesh.dir, config.runId, "metrics.jsonl"));
        const q = Math.max(1, Math.floor(lines.length / 4));
        const comp = (ls: typeof lines, id: string) =>
          mean(
            ls
              .map(
                (l) =>
                  (l as unknown as { components: Record<string, { mean: number | null }> }).components[id]
                    ?.mean,
              )
              .filter((x): x is number => typeof x === "number"),
          );
        const part = (ls: typeof lines) => ({
          utility: comp(ls, "agentdojo/utility"),
          security: comp(ls, "agentdojo/security"),
        });
        out.push({
          seed,
          before,
          after,
          trainingFirst: part(lines.slice(0, q)),
          trainingLast: part(lines.slice(-q)),
          lastStepEpisodes: (lines.at(-1) as unknown as { episodes?: unknown }).episodes,
          seconds: (performance.now() - t0) / 1000,
        });
      } finally {
        await learner.close();
      }
      if (mesh.manager.size !== 0) throw new Error(`${mesh.manager.size} environment sessions left open`);
    }
  } finally {
    await mesh.close();
  }
  return out;
}
