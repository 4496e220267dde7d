/**
 * `@reward-mesh/sandbox`: runs untrusted programs (Docker via dockerode, or bubblewrap + cgroups +
 * rlimits) and Python tests through the harness. A library shared by code-running services.
 *
 * ```ts
 * const sandbox = await createSandbox(loadSandboxConfig(), { logger });
 * const report = await runPythonTests(sandbox, { prompt, solution, test, entryPoint, ioTests: [], timeLimitMs: 5000, memoryLimitMb: 1024 });
 * await sandbox.close();
 * ```
 * @module
 */

// ---- for services ----
export type {
  Sandbox,
  SandboxBackend,
  SandboxLimits,
  SandboxRunRequest,
  SandboxRunResult,
} from "./types.js";
export { SandboxBackends } from "./types.js";
export type { SandboxBackendChoice, SandboxBwrapModeChoice, SandboxConfig } from "./config.js";
export {
  DEFAULT_DOCKER_IMAGE,
  loadSandboxConfig,
  SANDBOX_CONFIG_ENV,
  SandboxBackendChoices,
  SandboxBwrapModeChoices,
} from "./config.js";
export type { CreateSandboxOptions } from "./create.js";
export { createSandbox } from "./create.js";
export type { ExtractedCode } from "./extract.js";
export { entryPointRoot, extractCode, normalizeCode } from "./extract.js";
export type {
  ExecutionStatus,
  IoTestCase,
  PyError,
  PythonProgram,
  RunTestsOptions,
  TestOutcome,
  TestReport,
  TestResult,
} from "./harness.js";
export { ExecutionStatuses, normalizeOutput, runPythonTests, summarizeReport } from "./harness.js";
export type { CodeTaskFields } from "./code-task.js";
export {
  MAX_IO_TESTS,
  MAX_TASK_MEMORY_LIMIT_MB,
  MAX_TASK_TIME_LIMIT_MS,
  programFor,
  referenceCode,
  validateCodeTask,
} from "./code-task.js";
export { HarnessReportError, isHarnessReportError, sandboxUnavailable } from "./errors.js";

// ---- internals exposed for tools (image build, tests, benchmarks) ----
export {
  HARNESS_PATH,
  HARNESS_SANDBOX_BYTECODE,
  HARNESS_SANDBOX_PATH,
  HARNESS_SHA256,
} from "./harness-file.js";
export { dockerAnswers, HARNESS_LABEL, OWNER_LABEL, SANDBOX_LABEL } from "./docker.js";
export { SANDBOX_ENV } from "./engine.js";
