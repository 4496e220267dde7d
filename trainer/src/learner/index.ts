/**
 * The learner layer: the {@link Learner} contract, the embedded tabular learner, its gRPC server and
 * the remote client, and the pure loss maths they share.
 * @module
 */

// ── For users ──────────────────────────────────────────────────────────────────────────────

export type { EmbeddedLearnerOptions } from "./embedded.js";
export { createEmbeddedLearner, EMBEDDED_LEARNER_NAME } from "./embedded.js";
export type { LearnerErrorOptions } from "./errors.js";
export {
  isLearnerError,
  isLearnerInputError,
  LearnerCheckpointError,
  LearnerClosedError,
  LearnerError,
  LearnerInputError,
  RemoteLearnerError,
} from "./errors.js";
export type { RemoteLearnerOptions } from "./remote.js";
export { createRemoteLearner } from "./remote.js";
export type { RunningLearnerServer, ServeLearnerOptions } from "./server.js";
export { createLearnerServiceImpl, serveLearner } from "./server.js";
export type { TorchLearnerProcess, TorchLearnerProcessOptions } from "./torch-process.js";
export {
  checkTorchAvailable,
  DEFAULT_PYTHON,
  startTorchLearner,
  TORCH_LEARNER_DIR,
  TorchUnavailableError,
  torchServeArgs,
} from "./torch-process.js";
export type { TinyHfModel, TinyHfModelOptions } from "./tiny-hf-model.js";
export { buildTinyHfModel, isHfModelDir, TINY_HF_MODEL_SCRIPT, tinyHfModelArgs } from "./tiny-hf-model.js";
export type {
  ChatMessage,
  CispoMode,
  Completion,
  FinishReason,
  GenerateRequest,
  Learner,
  LearnerInfo,
  LossAggregation,
  LossConfig,
  LossType,
  OptimConfig,
  OptimizerName,
  PromptSpec,
  Sample,
  ScoredSequence,
  TrainStepMetrics,
  TrainStepRequest,
  TrainStepResult,
} from "./types.js";
export {
  aggregationFor,
  CispoModes,
  FRAGMENT_TOKENIZER,
  LossAggregations,
  LossTypes,
  Optimizers,
} from "./types.js";

// ── Loss maths (pure; for custom learners and for checking a Python learner numerically) ─────

export type {
  AggregationOptions,
  CispoOptions,
  CispoTokenLoss,
  ClipSide,
  ImportanceRatio,
  KlTerm,
  PpoClipOptions,
  PpoTokenLoss,
} from "./loss.js";
export {
  aggregateLoss,
  aggregationWeights,
  cispoTokenLoss,
  importanceRatio,
  k3Kl,
  LOG_RATIO_CLAMP,
  ppoClipTokenLoss,
  rolloutIsWeight,
} from "./loss.js";
