/**
 * `@reward-mesh/agentdojo`: AgentDojo utility and security rewards by replay (banking embedded, the other
 * suites from the benchmark data at `AGENTDOJO_DATA_DIR`), and the
 * interactive `AgentEnvironment` gRPC service for rollout generation.
 * @module
 */
export type { AgentDojoConfig, AgentDojoOptions, AgentEnvironmentOptions } from "./config.js";
export {
  AGENTDOJO_DEFAULT_PORT,
  AGENTDOJO_ENV,
  AGENTDOJO_SERVICE_ENV,
  DEFAULT_AGENTDOJO_OPTIONS,
  loadConfig,
} from "./config.js";
export {
  AGENTDOJO_SERVICE_VERSION,
  AgentDojoComponents,
  createAgentDojoService,
  invalidTrajectory,
  scoreTrajectory,
} from "./service.js";
export type {
  CallResult,
  CloseResult,
  ListTasksResult,
  ResetResult,
  SessionManager,
  SessionManagerOptions,
} from "./environment-service.js";
export {
  agentEnvironmentService,
  createAgentEnvironmentImpl,
  createSessionManager,
  MAX_ARGUMENTS_BYTES,
  MAX_FINAL_ANSWER_BYTES,
} from "./environment-service.js";

// ---- suites and the episode machinery (for new suites, tests and tooling) ----
export type {
  AnySuite,
  FunctionCall,
  InjectionTask,
  InjectionVector,
  ParameterType,
  Suite,
  Tool,
  ToolParameter,
  UserTask,
} from "./suite.js";
export { defineSuite, ToolError } from "./suite.js";
export type { SuiteBuilder } from "./suites/index.js";
export { BENCHMARK_SUITE_NAMES, loadSuites, SUITE_BUILDERS, SUITES } from "./suites/index.js";
export type { BenchmarkData, SuiteData } from "./benchmark-data.js";
export {
  BenchmarkDataError,
  injectEnvironment,
  openBenchmarkData,
  SUPPORTED_BENCHMARK_VERSIONS,
} from "./benchmark-data.js";
export type { BankingEnvironment, Transaction } from "./suites/banking/index.js";
export { ATTACKER_IBAN, bankingSuite, loadBankingEnvironment } from "./suites/banking/index.js";
export type { AttackName } from "./attacks.js";
export { ATTACK_NAMES, attackText, buildInjections, injectionCandidates } from "./attacks.js";
export type { CallRecord, Episode, EpisodeOptions, EpisodeSpec, EpisodeVerdict } from "./episode.js";
export { evaluateEpisode, replayEpisode, resolveEpisode, startEpisode, unknownSuite } from "./episode.js";
export type { ParsedTrajectory } from "./trajectory.js";
export { parseTrajectory, trajectoryJson } from "./trajectory.js";
export { runFunction, toolSchemas } from "./runtime.js";
