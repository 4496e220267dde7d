/**
 * Contract validation of incoming rollouts. Errors name the proto field (`rollout.run_id`).
 * @module
 */
import type { Rollout, Task } from "@reward-mesh/proto";
import { InvalidArgumentError } from "./errors.js";
import { checkSubjectToken } from "./subjects.js";

/** Largest response the mesh accepts (characters): bigger payloads are bad input, not work. */
export const MAX_RESPONSE_CHARS = 4 * 1024 * 1024;

/**
 * `max_payload` of the NATS server the mesh starts (`reward-mesh up`, tests): 8 MiB, NATS's recommended
 * ceiling (its default is 1 MB). NATS counts a message's headers in it.
 */
export const NATS_MAX_PAYLOAD = 8 * 1024 * 1024;

/** Room kept for a message's NATS headers (`Nats-Msg-Id`, trace context, instance): far above their size. */
export const NATS_HEADER_ROOM = 64 * 1024;

/**
 * Largest encoded message the mesh carries, in bytes — one limit for both transports, so the bus and gRPC
 * accept the same rollouts: a publisher checks a message against it before publishing (the rest of
 * {@link NATS_MAX_PAYLOAD} is for its headers), and a reward service's gRPC server accepts a
 * `ScoreRequest` holding a rollout of this size. 8 MiB − 64 KiB: above a rollout with a response of
 * {@link MAX_RESPONSE_CHARS} ASCII characters.
 */
export const MAX_MESSAGE_BYTES = NATS_MAX_PAYLOAD - NATS_HEADER_ROOM;

/** The routing domain of a task: its explicit `domain`, else its kind's name. */
export function taskDomain(task: Task | undefined): string {
  if (!task) return "custom";
  if (task.domain !== "") return task.domain;
  switch (task.kind.case) {
    case "code":
      return "code";
    case "toolCall":
      return "tool_call";
    case "agent":
      return "agent";
    case "math":
      return "math";
    default:
      return "custom";
  }
}

/**
 * Validates the fields every service relies on. `requireTask` also demands a task of one of the
 * listed kinds (e.g. `["code"]` for code-exec).
 */
export function validateRollout(
  rollout: Rollout | undefined,
  requireTaskKinds: readonly NonNullable<Task["kind"]["case"]>[] = [],
): Rollout {
  if (!rollout) throw new InvalidArgumentError("rollout", "is required");
  if (rollout.id === "") throw new InvalidArgumentError("rollout.id", "is required");
  if (rollout.id.length > 256) throw new InvalidArgumentError("rollout.id", "must be at most 256 characters");
  checkSubjectToken("rollout.run_id", rollout.runId);
  if (rollout.groupId === "") throw new InvalidArgumentError("rollout.group_id", "is required");
  if (rollout.groupSize < 1) throw new InvalidArgumentError("rollout.group_size", "must be >= 1");
  if (rollout.index >= rollout.groupSize) {
    throw new InvalidArgumentError(
      "rollout.index",
      `must be < group_size (${rollout.groupSize}), got ${rollout.index}`,
    );
  }
  if (rollout.response.length > MAX_RESPONSE_CHARS) {
    throw new InvalidArgumentError("rollout.response", `must be at most ${MAX_RESPONSE_CHARS} characters`);
  }
  if (rollout.task?.domain) checkSubjectToken("rollout.task.domain", rollout.task.domain);
  if (requireTaskKinds.length > 0) {
    const kind = rollout.task?.kind.case;
    if (!rollout.task) throw new InvalidArgumentError("rollout.task", "is required");
    if (!kind || !requireTaskKinds.includes(kind)) {
      throw new InvalidArgumentError(
        "rollout.task.kind",
        `must be one of ${requireTaskKinds.join(", ")}, got ${kind ?? "none"}`,
      );
    }
  }
  return rollout;
}
