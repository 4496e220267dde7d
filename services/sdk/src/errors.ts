/**
 * Named errors of the SDK and the one boundary that maps any error to a gRPC status.
 * Type guards check `name` and shape, never `instanceof` (copies of a package may coexist).
 * @module
 */
import { CallCancelledError, DeadlineExceededError, type GrpcStatusInfo, grpc } from "@reward-mesh/proto";

/** Options shared by every mesh error. */
export interface MeshErrorOptions {
  readonly cause?: unknown;
}

/** Base class: every mesh error says whether retrying the same input can succeed. */
export abstract class MeshError extends Error {
  /** True when the same input may succeed later (infrastructure), false for bad input. */
  abstract readonly retryable: boolean;
  constructor(message: string, options: MeshErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** The request (or a message payload) violates the contract; `field` names the offending field. */
export class InvalidArgumentError extends MeshError {
  override readonly name = "InvalidArgumentError";
  readonly retryable = false;
  /** Proto field path, e.g. `rollout.run_id`. */
  readonly field: string;
  /** The problem without the field name, e.g. `is required`. */
  readonly problem: string;
  constructor(field: string, problem: string, options: MeshErrorOptions = {}) {
    super(`'${field}' ${problem}`, options);
    this.field = field;
    this.problem = problem;
  }
}

/** A dependency (NATS, a sandbox, a downstream service) is not reachable right now. */
export class UnavailableError extends MeshError {
  override readonly name = "UnavailableError";
  readonly retryable = true;
}

/** The addressed entity (a health-checked service name, a run, ...) does not exist. */
export class NotFoundError extends MeshError {
  override readonly name = "NotFoundError";
  readonly retryable = false;
}

/** Configuration is invalid; raised once at start-up with `'<key>' <problem>`. */
export class ConfigError extends MeshError {
  override readonly name = "ConfigError";
  readonly retryable = false;
  readonly key: string;
  constructor(key: string, problem: string, options: MeshErrorOptions = {}) {
    super(`'${key}' ${problem}`, options);
    this.key = key;
  }
}

/** The service's own code broke its contract (e.g. returned an undeclared component). */
export class ServiceContractError extends MeshError {
  override readonly name = "ServiceContractError";
  readonly retryable = false;
}

/** True for an {@link InvalidArgumentError} (by name and shape). */
export function isInvalidArgumentError(err: unknown): err is InvalidArgumentError {
  return (
    err instanceof Error &&
    err.name === "InvalidArgumentError" &&
    typeof (err as { field?: unknown }).field === "string"
  );
}

/** True when the error says a retry may succeed (`retryable: true`). */
export function isRetryable(err: unknown): boolean {
  return err instanceof Error && (err as { retryable?: unknown }).retryable === true;
}

/**
 * Maps anything thrown inside a handler to a closed set of gRPC codes:
 * INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, INTERNAL.
 * The message goes on the wire; the stack and `cause` stay in the logs.
 */
export function toGrpcStatus(err: unknown): GrpcStatusInfo {
  if (!(err instanceof Error)) return { code: grpc.status.INTERNAL, details: "internal error" };
  switch (err.name) {
    case "InvalidArgumentError":
      return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
    case "NotFoundError":
      return { code: grpc.status.NOT_FOUND, details: err.message };
    case "UnavailableError":
      return { code: grpc.status.UNAVAILABLE, details: err.message };
    case DeadlineExceededError.name:
    case "TimeoutError":
      return { code: grpc.status.DEADLINE_EXCEEDED, details: err.message };
    case CallCancelledError.name:
    case "AbortError":
      return { code: grpc.status.CANCELLED, details: err.message };
    default:
      return { code: grpc.status.INTERNAL, details: `internal error: ${err.message}` };
  }
}
