/**
 * Fuzzing of what a learner server reads: `Generate` and `TrainStep` requests (protobuf binary →
 * `decode*` → `validate*`) and the untyped objects `validate*` accepts in process. Each gives the
 * checked request or a `LearnerInputError` naming the field (INVALID_ARGUMENT). Fixed seed, bounded
 * runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  LearnerGenerateRequestSchema,
  LearnerLossType,
  LearnerSampleSchema,
  LearnerTrainStepHeaderSchema,
} from "@reward-mesh/proto";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, mutatedValue } from "@reward-mesh/sdk/testing";
import type { GenerateRequest, Sample, TrainStepRequest } from "./types.js";
import { validateGenerateRequest, validateScoredSequences, validateTrainStepRequest } from "./validate.js";
import { decodeGenerateRequest, decodeSample, decodeTrainStepRequest } from "./wire.js";

const NAMED = ["LearnerInputError"];
const sizes = (key: string) => (key === "known" ? 4 : undefined);

const GENERATE: GenerateRequest[] = [
  {
    prompts: [
      {
        promptId: "p1",
        contextKey: "c1",
        vocabulary: ["a", "b", "+", "."],
        maxTokens: 3,
        stopToken: 3,
        separator: "",
      },
      { promptId: "p2", contextKey: "known", vocabulary: ["w", "x", "y", "z"] },
    ],
    n: 4,
    temperature: 0.7,
    seed: 3,
    topP: 0.9,
    maxNewTokens: 8,
    stop: ["."],
  },
];

const sample = (id: string, advantage: number) => ({
  sampleId: id,
  groupId: "g",
  contextKey: "known",
  vocabularySize: 4,
  tokenIds: [0, 1, 3],
  rolloutLogprobs: [-0.1, -1.2, -0.5],
  lossMask: [1, 1, 0],
  advantage,
  policyVersion: 0,
  truncated: false,
});

const TRAIN: TrainStepRequest[] = [
  {
    step: 1,
    idempotencyKey: "k1",
    samples: [sample("s1", 0.5), sample("s2", -0.5)],
    loss: {
      lossType: "dapo",
      epsLow: 0.2,
      epsHigh: 0.28,
      dualClipC: 0,
      klBeta: 0.01,
      maxCompletionLength: 16,
    },
    optim: { lr: 0.1, maxGradNorm: 1, epochs: 1, miniBatches: 1 },
    maxStaleness: 2,
  } as TrainStepRequest,
];

const ctx = { policyVersion: 0, vocabularySizeOf: sizes };

/** Serialized `bytes` with byte-level edits: flips, inserts, cuts. */
function mutatedBytes(seeds: readonly Uint8Array[]): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(
      fc.constantFrom(...seeds),
      fc.array(fc.tuple(fc.constantFrom(0, 1, 2), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 8 })), {
        maxLength: 4,
      }),
    )
    .map(([bytes, edits]) => {
      const b = Array.from(bytes);
      for (const [op, at, data] of edits) {
        const i = at % (b.length + 1);
        if (op === 0) b.splice(i, 0, ...data);
        else if (op === 1) b.splice(i, data.length);
        else b.splice(i, data.length, ...data);
      }
      return Uint8Array.from(b);
    });
}

describe("fuzz: learner requests from the wire", () => {
  it("Generate: decodes and validates, or names the field", () => {
    const seeds = GENERATE.map((g) =>
      toBinary(LearnerGenerateRequestSchema, create(LearnerGenerateRequestSchema, g as never)),
    );
    fc.assert(
      fc.property(mutatedBytes(seeds), (bytes) => {
        const msg = fuzzCall("fromBinary", () => fromBinary(LearnerGenerateRequestSchema, bytes), [
          "Error",
          "RangeError",
          "TypeError",
        ]);
        if (!msg.ok) return;
        const req = fuzzCall("decodeGenerateRequest", () => decodeGenerateRequest(msg.value));
        assert.ok(req.ok);
        fuzzCall("validateGenerateRequest", () => validateGenerateRequest(req.value, sizes), NAMED);
      }),
      fuzzParameters(300),
    );
  });

  it("TrainStep: header and samples decode and validate, or name the field", () => {
    const t = TRAIN[0]!;
    const header = toBinary(
      LearnerTrainStepHeaderSchema,
      create(LearnerTrainStepHeaderSchema, {
        step: 1,
        idempotencyKey: "k1",
        loss: { lossType: LearnerLossType.DAPO, epsLow: 0.2, epsHigh: 0.28, maxCompletionLength: 16 },
        optim: { lr: 0.1 },
        sampleCount: 2,
      } as never),
    );
    const samples = t.samples.map((s) =>
      toBinary(LearnerSampleSchema, create(LearnerSampleSchema, s as never)),
    );
    fc.assert(
      fc.property(mutatedBytes([header]), fc.array(mutatedBytes(samples), { maxLength: 3 }), (h, ss) => {
        const hm = fuzzCall("fromBinary(header)", () => fromBinary(LearnerTrainStepHeaderSchema, h), [
          "Error",
          "RangeError",
          "TypeError",
        ]);
        const sm = ss.map((b) =>
          fuzzCall("fromBinary(sample)", () => fromBinary(LearnerSampleSchema, b), [
            "Error",
            "RangeError",
            "TypeError",
          ]),
        );
        if (!hm.ok) return;
        const decoded: Sample[] = [];
        for (const s of sm) {
          if (!s.ok) return;
          decoded.push(decodeSample(s.value));
        }
        const req = fuzzCall(
          "decodeTrainStepRequest",
          () => decodeTrainStepRequest(hm.value, decoded),
          NAMED,
        );
        if (!req.ok) return;
        fuzzCall("validateTrainStepRequest", () => validateTrainStepRequest(req.value, ctx), NAMED);
      }),
      fuzzParameters(300),
    );
  });
});

describe("fuzz: learner requests in process (untyped objects)", () => {
  it("validateGenerateRequest", () => {
    fc.assert(
      fc.property(mutatedValue(GENERATE), (req) => {
        fuzzCall(
          "validateGenerateRequest",
          () => validateGenerateRequest(req as GenerateRequest, sizes),
          NAMED,
        );
      }),
      fuzzParameters(300),
    );
  });

  it("validateTrainStepRequest", () => {
    fc.assert(
      fc.property(mutatedValue(TRAIN), (req) => {
        fuzzCall(
          "validateTrainStepRequest",
          () => validateTrainStepRequest(req as TrainStepRequest, ctx),
          NAMED,
        );
      }),
      fuzzParameters(300),
    );
  });

  it("validateScoredSequences", () => {
    const seqs = [
      [{ sequenceId: "q1", contextKey: "known", vocabularySize: 4, tokenIds: [0, 3], promptTokenIds: [] }],
    ];
    fc.assert(
      fc.property(mutatedValue(seqs), (q) => {
        fuzzCall("validateScoredSequences", () => validateScoredSequences(q as never, sizes), NAMED);
      }),
      fuzzParameters(300),
    );
  });
});
