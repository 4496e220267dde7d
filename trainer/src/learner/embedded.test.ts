/**
 * Embedded-learner specifics the conformance suite does not cover: seeding, temperature, inner
 * optimizer steps, masks, the KL reference, gradient clipping (read back from checkpoints), the
 * idempotency cache bound, configuration errors and checkpoint errors.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { BANDIT, banditAdvantages, CODE, DAPO, samplesFrom } from "./conformance.js";
import { createEmbeddedLearner } from "./embedded.js";
import { isLearnerInputError } from "./errors.js";
import type { Learner, LossConfig, OptimConfig, Sample, TrainStepRequest } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "embedded-learner-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function banditStep(
  learner: Learner,
  key: string,
  loss: LossConfig = DAPO,
  optim: OptimConfig = { lr: 0.1 },
  n = 32,
) {
  const cs = await learner.generate({ prompts: [BANDIT], n, seed: 17 });
  return learner.trainStep({
    step: 0,
    idempotencyKey: key,
    samples: samplesFrom(cs, banditAdvantages(cs), 4),
    loss,
    optim,
  });
}

async function thetaOf(learner: Learner, key: string, contextKey: string): Promise<number[]> {
  const path = await learner.saveCheckpoint(join(dir, `${key}.json`));
  const data = JSON.parse(readFileSync(path, "utf8")) as { contexts: { key: string; theta: number[] }[] };
  return data.contexts.find((c) => c.key === contextKey)!.theta;
}

async function refused(p: Promise<unknown>, field: string, mention?: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isLearnerInputError(err), String(err));
    assert.equal(err.field, field);
    if (mention) assert.ok(err.message.includes(mention), err.message);
    return true;
  });
}

describe("seeding", () => {
  it("initial logits depend on (seed, context, V) only, not on creation order", async () => {
    const a = createEmbeddedLearner({ seed: 3, initialScale: 1 });
    const b = createEmbeddedLearner({ seed: 3, initialScale: 1 });
    const c = createEmbeddedLearner({ seed: 4, initialScale: 1 });
    await a.generate({ prompts: [CODE, BANDIT], n: 1 });
    await b.generate({ prompts: [BANDIT, CODE], n: 1 });
    const probe = { prompts: [CODE, BANDIT], n: 8, seed: 1 };
    assert.deepEqual(await a.generate(probe), await b.generate(probe));
    assert.notDeepEqual(
      (await a.generate(probe)).map((x) => x.logprobs),
      (await c.generate(probe)).map((x) => x.logprobs),
    );
  });
  it("the unseeded stream is deterministic given the learner seed and call order", async () => {
    const a = createEmbeddedLearner({ seed: 9 });
    const b = createEmbeddedLearner({ seed: 9 });
    const c = createEmbeddedLearner({ seed: 10 });
    const req = { prompts: [CODE], n: 8 };
    const a1 = await a.generate(req);
    assert.deepEqual(await b.generate(req), a1);
    assert.notDeepEqual(await a.generate(req), a1, "the stream advances");
    assert.notDeepEqual(
      (await c.generate(req)).map((x) => x.tokenIds),
      a1.map((x) => x.tokenIds),
    );
  });
});

describe("generate", () => {
  it("behaviour logprobs are those of the tempered distribution", async () => {
    const l = createEmbeddedLearner({ seed: 1, initialScale: 1 });
    const lp = async (temperature: number) => {
      const out = new Map<number, number>();
      for (const c of await l.generate({ prompts: [BANDIT], n: 200, temperature, seed: 2 })) {
        out.set(c.tokenIds[0]!, c.logprobs[0]!);
      }
      return out;
    };
    const t1 = await lp(1);
    const t05 = await lp(0.5);
    assert.equal(t1.size, 4);
    assert.equal(t05.size, 4);
    // log p_T(k) − log p_T(j) = (θ_k − θ_j)/T = (log p_1(k) − log p_1(j))/T
    for (const k of [1, 2, 3]) {
      const want = (t1.get(k)! - t1.get(0)!) / 0.5;
      assert.ok(Math.abs(t05.get(k)! - t05.get(0)! - want) < 1e-12);
    }
    let total = 0;
    for (const v of t05.values()) total += Math.exp(v);
    assert.ok(Math.abs(total - 1) < 1e-12, "a distribution");
  });
  it("without a stop token every completion has maxTokens tokens and is not truncated", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const out = await l.generate({ prompts: [{ ...BANDIT, maxTokens: 3, separator: "+" }], n: 4, seed: 1 });
    for (const c of out) {
      assert.equal(c.tokenIds.length, 3);
      assert.equal(c.truncated, false);
      assert.equal(c.text.split("+").length, 3);
    }
  });
  it("matchedStop: the stop string that ended a completion, as given; empty at the stop token or the budget", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    // One fragment: every token is it, so each case is exact.
    const one = (fragment: string, o: { stop?: string[]; stopToken?: number; maxTokens?: number } = {}) =>
      l
        .generate({
          prompts: [
            {
              promptId: "p",
              contextKey: `matched/${fragment}`,
              vocabulary: [fragment],
              maxTokens: o.maxTokens ?? 3,
              ...(o.stopToken !== undefined ? { stopToken: o.stopToken } : {}),
            },
          ],
          n: 1,
          seed: 1,
          ...(o.stop ? { stop: o.stop } : {}),
        })
        .then((cs) => cs[0]!);
    const pick = (c: Awaited<ReturnType<typeof one>>) => [c.text, c.finishReason, c.matchedStop, c.tokenIds];
    // A stop string inside a fragment: the text is cut before it, the token stays.
    assert.deepEqual(pick(await one("ab</tool_call>cd", { stop: ["</tool_call>"] })), [
      "ab",
      "stop",
      "</tool_call>",
      [0],
    ]);
    // Several occur: the earliest occurrence, whatever the list order ...
    assert.deepEqual(pick(await one("ab</tool_call>cd", { stop: ["cd", "</tool_call>"] })), [
      "ab",
      "stop",
      "</tool_call>",
      [0],
    ]);
    // ... a longer one included, when it starts first (the text is cut there) ...
    const first = await one("ab</tool_call>cd", { stop: ["</tool_call>", "</tool", "b</tool_call>c"] });
    assert.deepEqual(pick(first), ["a", "stop", "b</tool_call>c", [0]]);
    // ... and of those starting there the shortest (its match was complete first).
    const same = await one("ab</tool_call>cd", { stop: ["</tool_call>", "</tool"] });
    assert.deepEqual(pick(same), ["ab", "stop", "</tool", [0]]);
    // Across fragments: the match completes at the second token.
    assert.deepEqual(pick(await one("x<", { stop: ["<x"] })), ["x", "stop", "<x", [0, 0]]);
    // The stop token (a fragment policy's end of sequence): no stop string, even if one was asked for.
    assert.deepEqual(pick(await one("ab</tool_call>", { stop: ["</tool_call>"], stopToken: 0 })), [
      "",
      "stop",
      "",
      [0],
    ]);
    // The budget: `length`, no stop string.
    assert.deepEqual(pick(await one("a", { stop: ["</tool_call>"] })), ["aaa", "length", "", [0, 0, 0]]);
    // Fixed length (no stop token, no stop strings).
    assert.deepEqual(pick(await one("a")), ["aaa", "stop", "", [0, 0, 0]]);
    await l.close();
  });
  it("continues a sequence (prefixTokenIds) exactly as the sample of the whole sequence is scored", async () => {
    const l = createEmbeddedLearner({ seed: 2, initialScale: 1 });
    const first = await l.generate({
      prompts: [{ ...CODE, stopToken: undefined, maxTokens: 2 }],
      n: 1,
      seed: 3,
    });
    const prefix = first[0]!.tokenIds;
    const next = await l.generate({
      prompts: [{ ...CODE, stopToken: undefined, maxTokens: 3, prefixTokenIds: prefix }],
      n: 4,
      seed: 4,
    });
    for (const c of next) {
      assert.equal(c.tokenIds.length, 3); // only the new tokens
      const [lp] = await l.computeLogprobs([
        {
          sequenceId: "s",
          contextKey: CODE.contextKey,
          vocabularySize: 4,
          tokenIds: [...prefix, ...c.tokenIds],
        },
      ]);
      assert.deepEqual(lp!.slice(prefix.length), c.logprobs);
    }
    // Conditioning on the prefix's last token: a different last token changes the first step's odds.
    const after = async (last: number) =>
      (
        await l.generate({
          prompts: [{ ...CODE, stopToken: undefined, maxTokens: 1, prefixTokenIds: [last] }],
          n: 1,
          seed: 9,
        })
      )[0]!;
    assert.notEqual((await after(0)).logprobs[0], (await after(1)).logprobs[0]);
  });
  it("refuses bad prompts with the prompt named", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    await refused(
      l.generate({ prompts: [{ ...CODE, stopToken: 4 }], n: 1 }),
      "prompts[0].stopToken",
      "'code'",
    );
    await refused(l.generate({ prompts: [{ ...CODE, maxTokens: 0 }], n: 1 }), "prompts[0].maxTokens");
    await refused(l.generate({ prompts: [{ ...CODE, vocabulary: [] }], n: 1 }), "prompts[0].vocabulary");
    await refused(
      l.generate({ prompts: [{ ...CODE, prefixTokenIds: [0, 4] }], n: 1 }),
      "prompts[0].prefixTokenIds[1]",
    );
    await refused(l.generate({ prompts: [CODE], n: 0 }), "n");
    await refused(l.generate({ prompts: [CODE], n: 1, temperature: 0 }), "temperature");
    await refused(l.generate({ prompts: [CODE], n: 1, seed: -1 }), "seed");
    await refused(
      l.generate({
        prompts: [CODE, { ...CODE, promptId: "x", vocabulary: ["a"], stopToken: undefined }],
        n: 1,
      }),
      "prompts[1].vocabulary",
      "conformance/code",
    );
  });
});

describe("trainStep", () => {
  it("epochs × mini-batches optimizer steps; old logprobs fixed at step start, so clipping binds", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const res = await banditStep(l, "k", DAPO, { lr: 0.5, epochs: 3, miniBatches: 2 });
    assert.equal(res.metrics.nOptimizerSteps, 6);
    assert.equal(res.policyVersion, 1);
    assert.ok(res.metrics.approxKlOld > 0);
    assert.ok(res.metrics.clipFraction > 0, `clip fraction ${res.metrics.clipFraction}`);
    assert.ok(res.metrics.clipFractionHigh! + res.metrics.clipFractionLow! > 0);
  });
  it("more mini-batches than samples: one step per sample", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const res = await banditStep(l, "k", DAPO, { lr: 0.1, miniBatches: 50 }, 4);
    assert.equal(res.metrics.nOptimizerSteps, 4);
  });
  it("masked tokens and masked truncated samples do not count", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const cs = await l.generate({ prompts: [CODE], n: 16, seed: 4 });
    const samples = samplesFrom(cs, (c) => (c.truncated ? -1 : 1), 4).map((s) => ({
      ...s,
      lossMask: s.tokenIds.map((_, t) => (t === 0 ? 0 : 1)),
    }));
    const truncated = samples.filter((s) => s.truncated);
    assert.ok(truncated.length > 0 && truncated.length < samples.length, "the fixture has both kinds");
    const res = await l.trainStep({
      step: 0,
      idempotencyKey: "m",
      samples,
      loss: { ...DAPO, maskTruncated: true },
      optim: { lr: 0.1 },
    });
    const want = samples.filter((s) => !s.truncated).reduce((n, s) => n + s.tokenIds.length - 1, 0);
    assert.equal(res.metrics.nTokens, want);
    assert.equal(res.metrics.nMaskedTruncated, truncated.length);
  });
  it("a fully masked sample changes nothing under token-mean aggregation", async () => {
    const run = async (extra: Sample[]) => {
      const l = createEmbeddedLearner({ seed: 1 });
      const cs = await l.generate({ prompts: [BANDIT], n: 16, seed: 8 });
      const samples = [...samplesFrom(cs, banditAdvantages(cs), 4), ...extra];
      await l.trainStep({ step: 0, idempotencyKey: "x", samples, loss: DAPO, optim: { lr: 0.1 } });
      return l.generate({ prompts: [BANDIT], n: 8, seed: 1 });
    };
    const masked: Sample = {
      sampleId: "masked",
      groupId: "g",
      contextKey: BANDIT.contextKey,
      vocabularySize: 4,
      tokenIds: [2],
      rolloutLogprobs: [Math.log(0.25)],
      lossMask: [0],
      advantage: 5,
      policyVersion: 0,
    };
    assert.deepEqual(await run([masked]), await run([]));
    assert.notDeepEqual(await run([{ ...masked, lossMask: [1] }]), await run([]), "unmasked it would matter");
  });
  it("the KL term pulls the policy back towards the reference", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    for (let i = 0; i < 5; i++) await banditStep(l, `away-${i}`, { ...DAPO, klBeta: 0 }, { lr: 0.2 });
    const zeroAdv = async (key: string) => {
      const cs = await l.generate({ prompts: [BANDIT], n: 32, seed: 3 });
      return l.trainStep({
        step: 0,
        idempotencyKey: key,
        samples: samplesFrom(cs, () => 0, 4),
        loss: { ...DAPO, klBeta: 1 },
        optim: { lr: 0.1 },
      });
    };
    const first = await zeroAdv("back-0");
    assert.ok(first.metrics.klRef > 0.01, `moved away: klRef ${first.metrics.klRef}`);
    let last = first;
    for (let i = 1; i < 10; i++) last = await zeroAdv(`back-${i}`);
    assert.ok(last.metrics.klRef < first.metrics.klRef / 2, `${first.metrics.klRef} → ${last.metrics.klRef}`);
  });
  it("without a reference, klBeta > 0 is refused", async () => {
    const l = createEmbeddedLearner({ seed: 1, referenceFromInitial: false });
    await refused(banditStep(l, "k", { ...DAPO, klBeta: 0.1 }), "loss.klBeta", "referenceFromInitial");
    const ok = await banditStep(l, "k", { ...DAPO, klBeta: 0 });
    assert.equal(ok.metrics.klRef, 0);
  });
  it("SGD also raises the probability of the advantaged token", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const before = (await l.generate({ prompts: [BANDIT], n: 64, seed: 2 })).find(
      (c) => c.tokenIds[0] === 0,
    )!;
    await banditStep(l, "k", DAPO, { lr: 1, optimizer: "sgd" });
    const after = (await l.generate({ prompts: [BANDIT], n: 64, seed: 2 })).find((c) => c.tokenIds[0] === 0)!;
    assert.ok(after.logprobs[0]! > before.logprobs[0]!);
  });
  it("gradient-norm clipping bounds the SGD step; gradNorm is the pre-clip norm", async () => {
    const delta = async (maxGradNorm: number) => {
      const l = createEmbeddedLearner({ seed: 1 });
      await l.generate({ prompts: [BANDIT], n: 1 });
      const t0 = await thetaOf(l, `clip-${maxGradNorm}-0`, BANDIT.contextKey);
      const res = await banditStep(l, "k", { ...DAPO, klBeta: 0 }, { lr: 1, optimizer: "sgd", maxGradNorm });
      const t1 = await thetaOf(l, `clip-${maxGradNorm}-1`, BANDIT.contextKey);
      return { norm: Math.hypot(...t1.map((x, i) => x - t0[i]!)), gradNorm: res.metrics.gradNorm };
    };
    const free = await delta(Number.POSITIVE_INFINITY);
    const clipped = await delta(free.gradNorm / 4);
    assert.ok(Math.abs(free.norm - free.gradNorm) < 1e-12, "unclipped SGD moves θ by lr·‖g‖");
    assert.equal(clipped.gradNorm, free.gradNorm);
    assert.ok(Math.abs(clipped.norm - free.gradNorm / 4) < 1e-6, `${clipped.norm} vs ${free.gradNorm / 4}`);
  });
  it("the idempotency cache is bounded (oldest keys forgotten)", async () => {
    const l = createEmbeddedLearner({ seed: 1, idempotencyCacheSize: 2 });
    const cs = await l.generate({ prompts: [BANDIT], n: 8, seed: 1 });
    const req = (key: string): TrainStepRequest => ({
      step: 0,
      idempotencyKey: key,
      samples: samplesFrom(cs, banditAdvantages(cs), 4),
      loss: DAPO,
      optim: { lr: 0.1 },
      maxStaleness: 100,
    });
    await l.trainStep(req("a"));
    await l.trainStep(req("b"));
    assert.equal((await l.trainStep(req("a"))).replayed, true);
    await l.trainStep(req("c"));
    assert.equal((await l.trainStep(req("a"))).replayed, false, "forgotten: steps again");
  });
  it("refuses bad configurations with the key named", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    await refused(banditStep(l, "k", { ...DAPO, lossType: "ppo" as never }), "loss.lossType", "dr_grpo");
    await refused(
      banditStep(l, "k", { ...DAPO, lossType: "dr_grpo", maxCompletionLength: 0 }),
      "loss.maxCompletionLength",
    );
    await refused(
      banditStep(l, "k", { ...DAPO, lossType: "cispo", cispoMode: "upper-cap", epsHigh: 0.28 }),
      "loss.epsHigh",
      "absolute ratio cap",
    );
    await refused(banditStep(l, "k", { ...DAPO, dualClipC: 0.5 }), "loss.dualClipC");
    await refused(banditStep(l, "k", DAPO, { lr: 0 }), "optim.lr");
    await refused(banditStep(l, "k", DAPO, { lr: 0.1, miniBatches: 0 }), "optim.miniBatches");
    await refused(banditStep(l, "k", DAPO, { lr: 0.1, optimizer: "adamw" as never }), "optim.optimizer");
    await refused(
      l.trainStep({ step: 0, idempotencyKey: "k", samples: [], loss: DAPO, optim: { lr: 0.1 } }),
      "samples",
    );
    const cs = await l.generate({ prompts: [BANDIT], n: 2, seed: 1 });
    const dup = samplesFrom(cs, () => 1, 4).map((s) => ({ ...s, sampleId: "same" }));
    await refused(
      l.trainStep({ step: 0, idempotencyKey: "k", samples: dup, loss: DAPO, optim: { lr: 0.1 } }),
      "samples[1].sampleId",
      "repeats",
    );
    const masked = samplesFrom(cs, () => 1, 4).map((s) => ({ ...s, lossMask: [2] }));
    await refused(
      l.trainStep({ step: 0, idempotencyKey: "k", samples: masked, loss: DAPO, optim: { lr: 0.1 } }),
      "samples[0].lossMask[0]",
    );
    assert.equal((await l.info()).policyVersion, 0);
  });
});

describe("checkpoints", () => {
  it("are written atomically as tagged JSON (no temporary files left)", async () => {
    const sub = mkdtempSync(join(dir, "atomic-"));
    const l = createEmbeddedLearner({ seed: 1 });
    await banditStep(l, "k");
    const p = await l.saveCheckpoint(join(sub, "ckpt.json"));
    await l.saveCheckpoint(p); // overwrite in place
    assert.deepEqual(readdirSync(sub), ["ckpt.json"]);
    const data = JSON.parse(readFileSync(p, "utf8"));
    assert.equal(data.format, "reward-mesh.embedded-learner");
    assert.equal(data.policyVersion, 1);
  });
  it("a missing, corrupt or foreign file is a LearnerCheckpointError naming the path", () => {
    const missing = join(dir, "nope.json");
    const corrupt = join(dir, "corrupt.json");
    const foreign = join(dir, "foreign.json");
    writeFileSync(corrupt, "{ not json");
    writeFileSync(foreign, JSON.stringify({ format: "something-else" }));
    for (const p of [missing, corrupt, foreign]) {
      assert.throws(
        () => createEmbeddedLearner({ seed: 1, checkpoint: p }),
        (err: Error) => err.name === "LearnerCheckpointError" && err.message.includes(p),
      );
    }
    assert.equal(existsSync(missing), false);
  });
  it("missing parent directories are created; an unwritable path is a LearnerCheckpointError", async () => {
    const l = createEmbeddedLearner({ seed: 1 });
    const nested = await l.saveCheckpoint(join(dir, "new", "deeper", "x.json"));
    assert.ok(existsSync(nested));
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    await assert.rejects(
      l.saveCheckpoint(join(file, "x.json")),
      (err: Error) => err.name === "LearnerCheckpointError" && err.message.includes(file),
    );
  });
});
