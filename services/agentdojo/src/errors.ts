/**
 * Errors of the agentdojo service. An unknown suite / user task / injection task / attack is the
 * caller's fault: an {@link InvalidArgumentError} naming the field (`rollout.task.agent.user_task_id`).
 * A trajectory that cannot be parsed is never an error: `valid` = 0 and minimum scores with the reason.
 * Sessions of the AgentEnvironment: unknown, closed, expired or evicted → {@link NotFoundError} (NOT_FOUND);
 * at the session limit with no session idle long enough to evict → {@link UnavailableError} (UNAVAILABLE,
 * retry later).
 * @module
 */
import { InvalidArgumentError, NotFoundError, UnavailableError } from "@reward-mesh/sdk";

/** The `session_id` of a request names no open session. */
export function sessionNotFound(id: string): NotFoundError {
  return new NotFoundError(`session '${id.slice(0, 100)}' is unknown, closed or expired`);
}

/** The session was dropped, least recently used, to make room for a new one. */
export function sessionEvicted(id: string, max: number): NotFoundError {
  return new NotFoundError(
    `session '${id.slice(0, 100)}' was evicted (least recently used) to make room: more than ${max} sessions were open; close finished sessions or raise AGENTDOJO_ENV_MAX_SESSIONS`,
  );
}

/** The session limit is reached and every open session was used within the last `minIdleMs`. */
export function tooManySessions(max: number, minIdleMs: number): UnavailableError {
  return new UnavailableError(
    `too many open sessions (${max}), none idle for ${minIdleMs} ms or more (live episodes are not evicted); retry later, close finished sessions or raise AGENTDOJO_ENV_MAX_SESSIONS`,
  );
}

/** A request field that cannot be used. */
export function invalidRequest(field: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(field, problem);
}
