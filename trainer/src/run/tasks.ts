/**
 * Task definitions: each task is a real `Task` (what the reward services score) plus what a policy
 * needs to answer it.
 *
 * - A text policy (the PyTorch learner) reads the task's prompt — `task.messages` if any, else
 *   `task.prompt` — and its completion text is the response the services receive.
 * - A fragment policy (the embedded learner) needs the task's action space: a vocabulary of text
 *   fragments, a length cap and a `render` that turns the sampled fragments into the response text.
 *
 * The built-in sets (`code`, `tool_call`, `agent`, `custom`, `math`) live in `builtin-tasks.ts`; task files
 * (`tasks: {source: jsonl}`) hold text tasks.
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TaskSchema } from "@reward-mesh/proto";
import type { ChatMessage, PromptSpec } from "../learner/index.js";
import { createPrng } from "../learner/prng.js";

/** One trainable task. */
export interface TaskDefinition {
  /** Stable id; also the policy's context key. */
  readonly id: string;
  /** Built-in set / domain: `code`, `tool_call`, `agent`, `custom`; `jsonl` for task files. */
  readonly set: string;
  /** The task as the reward services see it (`Rollout.task`). */
  readonly task: MessageInitShape<typeof TaskSchema>;
  /** Fragment policies: the fragments the policy chooses from, one per generated token. */
  readonly vocabulary?: readonly string[];
  /** Fragment policies: the cap in fragments (text policies sample `generation.maxNewTokens` tokens). */
  readonly maxTokens: number;
  /** Index of the fragment that ends a response (it is generated, then not rendered). */
  readonly stopToken?: number;
  /** Fragment policies: turns the sampled fragments into the response text. */
  readonly render?: (fragments: readonly string[]) => string;
  /** Rollout metadata for the services (e.g. overlong limits). */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** A task with a fragment action space (the built-in sets): answerable by fragment and text policies. */
export interface FragmentTaskDefinition extends TaskDefinition {
  readonly vocabulary: readonly string[];
  readonly render: (fragments: readonly string[]) => string;
}

/** Thrown when a task cannot be given to the run's kind of policy. */
export class TaskPolicyMismatchError extends Error {
  override readonly name = "TaskPolicyMismatchError";
}

/** The prompt a text policy sees for `t`: its chat messages, else its prompt text. */
export function textPromptOf(t: TaskDefinition): { text?: string; messages?: ChatMessage[] } {
  const messages = (t.task.messages ?? []).map((m) => ({ role: m.role ?? "", content: m.content ?? "" }));
  if (messages.length > 0) return { messages };
  if (t.task.prompt) return { text: t.task.prompt };
  throw new TaskPolicyMismatchError(`task '${t.id}' has neither prompt text nor messages for a text policy`);
}

/** The learner prompt for task `t` (`promptId` given) for a fragment or a text policy. */
export function promptSpecOf(
  t: TaskDefinition,
  promptId: string,
  policy: "fragments" | "text",
  maxNewTokens: number,
): PromptSpec {
  if (policy === "text") {
    return { promptId, contextKey: t.id, ...textPromptOf(t), maxTokens: maxNewTokens };
  }
  if (!t.vocabulary || !t.render) {
    throw new TaskPolicyMismatchError(
      `task '${t.id}' is a text task (no fragment vocabulary): train it with a text policy such as learner: {kind: torch}`,
    );
  }
  return {
    promptId,
    contextKey: t.id,
    vocabulary: t.vocabulary,
    maxTokens: t.maxTokens,
    ...(t.stopToken !== undefined ? { stopToken: t.stopToken } : {}),
  };
}

/** The domain a task's rollouts are routed to. */
export function taskDomainOf(t: TaskDefinition): string {
  const k = t.task.kind?.case;
  if (t.task.domain) return t.task.domain;
  return k === "code"
    ? "code"
    : k === "toolCall"
      ? "tool_call"
      : k === "agent"
        ? "agent"
        : k === "math"
          ? "math"
          : "custom";
}

/** Deterministic uniform generator in [0, 1) for task order and reward noise (the learner's sfc32). */
export function createRng(seed: number): () => number {
  const p = createPrng(seed);
  return () => p.next();
}

/** Mixes a seed with integers into a new 32-bit seed (splitmix-style). */
export function mixSeed(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/**
 * The prompts of `step`: a seeded permutation of the tasks per epoch (every task once before any
 * repeats), `count` of them; deterministic in (seed, step), so a resumed run picks the same ones.
 */
export function promptsForStep(
  tasks: readonly TaskDefinition[],
  seed: number,
  step: number,
  count: number,
): TaskDefinition[] {
  if (tasks.length === 0) throw new Error("no tasks to train on");
  const out: TaskDefinition[] = [];
  for (let j = 0; j < count; j++) {
    const slot = (step - 1) * count + j;
    const epoch = Math.floor(slot / tasks.length);
    const order = permutation(tasks.length, mixSeed(seed, epoch));
    out.push(tasks[order[slot % tasks.length]!]!);
  }
  return out;
}

function permutation(n: number, seed: number): number[] {
  const rng = createRng(seed);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}
