/**
 * Task definitions for runs with the embedded learner: each task is a real `Task` (what the reward
 * services score) plus the policy's action space for it — a vocabulary of text fragments, a length cap
 * and a `render` that turns the sampled fragments into the response text the services receive.
 *
 * The built-in sets (`code`, `tool_call`, `agent`, `custom`) live in `builtin-tasks.ts`.
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TaskSchema } from "@reward-mesh/proto";
import { createPrng } from "../learner/prng.js";

/** One trainable task. */
export interface TaskDefinition {
  /** Stable id; also the policy's context key. */
  readonly id: string;
  /** Built-in set / domain: `code`, `tool_call`, `agent`, `custom`. */
  readonly set: string;
  /** The task as the reward services see it (`Rollout.task`). */
  readonly task: MessageInitShape<typeof TaskSchema>;
  /** Fragments the policy chooses from, one per generated token. */
  readonly vocabulary: readonly string[];
  /** Generation cap in tokens. */
  readonly maxTokens: number;
  /** Index of the fragment that ends a response (it is generated, then not rendered). */
  readonly stopToken?: number;
  /** Turns the sampled fragments into the response text. */
  readonly render: (fragments: readonly string[]) => string;
  /** Rollout metadata for the services (e.g. overlong limits). */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** The domain a task's rollouts are routed to. */
export function taskDomainOf(t: TaskDefinition): string {
  const k = t.task.kind?.case;
  if (t.task.domain) return t.task.domain;
  return k === "code" ? "code" : k === "toolCall" ? "tool_call" : k === "agent" ? "agent" : "custom";
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
