/**
 * `@reward-mesh/reward-model`: a learned reward model (ONNX Runtime) scoring (prompt, response), with
 * dynamic batching.
 * @module
 */
export type { RewardModelConfig, RewardModelOptions } from "./config.js";
export {
  BUNDLED_MODEL_DIR,
  Calibration,
  checkRewardModelOptions,
  DEFAULT_DOMAINS,
  ExecutionProvider,
  loadConfig,
  REWARD_MODEL_DEFAULT_PORT,
  REWARD_MODEL_ENV,
  REWARD_MODEL_SERVICE_ENV,
  Truncation,
} from "./config.js";
export { ExecutionProviderError, isModelLoadError, ModelLoadError } from "./errors.js";
export type { RewardModelService } from "./service.js";
export {
  calibrate,
  createRewardModelService,
  loadRewardModelService,
  promptText,
  REWARD_MODEL_SERVICE_VERSION,
} from "./service.js";

// Internal building blocks, exported for the tests and the benchmark.
export type { Batcher, BatcherOptions, BatcherStats } from "./batcher.js";
export { createBatcher } from "./batcher.js";
export type { EncodedPair, LoadedTokenizer, RewardModel } from "./model.js";
export { encodePair, loadRewardModel, loadTokenizer } from "./model.js";
