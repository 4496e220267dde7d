/**
 * The learner conformance suite against the embedded learner in process and the same learner over
 * real gRPC (`serveLearner` on port 0 + `createRemoteLearner`), plus wire-specific checks: the two
 * give bit-identical results, the stream protocol refuses malformed TrainStep streams with
 * INVALID_ARGUMENT, and health reports SERVING.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createGrpcClient, grpc, health, Learner as LearnerService } from "@reward-mesh/proto";
import { BANDIT, banditAdvantages, CODE, DAPO, learnerConformanceSuite, samplesFrom } from "./conformance.js";
import { createEmbeddedLearner } from "./embedded.js";
import { createRemoteLearner } from "./remote.js";
import { serveLearner } from "./server.js";
import type { Learner } from "./types.js";

learnerConformanceSuite("embedded learner (in process)", {
  kind: "embedded",
  async setup(seed) {
    const learner = createEmbeddedLearner({ seed });
    return { learner, teardown: () => learner.close() };
  },
});

learnerConformanceSuite("embedded learner over gRPC (RemoteLearner)", {
  kind: "remote",
  async setup(seed) {
    const embedded = createEmbeddedLearner({ seed });
    const server = await serveLearner(embedded, { port: 0 });
    const learner = createRemoteLearner(server.address);
    return {
      learner,
      async teardown() {
        await learner.close();
        await server.close(1_000);
        await embedded.close();
      },
    };
  },
});

describe("the wire is lossless: in-process and remote learners agree bit for bit", () => {
  it("the same calls give identical completions, metrics and weights", async () => {
    const local = createEmbeddedLearner({ seed: 5, initialScale: 0.3 });
    const served = createEmbeddedLearner({ seed: 5, initialScale: 0.3 });
    const server = await serveLearner(served);
    const remote = createRemoteLearner(server.address);
    try {
      const run = async (l: Learner) => {
        const out: unknown[] = [];
        for (let s = 0; s < 3; s++) {
          const cs = await l.generate({ prompts: [BANDIT, CODE], n: 6, temperature: 0.9 });
          out.push(cs);
          const samples = [
            ...samplesFrom(cs.slice(0, 6), banditAdvantages(cs.slice(0, 6)), 4),
            ...samplesFrom(cs.slice(6), (c) => (c.truncated ? -1 : 0.5), 4).map((x, i) => ({
              ...x,
              lossMask: x.tokenIds.map((_, t) => (t === 0 && i % 2 === 0 ? 0 : 1)),
            })),
          ];
          out.push(
            await l.trainStep({
              step: s,
              idempotencyKey: `k${s}`,
              samples,
              loss: { ...DAPO, klBeta: 0.05, dualClipC: 3, maskTruncated: true, rolloutIsCap: 2 },
              optim: { lr: 0.05, epochs: 2, miniBatches: 2, maxGradNorm: 0.5 },
            }),
          );
        }
        out.push(await l.generate({ prompts: [CODE], n: 4, seed: 1 }));
        return out;
      };
      assert.deepEqual(await run(remote), await run(local));
    } finally {
      await remote.close();
      await server.close(1_000);
    }
  });
});

describe("TrainStep stream protocol (raw gRPC client)", () => {
  let server: Awaited<ReturnType<typeof serveLearner>>;
  let client: ReturnType<typeof createGrpcClient<typeof LearnerService>>;
  before(async () => {
    server = await serveLearner(createEmbeddedLearner({ seed: 1 }));
    client = createGrpcClient(LearnerService, server.address);
  });
  after(async () => {
    client.close();
    await server.close(1_000);
  });

  const header = {
    step: 0,
    idempotencyKey: "raw",
    loss: { lossType: 3, epsLow: 0.2, epsHigh: 0.28, klBeta: 0, maxCompletionLength: 4 },
    optim: { lr: 0.1 },
    sampleCount: 1,
  };
  const sample = {
    sampleId: "x",
    groupId: "g",
    contextKey: "raw",
    vocabularySize: 2,
    tokenIds: [1],
    rolloutLogprobs: [-0.69],
    advantage: 1,
    policyVersion: 0,
  };
  async function* stream(...msgs: unknown[]) {
    for (const m of msgs) yield m as { kind: { case: "header"; value: typeof header } };
  }
  const invalid = (details: RegExp) => (err: grpc.ServiceError) =>
    err.code === grpc.status.INVALID_ARGUMENT && details.test(err.details);

  it("refuses a sample before the header", async () => {
    await assert.rejects(
      client.trainStep(stream({ kind: { case: "sample", value: sample } })),
      invalid(/'header' must be the first message/),
    );
  });
  it("refuses a stream cut short (fewer samples than header.sampleCount)", async () => {
    await assert.rejects(
      client.trainStep(
        stream(
          { kind: { case: "header", value: { ...header, sampleCount: 2 } } },
          { kind: { case: "sample", value: sample } },
        ),
      ),
      invalid(/'samples' has 1 samples but header.sampleCount is 2/),
    );
  });
  it("refuses an unspecified loss type", async () => {
    await assert.rejects(
      client.trainStep(
        stream(
          { kind: { case: "header", value: { ...header, loss: { ...header.loss, lossType: 0 } } } },
          { kind: { case: "sample", value: sample } },
        ),
      ),
      invalid(/'loss.lossType' is UNSPECIFIED/),
    );
  });
  it("accepts a well-formed stream and reports SERVING health", async () => {
    const res = await client.trainStep(
      stream({ kind: { case: "header", value: header } }, { kind: { case: "sample", value: sample } }),
    );
    assert.equal(res.policyVersion, 1);
    assert.equal(res.metrics.nSamples, 1);
    const h = createGrpcClient(health.Health, server.address);
    try {
      const st = await h.check({ service: LearnerService.typeName });
      assert.equal(st.status, health.HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      h.close();
    }
  });
});
