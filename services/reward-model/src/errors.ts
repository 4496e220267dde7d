/**
 * Errors of the reward-model service. A model directory that cannot be used fails start-up with a
 * {@link ModelLoadError} naming the file: a missing or corrupt file, and — found by the warm-up run on a
 * full-length batch when the model loads — an output of the wrong type or shape, or a model that cannot
 * take `REWARD_MODEL_MAX_TOKENS` tokens (the message names the variable); a `REWARD_MODEL_MAX_TOKENS`
 * above the tokenizer config's `model_max_length` is a `ConfigError`. A rollout too long for the model
 * (with truncation `error`) is the caller's fault: an `InvalidArgumentError` (INVALID_ARGUMENT over gRPC,
 * dead-lettered over JetStream). A model call that fails on a batch is made again for each rollout alone,
 * so only a rollout that fails by itself fails.
 * @module
 */
import { InvalidArgumentError, MeshError } from "@reward-mesh/sdk";

/** A model or tokenizer file is missing, unreadable or not what the service needs. Not retryable. */
export class ModelLoadError extends MeshError {
  override readonly name = "ModelLoadError";
  readonly retryable = false;
  /** The offending file (absolute path). */
  readonly file: string;
  constructor(file: string, problem: string, options: { readonly cause?: unknown } = {}) {
    super(`reward model file '${file}' ${problem}`, options);
    this.file = file;
  }
}

/** Whether `err` is a {@link ModelLoadError} (by name and shape, not `instanceof`). */
export function isModelLoadError(err: unknown): err is ModelLoadError {
  return (
    err instanceof Error &&
    err.name === "ModelLoadError" &&
    typeof (err as { file?: unknown }).file === "string"
  );
}

/** The requested execution provider is not available in this ONNX Runtime build. Not retryable. */
export class ExecutionProviderError extends MeshError {
  override readonly name = "ExecutionProviderError";
  readonly retryable = false;
}

/** A (prompt, response) longer than the model takes, with truncation `error`. */
export function tooLong(tokens: number, maxTokens: number): InvalidArgumentError {
  return new InvalidArgumentError(
    "rollout.response",
    `with its prompt is ${tokens} tokens, more than the model's ${maxTokens} (REWARD_MODEL_TRUNCATION=error)`,
  );
}
