/**
 * Test helpers for reward-service authors (`@reward-mesh/sdk/testing`): a real `nats-server -js` per
 * suite, rollouts, and reading what landed in the mesh streams. Real servers only — no imitations.
 * @module
 */
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { type Rollout, RolloutSchema } from "@reward-mesh/proto";
import { type LocalNats, startNatsServer } from "../local-nats.js";

export type { LocalNats };
export type { StoredMessage } from "../stream-reader.js";
export { readStream } from "../stream-reader.js";

/** Starts a private JetStream server on a free port (call `stop()` in `after`). */
export function startTestNats(): Promise<LocalNats> {
  return startNatsServer({ port: -1 });
}

let counter = 0;

/** A valid rollout with sensible defaults; override any field. */
export function makeRollout(init: Omit<MessageInitShape<typeof RolloutSchema>, "$typeName"> = {}): Rollout {
  counter++;
  return create(RolloutSchema, {
    id: `r${counter}`,
    runId: "test-run",
    step: 1,
    groupId: "g1",
    index: 0,
    groupSize: 1,
    response: "hello",
    task: { id: "t1", kind: { case: "custom", value: {} } },
    ...(init as object),
  } as MessageInitShape<typeof RolloutSchema>);
}

/** Decodes a rollout (for DLQ payload checks). */
export function decodeRollout(data: Uint8Array): Rollout {
  return fromBinary(RolloutSchema, data);
}
