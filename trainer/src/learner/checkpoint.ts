/**
 * Embedded-learner checkpoints: one JSON file with everything needed to restore an identical learner
 * (θ, reference, Adam moments, policy version, PRNG state, idempotency cache), written atomically
 * (temporary file in the same directory, then `rename`; missing parent directories are created).
 * JSON numbers round-trip float64 exactly.
 * @module
 */
import { readFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { LearnerCheckpointError } from "./errors.js";
import type { TrainStepResult } from "./types.js";

/** The `format` tag of an embedded-learner checkpoint. */
export const CHECKPOINT_FORMAT = "reward-mesh.embedded-learner";
/** The checkpoint layout version this code reads and writes. */
export const CHECKPOINT_VERSION = 1;

/** One context table in a checkpoint. */
export interface CheckpointContext {
  readonly key: string;
  readonly vocabularySize: number;
  readonly theta: number[];
  readonly reference: number[] | null;
  readonly adam: { readonly m: number[]; readonly v: number[]; readonly t: number } | null;
}

/** One remembered train step. */
export interface CheckpointIdempotencyEntry {
  readonly key: string;
  readonly fingerprint: string;
  readonly result: TrainStepResult;
}

/** The checkpoint file's content. */
export interface CheckpointData {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly version: typeof CHECKPOINT_VERSION;
  readonly seed: number;
  readonly initialScale: number;
  readonly referenceFromInitial: boolean;
  readonly policyVersion: number;
  readonly rngState: number[];
  readonly contexts: CheckpointContext[];
  readonly idempotency: CheckpointIdempotencyEntry[];
}

let tmpCounter = 0;

/** Writes `data` to `path` atomically, creating missing parent directories; resolves to the absolute path. */
export async function writeCheckpoint(path: string, data: CheckpointData): Promise<string> {
  if (typeof path !== "string" || path.length === 0) {
    throw new LearnerCheckpointError(String(path), "checkpoint path must be a non-empty string");
  }
  const abs = resolve(path);
  const tmp = `${abs}.tmp-${process.pid}-${++tmpCounter}`;
  const body = JSON.stringify(data);
  try {
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(tmp, body, "utf8");
    await rename(tmp, abs);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw new LearnerCheckpointError(abs, `cannot write checkpoint '${abs}': ${(err as Error).message}`, {
      cause: err,
    });
  }
  return abs;
}

function bad(path: string, problem: string): never {
  throw new LearnerCheckpointError(path, `checkpoint '${path}' ${problem}`);
}

function isNumberArray(v: unknown, length: number): v is number[] {
  return (
    Array.isArray(v) && v.length === length && v.every((x) => typeof x === "number" && Number.isFinite(x))
  );
}

/** Reads and checks a checkpoint written by {@link writeCheckpoint}. */
export function readCheckpoint(path: string): CheckpointData {
  const abs = resolve(path);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(abs, "utf8"));
  } catch (err) {
    throw new LearnerCheckpointError(abs, `cannot read checkpoint '${abs}': ${(err as Error).message}`, {
      cause: err,
    });
  }
  const d = raw as Partial<CheckpointData>;
  if (typeof d !== "object" || d === null || d.format !== CHECKPOINT_FORMAT) {
    bad(abs, `is not an embedded-learner checkpoint (format '${String(d?.format)}')`);
  }
  if (d.version !== CHECKPOINT_VERSION)
    bad(abs, `has layout version ${d.version}; this code reads ${CHECKPOINT_VERSION}`);
  if (typeof d.seed !== "number" || typeof d.initialScale !== "number") bad(abs, "lacks seed/initialScale");
  if (typeof d.referenceFromInitial !== "boolean") bad(abs, "lacks referenceFromInitial");
  if (!Number.isInteger(d.policyVersion) || (d.policyVersion as number) < 0)
    bad(abs, "has a bad policyVersion");
  if (!isNumberArray(d.rngState, 4)) bad(abs, "has a bad rngState");
  if (!Array.isArray(d.contexts) || !Array.isArray(d.idempotency)) bad(abs, "lacks contexts/idempotency");
  for (const c of d.contexts) {
    const v = c?.vocabularySize;
    if (typeof c?.key !== "string" || !Number.isInteger(v) || v < 1) bad(abs, "has a malformed context");
    const n = (v + 1) * v;
    if (!isNumberArray(c.theta, n)) bad(abs, `context '${c.key}' has a malformed theta`);
    if (c.reference !== null && !isNumberArray(c.reference, n)) {
      bad(abs, `context '${c.key}' has a malformed reference`);
    }
    if (
      c.adam !== null &&
      !(isNumberArray(c.adam?.m, n) && isNumberArray(c.adam.v, n) && Number.isInteger(c.adam.t))
    ) {
      bad(abs, `context '${c.key}' has malformed optimizer state`);
    }
  }
  for (const e of d.idempotency) {
    if (typeof e?.key !== "string" || typeof e.fingerprint !== "string" || typeof e.result !== "object") {
      bad(abs, "has a malformed idempotency entry");
    }
  }
  return d as CheckpointData;
}
