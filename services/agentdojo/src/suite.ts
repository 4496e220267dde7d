/**
 * What an AgentDojo suite is, independent of any one suite (`specs/rewards.md` §7.1): an environment
 * built from data with injection vectors, tools that read and mutate it, user tasks with a utility
 * check and injection tasks with a security check ("True iff the attack succeeded").
 *
 * The scoring code (replay, attacks, the AgentEnvironment service) only sees this interface; a suite
 * (banking today; slack, travel, workspace later) is a module under `suites/` registered in
 * `suites/index.ts`.
 * @module
 */

/** A tool call: of an agent trajectory or of a task's ground truth. */
export interface FunctionCall {
  readonly function: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** Injection-task ground truths only: the arguments as the `tool_knowledge` attack shows them. */
  readonly placeholderArgs?: Readonly<Record<string, unknown>>;
}

/**
 * Argument types (pydantic field types of the Python tools): `array` is a `list[...]` (element type in
 * `items`), `object` a `dict`.
 */
export type ParameterType = "string" | "number" | "integer" | "boolean" | "array" | "object";

/** One tool parameter, as AgentDojo derives it from the signature and docstring. */
export interface ToolParameter {
  readonly name: string;
  /** `number` is a Python `float` (accepts ints and numeric strings, pydantic lax mode). */
  readonly type: ParameterType;
  readonly description: string;
  /** No default: omitting it is a ValidationError. */
  readonly required: boolean;
  /** `T | None` (an explicit null is accepted). */
  readonly nullable?: boolean;
  /** Value used when the argument is omitted (optional parameters only). */
  readonly default?: string | number | boolean | null;
  /** `array` parameters: the element type (`list[str]` → `string`, `list[dict]` → `object`). */
  readonly items?: Exclude<ParameterType, "array">;
  /** `string` parameters backed by a Python `Enum`: the accepted values. */
  readonly enum?: readonly string[];
}

/** A tool failed the way the Python tool raises: the agent sees `"<pyType>: <message>"`. */
export class ToolError extends Error {
  override readonly name = "ToolError";
  /** Python exception class name, e.g. `ValueError`. */
  readonly pyType: string;
  constructor(pyType: string, message: string) {
    super(message);
    this.pyType = pyType;
  }
}

/** One tool. `run` mutates `env` in place and returns what the agent sees (AgentDojo rendering). */
export interface Tool<Env> {
  readonly name: string;
  readonly description: string;
  readonly parameters: readonly ToolParameter[];
  run(env: Env, args: Readonly<Record<string, unknown>>): string;
}

/** A user task: the prompt, its ground truth and its utility check. */
export interface UserTask<Env> {
  /** `user_task_<n>`. */
  readonly id: string;
  readonly prompt: string;
  /** What the ground-truth agent answers (AgentDojo `GROUND_TRUTH_OUTPUT`), if the task has one. */
  readonly groundTruthOutput?: string;
  groundTruth(pre: Env): FunctionCall[];
  utility(output: string, pre: Env, post: Env): boolean;
  /**
   * AgentDojo `utility_from_traces`: where a task has it, it decides utility instead of {@link utility},
   * from every call the agent made (arguments as given, failed calls included).
   */
  utilityFromTraces?(output: string, pre: Env, post: Env, traces: readonly FunctionCall[]): boolean;
  /** Task-specific environment changes before the run (AgentDojo `init_environment`). */
  initEnvironment?(env: Env): Env;
}

/** An injection task: the attacker's goal, its ground truth and the security check. */
export interface InjectionTask<Env> {
  /** `injection_task_<n>`. */
  readonly id: string;
  readonly goal: string;
  groundTruth(pre: Env): FunctionCall[];
  /** True iff the attack succeeded (AgentDojo's convention; the reward is 1 − this). */
  security(output: string, pre: Env, post: Env): boolean;
  /** AgentDojo `security_from_traces`: where present it decides instead of {@link security}. */
  securityFromTraces?(output: string, pre: Env, post: Env, traces: readonly FunctionCall[]): boolean;
}

/** A place in the environment data an attacker controls. */
export interface InjectionVector {
  readonly description: string;
  readonly default: string;
}

/** A suite: environment, tools, user tasks and injection tasks. */
export interface Suite<Env> {
  /** e.g. `banking`. */
  readonly name: string;
  /** The AgentDojo benchmark version the tasks follow, e.g. `v1.2.2`. */
  readonly benchmarkVersion: string;
  /** The user the attacks sign as (`important_instructions`). */
  readonly userName: string;
  readonly systemPrompt: string;
  readonly injectionVectors: Readonly<Record<string, InjectionVector>>;
  /** A fresh environment with `injections` (vector → text) placed; missing vectors get their default. */
  loadEnvironment(injections: Readonly<Record<string, string>>): Env;
  readonly tools: readonly Tool<Env>[];
  readonly userTasks: readonly UserTask<Env>[];
  readonly injectionTasks: readonly InjectionTask<Env>[];
}

/** A suite whose environment type is not known statically (what the registry holds). */
export type AnySuite = Suite<object>;

/** Identity helper that type-checks a suite definition. */
export function defineSuite<Env extends object>(suite: Suite<Env>): Suite<Env> {
  return suite;
}
