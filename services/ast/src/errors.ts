/**
 * Errors of the ast service. A bad task is `InvalidArgumentError` naming the field (`validateCodeTask`
 * in the sandbox); an unparseable candidate or reference is a component status, never an error.
 * @module
 */
import { UnavailableError } from "@reward-mesh/sdk";

/** tree-sitter's wasm could not be loaded (a broken install; retryable once fixed). */
export function parserUnavailable(cause: unknown): UnavailableError {
  return new UnavailableError(
    `ast: tree-sitter could not load: ${(cause as Error)?.message ?? String(cause)}`,
    { cause },
  );
}
