/**
 * `reward-mesh experiment --estimators grpo,corr_grpo,s_grpo --seeds N [--reward-noise p]`: the same run
 * under each estimator and seed, on one mesh, then one comparison report (mean ± spread curves).
 *
 * Estimator names are the engine's (`grpo`, `dr_grpo`, `corr_grpo`, `gdpo`, `mo_grpo`, …) plus `s_grpo`
 * (GRPO with the S-GRPO weight, as released) and `<name>+s_grpo` (S-GRPO on top of any estimator).
 * `--reward-noise p` flips the binary components listed by `--noise-components` (default: the config's
 * `rewardNoise.components`, else `sgrpo.component`) with probability p in the trainer, and S-GRPO uses that
 * p — the setting the S-GRPO paper studies.
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import {
  type ExperimentRun,
  experimentSummary,
  loadRunConfig,
  loadRunTasks,
  resolveRunTasks,
  runNeedsEnvironment,
  readMetrics,
  renderExperimentReport,
  type RunConfig,
  resolveRunConfig,
  runPaths,
} from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { demoRunDocument } from "./demo.js";
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
  summary: "the same run per estimator and seed, compared in one report",
  description:
    "The same run once per estimator and seed on one mesh, compared in <outputDir>/<id>/experiment.html.\n" +
    "An estimator 's_grpo' or '<name>+s_grpo' adds S-GRPO's noise correction.",
  options: {
    estimators: {
      type: "string",
      value: "a,b,...",
      required: true,
      description: "the arms: advantage estimators, e.g. grpo,corr_grpo,s_grpo",
    },
    seeds: { type: "string", value: "N", default: "3", description: "seeds per arm (1 to 100)" },
    "reward-noise": {
      type: "string",
      value: "p",
      default: "0",
      description: "flip binary rewards with probability p in [0, 0.5)",
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
    id: { type: "string", value: "ID", description: "the experiment's id", defaultText: "exp-<date>-<time>" },
    "log-format": LOG_FORMAT_OPTION,
  },
  examples: [
    "reward-mesh experiment --estimators grpo,s_grpo --seeds 2 --reward-noise 0.1 --noise-components tool-call/exact_match",
  ],
};

/** Usage of the experiment command. */
export const EXPERIMENT_USAGE = usageLine(EXPERIMENT_COMMAND);

/** The run config of one arm of the experiment. */
export function armConfig(
  base: RunConfig,
  arm: string,
  seed: number,
  noise: number,
  noiseComponents: readonly string[],
  expId: string,
): RunConfig {
  const sgrpo = arm === "s_grpo" || arm.endsWith("+s_grpo");
  const estimator = arm === "s_grpo" ? "grpo" : arm.replace(/\+s_grpo$/, "");
  const sgrpoComponent = noiseComponents[0] ?? base.sgrpo?.component;
  const doc = {
    ...toDocument(base),
    run: {
      id: `${expId}-${arm.replace(/[^A-Za-z0-9_-]/g, "_")}-s${seed}`,
      seed,
      outputDir: join(base.outputDir, expId),
    },
    estimator: { name: estimator, options: estimator === base.estimator.name ? base.estimator.options : {} },
    sgrpo: sgrpo
      ? {
          p: noise > 0 ? noise : (base.sgrpo?.p ?? 0.1),
          ...(sgrpoComponent ? { component: sgrpoComponent, successThreshold: 0.5 } : {}),
        }
      : null,
    rewardNoise: { p: noise, components: noise > 0 ? [...noiseComponents] : [] },
  };
  return resolveRunConfig(doc);
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
  const { values: flags, positionals: positional } = parseCommand(EXPERIMENT_COMMAND, args);
  if (positional.length > 0 || typeof flags["estimators"] !== "string")
    throw new UsageError(EXPERIMENT_USAGE);
  const logFormat = logFormatOf(flags, cli);
  const arms = flags["estimators"]
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const seeds = Number(flags["seeds"]);
  if (!Number.isInteger(seeds) || seeds < 1 || seeds > 100)
    throw new UsageError("'--seeds' must be an integer in [1, 100]");
  const noise = Number(flags["reward-noise"]);
  if (!Number.isFinite(noise) || noise < 0 || noise >= 0.5)
    throw new UsageError("'--reward-noise' must be in [0, 0.5)");
  let base =
    typeof flags["config"] === "string"
      ? loadRunConfig(flags["config"])
      : resolveRunConfig(demoRunDocument());
  if (typeof flags["steps"] === "string") {
    const n = Number(flags["steps"]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError("'--steps' must be a positive integer");
    base = { ...base, steps: n };
  }
  const noiseComponents =
    typeof flags["noise-components"] === "string"
      ? flags["noise-components"].split(",").map((s) => s.trim())
      : base.rewardNoise.components.length
        ? base.rewardNoise.components
        : base.sgrpo?.component
          ? [base.sgrpo.component]
          : [];
  if (noise > 0 && noiseComponents.length === 0)
    throw new UsageError(
      "'--reward-noise' needs '--noise-components' (binary components such as code-exec/pass)",
    );
  const expId =
    typeof flags["id"] === "string"
      ? flags["id"]
      : `exp-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-")}`;
  // Validate every arm before starting anything.
  const configs = arms.flatMap((arm) =>
    Array.from({ length: seeds }, (_, s) => ({
      arm,
      config: armConfig(base, arm, s + 1, noise, noiseComponents, expId),
    })),
  );
  const early = runNeedsEnvironment(base) ? undefined : loadRunTasks(base);
  const mesh = await startMesh(cli, { services: servicesOf(base) });
  writeMeshNotice(mesh, logFormat, stderr);
  const runs: ExperimentRun[] = [];
  try {
    const tasks = early ?? (await resolveRunTasks(base, environmentOf(cli, mesh)));
    for (const { arm, config } of configs) {
      if (logFormat === "human") stderr.write(`\n== ${arm}, seed ${config.seed} (${config.runId})\n`);
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
        estimator: arm,
        seed: config.seed,
        lines: readMetrics(runPaths(config.outputDir, config.runId).metrics),
      });
    }
  } finally {
    await mesh.stop();
  }
  const dir = join(base.outputDir, expId);
  mkdirSync(dir, { recursive: true });
  const out = join(dir, "experiment.html");
  const note = `${arms.length} estimators × ${seeds} seeds × ${base.steps} steps; G=${base.groupSize}, B=${base.promptsPerStep}; reward noise p=${noise}${noise > 0 ? ` on ${noiseComponents.join(", ")}` : ""}. Embedded learner (a small tabular policy, not an LLM).`;
  writeFileSync(out, renderExperimentReport(`reward-mesh experiment ${expId}`, runs, note));
  writeFileSync(
    join(dir, "experiment.json"),
    `${JSON.stringify({ id: expId, arms, seeds, noise, noiseComponents, summary: experimentSummary(runs), runs: runs.map((r) => ({ estimator: r.estimator, seed: r.seed, steps: r.lines.length })) }, null, 2)}\n`,
  );
  stdout.write(
    logFormat === "json"
      ? `${JSON.stringify({ id: expId, runs: runs.length, dir, report: out })}\n`
      : `experiment ${expId}: ${runs.length} runs\nreport ${out}\n`,
  );
  return 0;
}
