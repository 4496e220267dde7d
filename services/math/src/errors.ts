/**
 * Errors of the math service. A bad task (no reference answer, an unknown answer type or format, a
 * negative tolerance) is the caller's fault: an {@link InvalidArgumentError} naming the field
 * (INVALID_ARGUMENT over gRPC, dead-lettered over JetStream). A bad *response* is never an error:
 * it gets `correct = 0`, with ERROR or TIMEOUT and the reason in `details` when it could not be decided.
 * @module
 */
import { InvalidArgumentError } from "@reward-mesh/sdk";

/** A task field that cannot be used; the field is `rollout.task.math.<field>`. */
export function invalidTask(field: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(`rollout.task.math.${field}`, problem);
}
