/**
 * Errors of the length service. Bad metadata is the caller's fault: an {@link InvalidArgumentError}
 * naming the metadata key (INVALID_ARGUMENT over gRPC, dead-lettered over JetStream).
 * @module
 */
import { InvalidArgumentError } from "@reward-mesh/sdk";

/** A metadata value that cannot be used; the field is `rollout.metadata["<key>"]`. */
export function invalidMetadata(key: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(`rollout.metadata["${key}"]`, problem);
}
