/**
 * `reward-mesh experiment`'s arms and conditions without a mesh: `--sgrpo-p` (S-GRPO's assumed flip
 * rate, apart from the injected one), `--reward-noise` as a list, `--learner torch`, each arm's run
 * config, and the usage errors for bad input — all before anything starts.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { builtinTasks, createRng, resolveRunConfig, warmupExamplesFor } from "@reward-mesh/trainer";
import { formatHelp } from "../src/args.js";
import {
  armConfig,
  conditionTag,
  EXPERIMENT_COMMAND,
  experimentArms,
  parseArm,
  parseRateList,
  runExperiment,
  withTorchLearner,
} from "../src/commands/experiment.js";
import { loadCliConfig } from "../src/config.js";
import { UsageError } from "../src/io.js";

const base = resolveRunConfig({
  run: { outputDir: "/tmp/rm-exp-args" },
  tasks: { sets: ["math"] },
  groupSize: 8,
  promptsPerStep: 6,
  steps: 40,
  components: [{ service: "math", component: "correct", weight: 1 }],
});

const usage = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message);

describe("experiment: --reward-noise and --sgrpo-p lists", () => {
  it("reads flip rates in [0, 0.5) and refuses empty lists, empty items, duplicates and values outside", () => {
    assert.deepEqual(parseRateList("reward-noise", "0,0.2, 0.4"), [0, 0.2, 0.4]);
    assert.deepEqual(parseRateList("reward-noise", "0.3"), [0.3]);
    assert.throws(() => parseRateList("sgrpo-p", ""), usage(/'--sgrpo-p' needs at least one value/));
    assert.throws(() => parseRateList("sgrpo-p", " , "), usage(/'--sgrpo-p' needs at least one value/));
    assert.throws(() => parseRateList("sgrpo-p", "0.1,,0.2"), usage(/'--sgrpo-p' has an empty item/));
    assert.throws(() => parseRateList("sgrpo-p", "0.1,0.10"), usage(/'--sgrpo-p' lists 0\.1 twice/));
    assert.throws(
      () => parseRateList("reward-noise", "0.5"),
      usage(/'--reward-noise' must be in \[0, 0\.5\), got '0\.5'/),
    );
    assert.throws(() => parseRateList("reward-noise", "-0.1"), usage(/got '-0\.1'/));
    assert.throws(() => parseRateList("reward-noise", "0.1,abc"), usage(/got 'abc'/));
    assert.throws(() => parseRateList("reward-noise", "Infinity"), usage(/got 'Infinity'/));
  });

  it("reads arms: estimators, s_grpo and <name>+s_grpo with or without an assumed p", () => {
    assert.deepEqual(parseArm("grpo"), { name: "grpo", estimator: "grpo" });
    assert.deepEqual(parseArm("s_grpo"), { name: "s_grpo", estimator: "grpo", sgrpoP: "default" });
    assert.deepEqual(parseArm("s_grpo@0.10"), { name: "s_grpo@0.1", estimator: "grpo", sgrpoP: 0.1 });
    assert.deepEqual(parseArm("corr_grpo+s_grpo@0.15"), {
      name: "corr_grpo+s_grpo@0.15",
      estimator: "corr_grpo",
      sgrpoP: 0.15,
    });
    assert.throws(
      () => parseArm("s_grpo@0.5"),
      usage(/arm 's_grpo@0\.5': the assumed p must be a number in \[0, 0\.5\)/),
    );
    assert.throws(() => parseArm("s_grpo@"), usage(/got ''/));
    assert.throws(() => parseArm("grpo@0.1"), usage(/only S-GRPO arms take an assumed p/));
    assert.throws(() => parseArm("grpo+corr_grpo"), usage(/only 's_grpo' composes with '\+'/));
    assert.throws(() => parseArm("+s_grpo"), usage(/expected 's_grpo\[@p\]'/));
  });

  it("--sgrpo-p expands every S-GRPO arm written without @p; no arm twice", () => {
    assert.deepEqual(
      experimentArms("grpo,s_grpo,corr_grpo+s_grpo", [0.05, 0.1]).map((a) => a.name),
      ["grpo", "s_grpo@0.05", "s_grpo@0.1", "corr_grpo+s_grpo@0.05", "corr_grpo+s_grpo@0.1"],
    );
    assert.deepEqual(
      experimentArms("grpo,s_grpo@0.25,s_grpo", [0.1]).map((a) => a.name),
      ["grpo", "s_grpo@0.25", "s_grpo@0.1"],
    );
    assert.deepEqual(
      experimentArms("grpo,s_grpo").map((a) => a.name),
      ["grpo", "s_grpo"],
      "without --sgrpo-p a bare s_grpo stays",
    );
    assert.throws(() => experimentArms("grpo,corr_grpo", [0.1]), usage(/'--estimators' has none/));
    assert.throws(() => experimentArms("s_grpo@0.1,s_grpo", [0.1]), usage(/the arm 's_grpo@0\.1' twice/));
    assert.throws(() => experimentArms("grpo,grpo"), usage(/the arm 'grpo' twice/));
    assert.throws(() => experimentArms(""), usage(/'--estimators' needs at least one arm/));
    assert.throws(() => experimentArms("grpo,,s_grpo"), usage(/'--estimators' has an empty item/));
  });
});

describe("experiment: armConfig", () => {
  it("sets S-GRPO's assumed p apart from the true flip rate", () => {
    const c = armConfig(base, "s_grpo@0.15", 3, 0.4, ["math/correct"], "x", conditionTag(0.4));
    assert.equal(c.runId, "x-noise0_4-s_grpo_0_15-s3");
    assert.equal(c.seed, 3);
    assert.equal(c.outputDir, join("/tmp/rm-exp-args", "x"));
    assert.equal(c.estimator.name, "grpo");
    assert.deepEqual(c.sgrpo, { p: 0.15, component: "math/correct", successThreshold: 0.5 });
    assert.deepEqual(c.rewardNoise, { p: 0.4, components: ["math/correct"] });
    const clean = armConfig(base, "corr_grpo+s_grpo@0.1", 1, 0, ["math/correct"], "x");
    assert.equal(clean.runId, "x-corr_grpo_s_grpo_0_1-s1", "one condition: no tag");
    assert.equal(
      clean.estimator.name,
      resolveRunConfig({ ...{ components: ["rlla-tool"] }, estimator: "corr_grpo" }).estimator.name,
    );
    assert.equal(clean.sgrpo?.p, 0.1, "an assumed p holds at zero true noise too");
    assert.deepEqual(clean.rewardNoise, { p: 0, components: [] });
  });

  it("a bare s_grpo keeps the earlier rule: the true flip rate when > 0, else the config's sgrpo.p, else 0.1", () => {
    assert.equal(armConfig(base, "s_grpo", 1, 0.3, ["math/correct"], "x").sgrpo?.p, 0.3);
    assert.equal(armConfig(base, "s_grpo", 1, 0, ["math/correct"], "x").sgrpo?.p, 0.1);
    const withP = { ...base, sgrpo: { p: 0.2, component: "math/correct" } };
    assert.equal(armConfig(withP, "s_grpo", 1, 0, [], "x").sgrpo?.p, 0.2);
    assert.equal(armConfig(withP, "s_grpo", 1, 0, [], "x").sgrpo?.component, "math/correct");
    assert.equal(armConfig(base, "grpo", 1, 0.3, ["math/correct"], "x").sgrpo, null);
  });

  it("--learner torch: the demo's PyTorch settings and a warm-up file on top of the config", () => {
    const t = withTorchLearner(base, "/models/tiny", "/tmp/w.jsonl");
    assert.equal(t.learner.kind, "torch");
    if (t.learner.kind !== "torch") return;
    assert.equal(t.learner.model, "/models/tiny");
    assert.deepEqual(t.learner.warmup, { file: "/tmp/w.jsonl", steps: 150, lr: 0.003 });
    assert.equal(t.optim.lr, 1e-4);
    assert.equal(t.generation.maxNewTokens, 80);
    assert.equal(t.generation.temperature, 0.7);
    assert.deepEqual(t.tasks.sets, ["math"], "the config's tasks, groups and components stay");
    assert.equal(t.groupSize, 8);
    const arm = armConfig(t, "s_grpo@0.1", 2, 0.2, ["math/correct"], "x");
    assert.equal(arm.learner.kind, "torch", "every arm keeps the learner");
    const warmed = withTorchLearner(base, "/models/warm", "/tmp/w.jsonl", 0);
    assert.equal(warmed.learner.kind === "torch" && warmed.learner.warmup, null, "--warmup-steps 0: none");
  });

  it("math warm-up examples: the math problems as prompts, a final answer drawn from the task's fragments", () => {
    const ex = warmupExamplesFor(["math"], createRng(0), 3);
    const tasks = builtinTasks(["math"]);
    assert.equal(ex.length, 3 * tasks.length);
    for (const e of ex) {
      const t = tasks.find((x) => x.task.prompt === e.prompt);
      assert.ok(t?.vocabulary, e.prompt);
      assert.ok(
        t.vocabulary.some((f) => f !== "<eos>" && e.response.endsWith(f)),
        `ends with a final answer: ${e.response}`,
      );
    }
    assert.throws(
      () => warmupExamplesFor(["code"], createRng(0), 1),
      /no warm-up examples for the 'code' set/,
    );
  });
});

describe("experiment: bad input is a usage error before anything starts", () => {
  const sink = () => {
    const s = new PassThrough();
    s.resume();
    return s;
  };
  it("names the flag and starts no mesh", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rm-exp-args-"));
    try {
      const cfg = join(dir, "math.yaml");
      writeFileSync(
        cfg,
        [
          `run: { outputDir: ${JSON.stringify(join(dir, "runs"))} }`,
          "tasks: { sets: [math] }",
          "components: [{ service: math, component: correct, weight: 1 }]",
        ].join("\n"),
      );
      // A NATS address nothing listens on and a store in the test's directory: had a mesh started, it would show there.
      const cli = loadCliConfig({
        NATS_URL: "nats://127.0.0.1:1",
        REWARD_MESH_NATS_STORE: join(dir, "js"),
        REWARD_MESH_NATS_AUTH_DIR: join(dir, "auth"),
        REWARD_MESH_LOG_DIR: join(dir, "logs"),
      });
      const run = (...args: string[]) =>
        runExperiment(["--config", cfg, "--noise-components", "math/correct", ...args], cli, sink(), sink());
      const cases: Array<[string[], RegExp]> = [
        [
          ["--estimators", "grpo,s_grpo", "--sgrpo-p", "0.6"],
          /'--sgrpo-p' must be in \[0, 0\.5\), got '0\.6'/,
        ],
        [["--estimators", "grpo,s_grpo", "--sgrpo-p", "0.1,0.1"], /'--sgrpo-p' lists 0\.1 twice/],
        [["--estimators", "grpo,s_grpo", "--sgrpo-p", ","], /'--sgrpo-p' needs at least one value/],
        [["--estimators", "grpo", "--sgrpo-p", "0.1"], /'--estimators' has none/],
        [["--estimators", "grpo", "--reward-noise", "0,0.2,0.2"], /'--reward-noise' lists 0\.2 twice/],
        [
          ["--estimators", "grpo", "--reward-noise", "0,0.7"],
          /'--reward-noise' must be in \[0, 0\.5\), got '0\.7'/,
        ],
        [["--estimators", "grpo", "--reward-noise", "0,,0.2"], /'--reward-noise' has an empty item/],
        [["--estimators", "grpo,s_grpo@0.1,s_grpo@0.10"], /the arm 's_grpo@0\.1' twice/],
        [["--estimators", "grpo", "--learner", "gpu"], /'--learner' must be 'config', 'embedded' or 'torch'/],
        [["--estimators", "grpo", "--model", "tiny-qwen2"], /'--model' is for '--learner torch'/],
        [
          ["--estimators", "grpo", "--learner", "torch", "--warmup-steps", "-1"],
          /'--warmup-steps' must be an integer >= 0/,
        ],
        [["--estimators", "not_an_estimator"], /not_an_estimator/],
      ];
      for (const [args, re] of cases)
        await assert.rejects(
          run(...args),
          (e: unknown) => e instanceof Error && re.test(e.message),
          args.join(" "),
        );
      // --learner torch needs warm-up examples for every set of the config.
      const code = join(dir, "code.yaml");
      writeFileSync(code, ["tasks: { sets: [code] }", "components: [corrgrpo-code]"].join("\n"));
      await assert.rejects(
        runExperiment(["--config", code, "--estimators", "grpo", "--learner", "torch"], cli, sink(), sink()),
        usage(
          /'--learner torch' warms the model up on format examples of built-in sets \(tool_call, math\); the config's tasks include code/,
        ),
      );
      assert.equal(existsSync(join(dir, "js")), false, "no NATS store: no mesh started");
      assert.equal(existsSync(join(dir, "runs")), false, "no run started");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("--help names the new options", () => {
    const help = formatHelp(EXPERIMENT_COMMAND);
    for (const o of [
      "--sgrpo-p <p,...>",
      "--reward-noise <p,...>",
      "--learner <config|embedded|torch>",
      "--model",
    ])
      assert.ok(help.includes(o), o);
    assert.match(help, /s_grpo@p/);
    assert.match(help, /not the measured flip rate/);
  });
});
