/**
 * The learner conformance suite: behaviour every {@link Learner} must show, whether a fragment policy
 * (the embedded learner, in process or behind gRPC) or a text policy (the PyTorch learner, a Python
 * process behind gRPC). `conformance.test.ts` runs it against `createEmbeddedLearner` directly and
 * through `serveLearner` + `createRemoteLearner`; `trainer/test/torch-learner.test.ts` against the
 * PyTorch learner. What differs between the two kinds of policy (prompts, vocabulary, the
 * initial policy, how a checkpoint is restored) comes from {@link ConformanceFixtures}. A test helper
 * (imports `node:test`); not exported from the package.
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
import {
  type Completion,
  FRAGMENT_TOKENIZER,
  type GenerateRequest,
  type Learner,
  type LossConfig,
  type PromptSpec,
  type Sample,
  type TrainStepRequest,
} from "./types.js";

/** A learner under test and how to dispose of it. */
export interface LearnerUnderTest {
  readonly learner: Learner;
  /** Stops whatever `setup` started (server, client). */
  teardown(): Promise<void>;
}

/** What the suite needs to know about the kind of policy under test. */
export interface ConformanceFixtures {
  readonly policy: "fragments" | "text";
  /** A prompt whose completions are exactly one token (a bandit). */
  readonly bandit: PromptSpec;
  /** A prompt with longer completions that can stop early and can be truncated. */
  readonly code: PromptSpec;
  /** `Sample.vocabularySize` for samples of these prompts (0 for text policies). */
  readonly vocabularySize: number;
  /** A token id outside the vocabulary. */
  readonly outOfVocabulary: number;
  /** Stop strings that the `code` prompt's completions hit often. */
  readonly stop: readonly string[];
  /** When the initial policy is uniform over the bandit's tokens: its number of tokens. */
  readonly uniformBanditTokens?: number;
  /** What `info().description` must say (honesty about what the policy is). */
  readonly describes: RegExp;
  /** The learning rate of the suite's train steps (one Adam step must raise p(good) measurably). */
  readonly lr: number;
  /** Largest difference between generate's logprobs (temperature 1) and computeLogprobs. */
  readonly logprobTolerance: number;
  /** A learner restored from a checkpoint written by `saveCheckpoint(path)`. */
  restore(path: string): Promise<LearnerUnderTest>;
}

/** How the suite gets a fresh learner (seeded with `seed`) for each test. */
export interface ConformanceOptions {
  readonly kind: "embedded" | "remote";
  setup(seed: number): Promise<LearnerUnderTest>;
  /** @default the fragment fixtures ({@link FRAGMENT_FIXTURES}) */
  readonly fixtures?: ConformanceFixtures;
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

/** The fixtures of fragment policies (the embedded learner). */
export const FRAGMENT_FIXTURES: ConformanceFixtures = {
  policy: "fragments",
  bandit: BANDIT,
  code: CODE,
  vocabularySize: 4,
  outOfVocabulary: 9,
  stop: ["return x"],
  uniformBanditTokens: 4,
  describes: /not an LLM/,
  lr: 0.1,
  logprobTolerance: 1e-12,
  async restore(path) {
    const learner = createEmbeddedLearner({ seed: 0, checkpoint: path });
    return { learner, teardown: () => learner.close() };
  },
};

/** Samples from completions with the given advantages (text policies: with their prompt tokens). */
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
    ...(c.promptTokenIds.length > 0 ? { promptTokenIds: c.promptTokenIds } : {}),
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

/** A mean-centred "an even first token is good" advantage (any vocabulary). */
export function parityAdvantages(completions: readonly Completion[]): (c: Completion) => number {
  const good = (c: Completion) => c.tokenIds[0]! % 2 === 0;
  const frac = completions.filter(good).length / completions.length;
  return (c) => (good(c) ? 1 : 0) - frac;
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

/**
 * The cut rule, as far as a completion shows it: `text + matchedStop` (what the tokens say up to the end
 * of the stop string) holds no other stop string that starts before the cut, nor a shorter one that
 * starts at it — the earliest occurrence wins, and of those starting there the shortest.
 */
function checkCutRule(c: Completion, stop: readonly string[]): void {
  if (c.matchedStop === "") return;
  const upTo = c.text + c.matchedStop;
  for (const s of stop) {
    if (s === c.matchedStop) continue;
    const k = upTo.indexOf(s);
    if (k < 0) continue;
    assert.ok(k >= c.text.length, `'${s}' starts before the cut at ${c.text.length} in '${upTo}'`);
    assert.ok(
      k > c.text.length || s.length > c.matchedStop.length,
      `'${s}' starts at the cut too and is shorter than '${c.matchedStop}'`,
    );
  }
}

/** Registers the conformance suite under `describe(label)`. */
export function learnerConformanceSuite(label: string, options: ConformanceOptions): void {
  const fx = options.fixtures ?? FRAGMENT_FIXTURES;
  const V = fx.vocabularySize;
  const withLearner = (fn: (learner: Learner) => Promise<void>) => async () => {
    const t = await options.setup(42);
    try {
      await fn(t.learner);
    } finally {
      await t.teardown();
    }
  };

  const step = async (learner: Learner, key: string, extra: Partial<TrainStepRequest> = {}) => {
    const completions = await learner.generate({ prompts: [fx.bandit], n: 16, seed: 3 });
    return learner.trainStep({
      step: 0,
      idempotencyKey: key,
      samples: samplesFrom(completions, parityAdvantages(completions), V),
      loss: DAPO,
      optim: { lr: fx.lr },
      ...extra,
    });
  };
  const scored = (cs: readonly Completion[]) =>
    cs.map((c, i) => ({
      sequenceId: `q${i}`,
      contextKey: c.contextKey,
      ...(V > 0 ? { vocabularySize: V } : {}),
      ...(c.promptTokenIds.length > 0 ? { promptTokenIds: c.promptTokenIds } : {}),
      tokenIds: c.tokenIds,
    }));

  describe(label, () => {
    it(
      "info: kind, name, version 0, the model and an honest description",
      withLearner(async (learner) => {
        const info = await learner.info();
        assert.equal(info.kind, options.kind);
        assert.ok(info.name.length > 0);
        assert.equal(info.policyVersion, 0);
        assert.match(info.description, fx.describes);
        assert.equal(info.tokenizer === FRAGMENT_TOKENIZER, fx.policy === "fragments", info.tokenizer);
        for (const k of ["model", "architecture", "dtype", "device"] as const)
          assert.ok(info[k].length > 0, k);
        assert.ok(Number.isInteger(info.parameterCount) && info.parameterCount >= 0);
        if (fx.policy === "text") {
          assert.ok(info.parameterCount > 0 && info.vocabSize > 0 && info.maxContext > 0);
          assert.ok(fx.outOfVocabulary >= info.vocabSize);
        }
      }),
    );

    it(
      "generate: n per prompt in order, text from the tokens, stop and truncation",
      withLearner(async (learner) => {
        const out = await learner.generate({ prompts: [fx.code, fx.bandit], n: 5, seed: 9 });
        assert.equal(out.length, 10);
        out.forEach((c, i) => {
          const p = i < 5 ? fx.code : fx.bandit;
          assert.equal(c.promptId, p.promptId);
          assert.equal(c.contextKey, p.contextKey);
          assert.equal(c.index, i % 5);
          assert.equal(c.policyVersion, 0);
          assert.ok(c.tokenIds.length >= 1 && c.tokenIds.length <= p.maxTokens!);
          assert.equal(c.logprobs.length, c.tokenIds.length);
          for (const lp of c.logprobs) assert.ok(lp <= 0 && Number.isFinite(lp));
          assert.equal(c.finishReason, c.truncated ? "length" : "stop");
          assert.equal(c.matchedStop, "", "no stop strings were asked for");
          if (fx.policy === "fragments") {
            assert.deepEqual(c.promptTokenIds, []);
            const stopped = p.stopToken !== undefined && c.tokenIds.at(-1) === p.stopToken;
            assert.equal(c.truncated, p.stopToken !== undefined && !stopped);
            if (stopped) assert.ok(c.tokenIds.slice(0, -1).every((t) => t !== p.stopToken));
            const fragments = c.tokenIds.filter((t) => t !== p.stopToken).map((t) => p.vocabulary![t]);
            assert.equal(c.text, fragments.join(p.separator ?? ""));
          } else {
            assert.ok(c.promptTokenIds.length > 0, "a text policy returns the prompt's tokens");
            assert.equal(c.truncated, c.tokenIds.length === p.maxTokens && c.finishReason === "length");
          }
        });
        if (fx.uniformBanditTokens !== undefined) {
          const u = Math.log(1 / fx.uniformBanditTokens);
          for (const c of out.slice(5))
            assert.ok(Math.abs(c.logprobs[0]! - u) < 1e-12, "uniform initial policy");
        }
      }),
    );

    it(
      "generate: deterministic with a seed, different across seeds",
      withLearner(async (learner) => {
        const req = { prompts: [fx.code, fx.bandit], n: 8, seed: 1234 };
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
      "generate: stop strings cut the text and end the completion; top-p renormalises the behaviour logprobs",
      withLearner(async (learner) => {
        const out = await learner.generate({ prompts: [fx.code], n: 16, seed: 21, stop: fx.stop });
        let cut = 0;
        let matched = 0;
        for (const c of out) {
          for (const s of fx.stop)
            assert.ok(!c.text.includes(s), `'${c.text}' contains the stop string '${s}'`);
          assert.equal(c.finishReason, c.truncated ? "length" : "stop");
          if (!c.truncated) cut++;
          // Which stop string ended it: one of the request's, as given; "" otherwise (never unset).
          assert.equal(typeof c.matchedStop, "string", "matchedStop is reported");
          if (c.matchedStop === "") continue;
          matched++;
          assert.ok(fx.stop.includes(c.matchedStop), `matchedStop '${c.matchedStop}' is a requested stop`);
          assert.equal(c.finishReason, "stop");
          checkCutRule(c, fx.stop);
          if (fx.policy === "fragments") {
            // The text is cut right before it, and the completion's last token completed it.
            const p = fx.code;
            const full = c.tokenIds.map((t) => p.vocabulary![t]).join(p.separator ?? "");
            assert.ok(full.startsWith(c.text + c.matchedStop), `'${full}' continues '${c.text}' with it`);
            const before = c.tokenIds
              .slice(0, -1)
              .map((t) => p.vocabulary![t])
              .join(p.separator ?? "");
            for (const s of fx.stop) assert.ok(!before.includes(s), "no stop string before the last token");
          }
        }
        assert.ok(cut > 0, "some completion hit a stop string or its end");
        assert.ok(matched > 0, "some completion ended at a stop string and says which");
        const nucleus = await learner.generate({ prompts: [fx.code], n: 8, seed: 22, topP: 0.5 });
        const full = await learner.computeLogprobs(scored(nucleus));
        let raised = 0;
        nucleus.forEach((c, i) => {
          c.logprobs.forEach((lp, t) => {
            assert.ok(lp >= full[i]![t]! - 1e-9, "a nucleus logprob is at least the full one");
            if (lp > full[i]![t]! + 1e-9) raised++;
          });
        });
        assert.ok(raised > 0, "top-p < 1 renormalised some token's probability");
      }),
    );

    it(
      "generate: of several stop strings one token completes, the one cut at is the earliest, then the shortest — not the first listed",
      withLearner(async (learner) => {
        // From a completion sampled without stop strings, three that its text completes at once: A, a
        // character new to the text; B, the character before A and A (starts earlier); C, B and the
        // next character (starts where B does, longer). Listed [A, C, B], the first in list order (what
        // vLLM and SGLang report) is neither the earliest nor the shortest: B is the one to cut at.
        let checked = 0;
        for (let seed = 1; seed <= 40 && checked < 3; seed++) {
          const [full] = await learner.generate({ prompts: [fx.code], n: 1, seed });
          const t = full!.text;
          const plain = (k: number) => k < t.length && t.charCodeAt(k) >= 0x20 && t.charCodeAt(k) <= 0x7e;
          let e = 1;
          while (e < t.length && !(plain(e - 1) && plain(e) && !t.slice(0, e).includes(t[e]!))) e++;
          if (e >= t.length) continue;
          const [a, b] = [t[e]!, t.slice(e - 1, e + 1)];
          const stop = plain(e + 1) ? [a, t.slice(e - 1, e + 2), b] : [a, b];
          const [c] = await learner.generate({ prompts: [fx.code], n: 1, seed, stop });
          const why = `text '${t}', stop ${JSON.stringify(stop)}`;
          // A stop string only ends a completion: the same seed draws the same tokens up to the cut.
          assert.deepEqual(c!.tokenIds, full!.tokenIds.slice(0, c!.tokenIds.length), why);
          assert.equal(c!.finishReason, "stop", why);
          assert.equal(c!.matchedStop, b, why);
          assert.equal(c!.text, t.slice(0, e - 1), why);
          checkCutRule(c!, stop);
          checked++;
        }
        assert.ok(checked > 0, "some completion (seeds 1-40) has two plain ASCII characters, the second new");
      }),
    );

    it(
      "computeLogprobs equals generate's behaviour logprobs at temperature 1",
      withLearner(async (learner) => {
        const out = await learner.generate({ prompts: [fx.code, fx.bandit], n: 4, seed: 5 });
        const lps = await learner.computeLogprobs(scored(out));
        assert.equal(lps.length, out.length);
        out.forEach((c, i) => {
          assert.equal(lps[i]!.length, c.tokenIds.length);
          c.logprobs.forEach((lp, t) => {
            assert.ok(Math.abs(lp - lps[i]![t]!) <= fx.logprobTolerance, `${lp} vs ${lps[i]![t]}`);
          });
        });
      }),
    );

    it(
      "trainStep raises the probability of positively-advantaged completions",
      withLearner(async (learner) => {
        const before = await learner.generate({ prompts: [fx.bandit], n: 64, seed: 11 });
        const advantage = parityAdvantages(before);
        const res = await learner.trainStep({
          step: 0,
          idempotencyKey: "raise-1",
          samples: samplesFrom(before, advantage, V),
          loss: DAPO,
          optim: { lr: fx.lr },
        });
        assert.equal(res.policyVersion, 1);
        assert.equal(res.replayed, false);
        assert.equal(res.metrics.nSamples, 64);
        assert.equal(res.metrics.nTokens, 64);
        assert.equal(res.metrics.nDroppedStale, 0);
        // One epoch, one mini-batch: old = current, so nothing is clipped and approx-KL is 0.
        assert.equal(res.metrics.clipFraction, 0);
        assert.ok(Math.abs(res.metrics.approxKlOld) < 1e-12);
        assert.ok(res.metrics.gradNorm > 0);
        const after = await learner.generate({ prompts: [fx.bandit], n: 64, seed: 11 });
        assert.ok(after.every((c) => c.policyVersion === 1));
        const lpAfter = await learner.computeLogprobs(scored(before));
        assert.notDeepEqual(
          lpAfter.map((l) => l[0]),
          before.map((c) => c.logprobs[0]),
          "the weights moved",
        );
        // The same completions, scored before (behaviour logprobs) and after the update.
        const mass = (pred: (c: Completion) => boolean, lp: (c: Completion, i: number) => number) => {
          const seen = new Map<number, number>();
          before.forEach((c, i) => {
            if (pred(c)) seen.set(c.tokenIds[0]!, Math.exp(lp(c, i)));
          });
          return [...seen.values()].reduce((a, b) => a + b, 0);
        };
        const good = (c: Completion) => advantage(c) > 0;
        const bad = (c: Completion) => advantage(c) < 0;
        const goodBefore = mass(good, (c) => c.logprobs[0]!);
        const goodAfter = mass(good, (_, i) => lpAfter[i]![0]!);
        const badBefore = mass(bad, (c) => c.logprobs[0]!);
        const badAfter = mass(bad, (_, i) => lpAfter[i]![0]!);
        assert.ok(goodAfter > goodBefore, `p(good) rose: ${goodBefore} → ${goodAfter}`);
        assert.ok(badAfter < badBefore, `p(bad) fell: ${badBefore} → ${badAfter}`);
      }),
    );

    it(
      "trainStep is idempotent: a retry with the same key replays without a second update",
      withLearner(async (learner) => {
        const completions = await learner.generate({ prompts: [fx.bandit], n: 16, seed: 5 });
        const req: TrainStepRequest = {
          step: 7,
          idempotencyKey: "run-a/step-7",
          samples: samplesFrom(completions, parityAdvantages(completions), V),
          loss: DAPO,
          optim: { lr: fx.lr },
        };
        const first = await learner.trainStep(req);
        const probe = { prompts: [fx.bandit, fx.code], n: 8, seed: 77 };
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
        const old = await learner.generate({ prompts: [fx.bandit], n: 8, seed: 1 });
        await step(learner, "s1");
        await step(learner, "s2");
        const fresh = await learner.generate({ prompts: [fx.bandit], n: 8, seed: 2 });
        assert.ok(fresh.every((c) => c.policyVersion === 2));
        const samples = [
          ...samplesFrom(old, parityAdvantages(old), V),
          ...samplesFrom(fresh, parityAdvantages(fresh), V),
        ];
        const res = await learner.trainStep({
          step: 3,
          idempotencyKey: "s3",
          samples,
          loss: DAPO,
          optim: { lr: fx.lr },
          maxStaleness: 1,
        });
        assert.equal(res.metrics.nDroppedStale, 8);
        assert.equal(res.metrics.nSamples, 8);
        assert.equal(res.policyVersion, 3);
        // Within the staleness limit nothing is dropped.
        const kept = await learner.trainStep({
          step: 4,
          idempotencyKey: "s4",
          samples: samplesFrom(old, parityAdvantages(old), V),
          loss: { ...DAPO, rolloutIsCap: 2 },
          optim: { lr: fx.lr },
          maxStaleness: 3,
        });
        assert.equal(kept.metrics.nDroppedStale, 0);
        assert.equal(kept.metrics.nSamples, 8);
        assert.ok(kept.metrics.rolloutIsWeightMean! > 0 && kept.metrics.rolloutIsWeightMean! <= 2);
        assert.notEqual(kept.metrics.rolloutIsWeightMean, 1, "stale samples are importance-weighted");
        // All stale: no update, but the version advances (one trainStep = one version).
        const probe = { prompts: [fx.bandit], n: 8, seed: 9 };
        const w0 = (await learner.generate(probe)).map((c) => c.logprobs);
        const none = await learner.trainStep({
          step: 5,
          idempotencyKey: "s5",
          samples: samplesFrom(old, parityAdvantages(old), V),
          loss: DAPO,
          optim: { lr: fx.lr },
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
        const completions = await learner.generate({ prompts: [fx.bandit, fx.code], n: 2, seed: 3 });
        const good = [
          ...samplesFrom(completions.slice(0, 2), () => 0.5, V),
          ...samplesFrom(completions.slice(2), () => -0.5, V),
        ];
        const probe = { prompts: [fx.bandit], n: 4, seed: 8 };
        const w0 = await learner.generate(probe);
        const base = { step: 0, loss: DAPO, optim: { lr: fx.lr } };
        const withSample = (i: number, patch: Partial<Sample>): Sample[] =>
          good.map((s, j) => (j === i ? { ...s, ...patch } : s));
        const refused = async (key: string, samples: Sample[], field: string, mentions: string[]) =>
          expectInputError(
            options.kind,
            learner.trainStep({ ...base, idempotencyKey: key, samples }),
            field,
            mentions,
          );
        await refused("bad-1", withSample(1, { advantage: Number.NaN }), "samples[1].advantage", [
          "NaN",
          good[1]!.sampleId,
        ]);
        const longer = [...good[2]!.tokenIds, fx.outOfVocabulary];
        await refused(
          "bad-2",
          withSample(2, { tokenIds: longer, rolloutLogprobs: [...good[2]!.rolloutLogprobs, -1] }),
          `samples[2].tokenIds[${longer.length - 1}]`,
          [String(fx.outOfVocabulary), good[2]!.sampleId],
        );
        await refused("bad-3", withSample(0, { rolloutLogprobs: [-1, -1] }), "samples[0].rolloutLogprobs", [
          "2 entries",
          good[0]!.sampleId,
        ]);
        await refused(
          "bad-3b",
          withSample(3, { lossMask: [...good[3]!.tokenIds.map(() => 1), 1] }),
          "samples[3].lossMask",
          [good[3]!.sampleId],
        );
        if (fx.policy === "fragments") {
          await refused("bad-4", withSample(3, { vocabularySize: 5 }), "samples[3].vocabularySize", [
            fx.code.contextKey,
            good[3]!.sampleId,
          ]);
        } else {
          const { promptTokenIds: _, ...noPrompt } = good[3]!;
          await refused(
            "bad-4",
            good.map((s, j) => (j === 3 ? noPrompt : s)),
            "samples[3].promptTokenIds",
            [good[3]!.sampleId],
          );
        }
        await refused("bad-5", withSample(0, { policyVersion: 3 }), "samples[0].policyVersion", ["ahead"]);
        // A prompt of the other kind of policy.
        const { vocabulary: _v, ...textOnly } = fx.bandit;
        await expectInputError(
          options.kind,
          learner.generate({
            prompts: [
              fx.policy === "fragments"
                ? { ...textOnly, text: "Say hi." }
                : { ...fx.bandit, vocabulary: ["a", "b"] },
            ],
            n: 1,
          }),
          "prompts[0].vocabulary",
          [],
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
        assert.deepEqual(await learner.generate(probe), w0, "no bad request changed the weights");
        // The keys of refused requests are not burnt: they work once the input is fixed.
        const ok = await learner.trainStep({ ...base, idempotencyKey: "bad-1", samples: good });
        assert.equal(ok.replayed, false);
        assert.equal(ok.policyVersion, 1);
      }),
    );

    it(
      "saveCheckpoint writes a checkpoint that restores an identical learner",
      withLearner(async (learner) => {
        const dir = mkdtempSync(join(tmpdir(), "learner-ckpt-"));
        try {
          const c1Completions = await learner.generate({ prompts: [fx.bandit], n: 16, seed: 3 });
          const c1: TrainStepRequest = {
            step: 1,
            idempotencyKey: "c1",
            samples: samplesFrom(c1Completions, parityAdvantages(c1Completions), V),
            loss: DAPO,
            optim: { lr: fx.lr, epochs: 2, miniBatches: 2 },
          };
          await learner.trainStep(c1);
          await learner.generate({ prompts: [fx.code], n: 3 }); // advances the learner's own stream
          const path = await learner.saveCheckpoint(join(dir, "ckpt"));
          assert.equal(path, join(dir, "ckpt"));
          const restored = await fx.restore(path);
          try {
            const r = restored.learner;
            assert.equal((await r.info()).policyVersion, (await learner.info()).policyVersion);
            // The unseeded stream continues identically.
            const unseeded = { prompts: [fx.code, fx.bandit], n: 4 };
            assert.deepEqual(await r.generate(unseeded), await learner.generate(unseeded));
            // A replay of a step taken before the checkpoint is recognised.
            const replay = await r.trainStep(c1);
            assert.equal(replay.replayed, true);
            assert.equal(replay.policyVersion, 1);
            // The next step (optimizer moments included) gives the same result and weights.
            const a = await step(learner, "c2");
            const b = await step(r, "c2");
            assert.deepEqual(b, a);
            const probe = { prompts: [fx.code, fx.bandit], n: 6, seed: 5 };
            assert.deepEqual(await r.generate(probe), await learner.generate(probe));
          } finally {
            await restored.teardown();
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
