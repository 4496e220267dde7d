/**
 * The bwrap backend's **warm pool** of harness sandboxes: fresh sandboxes whose judge interpreter is
 * already started, with the compiled harness and its imports loaded, blocked on a pipe until a rollout
 * is handed to it. Each one is a whole sandbox of its own (namespaces, cgroups, tmpfs) used for exactly
 * one harness run and then discarded, like every prepared sandbox; the pool only moves the judge's
 * interpreter start and imports off a rollout's critical path.
 *
 * Hand-over protocol, on the sandbox's fd 4 (a socket pair): `harness/warm.py` writes one byte when it
 * is ready; the service writes one line of JSON, the run's rlimits, and closes its end. The program
 * applies them (soft = hard, lowering only) and closes fd 4 before the judge reads its job on stdin.
 * The wall-clock timer and the run's cgroup limits start at hand-over, in the engine, as for any run;
 * RLIMIT_CPU counts the 20–30 ms of CPU the interpreter spent starting (the candidate process, started
 * later, gets its full limit).
 * @module
 */
import { copyFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BwrapMode } from "./bwrap.js";
import { SANDBOX_ENV, shellQuote } from "./engine.js";
import { HARNESS_SANDBOX_BYTECODE, HARNESS_SANDBOX_DIR } from "./harness-file.js";
import type { SandboxLimits } from "./types.js";

/** Absolute path of `harness/warm.py` in this package. */
export const WARM_HARNESS_PATH: string = fileURLToPath(new URL("../harness/warm.py", import.meta.url));

/** Path of the warm-start program inside a bwrap sandbox. */
export const WARM_SANDBOX_PATH = `${HARNESS_SANDBOX_DIR}/warm.py`;

/** Copies `warm.py` next to the staged harness (read-only), for the sandboxes' `/opt/reward-mesh`. */
export function stageWarmHarness(harnessDir: string): void {
  const target = join(harnessDir, "warm.py");
  copyFileSync(WARM_HARNESS_PATH, target);
  chmodSync(target, 0o444);
}

/**
 * Whether a request is a harness run a warm sandbox can serve: exactly the judge's command line
 * (`python3 -I harness.pyc`, what `runPythonTests` sends) and no input files.
 */
export function isWarmHarnessRequest(
  argv: readonly string[],
  files: ReadonlyArray<readonly [string, Buffer]>,
): boolean {
  return (
    files.length === 0 &&
    argv.length === 3 &&
    argv[0] === "python3" &&
    argv[1] === "-I" &&
    argv[2] === HARNESS_SANDBOX_BYTECODE
  );
}

/**
 * The script a warm sandbox's inner shell gets when it is prepared (before any request): the fixed
 * environment, no core files, and the warm-start program, which keeps fd 4 for the hand-over.
 */
export function warmStartScript(): string {
  return [
    ...Object.entries(SANDBOX_ENV).map(([k, v]) => `export ${k}=${shellQuote(v)}`),
    "ulimit -c 0",
    `exec python3 -I ${WARM_SANDBOX_PATH}`,
    "",
  ].join("\n");
}

/**
 * The hand-over line: the same rlimits the cold path's shell sets (`limitLines`): CPU time in whole
 * seconds (hard = soft + 1, so SIGXCPU comes first), and in rootless mode address space, processes
 * and `oom_score_adj` 1000.
 */
export function warmHandOverLine(mode: BwrapMode, limits: SandboxLimits): string {
  const cpuSeconds = Math.max(1, Math.ceil(limits.cpuTimeMs / 1000));
  const line =
    mode === "rootless"
      ? {
          cpuSeconds,
          addressSpaceBytes: Math.ceil(limits.memoryBytes / 1024) * 1024,
          processes: limits.maxProcesses,
          oomScoreAdj: 1000,
        }
      : { cpuSeconds };
  return `${JSON.stringify(line)}\n`;
}

/** Counters of the warm pool, for logs and tests. */
export interface WarmPoolStats {
  /** Warm sandboxes whose judge has reported ready and waits for a rollout. */
  readonly ready: number;
  /** Warm sandboxes still starting. */
  readonly starting: number;
  /** Harness runs served by a warm sandbox (each by its own). */
  readonly handedOver: number;
  /** Harness runs that found no live warm sandbox and started cold. */
  readonly cold: number;
}
