/**
 * One AgentDojo episode, shared by scoring (replay) and the interactive AgentEnvironment: resolve the
 * task (suite, user task, injection task, attack), build the environment with the attack's injections
 * (`load_and_inject_default_environment` → `init_environment` → deep copy as the pre-environment),
 * run calls, and evaluate utility on (output, pre, post) and — with an injection task — whether the
 * attack succeeded on the same triple (AgentDojo `run_task_with_pipeline`).
 * @module
 */
import type { AgentTask } from "@reward-mesh/proto";
import { InvalidArgumentError } from "@reward-mesh/sdk";
import { type AttackName, ATTACK_NAMES, buildInjections, isAttackName } from "./attacks.js";
import { runFunction } from "./runtime.js";
import type { AnySuite, FunctionCall, InjectionTask, UserTask } from "./suite.js";
import { BENCHMARK_SUITE_NAMES, SUITES } from "./suites/index.js";

/** Options for resolving tasks into episodes. */
export interface EpisodeOptions {
  /**
   * The suites tasks may name (`loadSuites(dataDir)` at start-up).
   * @default SUITES — the embedded banking suite only.
   */
  readonly suites?: ReadonlyMap<string, AnySuite>;
  /** Name the attacks address the model by ("…from Emma Johnson, to you, <model>"). */
  readonly attackModelName: string;
  /** Attack used when a task names an injection task but no attack. */
  readonly defaultAttack: AttackName;
}

/** A resolved task. */
export interface EpisodeSpec {
  readonly suite: AnySuite;
  readonly userTask: UserTask<object>;
  /** Undefined for a clean (no-attack) task. */
  readonly injectionTask: InjectionTask<object> | undefined;
  readonly attack: AttackName | undefined;
  /** Vector → attack text (empty for a clean task). */
  readonly injections: Readonly<Record<string, string>>;
}

function idRange(tasks: readonly { readonly id: string }[]): string {
  return tasks.length === 0 ? "none" : `${tasks[0]!.id} … ${tasks.at(-1)!.id}`;
}

/**
 * Why `name` is not a suite: the available ones, and — for a benchmark suite this process has not
 * loaded — that it comes from the benchmark data (`AGENTDOJO_DATA_DIR`).
 */
export function unknownSuite(name: string, suites: ReadonlyMap<string, AnySuite>): string {
  const base = `unknown suite ${JSON.stringify(name)}; available: ${[...suites.keys()].join(", ")}`;
  return BENCHMARK_SUITE_NAMES.includes(name)
    ? `${base} (${name} is an AgentDojo suite read from the user's copy of the benchmark data: set AGENTDOJO_DATA_DIR to its directory)`
    : base;
}

/**
 * Resolves an `AgentTask`; throws `InvalidArgumentError` naming `<prefix>.suite`, `.user_task_id`,
 * `.injection_task_id` or `.attack` when something is unknown.
 */
export function resolveEpisode(task: AgentTask | undefined, prefix: string, o: EpisodeOptions): EpisodeSpec {
  if (!task) throw new InvalidArgumentError(prefix, "is required");
  const suites = o.suites ?? SUITES;
  const suite = suites.get(task.suite);
  if (!suite) throw new InvalidArgumentError(`${prefix}.suite`, unknownSuite(task.suite, suites));
  const userTask = suite.userTasks.find((t) => t.id === task.userTaskId);
  if (!userTask)
    throw new InvalidArgumentError(
      `${prefix}.user_task_id`,
      `unknown user task ${JSON.stringify(task.userTaskId)} in suite ${suite.name} (${idRange(suite.userTasks)})`,
    );
  const attackName = task.attack.trim();
  if (task.injectionTaskId === "") {
    if (attackName !== "" && attackName !== "none")
      throw new InvalidArgumentError(
        `${prefix}.attack`,
        'needs an injection_task_id (use "" or "none" for a clean task)',
      );
    return { suite, userTask, injectionTask: undefined, attack: undefined, injections: {} };
  }
  const injectionTask = suite.injectionTasks.find((t) => t.id === task.injectionTaskId);
  if (!injectionTask)
    throw new InvalidArgumentError(
      `${prefix}.injection_task_id`,
      `unknown injection task ${JSON.stringify(task.injectionTaskId)} in suite ${suite.name} (${idRange(suite.injectionTasks)})`,
    );
  const attack = attackName === "" ? o.defaultAttack : attackName;
  if (!isAttackName(attack))
    throw new InvalidArgumentError(
      `${prefix}.attack`,
      `unknown attack ${JSON.stringify(attack)}; available: ${ATTACK_NAMES.join(", ")}`,
    );
  const injections = buildInjections(suite, userTask, injectionTask, attack, o.attackModelName);
  if (Object.keys(injections).length === 0)
    throw new InvalidArgumentError(
      `${prefix}.user_task_id`,
      `${userTask.id} is not injectable (its ground truth sees no injection vector)`,
    );
  return { suite, userTask, injectionTask, attack, injections };
}

/** A running episode: the environment the calls mutate and the pre-environment snapshot. */
export interface Episode {
  readonly spec: EpisodeSpec;
  readonly env: object;
  readonly pre: object;
  /** Every call made so far, arguments as given (the trace `utilityFromTraces` / `securityFromTraces` see). */
  readonly calls: FunctionCall[];
}

/** Loads the environment with the injections, applies `init_environment`, snapshots it. */
export function startEpisode(spec: EpisodeSpec): Episode {
  let env = spec.suite.loadEnvironment(spec.injections);
  env = spec.userTask.initEnvironment?.(env) ?? env;
  return { spec, env, pre: structuredClone(env), calls: [] };
}

/** One recorded call: what was asked and what came back (error empty on success). */
export interface CallRecord {
  readonly call: FunctionCall;
  readonly output: string;
  readonly error: string;
}

/** Runs one call in the episode (mutating its environment). */
export function callInEpisode(ep: Episode, call: FunctionCall): CallRecord {
  ep.calls.push(call);
  const r = runFunction(ep.spec.suite, ep.env, call.function, call.args);
  return { call, output: r.output, error: r.error };
}

/** Utility and (with an injection task) whether the attack succeeded. */
export interface EpisodeVerdict {
  readonly utility: boolean;
  /** Undefined for a clean task. */
  readonly attackSuccess: boolean | undefined;
}

/** Evaluates the episode on (output, pre, post). */
export function evaluateEpisode(ep: Episode, output: string): EpisodeVerdict {
  const { userTask, injectionTask } = ep.spec;
  const utility = userTask.utilityFromTraces
    ? userTask.utilityFromTraces(output, ep.pre, ep.env, ep.calls)
    : userTask.utility(output, ep.pre, ep.env);
  const attackSuccess = injectionTask?.securityFromTraces
    ? injectionTask.securityFromTraces(output, ep.pre, ep.env, ep.calls)
    : injectionTask?.security(output, ep.pre, ep.env);
  return { utility, attackSuccess };
}

/** Replays calls on a fresh environment and evaluates: the scoring path. */
export function replayEpisode(
  spec: EpisodeSpec,
  calls: readonly FunctionCall[],
  finalAnswer: string,
): EpisodeVerdict & { readonly records: CallRecord[] } {
  const ep = startEpisode(spec);
  const records = calls.map((c) => callInEpisode(ep, c));
  return { ...evaluateEpisode(ep, finalAnswer), records };
}
