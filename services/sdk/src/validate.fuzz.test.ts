/**
 * Fuzzing of the wire input every service decodes: a `Rollout` from JetStream (protobuf binary) or from
 * a CLI line (proto JSON), then the contract check `validateRollout`. Decoding returns a message or a
 * protobuf-es error with a message; validation returns the rollout or an `InvalidArgumentError` naming
 * the field. Fixed seed, bounded runs (`./testing/fuzz.ts`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, fromBinary, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { type Rollout, RolloutSchema } from "@reward-mesh/proto";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, mutatedValue } from "./testing/fuzz.js";
import { validateRollout } from "./validate.js";

const ROLLOUTS: Rollout[] = [
  create(RolloutSchema, {
    id: "r1",
    runId: "run-1",
    step: 3,
    groupId: "g1",
    index: 1,
    groupSize: 4,
    response: "def f(x):\n    return x + 1\n",
    metadata: { "tool_call.allow_missing_opening_think": "true" },
    task: {
      id: "t1",
      domain: "code",
      prompt: "Write f.",
      kind: { case: "code", value: { language: "python", entryPoint: "f", tests: "assert f(1) == 2" } },
    },
  } as never),
  create(RolloutSchema, {
    id: "r2",
    runId: "run-1",
    groupId: "g2",
    groupSize: 1,
    response: '<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>',
    task: {
      id: "t2",
      messages: [{ role: "user", content: "call f" }],
      kind: {
        case: "toolCall",
        value: { format: "rlla", groundTruth: [{ name: "f", argumentsJson: "{}" }] },
      },
    },
  } as never),
  create(RolloutSchema, {
    id: "r3",
    runId: "run-2",
    groupId: "g3",
    groupSize: 2,
    response: "Paid.",
    task: {
      id: "t3",
      kind: { case: "custom", value: { a: [1, { b: "c" }], n: null } },
    },
  } as never),
];

/** Serialized rollouts with byte-level edits: flips, inserts, cuts, repeated spans. */
const mutatedBinary: fc.Arbitrary<Uint8Array> = fc
  .tuple(
    fc.constantFrom(...ROLLOUTS.map((r) => toBinary(RolloutSchema, r))),
    fc.array(
      fc.tuple(
        fc.constantFrom(0, 1, 2, 3),
        fc.nat(),
        fc.nat({ max: 16 }),
        fc.uint8Array({ minLength: 1, maxLength: 12 }),
      ),
      { maxLength: 4 },
    ),
  )
  .map(([bytes, edits]) => {
    let b = Array.from(bytes);
    for (const [op, at, len, data] of edits) {
      const i = at % (b.length + 1);
      if (op === 0) b.splice(i, 0, ...data);
      else if (op === 1) b.splice(i, len);
      else if (op === 2) b.splice(i, data.length, ...data);
      else b = [...b.slice(0, i + len), ...b.slice(i, i + len), ...b.slice(i + len)];
    }
    return Uint8Array.from(b);
  });

const TASK_KINDS = [[], ["code"], ["toolCall"], ["agent"]] as const;

describe("fuzz: Rollout from the bus (protobuf binary)", () => {
  it("decodes to a rollout or a decode error with a message; validation names the field", () => {
    fc.assert(
      fc.property(mutatedBinary, fc.constantFrom(...TASK_KINDS), (bytes, kinds) => {
        const d = fuzzCall("fromBinary(Rollout)", () => fromBinary(RolloutSchema, bytes), [
          "Error",
          "RangeError",
          "TypeError",
        ]);
        // protobuf-es reports bad UTF-8 in a string field as the TextDecoder's TypeError; every other
        // TypeError would be a crash. The worker dead-letters it with this message.
        if (!d.ok && d.error.name === "TypeError")
          assert.equal(d.error.message, "The encoded data was not valid for encoding utf-8");
        if (!d.ok) return;
        const v = fuzzCall("validateRollout", () => validateRollout(d.value, kinds), [
          "InvalidArgumentError",
        ]);
        if (!v.ok) assert.match(v.error.message, /^'rollout(\.[a-z_.]+)?' \S/);
      }),
      fuzzParameters(500),
    );
  });
});

describe("fuzz: Rollout from a CLI line (proto JSON)", () => {
  it("decodes to a rollout or a decode error with a message; validation names the field", () => {
    const seeds = ROLLOUTS.map((r) => toJson(RolloutSchema, r));
    fc.assert(
      fc.property(mutatedValue(seeds), fc.constantFrom(...TASK_KINDS), (json, kinds) => {
        const d = fuzzCall("fromJson(Rollout)", () => fromJson(RolloutSchema, json as JsonValue), [
          "Error",
          "RangeError",
        ]);
        if (!d.ok) return;
        fuzzCall("validateRollout", () => validateRollout(d.value, kinds), ["InvalidArgumentError"]);
      }),
      fuzzParameters(500),
    );
  });
});
