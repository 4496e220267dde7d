/**
 * Errors raised by learners. Type guards check `name` and shape, not `instanceof`, so they keep
 * working across duplicated module instances and across the gRPC boundary (the remote client
 * rebuilds a {@link LearnerInputError} from an INVALID_ARGUMENT status).
 * @module
 */

/** Options accepted by every learner error (standard `ErrorOptions`). */
export interface LearnerErrorOptions {
  /** The underlying error, kept for logs. */
  readonly cause?: unknown;
}

/** Base class of every learner error; `retryable` says whether the same call may succeed later. */
export abstract class LearnerError extends Error {
  abstract readonly retryable: boolean;
  constructor(message: string, options?: LearnerErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/**
 * A request violates the contract (gRPC INVALID_ARGUMENT). `field` is the JSON-style path
 * (`samples[3].tokenIds[2]`); the message is `'<field>' <problem>` and names the sample id.
 */
export class LearnerInputError extends LearnerError {
  override readonly name = "LearnerInputError";
  readonly retryable = false;
  /** JSON-style path of the offending value, e.g. `samples[3].advantage`. */
  readonly field: string;
  /** The problem without the field, e.g. `is NaN (sample 'g1#2')`. */
  readonly problem: string;
  constructor(field: string, problem: string, options?: LearnerErrorOptions) {
    super(`'${field}' ${problem}`, options);
    this.field = field;
    this.problem = problem;
  }
}

/** The learner was closed; no further calls are accepted (gRPC UNAVAILABLE). */
export class LearnerClosedError extends LearnerError {
  override readonly name = "LearnerClosedError";
  readonly retryable = false;
}

/** A checkpoint could not be written or read (missing file, corrupt JSON, wrong format). */
export class LearnerCheckpointError extends LearnerError {
  override readonly name = "LearnerCheckpointError";
  readonly retryable = false;
  /** The checkpoint path involved. */
  readonly path: string;
  constructor(path: string, message: string, options?: LearnerErrorOptions) {
    super(message, options);
    this.path = path;
  }
}

/** A remote learner call failed for a reason other than bad input; `code` is the gRPC status code. */
export class RemoteLearnerError extends LearnerError {
  override readonly name = "RemoteLearnerError";
  readonly retryable: boolean;
  /** gRPC status code (e.g. 14 = UNAVAILABLE). */
  readonly code: number;
  constructor(code: number, message: string, retryable: boolean, options?: LearnerErrorOptions) {
    super(message, options);
    this.code = code;
    this.retryable = retryable;
  }
}

/** True for a {@link LearnerInputError} (by name and shape). */
export function isLearnerInputError(err: unknown): err is LearnerInputError {
  return (
    err instanceof Error &&
    err.name === "LearnerInputError" &&
    typeof (err as { field?: unknown }).field === "string"
  );
}

const LEARNER_ERROR_NAMES: ReadonlySet<string> = new Set([
  "LearnerInputError",
  "LearnerClosedError",
  "LearnerCheckpointError",
  "RemoteLearnerError",
]);

/** True when `err` is one of this module's errors (by name, not `instanceof`). */
export function isLearnerError(err: unknown): err is LearnerError {
  return err instanceof Error && LEARNER_ERROR_NAMES.has(err.name);
}
