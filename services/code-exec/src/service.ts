/**
 * The code-exec service: CorrGRPO's staged code components (`specs/rewards.md` §1.3 items 1–7) for a
 * Python solution, computed by running `prompt + solution + test + check(entry_point)` (and/or the
 * stdin → stdout tests) in the sandbox through the harness.
 *
 * | component | value |
 * |---|---|
 * | `format` | 1 iff the code came from a ```` ```python ```` fence and defines the entry point's root (`class Solution`, `def f`) |
 * | `syntax` | 1 iff the solution alone parses (CPython `ast.parse`) |
 * | `compile` | 1 iff the full program compiles |
 * | `runtime` | 1 iff it ran to the end, failing asserts included, with no other exception, timeout or OOM |
 * | `pass` | 1 iff every test passed |
 * | `pass_rate` | fraction of tests passed (each `assert` of the test code, each io test) |
 *
 * A candidate's failure is a component status with details (first failing test, error type), never
 * an exception: `ERROR` for a syntax/compile/runtime error or OOM, `TIMEOUT` for a timeout.
 * @module
 */
import { type CodeTask, ComponentStatus } from "@reward-mesh/proto";
import {
  createSandbox,
  extractCode,
  entryPointRoot,
  programFor,
  runPythonTests,
  type Sandbox,
  type SandboxConfig,
  type TestReport,
  validateCodeTask,
} from "@reward-mesh/sandbox";
import {
  type ComponentDeclaration,
  type ComponentValue,
  activeContext,
  defineRewardService,
  inSpan,
  meshMeter,
  type RewardServiceDefinition,
  SECONDS_BUCKETS,
} from "@reward-mesh/sdk";
import { EXECUTION_SEMANTICS, type ExecutionSemantics } from "./config.js";
import { invalidMetadata, sandboxStartFailed } from "./errors.js";

/** Rollout metadata key overriding the service's semantics for one rollout (e.g. per task). */
export const SEMANTICS_METADATA_KEY = "code_exec.semantics";

/** The semantics of one rollout: its metadata override, else the service's. */
function semanticsOf(metadata: Record<string, string>, def: ExecutionSemantics): ExecutionSemantics {
  const v = metadata[SEMANTICS_METADATA_KEY]?.trim();
  if (v === undefined || v === "") return def;
  if (!(EXECUTION_SEMANTICS as readonly string[]).includes(v))
    throw invalidMetadata(
      SEMANTICS_METADATA_KEY,
      `must be ${EXECUTION_SEMANTICS.join(" or ")}, got ${JSON.stringify(v)}`,
    );
  return v as ExecutionSemantics;
}

// Created on first use: the meter of the SDK main.ts starts after this module is imported.
let sandboxMetrics:
  | {
      runs: ReturnType<ReturnType<typeof meshMeter>["createCounter"]>;
      duration: ReturnType<ReturnType<typeof meshMeter>["createHistogram"]>;
    }
  | undefined;

/**
 * Runs one sandbox execution inside a `reward/code-exec/sandbox` span (child of the score span), counts its
 * outcome (`error` when the run itself threw) and records its duration.
 */
async function sandboxed(run: () => Promise<TestReport>): Promise<TestReport> {
  return inSpan("reward/code-exec/sandbox", activeContext(), {}, async (span) => {
    const t0 = performance.now();
    let backend = "unknown";
    let outcome = "error";
    try {
      const report = await run();
      backend = report.sandbox.backend;
      outcome = String(
        report.sandbox.oomKilled ? "oom" : report.sandbox.timedOut ? "timeout" : report.status,
      );
      span.setAttributes({
        "sandbox.backend": report.sandbox.backend,
        "sandbox.outcome": outcome,
        "sandbox.wall_ms": report.sandbox.wallTimeMs,
        "sandbox.tests_passed": report.passed,
        "sandbox.tests_total": report.total,
      });
      return report;
    } finally {
      sandboxMetrics ??= {
        runs: meshMeter().createCounter("reward_mesh_sandbox_runs", {
          description: "Sandbox executions of code-exec, per backend and outcome (error: the run threw)",
        }),
        duration: meshMeter().createHistogram("reward_mesh_sandbox_duration_seconds", {
          unit: "s",
          advice: { explicitBucketBoundaries: [...SECONDS_BUCKETS] },
          description: "Wall time of each sandbox execution of code-exec, per backend and outcome",
        }),
      };
      sandboxMetrics.runs.add(1, { backend, outcome });
      sandboxMetrics.duration.record((performance.now() - t0) / 1000, { backend, outcome });
    }
  });
}

/** Version of the scoring logic. */
export const CODE_EXEC_SERVICE_VERSION = "1.1.0";

/** The components, in emission order. */
export const codeExecComponents: readonly ComponentDeclaration[] = [
  {
    name: "format",
    description: "1 iff a ```python fence holds code defining the entry point",
    min: 0,
    max: 1,
  },
  { name: "syntax", description: "1 iff the solution parses (CPython ast.parse)", min: 0, max: 1 },
  {
    name: "compile",
    description: "1 iff prompt + solution + test + check(entry_point) compiles",
    min: 0,
    max: 1,
  },
  {
    name: "runtime",
    description:
      "1 iff the program ran to completion (failing asserts allowed) without error, timeout or OOM",
    min: 0,
    max: 1,
  },
  { name: "pass", description: "1 iff every test passed", min: 0, max: 1 },
  { name: "pass_rate", description: "fraction of tests (asserts of check, io tests) passed", min: 0, max: 1 },
];

/** Options of {@link createCodeExecService}. */
export interface CodeExecServiceOptions {
  /** How asserts are scored. @default "per_assert" */
  readonly semantics?: ExecutionSemantics;
  /** Sandbox configuration; the sandbox is created from it on first use unless `sandboxInstance` is given. */
  readonly sandbox: SandboxConfig;
  /** A sandbox created by the caller (main.ts creates it at start, logs its backend, closes it on shutdown). */
  readonly sandboxInstance?: Sandbox;
}

function formatDetails(how: string, fenced: boolean, defines: boolean, entryPoint: string): string {
  const root = entryPointRoot(entryPoint);
  const def = root ? `${root.kind} ${root.name}` : "";
  if (!fenced) return `code taken ${how.replace(/ \(no fence\)$/, "")}: no closed \`\`\`python fence`;
  if (!defines) return `${how} does not define ${def}`;
  return def ? `${how} defines ${def}` : how;
}

/**
 * CorrGRPO's view of a per-assert report. Its harness stops at the first failing assert; everything up
 * to that point runs exactly as in the per-assert run, so the first test that did not pass decides:
 * a failing assert ends a run that "ran" (runtime 1, status assertion_failed); an exception, timeout
 * or OOM first ends it as that. Tests after it count as not passed.
 */
export function corrgrpoOutcome(report: TestReport): {
  readonly ran: boolean;
  readonly status: TestReport["status"];
  readonly passed: number;
} {
  if (!report.compile.ok || report.status === "worker_error")
    return { ran: false, status: report.status, passed: 0 };
  // An assert site the complete run never executed (a loop over nothing, a branch not taken) stopped
  // nothing in CorrGRPO's harness: only a test that ran and did not pass ends its run.
  const stops = (t: TestReport["tests"][number]) =>
    t.outcome !== "pass" && !(t.outcome === "not_run" && t.kind === "assert" && report.ranToCompletion);
  const i = report.tests.findIndex(stops);
  if (i < 0) {
    const skippedOnly =
      report.ranToCompletion && report.error === undefined && report.status === "assertion_failed";
    return skippedOnly
      ? { ran: true, status: "passed", passed: report.total }
      : { ran: report.ranToCompletion, status: report.status, passed: report.passed };
  }
  const first = report.tests[i]!;
  if (first.outcome === "fail") return { ran: true, status: "assertion_failed", passed: i };
  const status =
    first.outcome === "timeout"
      ? "timeout"
      : first.outcome === "memory_error"
        ? "memory_error"
        : "runtime_error";
  return { ran: false, status, passed: i };
}

/** The components when the task itself failed before any candidate code ran. */
function taskErrorComponents(report: TestReport, format: ComponentValue): ComponentValue[] {
  const e = report.taskError!;
  const details = `task error, not the candidate's: ${e.type}: ${e.message}${e.where ? ` (${e.where})` : ""}`;
  const na = (name: string): ComponentValue => ({
    name,
    value: 0,
    status: ComponentStatus.NOT_APPLICABLE,
    details,
  });
  return [
    format,
    // Decided before the prompt ran: a task error only happens after both passed.
    { name: "syntax", value: 1, details: "parses" },
    { name: "compile", value: 1, details: "compiles" },
    na("runtime"),
    na("pass"),
    na("pass_rate"),
  ];
}

/** Components from a report (pure; exported for tests through the service). */
function components(
  report: TestReport,
  format: ComponentValue,
  semantics: ExecutionSemantics,
): ComponentValue[] {
  if (report.taskError) return taskErrorComponents(report, format);
  const { summary } = report;
  const cg = corrgrpoOutcome(report);
  const status = semantics === "corrgrpo" ? cg.status : report.status;
  const stage = (ok: boolean, okDetails: string, failDetails: string): Omit<ComponentValue, "name"> =>
    ok ? { value: 1, details: okDetails } : { value: 0, status: ComponentStatus.ERROR, details: failDetails };
  const err = (e: TestReport["syntax"]["error"]) =>
    e ? `${e.type}: ${e.message}${e.where ? ` (${e.where})` : ""}` : "";
  const syntax = stage(
    report.syntax.ok,
    "parses",
    status === "worker_error" ? summary : `syntax error: ${err(report.syntax.error)}`,
  );
  const compile = stage(
    report.compile.ok,
    "compiles",
    !report.syntax.ok && status !== "worker_error"
      ? "not compiled: syntax error"
      : status === "worker_error"
        ? summary
        : `compile error: ${err(report.compile.error)}`,
  );
  const executed = report.compile.ok;
  const failStatus = status === "timeout" ? ComponentStatus.TIMEOUT : ComponentStatus.ERROR;
  // runtime follows CorrGRPO in both semantics: 1 iff the run ended at a failing assert or the end,
  // with no other exception, timeout or OOM before it.
  const cgFail = cg.status === "timeout" ? ComponentStatus.TIMEOUT : ComponentStatus.ERROR;
  const runtime: Omit<ComponentValue, "name"> = cg.ran
    ? { value: 1, details: summary }
    : {
        value: 0,
        status: cgFail,
        details: executed ? summary : `not run: ${report.status.replace("_", " ")}`,
      };
  const allPassed = status === "passed";
  // Wrong answers are a legitimate 0 (OK); crashes, OOM and timeouts carry their status.
  const outcomeStatus = allPassed || status === "assertion_failed" ? ComponentStatus.OK : failStatus;
  // ERROR / TIMEOUT carry the minimum (reward.proto): tests "passed" before a crash or an early exit
  // prove nothing — a candidate can report passes on its own and then exit (status worker_error /
  // runtime_error), so only a run that completed (OK) keeps its pass rate.
  const rate =
    outcomeStatus !== ComponentStatus.OK
      ? 0
      : report.total > 0
        ? (semantics === "corrgrpo" ? cg.passed : report.passed) / report.total
        : allPassed
          ? 1
          : 0;
  const notRun = executed ? summary : `not run: ${status.replace("_", " ")}`;
  return [
    format,
    { name: "syntax", ...syntax },
    { name: "compile", ...compile },
    { name: "runtime", ...runtime },
    { name: "pass", value: allPassed ? 1 : 0, status: outcomeStatus, details: notRun },
    { name: "pass_rate", value: rate, status: outcomeStatus, details: notRun },
  ];
}

/** Creates the code-exec service. */
export function createCodeExecService(options: CodeExecServiceOptions): RewardServiceDefinition {
  let sandbox: Promise<Sandbox> | undefined = options.sandboxInstance
    ? Promise.resolve(options.sandboxInstance)
    : undefined;
  const getSandbox = () => {
    sandbox ??= createSandbox(options.sandbox).catch((err: unknown) => {
      sandbox = undefined; // retry on the next request
      throw sandboxStartFailed(err);
    });
    return sandbox;
  };
  return defineRewardService({
    name: "code-exec",
    version: CODE_EXEC_SERVICE_VERSION,
    domains: ["code"],
    taskKinds: ["code"],
    components: codeExecComponents,
    validate: (rollout) => {
      validateCodeTask(rollout.task!.kind.value as CodeTask);
      semanticsOf(rollout.metadata, options.semantics ?? "per_assert");
    },
    score: async (rollout, { signal }) => {
      const task = rollout.task!.kind.value as CodeTask;
      const extracted = extractCode(rollout.response, task.entryPoint);
      const format: ComponentValue = {
        name: "format",
        value: extracted.fenced && extracted.definesEntryPoint ? 1 : 0,
        details:
          extracted.code === ""
            ? "no code in the response"
            : formatDetails(extracted.how, extracted.fenced, extracted.definesEntryPoint, task.entryPoint),
      };
      if (extracted.code === "") {
        const none = "not run: no code in the response";
        return [
          format,
          { name: "syntax", value: 0, status: ComponentStatus.ERROR, details: "no code in the response" },
          { name: "compile", value: 0, status: ComponentStatus.ERROR, details: "not compiled: no code" },
          { name: "runtime", value: 0, status: ComponentStatus.ERROR, details: none },
          { name: "pass", value: 0, status: ComponentStatus.ERROR, details: none },
          { name: "pass_rate", value: 0, status: ComponentStatus.ERROR, details: none },
        ];
      }
      const sb = await getSandbox();
      const report = await sandboxed(() =>
        runPythonTests(sb, programFor(task, extracted.code, options.sandbox), { signal }),
      );
      return components(report, format, semanticsOf(rollout.metadata, options.semantics ?? "per_assert"));
    },
  });
}
