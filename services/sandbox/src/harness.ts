/**
 * Runs a Python program's tests through the harness in any {@link Sandbox} and turns its report
 * into a validated {@link TestReport}.
 *
 * The harness writes two JSON lines: the compile stage (syntax, compile), written before any
 * candidate code runs in the sandbox, and the report (test results), which must carry the nonce sent
 * after the job (see `harness/harness.py`) and pass shape and range checks; the expected outputs of
 * stdin → stdout tests never enter the sandbox and are compared here. No valid compile stage makes the
 * run a `worker_error`; a compile stage without a valid report keeps syntax and compile and fails the
 * tests (the candidate's code ran and ended or broke the run) — never an exception.
 * @module
 */
import { randomBytes } from "node:crypto";
import { HarnessReportError } from "./errors.js";
import { HARNESS_SANDBOX_BYTECODE } from "./harness-file.js";
import type { Sandbox, SandboxRunResult } from "./types.js";

/** One stdin → expected stdout test. */
export interface IoTestCase {
  readonly stdin: string;
  readonly expectedStdout: string;
}

/** A program and its tests, HumanEval / LeetCodeDataset (`test` + `entryPoint`) and/or APPS (`ioTests`) style. */
export interface PythonProgram {
  /** Code placed before the solution (imports, helpers); trusted task code. */
  readonly prompt: string;
  /** The candidate's code. */
  readonly solution: string;
  /** Test code (typically defining `check(candidate)`); every `assert` in it is one test. */
  readonly test: string;
  /** Passed to `check(...)`; empty = the test code runs as is (MBPP-style top-level asserts). */
  readonly entryPoint: string;
  readonly ioTests: readonly IoTestCase[];
  /**
   * CPU-time limit of one execution (the check program, or one stdin test), as CorrGRPO's
   * `RLIMIT_CPU` (whole seconds, rounded up); the wall clock allows {@link wallGraceMs} more.
   */
  readonly timeLimitMs: number;
  /** Wall time past {@link timeLimitMs} before an execution is killed. @default 1000 (CorrGRPO's grace) */
  readonly wallGraceMs?: number;
  /** Address-space limit of the program, in MiB (the sandbox's cgroup gets some headroom on top). */
  readonly memoryLimitMb: number;
}

/** Outcome of the whole program, with CorrGRPO's names (`specs/rewards.md` §1.3 item 5). */
export const ExecutionStatuses = [
  "passed",
  "assertion_failed",
  "runtime_error",
  "timeout",
  "memory_error",
  "syntax_error",
  "compile_error",
  "worker_error",
] as const;
/** One of {@link ExecutionStatuses}. */
export type ExecutionStatus = (typeof ExecutionStatuses)[number];

/** A Python error: type, message and where. */
export interface PyError {
  readonly type: string;
  readonly message: string;
  /** `solution line 3`, `test line 5`, `prompt line 2`, or empty when unknown. */
  readonly where: string;
}

/** Outcome of one test. */
export type TestOutcome = "pass" | "fail" | "error" | "timeout" | "memory_error" | "output_limit" | "not_run";

/** One test: an `assert` of the test code, or one stdin → stdout case. */
export interface TestResult {
  readonly kind: "assert" | "io";
  /** 1-based number among the tests of its kind. */
  readonly number: number;
  /** `test line 5` or `io test 2`. */
  readonly name: string;
  /** The assert's source (asserts only). */
  readonly source: string;
  readonly outcome: TestOutcome;
  readonly error: PyError | undefined;
  /** Expected and actual stdout, clipped (io tests that ran but differ). */
  readonly expected: string | undefined;
  readonly actual: string | undefined;
  /** CPU time measured inside the worker (asserts) or by the harness with wait4 (io tests). */
  readonly cpuMs: number;
}

/** The validated result of {@link runPythonTests}. */
export interface TestReport {
  readonly syntax: { readonly ok: boolean; readonly error: PyError | undefined };
  readonly compile: { readonly ok: boolean; readonly error: PyError | undefined };
  readonly status: ExecutionStatus;
  /** True when the program ran to the end (or to failing asserts) without another exception. */
  readonly ranToCompletion: boolean;
  readonly tests: readonly TestResult[];
  readonly passed: number;
  readonly total: number;
  /** The first test that did not pass. */
  readonly firstFailure: TestResult | undefined;
  /** An exception outside the asserts (in the solution's definition, in `check`, a prompt failure). */
  readonly error: PyError | undefined;
  /**
   * The task or the environment failed before any candidate code ran (the task's prompt raised, e.g. a
   * module it imports is missing): decided by the judge itself, so the candidate cannot fake it.
   * Nothing about the candidate is known then; scorers report NOT_APPLICABLE with this reason.
   */
  readonly taskError: PyError | undefined;
  /**
   * CPU time of the candidate's executions (user + sys, from the harness's `wait4` of each worker;
   * excludes interpreter start-up and the task's prompt imports), or undefined when nothing ran.
   */
  readonly cpuMs: number | undefined;
  /** A one-line explanation for `details`. */
  readonly summary: string;
  /** What the sandbox said about the harness run. */
  readonly sandbox: Pick<SandboxRunResult, "backend" | "wallTimeMs" | "timedOut" | "oomKilled">;
}

/** Options of {@link runPythonTests}. */
export interface RunTestsOptions {
  readonly signal?: AbortSignal;
  /** Bytes of each stdin test's stdout kept for comparison. @default the sandbox's maxOutputBytes */
  readonly maxOutputBytes?: number;
}

const REPORT_TEXT = 2_048;
/** Wall time past the CPU limit before an execution is killed (CorrGRPO: timeout + 1 s). */
export const DEFAULT_WALL_GRACE_MS = 1_000;
const MIB = 1024 * 1024;
/**
 * The judge's own address-space limit in the sandbox (plus 4× the job's size): it runs the test
 * code and decodes the candidate's return values (at most 16 MiB of JSON each).
 */
const JUDGE_MEMORY_MB = 256;

/** Bytes of the job's text fields (what the judge holds besides its own interpreter). */
function jobBytes(program: PythonProgram): number {
  let n = program.prompt.length + program.solution.length + program.test.length;
  for (const t of program.ioTests) n += t.stdin.length;
  return 3 * n; // UTF-16 length → at most 3 UTF-8 bytes per unit
}
const CLIP = 200;

function clip(s: string, n = CLIP): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

/** Whitespace-normalised stdout: per line, runs of whitespace become one space; blank lines at both ends go. */
export function normalizeOutput(s: string): string {
  return s
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((l) => l.trim().split(/\s+/).filter(Boolean).join(" "))
    .join("\n")
    .replace(/^\n+|\n+$/g, "");
}

// ---------------------------------------------------------------- untrusted-report validation

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function bad(what: string): never {
  throw new HarnessReportError(`harness report: ${what}`);
}

function obj(v: Json | undefined, what: string): { [k: string]: Json } {
  if (v === null || typeof v !== "object" || Array.isArray(v)) bad(`${what} is not an object`);
  return v;
}

function str(v: Json | undefined, what: string, max = 1 << 24): string {
  if (typeof v !== "string" || v.length > max) bad(`${what} is not a string`);
  return v;
}

function num(v: Json | undefined, what: string): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) bad(`${what} is not a finite number >= 0`);
  return v;
}

function bool(v: Json | undefined, what: string): boolean {
  if (typeof v !== "boolean") bad(`${what} is not a boolean`);
  return v;
}

function oneOf<T extends string>(v: Json | undefined, choices: readonly T[], what: string): T {
  if (typeof v !== "string" || !(choices as readonly string[]).includes(v))
    bad(`${what} is not one of ${choices.join("|")}`);
  return v as T;
}

interface Layout {
  readonly solution: readonly [number, number];
  readonly test: readonly [number, number] | undefined;
}

function where(line: Json | undefined, layout: Layout): string {
  if (typeof line !== "number" || !Number.isInteger(line) || line < 1) return "";
  const [s0, s1] = layout.solution;
  if (line >= s0 && line <= s1) return `solution line ${line - s0 + 1}`;
  if (layout.test && line >= layout.test[0] && line <= layout.test[1])
    return `test line ${line - layout.test[0] + 1}`;
  if (line < s0) return `prompt line ${line}`;
  return "check call";
}

function pyError(v: Json | undefined, what: string, layout: Layout): PyError | undefined {
  if (v === null || v === undefined) return undefined;
  const o = obj(v, what);
  return {
    type: clip(str(o["type"], `${what}.type`), 80),
    message: clip(str(o["message"], `${what}.message`)),
    where: where(o["line"], layout),
  };
}

const CHECK_STATUSES = [
  "passed",
  "assertion_failed",
  "runtime_error",
  "timeout",
  "memory_error",
  "output_limit",
  "killed",
] as const;
const SITE_OUTCOMES = ["pass", "fail", "error", "not_run"] as const;
const IO_OUTCOMES = ["ran", "runtime_error", "timeout", "memory_error", "output_limit", "killed"] as const;

const SEVERITY: Record<ExecutionStatus, number> = {
  passed: 0,
  assertion_failed: 1,
  runtime_error: 2,
  memory_error: 3,
  timeout: 4,
  worker_error: 5,
  compile_error: 6,
  syntax_error: 7,
};

function worst(a: ExecutionStatus, b: ExecutionStatus): ExecutionStatus {
  return SEVERITY[b] > SEVERITY[a] ? b : a;
}

function parseLine(line: string | undefined, what: string): { [k: string]: Json } {
  if (line === undefined) bad(`no ${what} line on stdout`);
  let raw: Json;
  try {
    raw = JSON.parse(line) as Json;
  } catch {
    bad(`the ${what} line is not JSON`);
  }
  const r = obj(raw, what);
  if (r["v"] !== 2) bad(`unknown version in the ${what} line`);
  if (typeof r["harnessError"] === "string") bad(`harness failed: ${clip(r["harnessError"])}`);
  return r;
}

/**
 * Line 1 of the harness's stdout: syntax and compilation, written before any candidate code ran in
 * the sandbox (so nothing the candidate does can change them); throws {@link HarnessReportError}.
 */
function parseCompileStage(stdout: Buffer) {
  const lines = stdout.toString("utf8").split("\n");
  const r = parseLine(lines[0], "compile stage");
  if (r["stage"] !== "compile") bad("the first line is not the compile stage");
  const syntax = obj(r["syntax"], "syntax");
  const compile = obj(r["compile"], "compile");
  const layoutRaw = r["layout"] === undefined || r["layout"] === null ? null : obj(r["layout"], "layout");
  const pair = (v: Json | undefined, what: string): readonly [number, number] => {
    if (!Array.isArray(v) || v.length !== 2) bad(`${what} is not a pair`);
    return [num(v[0], what), num(v[1], what)];
  };
  const layout: Layout = layoutRaw
    ? {
        solution: pair(layoutRaw["solution"], "layout.solution"),
        test: layoutRaw["test"] === null ? undefined : pair(layoutRaw["test"], "layout.test"),
      }
    : { solution: [1, Number.MAX_SAFE_INTEGER], test: undefined };
  const syntaxOk = bool(syntax["ok"], "syntax.ok");
  const compileOk = bool(compile["ok"], "compile.ok");
  if (compileOk && !syntaxOk) bad("compiled without valid syntax");
  return {
    layout,
    syntax: {
      ok: syntaxOk,
      error: pyError(syntax["error"], "syntax.error", {
        solution: [1, Number.MAX_SAFE_INTEGER],
        test: undefined,
      }),
    },
    compile: { ok: compileOk, error: pyError(compile["error"], "compile.error", layout) },
  };
}

type CompileStage = ReturnType<typeof parseCompileStage>;

/** Line 2 of the harness's stdout, the test results (after the compile stage); throws {@link HarnessReportError}. */
function parseReport(
  stdout: Buffer,
  stage: CompileStage,
  nonce: string,
  program: PythonProgram,
  oomKilled: boolean,
) {
  const { layout } = stage;
  const out = {
    syntax: stage.syntax,
    compile: stage.compile,
    tests: [] as TestResult[],
    status: "passed" as ExecutionStatus,
    ranToCompletion: true,
    error: undefined as PyError | undefined,
    taskError: undefined as PyError | undefined,
    cpuMs: undefined as number | undefined,
  };
  const compileOk = stage.compile.ok;
  const syntaxOk = stage.syntax.ok;
  if (!compileOk) {
    out.status = syntaxOk ? "compile_error" : "syntax_error";
    out.ranToCompletion = false;
    return out;
  }
  const lines = stdout
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "");
  if (lines.length !== 2) bad(`expected two lines on stdout, got ${lines.length}`);
  const r = parseLine(lines[1], "report");
  if (r["stage"] !== "report") bad("the second line is not the report");
  if (r["nonce"] !== nonce) bad("nonce mismatch");
  out.taskError = pyError(r["taskError"], "taskError", layout);
  const hasCheck = program.test.trim() !== "";
  let cpu = 0;
  let ran = false;
  if (hasCheck) {
    const c = obj(r["check"], "check");
    const status = oneOf(c["status"], CHECK_STATUSES, "check.status");
    const tests = c["tests"];
    if (!Array.isArray(tests) || tests.length > 100_000) bad("check.tests is not an array");
    tests.forEach((t, i) => {
      const o = obj(t, `check.tests[${i}]`);
      const outcome = oneOf(o["outcome"], SITE_OUTCOMES, `check.tests[${i}].outcome`);
      const name = where(o["line"], layout) || `assert ${i + 1}`;
      const running = c["running"] === i;
      const error = pyError(o["error"], `check.tests[${i}].error`, layout);
      let final: TestOutcome = outcome;
      if (outcome === "not_run" && running)
        final =
          status === "timeout"
            ? "timeout"
            : status === "memory_error" || (status === "killed" && oomKilled)
              ? "memory_error"
              : "error";
      if (outcome === "error" && error?.type === "MemoryError") final = "memory_error";
      out.tests.push({
        kind: "assert",
        number: i + 1,
        name,
        source: clip(str(o["source"], `check.tests[${i}].source`)),
        outcome: final,
        error,
        expected: undefined,
        actual: undefined,
        cpuMs: num(o["cpuMs"], `check.tests[${i}].cpuMs`),
      });
    });
    out.error = pyError(c["error"], "check.error", layout);
    cpu += num(c["cpuMs"], "check.cpuMs");
    ran = true;
    const mapped: ExecutionStatus =
      status === "output_limit"
        ? "runtime_error"
        : status === "killed"
          ? oomKilled
            ? "memory_error"
            : "runtime_error"
          : status;
    if (status === "output_limit" && !out.error)
      out.error = {
        type: "OutputLimitExceeded",
        message: "the program wrote more output than allowed",
        where: "",
      };
    if (status === "killed" && !out.error)
      out.error = oomKilled
        ? { type: "MemoryError", message: "killed by the OOM killer", where: "" }
        : { type: "Killed", message: "the program was killed", where: "" };
    out.status = worst(out.status, mapped);
    if (!bool(c["completed"], "check.completed")) out.ranToCompletion = false;
  } else if (r["check"] !== null && r["check"] !== undefined) {
    bad("check results without test code");
  }
  if (program.ioTests.length > 0) {
    const io = r["io"];
    if (!Array.isArray(io) || io.length !== program.ioTests.length)
      bad("io results do not match the io tests");
    io.forEach((t, i) => {
      const o = obj(t, `io[${i}]`);
      const outcome = oneOf(o["outcome"], IO_OUTCOMES, `io[${i}].outcome`);
      const stdout = str(o["stdout"], `io[${i}].stdout`);
      const error = pyError(o["error"], `io[${i}].error`, layout);
      const expected = program.ioTests[i]!.expectedStdout;
      let final: TestOutcome;
      let status: ExecutionStatus;
      if (outcome === "ran") {
        const same = normalizeOutput(stdout) === normalizeOutput(expected);
        final = same ? "pass" : "fail";
        status = same ? "passed" : "assertion_failed";
      } else if (outcome === "timeout") {
        final = "timeout";
        status = "timeout";
      } else if (outcome === "memory_error" || (outcome === "killed" && oomKilled)) {
        final = "memory_error";
        status = "memory_error";
      } else {
        final = outcome === "output_limit" ? "output_limit" : "error";
        status = "runtime_error";
      }
      out.status = worst(out.status, status);
      if (status !== "passed" && status !== "assertion_failed") out.ranToCompletion = false;
      cpu += num(o["cpuMs"], `io[${i}].cpuMs`);
      ran = true;
      out.tests.push({
        kind: "io",
        number: i + 1,
        name: `io test ${i + 1}`,
        source: "",
        outcome: final,
        error:
          error ??
          (outcome === "output_limit"
            ? {
                type: "OutputLimitExceeded",
                message: "the program wrote more output than allowed",
                where: "",
              }
            : undefined),
        expected: final === "fail" ? clip(expected) : undefined,
        actual: final === "fail" ? clip(stdout) : undefined,
        cpuMs: num(o["cpuMs"], `io[${i}].cpuMs`),
      });
    });
  } else if (r["io"] !== null && r["io"] !== undefined) {
    bad("io results without io tests");
  }
  out.cpuMs = ran ? cpu : undefined;
  if (out.status === "timeout" || out.status === "memory_error" || out.status === "runtime_error")
    out.ranToCompletion = false;
  return out;
}

function describeTest(t: TestResult): string {
  const head = t.kind === "assert" ? `${t.name}: ${t.source}` : t.name;
  switch (t.outcome) {
    case "fail":
      return t.kind === "io"
        ? `${head}: expected ${JSON.stringify(t.expected)}, got ${JSON.stringify(t.actual)}`
        : `${head} — AssertionError${t.error?.message ? `: ${t.error.message}` : ""}`;
    case "error":
    case "memory_error":
    case "output_limit":
      return `${head} — ${t.error ? `${t.error.type}: ${t.error.message}${t.error.where && t.kind === "assert" && !t.name.startsWith(t.error.where) ? ` (${t.error.where})` : ""}` : t.outcome}`;
    case "timeout":
      return `${head} — timed out`;
    case "not_run":
      return `${head} — not run`;
    default:
      return head;
  }
}

/** One-line summary of a report (what `details` of code-exec's components say). */
export function summarizeReport(
  r: Omit<TestReport, "summary">,
  limits: { timeLimitMs: number; memoryLimitMb: number },
): string {
  const err = (e: PyError | undefined) =>
    e ? `${e.type}: ${e.message}${e.where ? ` (${e.where})` : ""}` : "";
  switch (r.status) {
    case "syntax_error":
      return `syntax error: ${err(r.syntax.error)}`;
    case "compile_error":
      return `compile error: ${err(r.compile.error)}`;
    case "worker_error":
      return `no valid harness report: ${r.error?.message ?? "unknown"}`;
    default:
      break;
  }
  const counts = `${r.passed}/${r.total} tests passed`;
  const first = r.firstFailure ? `; first failing: ${describeTest(r.firstFailure)}` : "";
  switch (r.status) {
    case "passed":
      return counts;
    case "assertion_failed":
      return `${counts}${first}`;
    case "timeout":
      return `timeout (${limits.timeLimitMs} ms per execution); ${counts}${first}`;
    case "memory_error":
      return `out of memory (${limits.memoryLimitMb} MiB); ${counts}${r.error ? `; ${err(r.error)}` : first}`;
    default: {
      if (r.taskError) return `task error (not the candidate's): ${err(r.taskError)}`;
      // The exception that ended the run: the program's own, else the first test that raised one
      // (not the first failing assert before it, whose AssertionError ended nothing).
      const crash = r.tests.find((t) => t.outcome === "error" || t.outcome === "output_limit");
      const what = r.error ? err(r.error) : (crash?.error && err(crash.error)) || "failed";
      return `runtime error: ${what}; ${counts}${first}`;
    }
  }
}

/**
 * Runs the program's tests through the harness in `sandbox`. Resolves with a report for every
 * candidate outcome (including a harness that was killed or lied); rejects only for sandbox
 * infrastructure faults (`UnavailableError`) or an abort.
 */
export async function runPythonTests(
  sandbox: Sandbox,
  program: PythonProgram,
  options: RunTestsOptions = {},
): Promise<TestReport> {
  const nonce = randomBytes(16).toString("hex");
  const maxOutputBytes = options.maxOutputBytes ?? sandbox.limits.maxOutputBytes;
  const job = JSON.stringify({
    prompt: program.prompt,
    solution: program.solution,
    test: program.test,
    entryPoint: program.entryPoint,
    ioStdin: program.ioTests.map((t) => t.stdin),
    timeLimitMs: program.timeLimitMs,
    wallGraceMs: program.wallGraceMs ?? DEFAULT_WALL_GRACE_MS,
    memoryLimitBytes: program.memoryLimitMb * 1024 * 1024,
    maxOutputBytes,
    reportOutputBytes: REPORT_TEXT,
    judgeMemoryBytes: JUDGE_MEMORY_MB * MIB + 4 * jobBytes(program),
  });
  const payload = Buffer.from(job);
  const judgeExtra = 4 * jobBytes(program);
  const stdin = Buffer.concat([Buffer.from(`RMH1 ${payload.length}\n`), payload, Buffer.from(`${nonce}\n`)]);
  const executions = (program.test.trim() !== "" ? 1 : 0) + program.ioTests.length;
  const cpuSeconds = Math.max(1, Math.ceil(program.timeLimitMs / 1000));
  const backstopMs =
    Math.max(1, executions) * (cpuSeconds * 1000 + (program.wallGraceMs ?? DEFAULT_WALL_GRACE_MS) + 250) +
    5_000;
  const run = await sandbox.run({
    argv: ["python3", "-I", HARNESS_SANDBOX_BYTECODE],
    stdin,
    signal: options.signal,
    limits: {
      // Backstops: the harness enforces the per-execution limits on the candidate itself.
      wallTimeMs: backstopMs,
      cpuTimeMs: backstopMs,
      // The candidate's limit, the judge's own (its RLIMIT_AS) and the work dir's tmpfs pages.
      memoryBytes: (program.memoryLimitMb + JUDGE_MEMORY_MB + 64) * MIB + judgeExtra,
      maxOutputBytes: 8 * maxOutputBytes * (program.ioTests.length + 1) + (1 << 20),
    },
  });
  const sandboxInfo = {
    backend: run.backend,
    wallTimeMs: run.wallTimeMs,
    timedOut: run.timedOut,
    oomKilled: run.oomKilled,
  };
  const limits = { timeLimitMs: program.timeLimitMs, memoryLimitMb: program.memoryLimitMb };
  const stderrTail = run.stderr.toString("utf8").trim().split("\n").slice(-1)[0] ?? "";
  const exited = run.exitCode !== 0 ? ` (exit ${run.exitCode ?? run.signal})` : "";
  const ended = (why: string, stage: CompileStage | undefined): TestReport => {
    // No valid report. Before any candidate code ran (no compile stage): the harness's fault, every
    // component at its minimum. After it (compile stage valid): the candidate ended or broke the
    // harness's run, so syntax and compile stand and the tests fail with the reason.
    const status: ExecutionStatus = run.timedOut
      ? "timeout"
      : run.oomKilled
        ? "memory_error"
        : stage
          ? "runtime_error"
          : "worker_error";
    const type =
      status === "timeout"
        ? "Timeout"
        : status === "memory_error"
          ? "MemoryError"
          : stage
            ? run.signal
              ? "HarnessKilled"
              : "HarnessReportRejected"
            : "HarnessError";
    const base = {
      syntax: stage?.syntax ?? { ok: false, error: undefined },
      compile: stage?.compile ?? { ok: false, error: undefined },
      status,
      ranToCompletion: false,
      tests: [],
      passed: 0,
      total: executions,
      firstFailure: undefined,
      taskError: undefined,
      error: {
        type,
        message: clip(
          `${stage ? "the tests ended without a valid report: " : ""}${why}${exited}${stderrTail ? `; ${stderrTail}` : ""}`,
        ),
        where: "",
      },
      cpuMs: undefined,
      sandbox: sandboxInfo,
    } satisfies Omit<TestReport, "summary">;
    return { ...base, summary: summarizeReport(base, limits) };
  };
  let stage: CompileStage;
  try {
    stage = parseCompileStage(run.stdout);
  } catch (err) {
    return ended((err as Error).message, undefined);
  }
  let parsed: ReturnType<typeof parseReport>;
  try {
    parsed = parseReport(run.stdout, stage, nonce, program, run.oomKilled);
  } catch (err) {
    return ended((err as Error).message, stage);
  }
  const passed = parsed.tests.filter((t) => t.outcome === "pass").length;
  const base = {
    ...parsed,
    passed,
    total: parsed.tests.length,
    firstFailure: parsed.tests.find((t) => t.outcome !== "pass"),
    sandbox: sandboxInfo,
  };
  return { ...base, summary: summarizeReport(base, limits) };
}
