/**
 * Errors of the code-exec service. A bad task is the caller's fault: `InvalidArgumentError` naming
 * the field (`validateCodeTask` in the sandbox). The sandbox's own faults arrive as
 * `UnavailableError` (retryable) and pass through unchanged. A candidate's crash, timeout or OOM is
 * never an error: it is a component status with details.
 * @module
 */
import { InvalidArgumentError, UnavailableError } from "@reward-mesh/sdk";

/** A rollout metadata override with a bad value (`rollout.metadata["<key>"]`). */
export function invalidMetadata(key: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(`rollout.metadata["${key}"]`, problem);
}

/** The sandbox could not be created (logged at start-up by main.ts; per request a retryable error). */
export function sandboxStartFailed(cause: unknown): UnavailableError {
  return new UnavailableError(
    `code-exec: the sandbox could not start: ${(cause as Error)?.message ?? String(cause)}`,
    {
      cause,
    },
  );
}
