/**
 * `reward-mesh experiment --estimators grpo,s_grpo --seeds N [--reward-noise p,...] [--sgrpo-p p,...]`:
 * the same run under each arm, seed and true flip rate, on one mesh, then one comparison report
 * (per flip rate: mean ± sd tables and mean ± spread curves of the clean reward).
 *
 * Arms are the engine's estimator names (`grpo`, `dr_grpo`, `corr_grpo`, `gdpo`, `mo_grpo`, …) plus
 * `s_grpo` (GRPO with the S-GRPO weight, as released) and `<name>+s_grpo` (S-GRPO on top of any
 * estimator), either with an assumed flip rate written in (`s_grpo@0.1`, `corr_grpo+s_grpo@0.15`) or
 * expanded by `--sgrpo-p 0.05,0.1` into one arm per value (`s_grpo@0.05`, `s_grpo@0.1`). S-GRPO's p is
 * a hyper-parameter of the method: the paper's best were 0.15 (1.5B) and 0.10 (7B), chosen without
 * reading p as the true mismatch rate. A bare `s_grpo` arm (no `@p`, no `--sgrpo-p`) keeps the earlier
 * behaviour: p = the condition's flip rate when it is > 0 (the matched setting), else the config's
 * `sgrpo.p`, else 0.1.
 *
 * `--reward-noise` is a list of true flip rates, each a condition: the trainer flips the binary
 * components listed by `--noise-components` (default: the config's `rewardNoise.components`, else
 * `sgrpo.component`) with that probability. One value keeps the run ids of a single condition
 * (`<id>-<arm>-s<seed>`); several put the rate in them (`<id>-noise0_2-<arm>-s<seed>`).
 *
 * `--learner torch` trains the demo's PyTorch model (`tiny-qwen2`, built on first use; `--model`
 * names another) with the demo's learner settings and a supervised warm-up on format examples of the
 * run's task sets (`tool_call`, `math`) in every run (`--warmup-steps`; 0 for a model already warmed up).
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import {
  createRng,
  type ExperimentRun,
  experimentSummary,
  experimentWindows,
  loadRunConfig,
  loadRunTasks,
  resolveRunTasks,
  runNeedsEnvironment,
  readMetrics,
  renderExperimentReport,
  type RunConfig,
  resolveRunConfig,
  runPaths,
  WARMUP_SETS,
  warmupExamplesFor,
} from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { demoRunDocument, resolveTorchDemoModel, TORCH_DEMO_MODEL, torchLearnerSettings } from "./demo.js";
import {
  environmentOf,
  LOG_FORMAT_OPTION,
  logFormatOf,
  progressPrinter,
  servicesOf,
  trainWithMesh,
} from "./train.js";
import { startMesh, writeMeshNotice } from "./up.js";

/** The experiment command's options (parsing and `--help` come from this table; add a flag here). */
export const EXPERIMENT_COMMAND: CommandSpec = {
  name: "experiment",
  summary: "the same run per estimator, seed and reward-noise level, compared in one report",
  description:
    "The same run once per arm, seed and true flip rate on one mesh, compared in\n" +
    "<outputDir>/<id>/experiment.html and experiment.json (per flip rate and arm: the clean weighted reward,\n" +
    "mean ± sd over seeds of each seed's early-window and last-10-step mean). An arm 's_grpo',\n" +
    "'<name>+s_grpo', 's_grpo@p' or '<name>+s_grpo@p' adds S-GRPO's noise correction with assumed flip\n" +
    "rate p; a bare 's_grpo' assumes the condition's flip rate (or, at 0, the config's sgrpo.p, else 0.1).",
  options: {
    estimators: {
      type: "string",
      value: "a,b,...",
      required: true,
      description:
        "the arms: advantage estimators, e.g. grpo,corr_grpo,s_grpo,s_grpo@0.1,corr_grpo+s_grpo@0.15",
    },
    seeds: {
      type: "string",
      value: "N",
      default: "3",
      description: "seeds per arm and condition (1 to 100)",
    },
    "reward-noise": {
      type: "string",
      value: "p,...",
      default: "0",
      description: "true flip rates, each a condition: flip binary rewards with probability p in [0, 0.5)",
    },
    "sgrpo-p": {
      type: "string",
      value: "p,...",
      description:
        "S-GRPO's assumed flip rates, each in [0, 0.5): every s_grpo arm without '@p' becomes one arm per value",
      defaultText: "none; a bare s_grpo assumes the true flip rate, at 0 the config's sgrpo.p",
    },
    "noise-components": {
      type: "string",
      value: "svc/comp,...",
      description: "the components --reward-noise flips",
      defaultText: "the config's rewardNoise or sgrpo component",
    },
    config: {
      type: "string",
      value: "base.yaml",
      description: "the run configuration every arm starts from",
      defaultText: "the demo's run",
    },
    steps: {
      type: "string",
      value: "N",
      description: "override the config's steps",
      defaultText: "the config's",
    },
    learner: {
      type: "string",
      value: "config|embedded|torch",
      default: "config",
      description:
        "the learner: the config's; the embedded one; or the demo's PyTorch model and settings, warmed up on format examples (tool_call, math sets)",
    },
    model: {
      type: "string",
      value: "tiny-qwen2|builtin:tiny|DIR",
      description: "with --learner torch: the model, as for 'reward-mesh demo'",
      defaultText: TORCH_DEMO_MODEL,
    },
    "warmup-steps": {
      type: "string",
      value: "N",
      default: "150",
      description:
        "with --learner torch: supervised warm-up steps of every run (0: none, for a model already warmed up, e.g. an earlier run's checkpoint/learner/model)",
    },
    id: { type: "string", value: "ID", description: "the experiment's id", defaultText: "exp-<date>-<time>" },
    "log-format": LOG_FORMAT_OPTION,
  },
  notes: [
    "S-GRPO's p is a hyper-parameter of the method, not the measured flip rate: the paper's best were 0.15\n" +
      "(1.5B model) and 0.10 (7B). '--sgrpo-p' sweeps it apart from the injected '--reward-noise'.",
  ],
  examples: [
    "reward-mesh experiment --estimators grpo,s_grpo --seeds 2 --reward-noise 0.1 --noise-components tool-call/exact_match",
    "reward-mesh experiment --config run.yaml --estimators grpo,s_grpo --sgrpo-p 0.05,0.1,0.15,0.25 --reward-noise 0,0.2,0.4 --noise-components math/correct --seeds 5",
  ],
};

/** Usage of the experiment command. */
export const EXPERIMENT_USAGE = usageLine(EXPERIMENT_COMMAND);

/** A flip rate as text: the shortest decimal that reads back as the number (0.1, 0.05). */
const showP = (p: number) => String(p);

/**
 * A comma-separated list of flip rates (`--reward-noise`, `--sgrpo-p`): each a number in [0, 0.5), no
 * empty item, no value twice.
 * @throws {UsageError} naming `flag` and the bad item.
 */
export function parseRateList(flag: string, text: string): number[] {
  const items = text.split(",").map((x) => x.trim());
  if (items.every((x) => x === "")) throw new UsageError(`'--${flag}' needs at least one value in [0, 0.5)`);
  const out: number[] = [];
  for (const x of items) {
    if (x === "") throw new UsageError(`'--${flag}' has an empty item in '${text}'`);
    const p = Number(x);
    if (!Number.isFinite(p) || p < 0 || p >= 0.5)
      throw new UsageError(`'--${flag}' must be in [0, 0.5), got '${x}'`);
    if (out.includes(p)) throw new UsageError(`'--${flag}' lists ${showP(p)} twice`);
    out.push(p);
  }
  return out;
}

/** One arm of an experiment, parsed. */
export interface ExperimentArm {
  /** As the report and the run ids name it: `grpo`, `s_grpo`, `s_grpo@0.1`, `corr_grpo+s_grpo@0.15`. */
  readonly name: string;
  /** The advantage estimator under S-GRPO (or alone). */
  readonly estimator: string;
  /** S-GRPO's assumed p: a number, `"default"` (a bare `s_grpo`, see {@link armConfig}), or absent: no S-GRPO. */
  readonly sgrpoP?: number | "default";
}

/** Parses one arm name: `<estimator>`, `s_grpo[@p]`, `<estimator>+s_grpo[@p]`. @throws {UsageError} */
export function parseArm(name: string): ExperimentArm {
  const m = /^(?:(.*)\+)?s_grpo(?:@(.*))?$/.exec(name);
  if (!m) {
    if (name.includes("@"))
      throw new UsageError(
        `arm '${name}': only S-GRPO arms take an assumed p ('s_grpo@p', '<name>+s_grpo@p')`,
      );
    if (name.includes("+"))
      throw new UsageError(`arm '${name}': only 's_grpo' composes with '+' ('<name>+s_grpo')`);
    return { name, estimator: name };
  }
  const estimator = m[1] ?? "grpo";
  if (estimator === "" || estimator.includes("+") || estimator.includes("@"))
    throw new UsageError(`arm '${name}': expected 's_grpo[@p]' or '<estimator>+s_grpo[@p]'`);
  if (m[2] === undefined) return { name, estimator, sgrpoP: "default" };
  const p = m[2].trim() === "" ? Number.NaN : Number(m[2]);
  if (!Number.isFinite(p) || p < 0 || p >= 0.5)
    throw new UsageError(`arm '${name}': the assumed p must be a number in [0, 0.5), got '${m[2]}'`);
  return { name: `${m[1] ? `${m[1]}+` : ""}s_grpo@${showP(p)}`, estimator, sgrpoP: p };
}

/**
 * The arms of `--estimators` and `--sgrpo-p`: each S-GRPO arm without `@p` becomes one arm per value
 * of `sgrpoP` (when given). No arm twice; `--sgrpo-p` needs an S-GRPO arm to expand.
 * @throws {UsageError}
 */
export function experimentArms(estimators: string, sgrpoP?: readonly number[]): ExperimentArm[] {
  const items = estimators.split(",").map((x) => x.trim());
  if (items.every((x) => x === ""))
    throw new UsageError("'--estimators' needs at least one arm, e.g. grpo,s_grpo");
  if (items.includes("")) throw new UsageError(`'--estimators' has an empty item in '${estimators}'`);
  const arms = items
    .map(parseArm)
    .flatMap((a) =>
      a.sgrpoP === "default" && sgrpoP
        ? sgrpoP.map((p) => ({ ...a, name: `${a.name}@${showP(p)}`, sgrpoP: p }))
        : [a],
    );
  if (sgrpoP && !items.map(parseArm).some((a) => a.sgrpoP === "default"))
    throw new UsageError(
      "'--sgrpo-p' expands the S-GRPO arms written without '@p' (s_grpo, <name>+s_grpo): '--estimators' has none",
    );
  const seen = new Set<string>();
  for (const a of arms) {
    if (seen.has(a.name)) throw new UsageError(`'--estimators' gives the arm '${a.name}' twice`);
    seen.add(a.name);
  }
  return arms;
}

/** S-GRPO's p for `arm` under a true flip rate `noise` (null: no S-GRPO). */
export function assumedP(base: RunConfig, arm: ExperimentArm, noise: number): number | null {
  if (arm.sgrpoP === undefined) return null;
  if (arm.sgrpoP !== "default") return arm.sgrpoP;
  return noise > 0 ? noise : (base.sgrpo?.p ?? 0.1);
}

/** The run-id part of a condition in an experiment with several (`noise0_2`). */
export const conditionTag = (noise: number) => `noise${showP(noise).replace(/[^A-Za-z0-9]/g, "_")}`;

/**
 * The run config of one arm of the experiment: `arm` (a name {@link parseArm} reads) at seed `seed`
 * under true flip rate `noise` on `noiseComponents`. `tag` (a condition's, {@link conditionTag}) goes
 * into the run id when the experiment has several conditions.
 */
export function armConfig(
  base: RunConfig,
  arm: string | ExperimentArm,
  seed: number,
  noise: number,
  noiseComponents: readonly string[],
  expId: string,
  tag = "",
): RunConfig {
  const a = typeof arm === "string" ? parseArm(arm) : arm;
  const p = assumedP(base, a, noise);
  const sgrpoComponent = noiseComponents[0] ?? base.sgrpo?.component;
  const doc = {
    ...toDocument(base),
    run: {
      id: `${expId}${tag ? `-${tag}` : ""}-${a.name.replace(/[^A-Za-z0-9_-]/g, "_")}-s${seed}`,
      seed,
      outputDir: join(base.outputDir, expId),
    },
    estimator: {
      name: a.estimator,
      options: a.estimator === base.estimator.name ? base.estimator.options : {},
    },
    sgrpo:
      p !== null
        ? { p, ...(sgrpoComponent ? { component: sgrpoComponent, successThreshold: 0.5 } : {}) }
        : null,
    rewardNoise: { p: noise, components: noise > 0 ? [...noiseComponents] : [] },
  };
  return resolveRunConfig(doc);
}

/**
 * `base` with the `--learner torch` settings of the demo ({@link torchLearnerSettings}): `model`, the
 * learning rate, sampling and completion length for the tiny models, and the warm-up file.
 */
export function withTorchLearner(
  base: RunConfig,
  model: string,
  warmupFile: string,
  warmupSteps = 150,
): RunConfig {
  const t = torchLearnerSettings(model, warmupFile, warmupSteps);
  return resolveRunConfig({
    ...toDocument(base),
    run: { id: base.runId, seed: base.seed, outputDir: base.outputDir },
    estimator: { name: base.estimator.name, options: base.estimator.options },
    loss: { ...base.loss, ...t.loss },
    optim: { ...base.optim, ...t.optim },
    generation: { ...base.generation, ...t.generation },
    learner: t.learner,
  });
}

/** A resolved config back to the document form `resolveRunConfig` reads. */
function toDocument(c: RunConfig): Record<string, unknown> {
  return {
    tasks: c.tasks,
    groupSize: c.groupSize,
    promptsPerStep: c.promptsPerStep,
    steps: c.steps,
    components: c.components,
    services: c.serviceDomains,
    dynamicSampling: c.dynamicSampling ?? false,
    loss: c.loss,
    optim: c.optim,
    learner: c.learner,
    generation: c.generation,
    groups: c.groups,
    checkpointEvery: c.checkpointEvery,
    validation: c.validation,
  };
}

/** `reward-mesh experiment`. */
export async function runExperiment(
  args: readonly string[],
  cli: CliConfig,
  stdout: Writable,
  stderr: Writable & { isTTY?: boolean },
): Promise<number> {
  const t0 = performance.now();
  const { values: flags, positionals: positional } = parseCommand(EXPERIMENT_COMMAND, args);
  if (positional.length > 0 || typeof flags["estimators"] !== "string")
    throw new UsageError(EXPERIMENT_USAGE);
  const logFormat = logFormatOf(flags, cli);
  // Everything is checked before anything starts (the model build, the mesh, the first run).
  const sgrpoP =
    typeof flags["sgrpo-p"] === "string" ? parseRateList("sgrpo-p", flags["sgrpo-p"]) : undefined;
  const arms = experimentArms(flags["estimators"], sgrpoP);
  const seeds = Number(flags["seeds"]);
  if (!Number.isInteger(seeds) || seeds < 1 || seeds > 100)
    throw new UsageError("'--seeds' must be an integer in [1, 100]");
  const noises = parseRateList("reward-noise", String(flags["reward-noise"]));
  const learner = String(flags["learner"]);
  if (!["config", "embedded", "torch"].includes(learner))
    throw new UsageError(`'--learner' must be 'config', 'embedded' or 'torch', got '${learner}'`);
  if (learner !== "torch" && flags["model"] !== undefined)
    throw new UsageError("'--model' is for '--learner torch'");
  const warmupSteps = Number(flags["warmup-steps"]);
  if (!Number.isInteger(warmupSteps) || warmupSteps < 0)
    throw new UsageError("'--warmup-steps' must be an integer >= 0");
  let base =
    typeof flags["config"] === "string"
      ? loadRunConfig(flags["config"])
      : resolveRunConfig(demoRunDocument());
  if (typeof flags["steps"] === "string") {
    const n = Number(flags["steps"]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError("'--steps' must be a positive integer");
    base = { ...base, steps: n };
  }
  if (learner === "embedded") base = { ...base, learner: { kind: "embedded" } };
  if (learner === "torch" && warmupSteps > 0) {
    const sets = base.tasks.source === "builtin" ? base.tasks.sets : [];
    const missing = sets.filter((x) => !WARMUP_SETS.includes(x));
    if (sets.length === 0 || missing.length > 0)
      throw new UsageError(
        `'--learner torch' warms the model up on format examples of built-in sets (${WARMUP_SETS.join(", ")}); ` +
          `the config's tasks ${sets.length ? `include ${missing.join(", ")}` : "are a task file"} (put learner: {kind: torch, ...} in the config instead)`,
      );
  }
  const noiseComponents =
    typeof flags["noise-components"] === "string"
      ? flags["noise-components"].split(",").map((s) => s.trim())
      : base.rewardNoise.components.length
        ? base.rewardNoise.components
        : base.sgrpo?.component
          ? [base.sgrpo.component]
          : [];
  if (noises.some((p) => p > 0) && noiseComponents.length === 0)
    throw new UsageError(
      "'--reward-noise' needs '--noise-components' (binary components such as code-exec/pass)",
    );
  const expId =
    typeof flags["id"] === "string"
      ? flags["id"]
      : `exp-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-")}`;
  const dir = join(base.outputDir, expId);
  const say = (text: string) => {
    if (logFormat === "human") stderr.write(text);
  };
  const many = noises.length > 1;
  const plan = () =>
    noises.flatMap((noise) =>
      arms.flatMap((arm) =>
        Array.from({ length: seeds }, (_, s) => ({
          arm,
          noise,
          config: armConfig(base, arm, s + 1, noise, noiseComponents, expId, many ? conditionTag(noise) : ""),
        })),
      ),
    );
  plan(); // every arm's config resolves (estimator names, S-GRPO options) before anything starts
  if (learner === "torch") {
    const model = await resolveTorchDemoModel(
      String(flags["model"] ?? TORCH_DEMO_MODEL),
      cli.python,
      base.outputDir,
      say,
    );
    // One warm-up file for every run: the runs differ by seed, arm and condition, not by warm-up data.
    const warmup = join(dir, "warmup.jsonl");
    if (warmupSteps > 0) {
      const examples = warmupExamplesFor(base.tasks.sets, createRng(0), 64);
      mkdirSync(dir, { recursive: true });
      writeFileSync(warmup, `${examples.map((e) => JSON.stringify(e)).join("\n")}\n`);
      say(`wrote ${examples.length} warm-up examples (layout right, choices random) to ${warmup}\n`);
    }
    base = withTorchLearner(base, model.model, warmup, warmupSteps);
  }
  const configs = plan();
  const early = runNeedsEnvironment(base) ? undefined : loadRunTasks(base);
  const mesh = await startMesh(cli, { services: servicesOf(base) });
  writeMeshNotice(mesh, logFormat, stderr);
  const runs: ExperimentRun[] = [];
  try {
    const tasks = early ?? (await resolveRunTasks(base, environmentOf(cli, mesh)));
    for (const { arm, noise, config } of configs) {
      say(`\n== ${arm.name}${many ? `, p = ${noise}` : ""}, seed ${config.seed} (${config.runId})\n`);
      await trainWithMesh({
        cli,
        config,
        tasks,
        withMesh: false,
        mesh,
        logFormat,
        ...(logFormat === "human" ? { onStep: progressPrinter(stderr) } : {}),
      });
      runs.push({
        estimator: arm.name,
        seed: config.seed,
        noise,
        ...(config.sgrpo ? { assumedP: config.sgrpo.p } : {}),
        lines: readMetrics(runPaths(config.outputDir, config.runId).metrics),
      });
    }
  } finally {
    await mesh.stop();
  }
  mkdirSync(dir, { recursive: true });
  const out = join(dir, "experiment.html");
  const wallSeconds = Number(((performance.now() - t0) / 1000).toFixed(1));
  const learnerWords =
    base.learner.kind === "torch"
      ? `PyTorch learner (${base.learner.model}), ${base.learner.warmup ? `warmed up ${base.learner.warmup.steps} supervised steps per run` : "no warm-up in the runs"}.`
      : base.learner.kind === "embedded"
        ? "Embedded learner (a small tabular policy, not an LLM)."
        : `Learner at ${base.learner.address}.`;
  const note = `${arms.length} arms × ${seeds} seeds × ${noises.length} true flip rate${many ? "s" : ""} (${noises.join(", ")}) × ${base.steps} steps; G=${base.groupSize}, B=${base.promptsPerStep}${noises.some((p) => p > 0) ? `; noise on ${noiseComponents.join(", ")}` : ""}. ${learnerWords} Wall time ${wallSeconds} s.`;
  writeFileSync(out, renderExperimentReport(`reward-mesh experiment ${expId}`, runs, note));
  writeFileSync(
    join(dir, "experiment.json"),
    `${JSON.stringify(
      {
        id: expId,
        arms: arms.map((a) => a.name),
        seeds,
        steps: base.steps,
        noise: noises,
        noiseComponents,
        learner: base.learner.kind === "torch" ? { kind: "torch", model: base.learner.model } : base.learner,
        windows: experimentWindows(base.steps),
        conditions: experimentSummary(runs),
        wallSeconds,
        runs: runs.map((r) => ({
          estimator: r.estimator,
          noise: r.noise,
          ...(r.assumedP !== undefined ? { assumedP: r.assumedP } : {}),
          seed: r.seed,
          steps: r.lines.length,
        })),
      },
      null,
      2,
    )}\n`,
  );
  stdout.write(
    logFormat === "json"
      ? `${JSON.stringify({ id: expId, runs: runs.length, dir, report: out })}\n`
      : `experiment ${expId}: ${runs.length} runs\nreport ${out}\n`,
  );
  return 0;
}
