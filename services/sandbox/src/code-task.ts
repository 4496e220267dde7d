/**
 * The contract checks and defaults every code-running service applies to a `CodeTask`, kept here so
 * code-exec, ast and efficiency agree (services never import each other). Structural types: the
 * proto `CodeTask` fits without this package depending on the proto.
 * @module
 */
import { InvalidArgumentError } from "@reward-mesh/sdk";
import type { SandboxConfig } from "./config.js";
import { extractCode, normalizeCode } from "./extract.js";
import type { PythonProgram } from "./harness.js";

/** The fields of `rewardmesh.v1.CodeTask` the sandbox uses. */
export interface CodeTaskFields {
  readonly language: string;
  readonly prompt: string;
  readonly test: string;
  readonly entryPoint: string;
  readonly referenceSolution: string;
  readonly ioTests: ReadonlyArray<{ readonly stdin: string; readonly expectedStdout: string }>;
  readonly timeLimitMs: number;
  readonly memoryLimitMb: number;
}

/** Largest accepted `time_limit_ms`. */
export const MAX_TASK_TIME_LIMIT_MS = 600_000;
/** Largest accepted `memory_limit_mb`. */
export const MAX_TASK_MEMORY_LIMIT_MB = 65_536;
/** Most io tests per task. */
export const MAX_IO_TESTS = 1_000;

const FIELD = "rollout.task.code";

/**
 * Checks a code task (throws {@link InvalidArgumentError} naming the field): language python (or
 * empty), tests present (`test` and/or `io_tests`), an `entry_point` when `test` defines `check`,
 * limits in range.
 */
export function validateCodeTask(
  task: CodeTaskFields,
  options: { readonly requireTests?: boolean } = {},
): void {
  const lang = task.language.trim().toLowerCase();
  if (lang !== "" && lang !== "python" && lang !== "python3") {
    throw new InvalidArgumentError(
      `${FIELD}.language`,
      `must be "python" (the only language supported), got "${task.language}"`,
    );
  }
  const hasTest = task.test.trim() !== "";
  if ((options.requireTests ?? true) && !hasTest && task.ioTests.length === 0) {
    throw new InvalidArgumentError(`${FIELD}.test`, "is required (or io_tests): there is nothing to run");
  }
  if (hasTest && task.entryPoint.trim() === "" && /^def[ \t]+check[ \t]*\(/m.test(task.test)) {
    throw new InvalidArgumentError(`${FIELD}.entry_point`, "is required when test defines check(candidate)");
  }
  if (task.entryPoint.includes("\n")) {
    throw new InvalidArgumentError(`${FIELD}.entry_point`, "must be one expression on one line");
  }
  if (task.ioTests.length > MAX_IO_TESTS) {
    throw new InvalidArgumentError(
      `${FIELD}.io_tests`,
      `must have at most ${MAX_IO_TESTS} tests, got ${task.ioTests.length}`,
    );
  }
  if (task.timeLimitMs > MAX_TASK_TIME_LIMIT_MS) {
    throw new InvalidArgumentError(
      `${FIELD}.time_limit_ms`,
      `must be at most ${MAX_TASK_TIME_LIMIT_MS}, got ${task.timeLimitMs}`,
    );
  }
  if (
    task.memoryLimitMb !== 0 &&
    (task.memoryLimitMb < 16 || task.memoryLimitMb > MAX_TASK_MEMORY_LIMIT_MB)
  ) {
    throw new InvalidArgumentError(
      `${FIELD}.memory_limit_mb`,
      `must be 0 (service default) or in [16, ${MAX_TASK_MEMORY_LIMIT_MB}], got ${task.memoryLimitMb}`,
    );
  }
}

/** The program a task and a solution make, with the task's limits or the sandbox's defaults. */
export function programFor(
  task: CodeTaskFields,
  solution: string,
  config: Pick<SandboxConfig, "timeLimitMs" | "memoryLimitMb">,
): PythonProgram {
  const lf = (s: string) => s.replace(/\r\n?/g, "\n");
  return {
    prompt: lf(task.prompt),
    solution,
    test: lf(task.test),
    entryPoint: task.entryPoint.trim(),
    ioTests: task.ioTests.map((t) => ({ stdin: t.stdin, expectedStdout: t.expectedStdout })),
    timeLimitMs: task.timeLimitMs > 0 ? task.timeLimitMs : config.timeLimitMs,
    memoryLimitMb: task.memoryLimitMb > 0 ? task.memoryLimitMb : config.memoryLimitMb,
  };
}

/** The reference solution's code: its fenced block when it has one, else the whole text (normalised). */
export function referenceCode(task: CodeTaskFields): string {
  if (task.referenceSolution.trim() === "") return "";
  if (task.referenceSolution.includes("```"))
    return extractCode(task.referenceSolution, task.entryPoint).code;
  return `${normalizeCode(task.referenceSolution).trimEnd()}\n`; // not /\s*$/: quadratic on long blank runs
}
