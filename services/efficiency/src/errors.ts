/**
 * Errors of the efficiency service. A bad task is `InvalidArgumentError` naming the field
 * (`validateCodeTask` in the sandbox); sandbox faults are `UnavailableError` (retryable). A failing
 * candidate or reference is a component status with details, never an error.
 * @module
 */
import { UnavailableError } from "@reward-mesh/sdk";

/** The sandbox could not be created (logged at start-up by main.ts; per request a retryable error). */
export function sandboxStartFailed(cause: unknown): UnavailableError {
  return new UnavailableError(
    `efficiency: the sandbox could not start: ${(cause as Error)?.message ?? String(cause)}`,
    {
      cause,
    },
  );
}
