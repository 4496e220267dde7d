/**
 * The run directory `runs/<run-id>/`: resolved config, checkpoints, the pending-step journal and
 * `metrics.jsonl`. Every file that a restart relies on is written atomically (temp file + rename), so a
 * crash leaves either the old or the new version, never half of one.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Writes `data` to `path` atomically. */
export function writeAtomic(path: string, data: string): void {
  mkdirSync(dirname(path), { recursive: true });
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
