/**
 * `@reward-mesh/trainer` — for now, the advantage engine: GRPO, Dr. GRPO, CorrGRPO
 * (`grpo_covariance_coefficient`), GDPO, GDPO covariance coefficient and MO-GRPO, plus the S-GRPO
 * weight, DAPO dynamic sampling and the DAPO overlong penalty as composable steps.
 * Pure TypeScript over `Float64Array`s; no I/O.
 * @module
 */

// ── For users ──────────────────────────────────────────────────────────────────────────────

export type { FlatBatchInput, PackedBatch } from "./advantage/batch.js";
export { packBatch, packFlatBatch } from "./advantage/batch.js";
export type { AdvantagesCliResult } from "./advantage/cli.js";
export { ADVANTAGES_FLAGS, ADVANTAGES_USAGE, runAdvantagesCli } from "./advantage/cli.js";
export type { OverlongOptions } from "./advantage/dapo.js";
export {
  checkOverlongOptions,
  dapoKeepGroup,
  dapoOverlongPenalty,
  OverlongOptionsError,
} from "./advantage/dapo.js";
export { shareBreakdown } from "./advantage/diagnostics.js";
export type {
  AdvantageEngine,
  AdvantageEngineOptions,
  AdvantageRun,
  AdvantageRunOptions,
  CompiledAdvantageConfig,
  ComputeAdvantagesOptions,
} from "./advantage/engine.js";
export {
  compileAdvantageConfig,
  compileUntypedAdvantageConfig,
  computeAdvantages,
  createAdvantageEngine,
} from "./advantage/engine.js";
export type { AdvantageErrorOptions } from "./advantage/errors.js";
export {
  AdvantageCliUsageError,
  AdvantageError,
  AdvantageInputError,
  AdvantageOptionsError,
  EstimatorRegistryError,
  isAdvantageError,
  UnknownEstimatorError,
} from "./advantage/errors.js";
export type {
  AdvantageEstimatorDefinition,
  EstimatorOptionKey,
  EstimatorRunFn,
} from "./advantage/estimators.js";
export {
  ADVANTAGE_ESTIMATORS,
  createEstimatorRegistry,
  getAdvantageEstimator,
  resolveEstimatorName,
  supportedEstimatorNames,
} from "./advantage/estimators.js";
export { sgrpoWeight } from "./advantage/sgrpo.js";
export type {
  AdvantageBatchInput,
  AdvantageBatchResult,
  AdvantageConfig,
  AdvantageEstimatorAlias,
  AdvantageEstimatorName,
  AdvantageEstimatorOptionsMap,
  AdvantageGroupInput,
  AdvantageGroupResult,
  AdvantageStepsConfig,
  CorrGrpoOptions,
  DrGrpoOptions,
  DynamicSamplingOptions,
  EpsilonPlacement,
  GdpoBatchNorm,
  GdpoCovarianceCoefficientOptions,
  GdpoOptions,
  GroupDiagnostics,
  GrpoOptions,
  GrpoScale,
  MoGrpoOptions,
  NotApplicableDiagnostics,
  SgrpoDiagnostics,
  SgrpoOptions,
  SgrpoVariant,
  ShareBreakdown,
  SingletonPolicy,
  StdMode,
  UntypedAdvantageConfig,
} from "./advantage/types.js";
export { AdvantageEstimatorAliases, AdvantageEstimatorNames, GroupFlags } from "./advantage/types.js";

// ── Training runs: config, group assembly over JetStream, the loop, reports ─────────────────

export type {
  AssembledGroup,
  AssemblerOptions,
  AssemblerStats,
  ExpectedGroup,
  GroupAssembler,
} from "./run/assembler.js";
export { createGroupAssembler } from "./run/assembler.js";
export type { EnvironmentSets, WarmupExample } from "./run/builtin-tasks.js";
export {
  BUILTIN_SET_NAMES,
  BUILTIN_TASK_SETS,
  builtinTasks,
  ENVIRONMENT_TASK_SETS,
  isBuiltinSet,
  loadBuiltinTasks,
  mathWarmupExamples,
  toolCallWarmupExamples,
  WARMUP_SETS,
  warmupExamplesFor,
} from "./run/builtin-tasks.js";
export type {
  AgentMatrixCell,
  AgentMatrixOptions,
  AgentTaskListing,
  AgentTaskSelection,
  EnvironmentEndpoint,
} from "./run/environment-tasks.js";
export {
  agentCellId,
  agentCellTask,
  agentFragmentTasks,
  agentTaskMatrix,
  BUILTIN_AGENT_SELECTION,
  EnvironmentTasksError,
  listEnvironmentTasks,
} from "./run/environment-tasks.js";
export type { ComponentConfig, LearnerConfig, RunConfig, TorchLearnerConfig } from "./run/config.js";
export {
  COMPONENT_PRESETS,
  compileAdvantage,
  DEFAULT_SERVICE_DOMAINS,
  loadRunConfig,
  loadRunTasks,
  RunConfigError,
  resolveRunConfig,
  resolveRunTasks,
  runNeedsEnvironment,
  withEpisodeEnvironment,
} from "./run/config.js";
export { compactToolsJson, withCompactTools } from "./run/episode-tools.js";
export type {
  ImportFormat,
  ImportIssue,
  ImportOptions,
  ImportTaskFileOptions,
  ParseRecordsOptions,
  SourceRecord,
} from "./run/importers.js";
export {
  IMPORT_FORMATS,
  importTaskFile,
  importTasks,
  MAX_REPORTED_ISSUES,
  parseRecords,
  readRecordFile,
  TaskImportError,
  writeTaskFile,
} from "./run/importers.js";
export type { LoadTaskFileOptions, TextTaskDefinition } from "./run/task-file.js";
export { loadTaskFile, TaskFileError, taskFileDomain } from "./run/task-file.js";
export type {
  ExperimentArmSummary,
  ExperimentCondition,
  ExperimentRun,
  MetricsLine,
  SeedStat,
  Series,
  SeriesStyle,
} from "./run/report.js";
export {
  CHART_CSS,
  componentStyles,
  correlationHeatmap,
  explainRun,
  lineChart,
  PALETTE,
  readMetrics,
  cleanWeightedReward,
  experimentConditions,
  experimentSummary,
  experimentWindows,
  renderExperimentReport,
  renderRunReport,
  runNotice,
  seriesStyle,
} from "./run/report.js";
export type { LivePage, LivePageOptions } from "./run/live.js";
export { liveCharts, livePageHtml, startLivePage } from "./run/live.js";
export type {
  ExplainedRollout,
  ExplainGroupRecord,
  ExplainStepRecord,
  ExplainTarget,
  GroupExplanation,
  RenderOptions,
} from "./run/explain.js";
export {
  ExplainNotFoundError,
  explainPath,
  explainRollout,
  explainRolloutAsync,
  EXPLAIN_RECORD_VERSION,
  EXPLAIN_STATUS_NAMES,
  ExplainFileError,
  reconcileExplain,
  rolloutIdsOf,
  readExplainRecords,
  renderExplanation,
  rolloutParts,
} from "./run/explain.js";
export type { RunningTrainerServer, TrainerServiceOptions } from "./run/explain-service.js";
export { createTrainerServiceImpl, explanationMessage, serveTrainer } from "./run/explain-service.js";
export { advantageConfigOf, computeAdvantagesMessage, protoFieldPath } from "./run/advantages-service.js";
export type { TrainerCheckpoint } from "./run/state.js";
export { prepareRunDirectory, runPaths } from "./run/state.js";
export type { FragmentTaskDefinition, TaskDefinition } from "./run/tasks.js";
export {
  createRng,
  mixSeed,
  promptSpecOf,
  promptsForStep,
  TaskPolicyMismatchError,
  taskDomainOf,
  textPromptOf,
} from "./run/tasks.js";
export type { StepGroup, StepReport, TrainingOptions, TrainingResult } from "./run/train.js";
export { runTraining } from "./run/train.js";
export type {
  RejectCounts,
  RejectReason,
  ResultValidator,
  ResultValidatorOptions,
  ServiceContract,
  Verdict,
} from "./run/validation.js";
export {
  checkResult,
  checkDomainsScored,
  checkRunAgainstContracts,
  contractOf,
  createResultValidator,
  describeRunServices,
  RejectReasons,
  RunContractError,
} from "./run/validation.js";

// ── Learners: the Learner contract, the embedded tabular learner, its gRPC server and client ──

export type {
  AggregationOptions,
  ChatMessage,
  CispoMode,
  CispoOptions,
  CispoTokenLoss,
  ClipSide,
  Completion,
  EmbeddedLearnerOptions,
  FinishReason,
  GenerateRequest,
  ImportanceRatio,
  KlTerm,
  Learner,
  LearnerErrorOptions,
  LearnerInfo,
  LossAggregation,
  LossConfig,
  LossType as LearnerLossType,
  OptimConfig,
  OptimizerName,
  PpoClipOptions,
  PpoTokenLoss,
  PromptSpec,
  RemoteLearnerOptions,
  RunningLearnerServer,
  Sample,
  ScoredSequence,
  ServeLearnerOptions,
  TinyHfModel,
  TinyHfModelOptions,
  TorchLearnerProcess,
  TorchLearnerProcessOptions,
  TrainStepMetrics,
  TrainStepRequest,
  TrainStepResult,
} from "./learner/index.js";
export {
  aggregateLoss,
  aggregationFor,
  aggregationWeights,
  buildTinyHfModel,
  CispoModes,
  checkTorchAvailable,
  cispoTokenLoss,
  createEmbeddedLearner,
  createLearnerServiceImpl,
  createRemoteLearner,
  DEFAULT_PYTHON,
  EMBEDDED_LEARNER_NAME,
  FRAGMENT_TOKENIZER,
  importanceRatio,
  isHfModelDir,
  isLearnerError,
  isLearnerInputError,
  k3Kl,
  LearnerCheckpointError,
  LearnerClosedError,
  LearnerError,
  LearnerInputError,
  LOG_RATIO_CLAMP,
  LossAggregations,
  LossTypes,
  Optimizers,
  ppoClipTokenLoss,
  RemoteLearnerError,
  rolloutIsWeight,
  serveLearner,
  startTorchLearner,
  TINY_HF_MODEL_SCRIPT,
  TORCH_LEARNER_DIR,
  TorchUnavailableError,
  tinyHfModelArgs,
  torchServeArgs,
} from "./learner/index.js";

// ── For other libraries (internal building blocks; may change without notice) ─────────────

/** @private Kernel parameters and scratch memory, for custom estimators built on the registry types. */
export type { EstimatorParams, Workspace } from "./advantage/kernels.js";
export type {
  AgentEnvironmentSessions,
  EpisodeContext,
  EpisodeResult,
  EpisodeSampling,
  EpisodeSettings,
  EpisodeStopReason,
  EpisodeTask,
  ParsedCall,
  RunEpisodesOptions,
} from "./run/episodes.js";
export {
  answerOf,
  checkEpisodeSettings,
  EPISODE_STOP_FRAGMENT,
  EpisodeConfigError,
  EpisodeError,
  episodeContextKey,
  episodeSample,
  episodeTaskOf,
  isEpisodeTask,
  episodeVocabulary,
  parseToolCalls,
  toolCallProblem,
  runEpisode,
  runEpisodes,
  systemWithTools,
  toolResponsesFragment,
} from "./run/episodes.js";
