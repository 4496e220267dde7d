/**
 * Errors raised by the advantage engine.
 *
 * Every error here is bad input (a malformed batch, an invalid option, an unknown estimator name):
 * retrying the same call gives the same error, so all of them carry `retryable: false`.
 * Messages name the offending key, group, rollout and component, e.g.
 * `groups[2].rewards[5][3] is NaN (component 'pass')`.
 *
 * Type guards check `name` and shape rather than `instanceof`, so they keep working across
 * duplicated module instances.
 * @module
 */

/** Options accepted by every advantage error (standard `ErrorOptions`). */
export interface AdvantageErrorOptions {
  /** The underlying error, kept for logs. */
  readonly cause?: unknown;
}

/** Base class of every advantage-engine error; never retryable (all are bad input). */
export abstract class AdvantageError extends Error {
  /** Always `false`: the same input fails the same way. */
  readonly retryable = false as const;
  constructor(message: string, options?: AdvantageErrorOptions) {
    super(message, options);
  }
}

/**
 * The batch itself is unusable: wrong shape, a non-finite value that is not flagged
 * NOT_APPLICABLE, a negative length, a weights vector of the wrong length, …
 * `path` is the JSON-style location (`groups[2].rewards[5][3]`).
 */
export class AdvantageInputError extends AdvantageError {
  override readonly name = "AdvantageInputError";
  /** JSON-style path of the offending value, e.g. `groups[2].rewards[5][3]`. */
  readonly path: string;
  constructor(path: string, message: string, options?: AdvantageErrorOptions) {
    super(message, options);
    this.path = path;
  }
}

/** An estimator or step option is invalid; `key` names it (`options.epsilon`, `sgrpo.p`, …). */
export class AdvantageOptionsError extends AdvantageError {
  override readonly name = "AdvantageOptionsError";
  /** The option key, e.g. `options.epsilonPlacement`. */
  readonly key: string;
  constructor(key: string, message: string, options?: AdvantageErrorOptions) {
    super(message, options);
    this.key = key;
  }
}

/** The estimator name is not registered; the message lists every supported name and alias. */
export class UnknownEstimatorError extends AdvantageError {
  override readonly name = "UnknownEstimatorError";
  /** The name that was asked for. */
  readonly requested: string;
  /** Canonical names followed by accepted aliases. */
  readonly supported: readonly string[];
  constructor(requested: string, supported: readonly string[], options?: AdvantageErrorOptions) {
    super(`unknown advantage estimator '${requested}'; supported: ${supported.join(", ")}`, options);
    this.requested = requested;
    this.supported = supported;
  }
}

/** An estimator registry was built with a duplicate, missing or inconsistent entry. */
export class EstimatorRegistryError extends AdvantageError {
  override readonly name = "EstimatorRegistryError";
}

/** Bad command-line usage of `reward-mesh advantages` (unknown flag, missing value, bad JSON). */
export class AdvantageCliUsageError extends AdvantageError {
  override readonly name = "AdvantageCliUsageError";
}

const ADVANTAGE_ERROR_NAMES: ReadonlySet<string> = new Set([
  "AdvantageInputError",
  "AdvantageOptionsError",
  "UnknownEstimatorError",
  "EstimatorRegistryError",
  "AdvantageCliUsageError",
]);

/** True when `err` is one of this module's errors (checked by `name` and shape, not `instanceof`). */
export function isAdvantageError(err: unknown): err is AdvantageError {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { name?: unknown; message?: unknown; retryable?: unknown };
  return typeof e.name === "string" && ADVANTAGE_ERROR_NAMES.has(e.name) && typeof e.message === "string";
}

/**
 * A value as an error message shows it: JSON cut at 200 characters, numbers as written (`NaN`,
 * `Infinity`, not `null`); a structure too deep or cyclic to print is described. Never throws, so a
 * message about a bad value cannot itself fail (a 10,000-level list overflows `JSON.stringify`).
 */
export function showValue(v: unknown): string {
  if (typeof v === "number" || typeof v === "bigint" || v === undefined) return String(v);
  let s: string;
  try {
    s = JSON.stringify(v);
  } catch {
    return Array.isArray(v) ? "a list too deep or cyclic to print" : "an object too deep or cyclic to print";
  }
  return s.length > 200 ? `${s.slice(0, 197)}...` : s;
}
