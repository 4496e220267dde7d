/**
 * The run directory `runs/<run-id>/`: resolved config, checkpoints, the pending-step journal and
 * `metrics.jsonl`. Every file that a restart relies on is written atomically (temp file + rename), so a
 * crash leaves either the old or the new version, never half of one.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { RunConfigError } from "./config.js";

/**
 * Creates `dir` and its missing parents one level at a time. Not `mkdirSync(dir, { recursive: true })`:
 * on some file systems (e.g. under `/proc`, where mkdir says ENOENT for a path whose parent exists) Node's
 * recursive mode retries forever at 100 % CPU, blocking the event loop so that not even SIGTERM is handled.
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let p = resolve(dir); !existsSync(p); p = dirname(p)) {
    missing.push(p);
    if (dirname(p) === p) break;
  }
  for (const p of missing.reverse()) {
    try {
      mkdirSync(p);
    } catch (err) {
      // Created meanwhile by another process: fine when it is a directory.
      if (!((err as NodeJS.ErrnoException).code === "EEXIST" && statSync(p).isDirectory())) throw err;
    }
  }
  if (!statSync(dir).isDirectory()) throw new Error(`'${dir}' is not a directory`);
}

/**
 * Creates the run directory `<outputDir>/<runId>` and checks that files can be written there, before
 * anything else happens: a bad `run.outputDir` is a {@link RunConfigError} naming it, not a hang or a
 * failure halfway through the first step.
 */
export function prepareRunDirectory(outputDir: string, runId: string): void {
  const { dir } = runPaths(outputDir, runId);
  const probe = join(dir, `.write-test-${process.pid}`);
  try {
    makeDirectory(dir);
    writeFileSync(probe, "");
    rmSync(probe, { force: true });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new RunConfigError("run.outputDir", `cannot hold the run directory '${dir}': ${why}`, {
      cause: err,
    });
  }
}

/** Writes `data` to `path` atomically. */
export function writeAtomic(path: string, data: string): void {
  makeDirectory(dirname(path));
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/** Reads JSON, or undefined when the file does not exist. */
export function readJsonIfExists<T>(path: string): T | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

/** Paths inside a run directory. */
export function runPaths(outputDir: string, runId: string) {
  const dir = join(outputDir, runId);
  return {
    dir,
    config: join(dir, "resolved-config.json"),
    metrics: join(dir, "metrics.jsonl"),
    checkpoint: join(dir, "checkpoint", "trainer.json"),
    learnerCheckpoint: join(dir, "checkpoint", "learner.json"),
    /** A text policy's checkpoint (a directory: weights, optimizer, learner state). */
    learnerCheckpointDir: join(dir, "checkpoint", "learner"),
    pending: join(dir, "pending-step.json"),
    report: join(dir, "report.html"),
  };
}

/** What the trainer checkpoints after each applied step. */
export interface TrainerCheckpoint {
  readonly runId: string;
  /** Last step whose update is in the learner checkpoint. */
  readonly step: number;
  readonly policyVersion: number;
  /** The metrics line of `step` (re-appended on restart if the crash came before it was written). */
  readonly metrics: Record<string, unknown> | null;
  readonly writtenAt: number;
}

/**
 * Makes `metrics.jsonl` agree with the checkpoint: drops lines of steps after it (a crash between the
 * metrics append and the checkpoint of a later step) and appends the checkpointed step's line if the
 * crash came before it was written. Each step then appears exactly once.
 */
export function reconcileMetrics(path: string, ckpt: TrainerCheckpoint | undefined): void {
  if (!existsSync(path)) {
    if (ckpt?.metrics) writeAtomic(path, `${JSON.stringify(ckpt.metrics)}\n`);
    return;
  }
  const keep: string[] = [];
  const seen = new Set<number>();
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    let step: number;
    try {
      step = (JSON.parse(line) as { step: number }).step;
    } catch {
      continue; // a torn last line
    }
    if (ckpt && step <= ckpt.step && !seen.has(step)) {
      seen.add(step);
      keep.push(line);
    }
  }
  if (ckpt?.metrics && !seen.has(ckpt.step)) keep.push(JSON.stringify(ckpt.metrics));
  writeAtomic(path, keep.length ? `${keep.join("\n")}\n` : "");
}

/** Removes a file if present. */
export function removeIfExists(path: string): void {
  rmSync(path, { force: true });
}
