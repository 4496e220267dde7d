/**
 * Errors of the sandbox. Infrastructure faults (daemon gone, cgroups unusable mid-run) are the SDK's
 * {@link UnavailableError} — retryable, gRPC UNAVAILABLE — so services can rethrow them unchanged.
 * A program's own crash, timeout or OOM is never an error: it is in the run's result.
 * @module
 */
import { ConfigError, UnavailableError } from "@reward-mesh/sdk";

/** The sandbox cannot run programs right now (retryable). */
export function sandboxUnavailable(what: string, cause?: unknown): UnavailableError {
  const detail = cause instanceof Error ? `: ${cause.message}` : "";
  return new UnavailableError(`sandbox unavailable: ${what}${detail}`, { cause });
}

/** The configured backend cannot work on this host (raised once, at start-up). */
export function backendUnusable(key: string, problem: string, cause?: unknown): ConfigError {
  return new ConfigError(key, problem, { cause });
}

/** The harness's report was missing or failed validation; treated as a candidate failure, never thrown out of a scorer. */
export class HarnessReportError extends Error {
  override readonly name = "HarnessReportError";
}

/** True for an {@link HarnessReportError} (by name). */
export function isHarnessReportError(err: unknown): err is HarnessReportError {
  return err instanceof Error && err.name === "HarnessReportError";
}
