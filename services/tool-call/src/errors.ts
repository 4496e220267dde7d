/**
 * Errors of the tool-call service. A bad task (unparsable ground truth, possible answers or tool
 * schemas, an unknown format) or bad metadata is the caller's fault: an {@link InvalidArgumentError}
 * naming the field (INVALID_ARGUMENT over gRPC, dead-lettered over JetStream). A bad *response* is
 * never an error: it gets the minimum scores with the reason in `details`.
 * @module
 */
import { InvalidArgumentError } from "@reward-mesh/sdk";

/** A task field that cannot be used; the field is `rollout.task.tool_call.<field>`. */
export function invalidTask(field: string, problem: string, cause?: unknown): InvalidArgumentError {
  return new InvalidArgumentError(`rollout.task.tool_call.${field}`, problem, { cause });
}

/** A metadata value that cannot be used; the field is `rollout.metadata["<key>"]`. */
export function invalidMetadata(key: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(`rollout.metadata["${key}"]`, problem);
}
