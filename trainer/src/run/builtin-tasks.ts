/**
 * The built-in task sets for demos and experiments with the embedded learner. Every task is real:
 * its rollouts are scored by the real services (`length` for `custom`; `code-exec`, `ast`,
 * `efficiency` for `code`; `tool-call` for `tool_call`; `agentdojo` for `agent`; `math` for `math`).
 *
 * The `agent` set is not shipped with the trainer: it is built from what the environment service
 * lists (`AgentEnvironment.ListTasks`, {@link loadBuiltinTasks}), so the trainer imports no suite.
 * @module
 */
import { CODE_TASKS } from "./builtin-code-tasks.js";
import { MATH_TASKS } from "./builtin-math-tasks.js";
import { TOOL_CALL_TASKS } from "./builtin-tool-agent-tasks.js";
import {
  agentFragmentTasks,
  BUILTIN_AGENT_SELECTION,
  type EnvironmentEndpoint,
  listEnvironmentTasks,
} from "./environment-tasks.js";

export type { WarmupExample } from "./builtin-tool-agent-tasks.js";
export { toolCallWarmupExamples } from "./builtin-tool-agent-tasks.js";
export { mathWarmupExamples } from "./builtin-math-tasks.js";
import { mathWarmupExamples } from "./builtin-math-tasks.js";
import { toolCallWarmupExamples, type WarmupExample } from "./builtin-tool-agent-tasks.js";
import type { FragmentTaskDefinition } from "./tasks.js";

/** The built-in sets with format examples for warming a text policy up ({@link warmupExamplesFor}). */
export const WARMUP_SETS: readonly string[] = ["tool_call", "math"];

/**
 * Format examples (layout right, choices random) for the built-in `sets`, `perTask` per task; throws
 * naming a set that has none (see {@link WARMUP_SETS}).
 */
export function warmupExamplesFor(
  sets: readonly string[],
  rng: () => number,
  perTask: number,
): WarmupExample[] {
  return sets.flatMap((s) => {
    if (s === "tool_call") return toolCallWarmupExamples(rng, perTask);
    if (s === "math") return mathWarmupExamples(rng, perTask);
    throw new Error(`no warm-up examples for the '${s}' set (they exist for ${WARMUP_SETS.join(", ")})`);
  });
}

const STOP = "<eos>";

/**
 * `custom`: answer within a length budget. The vocabulary mixes short and long phrases; the `length`
 * service's DAPO overlong penalty (limits in metadata) is the reward, so the policy learns to stop early.
 */
export const CUSTOM_TASKS: readonly FragmentTaskDefinition[] = [
  {
    id: "custom-brief-greeting",
    set: "custom",
    task: {
      id: "custom-brief-greeting",
      prompt: "Greet the user in at most 40 characters.",
      kind: { case: "custom", value: {} },
    },
    vocabulary: [
      STOP,
      "Hello! ",
      "Hi there. ",
      "Good morning, and welcome to a very long greeting indeed. ",
      "How can I help? ",
      "It is a pleasure to meet you today. ",
    ],
    stopToken: 0,
    maxTokens: 6,
    render: (f) => f.filter((x) => x !== STOP).join(""),
    metadata: { "overlong.max_length": "60", "overlong.cache_length": "20" },
  },
  {
    id: "custom-one-line-summary",
    set: "custom",
    task: {
      id: "custom-one-line-summary",
      prompt: "Summarise GRPO in one short line.",
      kind: { case: "custom", value: {} },
    },
    vocabulary: [
      STOP,
      "GRPO normalises rewards within a group. ",
      "It needs no critic. ",
      "Advantages are group-relative. ",
      "In more detail, the method samples several responses per prompt and then compares each of them with the mean of its group. ",
    ],
    stopToken: 0,
    maxTokens: 5,
    render: (f) => f.filter((x) => x !== STOP).join(""),
    metadata: { "overlong.max_length": "80", "overlong.cache_length": "40" },
  },
];

/** Every built-in set shipped with the trainer, by name. */
export const BUILTIN_TASK_SETS: Record<string, readonly FragmentTaskDefinition[]> = {
  custom: CUSTOM_TASKS,
  code: CODE_TASKS,
  tool_call: TOOL_CALL_TASKS,
  math: MATH_TASKS,
};

/** Built-in sets whose tasks the environment service lists (`AgentEnvironment.ListTasks`). */
export const ENVIRONMENT_TASK_SETS: readonly string[] = ["agent"];

/** Every built-in set name (shipped and environment-listed). */
export const BUILTIN_SET_NAMES: readonly string[] = ["custom", "code", "tool_call", "agent", "math"];

/** Whether `name` is a built-in set. */
export function isBuiltinSet(name: string): boolean {
  return BUILTIN_SET_NAMES.includes(name);
}

/** Tasks of environment-listed sets, already fetched (see {@link loadBuiltinTasks}). */
export interface EnvironmentSets {
  readonly agent?: readonly FragmentTaskDefinition[];
}

/**
 * Tasks of the named built-in sets; unknown names are an error listing the known ones. The `agent` set
 * must be given in `provided` (it comes from the environment service: use {@link loadBuiltinTasks}).
 */
export function builtinTasks(
  sets: readonly string[],
  provided: EnvironmentSets = {},
): FragmentTaskDefinition[] {
  const out: FragmentTaskDefinition[] = [];
  for (const s of sets) {
    if (s === "agent") {
      if (!provided.agent)
        throw new Error(
          "the 'agent' set comes from the AgentDojo environment service (AgentEnvironment.ListTasks): load it with loadBuiltinTasks(sets, {address})",
        );
      out.push(...provided.agent);
      continue;
    }
    const t = Object.hasOwn(BUILTIN_TASK_SETS, s) ? BUILTIN_TASK_SETS[s] : undefined;
    if (!t) throw new Error(`unknown task set '${s}' (known: ${BUILTIN_SET_NAMES.join(", ")})`);
    out.push(...t);
  }
  return out;
}

/**
 * Tasks of the named built-in sets, asking the environment service at `environment` for the `agent`
 * set (`ListTasks` with ground truths; only when the sets include it).
 */
export async function loadBuiltinTasks(
  sets: readonly string[],
  environment?: EnvironmentEndpoint,
): Promise<FragmentTaskDefinition[]> {
  if (!sets.includes("agent")) return builtinTasks(sets);
  if (!environment)
    throw new Error(
      "the 'agent' set needs the address of the AgentDojo environment service (agentdojo's gRPC port)",
    );
  const suites = [...new Set(BUILTIN_AGENT_SELECTION.map((s) => s.suite))];
  const listing = await listEnvironmentTasks(environment, { suites, includeGroundTruth: true });
  return builtinTasks(sets, { agent: agentFragmentTasks(listing) });
}
