/**
 * Errors of the agentdojo service. An unknown suite / user task / injection task / attack is the
 * caller's fault: an {@link InvalidArgumentError} naming the field (`rollout.task.agent.user_task_id`).
 * A trajectory that cannot be parsed is never an error: `valid` = 0 and minimum scores with the reason.
 * Sessions of the AgentEnvironment: unknown or expired → {@link NotFoundError} (NOT_FOUND); too many open →
 * {@link UnavailableError} (UNAVAILABLE, retry later).
 * @module
 */
import { InvalidArgumentError, NotFoundError, UnavailableError } from "@reward-mesh/sdk";

/** The `session_id` of a request names no open session. */
export function sessionNotFound(id: string): NotFoundError {
  return new NotFoundError(`session '${id.slice(0, 100)}' is unknown, closed or expired`);
}

/** The session limit is reached. */
export function tooManySessions(max: number): UnavailableError {
  return new UnavailableError(
    `too many open sessions (${max}); close finished sessions or raise AGENTDOJO_ENV_MAX_SESSIONS`,
  );
}

/** A request field that cannot be used. */
export function invalidRequest(field: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(field, problem);
}
