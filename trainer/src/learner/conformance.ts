/**
 * The learner conformance suite: behaviour every {@link Learner} must show, whether embedded or
 * behind gRPC. `conformance.test.ts` runs it against `createEmbeddedLearner` directly and through
 * `serveLearner` + `createRemoteLearner` over real gRPC. A test helper (imports `node:test`); not
 * exported from the package.
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { grpc } from "@reward-mesh/proto";
import { createEmbeddedLearner } from "./embedded.js";
import { isLearnerInputError } from "./errors.js";
import type { Completion, GenerateRequest, Learner, LossConfig, Sample, TrainStepRequest } from "./types.js";

/** A learner under test and how to dispose of it. */
export interface LearnerUnderTest {
  readonly learner: Learner;
  /** Stops whatever `setup` started (server, client). */
  teardown(): Promise<void>;
}

/** How the suite gets a fresh learner (seeded with `seed`) for each test. */
export interface ConformanceOptions {
  readonly kind: "embedded" | "remote";
  setup(seed: number): Promise<LearnerUnderTest>;
}

/** A bandit context: one token per completion, so a token's probability is readable from logprobs. */
export const BANDIT: GenerateRequest["prompts"][number] = {
  promptId: "bandit",
  contextKey: "conformance/bandit",
  vocabulary: ["a", "b", "c", "d"],
  maxTokens: 1,
};

/** A fragment context with a stop token. */
export const CODE: GenerateRequest["prompts"][number] = {
  promptId: "code",
  contextKey: "conformance/code",
  vocabulary: ["def f(x):", "\n    return x", "\n    return 0", "<stop>"],
  maxTokens: 4,
  stopToken: 3,
  separator: "",
};

/** The default loss of the suite (DAPO). */
export const DAPO: LossConfig = {
  lossType: "dapo",
  epsLow: 0.2,
  epsHigh: 0.28,
  klBeta: 0.01,
  maxCompletionLength: 4,
};

/** Samples from completions with the given advantages. */
export function samplesFrom(
  completions: readonly Completion[],
  advantage: (c: Completion, i: number) => number,
  vocabularySize: number,
): Sample[] {
  return completions.map((c, i) => ({
    sampleId: `${c.promptId}#${c.policyVersion}#${c.index}`,
    groupId: c.promptId,
    contextKey: c.contextKey,
    vocabularySize,
    tokenIds: c.tokenIds,
    rolloutLogprobs: c.logprobs,
    advantage: advantage(c, i),
    policyVersion: c.policyVersion,
    truncated: c.truncated,
  }));
}

/** A mean-centred "token 0 is good" advantage over bandit completions. */
export function banditAdvantages(completions: readonly Completion[]): (c: Completion) => number {
  const frac = completions.filter((c) => c.tokenIds[0] === 0).length / completions.length;
  return (c) => (c.tokenIds[0] === 0 ? 1 : 0) - frac;
}

async function expectInputError(
  kind: "embedded" | "remote",
  p: Promise<unknown>,
  field: string,
  mentions: readonly string[],
): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isLearnerInputError(err), `expected a LearnerInputError, got ${String(err)}`);
    assert.equal(err.field, field);
    for (const m of mentions) assert.ok(err.message.includes(m), `'${err.message}' mentions ${m}`);
    if (kind === "remote") {
      const code = (err.cause as { code?: unknown } | undefined)?.code;
      assert.equal(code, grpc.status.INVALID_ARGUMENT, "came back from the server as INVALID_ARGUMENT");
    }
    return true;
  });
}

/** Registers the conformance suite under `describe(label)`. */
export function learnerConformanceSuite(label: string, options: ConformanceOptions): void {
  const withLearner = (fn: (learner: Learner) => Promise<void>) => async () => {
    const t = await options.setup(42);
    try {
      await fn(t.learner);
    } finally {
      await t.teardown();
    }
  };

  const step = async (learner: Learner, key: string, extra: Partial<TrainStepRequest> = {}) => {
    const completions = await learner.generate({ prompts: [BANDIT], n: 16, seed: 3 });
    return learner.trainStep({
      step: 0,
      idempotencyKey: key,
      samples: samplesFrom(completions, banditAdvantages(completions), 4),
      loss: DAPO,
      optim: { lr: 0.1 },
      ...extra,
    });
  };

  describe(label, () => {
    it(
      "info: kind, name, version 0 and an honest description",
      withLearner(async (learner) => {
        const info = await learner.info();
        assert.equal(info.kind, options.kind);
        assert.ok(info.name.length > 0);
        assert.equal(info.policyVersion, 0);
        assert.match(info.description, /not an LLM/);
      }),
    );

    it(
      "generate: n per prompt in order, real text from fragments, stop and truncation",
      withLearner(async (learner) => {
        const out = await learner.generate({ prompts: [CODE, BANDIT], n: 5, seed: 9 });
        assert.equal(out.length, 10);
        out.forEach((c, i) => {
          const p = i < 5 ? CODE : BANDIT;
          assert.equal(c.promptId, p.promptId);
          assert.equal(c.contextKey, p.contextKey);
          assert.equal(c.index, i % 5);
          assert.equal(c.policyVersion, 0);
          assert.ok(c.tokenIds.length >= 1 && c.tokenIds.length <= p.maxTokens);
          assert.equal(c.logprobs.length, c.tokenIds.length);
          for (const lp of c.logprobs) assert.ok(lp <= 0 && Number.isFinite(lp));
          const stopped = p.stopToken !== undefined && c.tokenIds.at(-1) === p.stopToken;
          assert.equal(c.truncated, p.stopToken !== undefined && !stopped);
          if (stopped) assert.ok(c.tokenIds.slice(0, -1).every((t) => t !== p.stopToken));
          const fragments = c.tokenIds.filter((t) => t !== p.stopToken).map((t) => p.vocabulary[t]);
          assert.equal(c.text, fragments.join(p.separator ?? ""));
        });
        // A uniform initial policy: every bandit logprob is log(1/4).
        for (const c of out.slice(5)) assert.ok(Math.abs(c.logprobs[0]! - Math.log(0.25)) < 1e-12);
      }),
    );

    it(
      "generate: deterministic with a seed, different across seeds",
      withLearner(async (learner) => {
        const req = { prompts: [CODE, BANDIT], n: 8, seed: 1234 };
        const a = await learner.generate(req);
        const b = await learner.generate(req);
        assert.deepEqual(a, b);
        const c = await learner.generate({ ...req, seed: 4321 });
        assert.notDeepEqual(
          a.map((x) => x.tokenIds),
          c.map((x) => x.tokenIds),
        );
      }),
    );

    it(
      "trainStep raises the probability of positively-advantaged completions",
      withLearner(async (learner) => {
        const before = await learner.generate({ prompts: [BANDIT], n: 64, seed: 11 });
        const res = await learner.trainStep({
          step: 0,
          idempotencyKey: "raise-1",
          samples: samplesFrom(before, banditAdvantages(before), 4),
          loss: DAPO,
          optim: { lr: 0.1 },
        });
        assert.equal(res.policyVersion, 1);
        assert.equal(res.replayed, false);
        assert.equal(res.metrics.nSamples, 64);
        assert.equal(res.metrics.nTokens, 64);
        assert.equal(res.metrics.nDroppedStale, 0);
        // One epoch, one mini-batch: old = current, so nothing is clipped and approx-KL is 0.
        assert.equal(res.metrics.clipFraction, 0);
        assert.ok(Math.abs(res.metrics.approxKlOld) < 1e-15);
        assert.ok(res.metrics.gradNorm > 0);
        const after = await learner.generate({ prompts: [BANDIT], n: 64, seed: 11 });
        assert.ok(after.every((c) => c.policyVersion === 1));
        const lp = (cs: Completion[], tok: number) => cs.find((c) => c.tokenIds[0] === tok)?.logprobs[0];
        assert.ok(lp(after, 0)! > lp(before, 0)!, `p(good) rose: ${lp(before, 0)} → ${lp(after, 0)}`);
        for (const bad of [1, 2, 3]) {
          const b = lp(before, bad);
          const a = lp(after, bad);
          if (a !== undefined && b !== undefined) assert.ok(a < b, `p(${bad}) fell`);
        }
        const count = (cs: Completion[]) => cs.filter((c) => c.tokenIds[0] === 0).length;
        assert.ok(count(after) >= count(before));
      }),
    );

    it(
      "trainStep is idempotent: a retry with the same key replays without a second update",
      withLearner(async (learner) => {
        const completions = await learner.generate({ prompts: [BANDIT], n: 16, seed: 5 });
        const req: TrainStepRequest = {
          step: 7,
          idempotencyKey: "run-a/step-7",
          samples: samplesFrom(completions, banditAdvantages(completions), 4),
          loss: DAPO,
          optim: { lr: 0.1 },
        };
        const first = await learner.trainStep(req);
        const probe = { prompts: [BANDIT, CODE], n: 8, seed: 77 };
        const weightsAfterFirst = await learner.generate(probe);
        const retry = await learner.trainStep(req);
        assert.equal(retry.replayed, true);
        assert.equal(retry.policyVersion, first.policyVersion);
        assert.deepEqual(retry.metrics, first.metrics);
        assert.deepEqual(await learner.generate(probe), weightsAfterFirst, "no second update");
        assert.equal((await learner.info()).policyVersion, 1);
        // The same key for different samples is a caller bug, not a replay.
        await expectInputError(
          options.kind,
          learner.trainStep({ ...req, samples: req.samples.slice(1) }),
          "idempotencyKey",
          ["run-a/step-7"],
        );
      }),
    );

    it(
      "stale samples are dropped and counted; the step still advances the version",
      withLearner(async (learner) => {
        const old = await learner.generate({ prompts: [BANDIT], n: 8, seed: 1 });
        await step(learner, "s1");
        await step(learner, "s2");
        const fresh = await learner.generate({ prompts: [BANDIT], n: 8, seed: 2 });
        assert.ok(fresh.every((c) => c.policyVersion === 2));
        const samples = [
          ...samplesFrom(old, banditAdvantages(old), 4),
          ...samplesFrom(fresh, banditAdvantages(fresh), 4),
        ];
        const res = await learner.trainStep({
          step: 3,
          idempotencyKey: "s3",
          samples,
          loss: DAPO,
          optim: { lr: 0.1 },
          maxStaleness: 1,
        });
        assert.equal(res.metrics.nDroppedStale, 8);
        assert.equal(res.metrics.nSamples, 8);
        assert.equal(res.policyVersion, 3);
        // Within the staleness limit nothing is dropped.
        const kept = await learner.trainStep({
          step: 4,
          idempotencyKey: "s4",
          samples: samplesFrom(old, banditAdvantages(old), 4),
          loss: { ...DAPO, rolloutIsCap: 2 },
          optim: { lr: 0.1 },
          maxStaleness: 3,
        });
        assert.equal(kept.metrics.nDroppedStale, 0);
        assert.equal(kept.metrics.nSamples, 8);
        assert.ok(kept.metrics.rolloutIsWeightMean! > 0 && kept.metrics.rolloutIsWeightMean! <= 2);
        assert.notEqual(kept.metrics.rolloutIsWeightMean, 1, "stale samples are importance-weighted");
        // All stale: no update, but the version advances (one trainStep = one version).
        const probe = { prompts: [BANDIT], n: 8, seed: 9 };
        const w0 = (await learner.generate(probe)).map((c) => c.logprobs);
        const none = await learner.trainStep({
          step: 5,
          idempotencyKey: "s5",
          samples: samplesFrom(old, banditAdvantages(old), 4),
          loss: DAPO,
          optim: { lr: 0.1 },
          maxStaleness: 0,
        });
        assert.equal(none.metrics.nSamples, 0);
        assert.equal(none.metrics.nDroppedStale, 8);
        assert.equal(none.policyVersion, 5);
        assert.deepEqual(
          (await learner.generate(probe)).map((c) => c.logprobs),
          w0,
        );
      }),
    );

    it(
      "bad input is refused with the sample and field named, and changes nothing",
      withLearner(async (learner) => {
        const completions = await learner.generate({ prompts: [BANDIT, CODE], n: 2, seed: 3 });
        const good = [
          ...samplesFrom(completions.slice(0, 2), () => 0.5, 4),
          ...samplesFrom(completions.slice(2), () => -0.5, 4),
        ];
        const base = { step: 0, loss: DAPO, optim: { lr: 0.1 } };
        const withSample = (i: number, patch: Partial<Sample>): Sample[] =>
          good.map((s, j) => (j === i ? { ...s, ...patch } : s));
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-1",
            samples: withSample(1, { advantage: Number.NaN }),
          }),
          "samples[1].advantage",
          ["NaN", good[1]!.sampleId],
        );
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-2",
            samples: withSample(2, { tokenIds: [0, 1, 9] }),
          }),
          "samples[2].tokenIds[2]",
          ["9", good[2]!.sampleId],
        );
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-3",
            samples: withSample(0, { rolloutLogprobs: [-1, -1] }),
          }),
          "samples[0].rolloutLogprobs",
          ["2 entries", good[0]!.sampleId],
        );
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-4",
            samples: withSample(3, { vocabularySize: 5 }),
          }),
          "samples[3].vocabularySize",
          ["conformance/code", good[3]!.sampleId],
        );
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-5",
            samples: withSample(0, { policyVersion: 3 }),
          }),
          "samples[0].policyVersion",
          ["ahead"],
        );
        await expectInputError(
          options.kind,
          learner.generate({ prompts: [{ ...BANDIT, vocabulary: ["a", "b"] }], n: 1 }),
          "prompts[0].vocabulary",
          ["conformance/bandit"],
        );
        await expectInputError(
          options.kind,
          learner.trainStep({
            ...base,
            idempotencyKey: "bad-6",
            samples: good,
            loss: { ...DAPO, epsLow: 1.5 },
          }),
          "loss.epsLow",
          ["1.5"],
        );
        assert.equal((await learner.info()).policyVersion, 0, "no bad request stepped");
        // The keys of refused requests are not burnt: they work once the input is fixed.
        const ok = await learner.trainStep({ ...base, idempotencyKey: "bad-1", samples: good });
        assert.equal(ok.replayed, false);
        assert.equal(ok.policyVersion, 1);
      }),
    );

    it(
      "saveCheckpoint writes a file that restores an identical learner",
      withLearner(async (learner) => {
        const dir = mkdtempSync(join(tmpdir(), "learner-ckpt-"));
        try {
          const c1Completions = await learner.generate({ prompts: [BANDIT], n: 16, seed: 3 });
          const c1: TrainStepRequest = {
            step: 1,
            idempotencyKey: "c1",
            samples: samplesFrom(c1Completions, banditAdvantages(c1Completions), 4),
            loss: DAPO,
            optim: { lr: 0.1, epochs: 2, miniBatches: 2 },
          };
          await learner.trainStep(c1);
          await learner.generate({ prompts: [CODE], n: 3 }); // advances the learner's own stream
          const path = await learner.saveCheckpoint(join(dir, "learner.json"));
          assert.equal(path, join(dir, "learner.json"));
          const restored = createEmbeddedLearner({ seed: 0, checkpoint: path });
          try {
            assert.equal((await restored.info()).policyVersion, (await learner.info()).policyVersion);
            // The unseeded stream continues identically.
            const unseeded = { prompts: [CODE, BANDIT], n: 4 };
            assert.deepEqual(await restored.generate(unseeded), await learner.generate(unseeded));
            // A replay of a step taken before the checkpoint is recognised.
            const replay = await restored.trainStep(c1);
            assert.equal(replay.replayed, true);
            assert.equal(replay.policyVersion, 1);
            // The next step (Adam moments included) gives the same result and weights.
            const a = await step(learner, "c2");
            const b = await step(restored, "c2");
            assert.deepEqual(b, a);
            const probe = { prompts: [CODE, BANDIT], n: 6, seed: 5 };
            assert.deepEqual(await restored.generate(probe), await learner.generate(probe));
          } finally {
            await restored.close();
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }),
    );

    it("close: later calls are refused", async () => {
      const t = await options.setup(1);
      try {
        await t.learner.close();
        await assert.rejects(t.learner.info(), (err: Error) => err.name === "LearnerClosedError");
      } finally {
        await t.teardown();
      }
    });
  });
}
