import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { ConfigError } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { BUNDLED_MODEL_DIR, loadConfig, type RewardModelOptions } from "./config.js";
import { encodePair, loadRewardModel, loadTokenizer } from "./model.js";
import { calibrate, createRewardModelService, promptText } from "./service.js";

/** What model/build.py wrote: PyTorch's own scores of the same model, and its own WordPiece ids. */
const reference = JSON.parse(readFileSync(join(BUNDLED_MODEL_DIR, "reference.json"), "utf8")) as {
  max_length: number;
  cases: { prompt: string; response: string; input_ids: number[]; score: number }[];
};
const TOLERANCE = 1e-5;

const options = (over: Partial<RewardModelOptions> = {}): RewardModelOptions => ({
  ...loadConfig({}),
  ...over,
});
const rolloutOf = (prompt: string, response: string) =>
  makeRollout({ response, task: { id: "t", prompt, kind: { case: "custom", value: {} } } });
const value = (r: { components: { name: string; value: number }[] }, name: string) =>
  r.components.find((c) => c.name === name)!.value;

const services: { close(): Promise<void> }[] = [];
after(async () => {
  for (const s of services) await s.close();
});
function service(over: Partial<RewardModelOptions> = {}) {
  const s = createRewardModelService(options(over));
  services.push(s);
  return s;
}

describe("reward-model service against the reference computation", () => {
  it("tokenizes every reference pair to the ids build.py's own WordPiece gives", () => {
    const t = loadTokenizer(BUNDLED_MODEL_DIR, 0);
    assert.equal(t.maxTokens, reference.max_length);
    for (const c of reference.cases) {
      assert.deepEqual(encodePair(t, c.prompt, c.response, "left").ids, c.input_ids, c.prompt);
    }
  });

  it("scores every reference pair as PyTorch did, to 1e-5 (batch of 1)", async () => {
    const s = service({ maxBatch: 1 });
    await s.ready;
    for (const c of reference.cases) {
      const r = await s.scoreRollout(rolloutOf(c.prompt, c.response));
      const got = value(r, "score");
      assert.ok(Math.abs(got - c.score) <= TOLERANCE, `${c.prompt}: ${got} vs ${c.score}`);
      assert.equal(r.components[0]!.details, `${c.input_ids.length} tokens`);
    }
    assert.equal(s.batchStats().largestBatch, 1);
  });

  it("scores concurrent requests in shared batches with the same results", async () => {
    const s = service({ maxBatch: 4, maxWaitMs: 50 });
    await s.ready;
    const results = await Promise.all(
      reference.cases.map((c) => s.scoreRollout(rolloutOf(c.prompt, c.response))),
    );
    results.forEach((r, i) => {
      const want = reference.cases[i]!.score;
      assert.ok(
        Math.abs(value(r, "score") - want) <= TOLERANCE,
        `case ${i}: ${value(r, "score")} vs ${want}`,
      );
    });
    const stats = s.batchStats();
    assert.equal(stats.items, reference.cases.length);
    assert.equal(stats.largestBatch, 4, "requests met in full batches");
    assert.equal(stats.batches, Math.ceil(reference.cases.length / 4));
  });

  it("padding does not change a score: alone and in a batch with longer inputs", async () => {
    const opts = options();
    const t = loadTokenizer(opts.modelDir, 0);
    const model = await loadRewardModel(opts, t);
    try {
      const short = encodePair(t, "Hi", "yes", "left");
      const long = encodePair(t, "Explain why ".repeat(8), "because ".repeat(20), "left");
      const alone = (await model.run([short]))[0]!;
      const batched = await model.run([long, short, encodePair(t, "a b c d e f g", "h i j k", "left")]);
      assert.ok(long.ids.length > short.ids.length + 20);
      assert.ok(Math.abs(batched[1]! - alone) <= TOLERANCE, `${batched[1]} vs ${alone}`);
      assert.ok(Math.abs(batched[0]! - (await model.run([long]))[0]!) <= TOLERANCE);
    } finally {
      await model.close();
    }
  });

  it("adds the calibrated component in [0, 1] when configured", async () => {
    const s = service({ calibration: { kind: "sigmoid", shift: 0.7, scale: 0.05 } });
    assert.deepEqual(
      s.components.map((c) => [c.name, c.min, c.max]),
      [
        ["score", -1000, 1000],
        ["score_calibrated", 0, 1],
      ],
    );
    const c = reference.cases[0]!;
    const r = await s.scoreRollout(rolloutOf(c.prompt, c.response));
    assert.equal(value(r, "score_calibrated"), calibrate(value(r, "score"), 0.7, 0.05));
    assert.ok(Math.abs(value(r, "score_calibrated") - 1 / (1 + Math.exp(-(c.score - 0.7) / 0.05))) < 1e-3);
    assert.equal(calibrate(-1e6, 0, 1), 0);
    assert.equal(calibrate(1e6, 0, 1), 1);
  });

  it("clamps a raw score beyond the declared bound and says so", async () => {
    const s = service({ scoreBound: 0.1 });
    const c = reference.cases[0]!;
    const r = await s.scoreRollout(rolloutOf(c.prompt, c.response));
    assert.equal(value(r, "score"), Math.sign(c.score) * 0.1);
    assert.match(r.components[0]!.details, /clamped to ±0\.1/);
  });
});

describe("reward-model inputs", () => {
  it("takes the prompt from the task's prompt, else its messages, else the code task's prompt", () => {
    assert.equal(promptText(rolloutOf("p", "r")), "p");
    const chat = makeRollout({
      task: {
        id: "t",
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "hi" },
        ],
        kind: { case: "custom", value: {} },
      },
    });
    assert.equal(promptText(chat), "system: be brief\nuser: hi");
    const code = makeRollout({
      task: { id: "t", kind: { case: "code", value: { language: "python", prompt: "def f():" } } },
    });
    assert.equal(promptText(code), "def f():");
  });

  it("truncates a too-long pair: the prompt's start first, then the response's end", () => {
    const t = loadTokenizer(BUNDLED_MODEL_DIR, 12);
    const e = encodePair(t, "one two three four five six", "seven eight", "left");
    // [CLS] prompt [SEP] response [SEP]: 3 special tokens; 9 left for 6 + 2 → keep the last 7 prompt words.
    assert.equal(e.ids.length, 11);
    assert.equal(e.truncated, 0);
    const f = encodePair(t, "one two three four five six seven eight nine ten", "yes no", "left");
    assert.equal(f.ids.length, 12);
    assert.equal(f.truncated, 3);
    const words = f.ids.map((id) => t.tokenizer.id_to_token(id));
    assert.deepEqual(words, [
      "[CLS]",
      "four",
      "five",
      "six",
      "seven",
      "eight",
      "nine",
      "ten",
      "[SEP]",
      "yes",
      "no",
      "[SEP]",
    ]);
    const g = encodePair(t, "a b", "one two three four five six seven eight nine ten eleven", "left");
    assert.deepEqual(
      g.ids.map((id) => t.tokenizer.id_to_token(id)),
      ["[CLS]", "[SEP]", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "[SEP]"],
    );
  });

  it("rejects a too-long pair with truncation 'error', naming the lengths", async () => {
    const s = service({ maxTokens: 8, truncation: "error" });
    await assert.rejects(s.scoreRollout(rolloutOf("one two three", "four five six")), {
      name: "InvalidArgumentError",
      message: /'rollout\.response' with its prompt is 9 tokens, more than the model's 8/,
    });
    const ok = await s.scoreRollout(rolloutOf("one", "two"));
    assert.equal(ok.components[0]!.details, "5 tokens");
  });
});

describe("reward-model start-up failures", () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-reward-model-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const copyModel = (to: string) => {
    for (const f of ["model.onnx", "tokenizer.json", "tokenizer_config.json"])
      copyFileSync(join(BUNDLED_MODEL_DIR, f), join(to, f));
  };

  it("names a missing model file", async () => {
    const s = createRewardModelService(options({ modelFile: "absent.onnx" }));
    await assert.rejects(s.ready, {
      name: "ModelLoadError",
      message: `reward model file '${join(BUNDLED_MODEL_DIR, "absent.onnx")}' does not exist`,
    });
    await s.close();
  });

  it("names a corrupt model file", async () => {
    const d = mkdtempSync(join(dir, "corrupt-"));
    copyModel(d);
    writeFileSync(join(d, "model.onnx"), "not a model");
    const s = createRewardModelService(options({ modelDir: d }));
    await assert.rejects(s.ready, (e: Error) => {
      assert.equal(e.name, "ModelLoadError");
      assert.match(e.message, new RegExp(`'${join(d, "model.onnx")}' is not a loadable ONNX model`));
      return true;
    });
    // A request to a service whose model did not load fails with the same error.
    await assert.rejects(s.scoreRollout(rolloutOf("a", "b")), { name: "ModelLoadError" });
    await s.close();
  });

  it("refuses REWARD_MODEL_MAX_TOKENS beyond the tokenizer's model_max_length at once", () => {
    assert.throws(() => createRewardModelService(options({ maxTokens: 4096 })), {
      name: "ConfigError",
      message: new RegExp(
        `^'REWARD_MODEL_MAX_TOKENS' is 4096, more than the model's longest sequence \\(model_max_length 128 in ${join(BUNDLED_MODEL_DIR, "tokenizer_config.json")}\\)`,
      ),
    });
  });

  it("fails start-up, naming REWARD_MODEL_MAX_TOKENS, when the model cannot take a full-length batch", async () => {
    // A tokenizer config that claims more than the model's position table holds (128).
    const d = mkdtempSync(join(dir, "long-"));
    copyModel(d);
    const config = JSON.parse(readFileSync(join(d, "tokenizer_config.json"), "utf8"));
    writeFileSync(join(d, "tokenizer_config.json"), JSON.stringify({ ...config, model_max_length: 4096 }));
    const s = createRewardModelService(options({ modelDir: d }));
    await assert.rejects(s.ready, (e: Error) => {
      assert.equal(e.name, "ModelLoadError");
      assert.match(e.message, /fails on a batch of 2 inputs of 4096 tokens \(REWARD_MODEL_MAX_TOKENS/);
      return true;
    });
    await s.close();
    // The same model with REWARD_MODEL_MAX_TOKENS within its table loads and scores.
    const ok = createRewardModelService(options({ modelDir: d, maxTokens: 128 }));
    await ok.ready;
    assert.equal(typeof value(await ok.scoreRollout(rolloutOf("a", "b")), "score"), "number");
    await ok.close();
  });

  it("names a missing or corrupt tokenizer file at once", () => {
    const d = mkdtempSync(join(dir, "tok-"));
    copyModel(d);
    writeFileSync(join(d, "tokenizer.json"), "{ not json");
    assert.throws(() => createRewardModelService(options({ modelDir: d })), {
      name: "ModelLoadError",
      message: new RegExp(`'${join(d, "tokenizer.json")}' is not valid JSON`),
    });
    rmSync(join(d, "tokenizer_config.json"));
    copyFileSync(join(BUNDLED_MODEL_DIR, "tokenizer.json"), join(d, "tokenizer.json"));
    assert.throws(() => createRewardModelService(options({ modelDir: d })), {
      name: "ModelLoadError",
      message: `reward model file '${join(d, "tokenizer_config.json")}' does not exist`,
    });
  });

  it("fails clearly when the CUDA execution provider is asked for but not installed", async (t) => {
    const s = createRewardModelService(options({ executionProvider: "cuda" }));
    const outcome = await s.ready.then(
      () => undefined,
      (e: Error) => e,
    );
    await s.close();
    if (outcome === undefined) {
      t.skip("this ONNX Runtime has a working CUDA execution provider");
      return;
    }
    assert.equal(outcome.name, "ExecutionProviderError");
    assert.match(
      outcome.message,
      /CUDA execution provider is not available.*ONNXRUNTIME_NODE_INSTALL=cuda12/,
    );
  });
});

describe("reward-model configuration", () => {
  it("checks options given in code too, naming the option", () => {
    assert.throws(() => createRewardModelService(options({ maxBatch: 0 })), {
      name: "ConfigError",
      message: "'maxBatch' must be an integer >= 1, got 0",
    });
    assert.throws(
      () => createRewardModelService(options({ calibration: { kind: "sigmoid", shift: 0, scale: -1 } })),
      { name: "ConfigError", message: "'calibration.scale' must be > 0, got -1" },
    );
    assert.throws(() => createRewardModelService(options({ scoreBound: Number.POSITIVE_INFINITY })), {
      message: "'scoreBound' must be a finite number >= 0, got Infinity",
    });
  });

  it("loads defaults: the bundled model, every text domain, concurrency = max batch", () => {
    const c = loadConfig({ REWARD_MODEL_MAX_WAIT_MS: " ", REWARD_MODEL_GRPC_PORT: "0" });
    assert.equal(c.modelDir, BUNDLED_MODEL_DIR);
    assert.deepEqual(c.domains, ["custom", "code", "tool_call", "agent"]);
    assert.equal(c.maxBatch, 32);
    assert.equal(c.maxWaitMs, 2);
    assert.equal(c.runtime.concurrency, 32);
    assert.equal(c.runtime.grpcPort, 0);
    assert.equal(c.executionProvider, "cpu");
    assert.deepEqual(c.calibration, { kind: "none", shift: 0, scale: 1 });
    const d = loadConfig({ REWARD_MODEL_DOMAINS: "custom, code", REWARD_MODEL_CONCURRENCY: "3" });
    assert.deepEqual(d.domains, ["custom", "code"]);
    assert.equal(d.runtime.concurrency, 3);
  });

  it("fails start-up on bad configuration with the variable's name", () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ REWARD_MODEL_MAX_BATCH: "0" }, /'REWARD_MODEL_MAX_BATCH' must be in \[1, 1024\]/],
      [
        { REWARD_MODEL_EXECUTION_PROVIDER: "tpu" },
        /'REWARD_MODEL_EXECUTION_PROVIDER' must be one of cpu, cuda/,
      ],
      [
        { REWARD_MODEL_DOMAINS: "custom,Bad Domain" },
        /'REWARD_MODEL_DOMAINS' has an invalid domain 'Bad Domain'/,
      ],
      [{ REWARD_MODEL_DOMAINS: " , " }, /'REWARD_MODEL_DOMAINS' must list at least one domain/],
      [
        { REWARD_MODEL_CALIBRATION: "sigmoid", REWARD_MODEL_CALIBRATION_SCALE: "0" },
        /'REWARD_MODEL_CALIBRATION_SCALE' must be > 0, got 0/,
      ],
      [
        { REWARD_MODEL_MAX_TOKENS: "2" },
        /'REWARD_MODEL_MAX_TOKENS' must be 0 \(the tokenizer's limit\) or >= 4/,
      ],
    ];
    for (const [env, message] of bad) {
      assert.throws(
        () => loadConfig(env),
        (e: ConfigError) => e.name === "ConfigError" && message.test(e.message),
        JSON.stringify(env),
      );
    }
  });
});
