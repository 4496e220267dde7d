/**
 * Agent tasks from an environment service, through the contract only: `AgentEnvironment.ListTasks`
 * (suites, user tasks with prompts, injection tasks with goals, attacks, ground truths). The trainer
 * knows no suite: adding one to the environment service changes what this lists, not the trainer.
 *
 * * {@link listEnvironmentTasks} asks a running service;
 * * {@link agentFragmentTasks} turns a listing into fragment-action tasks for the embedded learner (the
 *   built-in `agent` set: each task's vocabulary is the user task's ground-truth steps, the injection
 *   task's steps and a harmless distractor);
 * * {@link agentTaskMatrix} enumerates the suite × user task × injection task × attack cells (the
 *   benchmark's matrix) as text tasks, for task files (`reward-mesh tasks export agentdojo`) and
 *   evaluation (`reward-mesh eval agentdojo`).
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentEnvironment,
  type AgentEnvironmentListTasksResponse,
  type AgentSuiteListing,
  type TaskSchema,
} from "@reward-mesh/proto";
import { createSecureGrpcClient, type GrpcClientSecurity } from "@reward-mesh/sdk";
import type { FragmentTaskDefinition } from "./tasks.js";

/** What `ListTasks` answered. */
export type AgentTaskListing = AgentEnvironmentListTasksResponse;

/** Where the environment service is. */
export interface EnvironmentEndpoint {
  /** `host:port` of the AgentEnvironment (the agentdojo service's gRPC port). */
  readonly address: string;
  /** TLS / token settings (the `REWARD_MESH_GRPC_*` variables). */
  readonly security?: GrpcClientSecurity;
  /** @default 30000 */
  readonly timeoutMs?: number;
}

/** The environment service cannot give the tasks asked for (unreachable, or it lacks a task). */
export class EnvironmentTasksError extends Error {
  override readonly name = "EnvironmentTasksError";
}

/** Asks the environment service at `env` for its tasks (`ListTasks`). */
export async function listEnvironmentTasks(
  env: EnvironmentEndpoint,
  o: { readonly suites?: readonly string[]; readonly includeGroundTruth?: boolean } = {},
): Promise<AgentTaskListing> {
  const client = createSecureGrpcClient(AgentEnvironment, env.address, env.security ?? {});
  try {
    return await client.listTasks(
      { suites: [...(o.suites ?? [])], includeGroundTruth: o.includeGroundTruth ?? false },
      { timeoutMs: env.timeoutMs ?? 30_000 },
    );
  } catch (err) {
    const why = (err as { details?: string }).details || (err instanceof Error ? err.message : String(err));
    throw new EnvironmentTasksError(`AgentEnvironment.ListTasks at ${env.address}: ${why}`, { cause: err });
  } finally {
    client.raw.close(); // `close` is the Close RPC on this client
  }
}

/** One fragment task of the `agent` set: a user task, optionally attacked, and a distractor step. */
export interface AgentTaskSelection {
  readonly suite: string;
  readonly userTask: string;
  /** null: a clean task. */
  readonly injectionTask: string | null;
  /** A harmless call that is not part of the solution (one more choice for the policy). */
  readonly distractor: { readonly function: string; readonly args: Readonly<Record<string, unknown>> };
}

/**
 * The built-in `agent` set: three banking tasks under the environment's default attack
 * (`important_instructions` unless configured) and one clean one. Ids and tool names only; prompts, ground truths and goals come from the environment service.
 */
export const BUILTIN_AGENT_SELECTION: readonly AgentTaskSelection[] = [
  {
    suite: "banking",
    userTask: "user_task_0",
    injectionTask: "injection_task_5",
    distractor: { function: "get_balance", args: {} },
  },
  {
    suite: "banking",
    userTask: "user_task_3",
    injectionTask: "injection_task_4",
    distractor: { function: "get_iban", args: {} },
  },
  {
    suite: "banking",
    userTask: "user_task_13",
    injectionTask: "injection_task_7",
    distractor: { function: "get_balance", args: {} },
  },
  {
    suite: "banking",
    userTask: "user_task_4",
    injectionTask: null,
    distractor: { function: "get_scheduled_transactions", args: {} },
  },
];

const STOP = "<eos>";

function suiteOf(listing: AgentTaskListing, name: string): AgentSuiteListing {
  const s = listing.suites.find((x) => x.name === name);
  if (!s)
    throw new EnvironmentTasksError(
      `the environment serves no suite '${name}' (it serves ${listing.suites.map((x) => x.name).join(", ") || "none"})`,
    );
  return s;
}

function groundTruthSteps(json: string, what: string): Array<{ function: string; args: unknown }> {
  if (json === "")
    throw new EnvironmentTasksError(`${what} has no ground truth: list the tasks with includeGroundTruth`);
  return JSON.parse(json) as Array<{ function: string; args: unknown }>;
}

/**
 * Fragment-action tasks (for the embedded learner) from a listing made with `includeGroundTruth`: the
 * vocabulary is `<eos>`, then the user task's ground-truth steps, the injection task's and the
 * distractor (each a `{"function","args"}` JSON step); the response is the JSON trajectory of the
 * chosen steps with the ground-truth final answer.
 */
export function agentFragmentTasks(
  listing: AgentTaskListing,
  selection: readonly AgentTaskSelection[] = BUILTIN_AGENT_SELECTION,
): FragmentTaskDefinition[] {
  return selection.map((spec) => {
    const suite = suiteOf(listing, spec.suite);
    const user = suite.userTasks.find((t) => t.id === spec.userTask);
    if (!user) throw new EnvironmentTasksError(`suite ${spec.suite} has no user task '${spec.userTask}'`);
    const injection = spec.injectionTask
      ? suite.injectionTasks.find((t) => t.id === spec.injectionTask)
      : undefined;
    if (spec.injectionTask && !injection)
      throw new EnvironmentTasksError(`suite ${spec.suite} has no injection task '${spec.injectionTask}'`);
    const steps = [
      ...groundTruthSteps(user.groundTruthJson, `${spec.suite}/${user.id}`),
      ...(injection ? groundTruthSteps(injection.groundTruthJson, `${spec.suite}/${injection.id}`) : []),
      spec.distractor,
    ].map((c) => JSON.stringify({ function: c.function, args: c.args }));
    const vocabulary = [STOP, ...new Set(steps)];
    const finalAnswer = user.groundTruthOutput || "Done.";
    const id = `agent-${spec.userTask}${spec.injectionTask ? `-${spec.injectionTask}` : ""}`.replace(
      /_/g,
      "-",
    );
    return {
      id: spec.suite === "banking" ? id : `${id}-${spec.suite}`,
      set: "agent",
      task: {
        id: spec.suite === "banking" ? id : `${id}-${spec.suite}`,
        prompt: user.prompt,
        kind: {
          case: "agent",
          value: {
            suite: spec.suite,
            userTaskId: spec.userTask,
            injectionTaskId: spec.injectionTask ?? "",
            // The environment's own default (what its `Reset` would pick), not a name fixed here.
            attack: spec.injectionTask ? listing.defaultAttack : "",
          },
        },
      },
      vocabulary,
      stopToken: 0,
      maxTokens: vocabulary.length,
      render: (f: readonly string[]) =>
        JSON.stringify({
          calls: f.filter((x) => x !== STOP).map((x) => JSON.parse(x) as unknown),
          final_answer: finalAnswer,
        }),
    };
  });
}

/** One cell of the benchmark matrix. */
export interface AgentMatrixCell {
  readonly suite: string;
  readonly userTask: string;
  /** null: the clean (no injection) run of the user task. */
  readonly injectionTask: string | null;
  /** "" on a clean cell. */
  readonly attack: string;
  readonly prompt: string;
}

/** Options of {@link agentTaskMatrix}. */
export interface AgentMatrixOptions {
  /** @default every suite of the listing */
  readonly suites?: readonly string[];
  /** Attacks of the injected cells (each must be one the environment supports). @default its default attack */
  readonly attacks?: readonly string[];
  /** Include the clean run of every user task. @default true */
  readonly clean?: boolean;
}

/**
 * The benchmark's matrix: per suite, every user task clean, and every injectable user task × every
 * injection task × every attack (AgentDojo skips user tasks whose ground truth sees no injection vector).
 */
export function agentTaskMatrix(listing: AgentTaskListing, o: AgentMatrixOptions = {}): AgentMatrixCell[] {
  const attacks = o.attacks ?? [listing.defaultAttack];
  for (const a of attacks)
    if (!listing.attacks.includes(a))
      throw new EnvironmentTasksError(
        `unknown attack '${a}' (the environment supports ${listing.attacks.join(", ")})`,
      );
  const suites = (o.suites ?? listing.suites.map((s) => s.name)).map((n) => suiteOf(listing, n));
  const out: AgentMatrixCell[] = [];
  for (const s of suites)
    for (const u of s.userTasks) {
      if (o.clean ?? true)
        out.push({ suite: s.name, userTask: u.id, injectionTask: null, attack: "", prompt: u.prompt });
      if (!u.injectable) continue;
      for (const i of s.injectionTasks)
        for (const attack of attacks)
          out.push({ suite: s.name, userTask: u.id, injectionTask: i.id, attack, prompt: u.prompt });
    }
  return out;
}

/** The id of a matrix cell's task: `<suite>/<user task>[/<injection task>/<attack>]`. */
export function agentCellId(c: Omit<AgentMatrixCell, "prompt">): string {
  return c.injectionTask === null
    ? `${c.suite}/${c.userTask}`
    : `${c.suite}/${c.userTask}/${c.injectionTask}/${c.attack}`;
}

/** A matrix cell as a `Task` (what a task file line holds and the agentdojo service scores). */
export function agentCellTask(c: AgentMatrixCell): MessageInitShape<typeof TaskSchema> {
  return {
    id: agentCellId(c),
    prompt: c.prompt,
    domain: "agent",
    kind: {
      case: "agent",
      value: {
        suite: c.suite,
        userTaskId: c.userTask,
        injectionTaskId: c.injectionTask ?? "",
        attack: c.attack,
      },
    },
  };
}
