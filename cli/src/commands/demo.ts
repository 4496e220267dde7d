/**
 * `reward-mesh demo` (what `npm start` runs): brings up NATS and the reward services as separate
 * processes, trains a learner for a short run on the built-in tasks through the real mesh, prints a
 * summary (reward per component at the start and the end, estimator, wall time), writes the report,
 * and shuts everything down.
 *
 * - default (`--learner embedded`): the embedded tabular learner on the code, tool-call and AgentDojo
 *   tasks;
 * - `--learner torch`: the PyTorch learner (its own process) on the tool-call tasks as text prompts,
 *   after a short supervised warm-up on format examples with random arguments; RL then has to find the
 *   right function and arguments. The model is by default `tiny-qwen2`: a small randomly initialised
 *   Qwen2 with a real (BPE) tokenizer, built on first use by `scripts/make-tiny-hf-model.py` into
 *   `runs/models/tiny-qwen2-<hash of the builder's arguments>/` and reused afterwards; `--model` takes
 *   `builtin:tiny` (the byte-level transformer) or a Hugging Face model directory instead.
 * @module
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Writable } from "node:stream";
import {
  buildTinyHfModel,
  isHfModelDir,
  TINY_HF_MODEL_SCRIPT,
  type TinyHfModelOptions,
  tinyHfModelArgs,
  createRng,
  loadBuiltinTasks,
  type LivePage,
  type MetricsLine,
  readMetrics,
  type RunConfig,
  resolveRunConfig,
  runPaths,
  toolCallWarmupExamples,
} from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { openLivePage, stepSinks, takeUiFlag, UI_OPTION } from "../live-ui.js";
import { defaultServiceNames } from "../services.js";
import {
  environmentOf,
  LOG_FORMAT_OPTION,
  logFormatOf,
  progressPrinter,
  servicesOf,
  trainWithMesh,
} from "./train.js";
import { printMesh, startMesh, writeMeshNotice } from "./up.js";

/** Seed documented in the README (the demo's learning figures are for this seed). */
export const DEMO_SEED = 7;

/** The demo's run configuration document (also the experiment command's default). */
export function demoRunDocument(seed = DEMO_SEED, steps = 60): Record<string, unknown> {
  return {
    run: { id: `demo-${Date.now().toString(36)}`, seed, outputDir: "runs" },
    tasks: { source: "builtin", sets: ["code", "tool_call", "agent"] },
    groupSize: 8,
    promptsPerStep: 4,
    steps,
    // DAPO's overlong penalty rides along: these short responses never reach its window, so it is a
    // constant 0 and drops out of every group (shown in the summary as such).
    components: ["corrgrpo-code", "rlla-tool", "agentdojo", "overlong"],
    estimator: { name: "grpo_covariance_coefficient", options: { coefficientSumFloor: 1 } },
    loss: { type: "dapo", klBeta: 0.01 },
    optim: { lr: 0.1 },
    groups: { deadlineMs: 120_000 },
  };
}

/** Steps of the `--learner torch` demo by default. */
export const TORCH_DEMO_STEPS = 40;

/** The `--learner torch` demo's default model: {@link TORCH_DEMO_HF_MODEL}, built on first use. */
export const TORCH_DEMO_MODEL = "tiny-qwen2";

/**
 * What `tiny-qwen2` is: the builder's options (656 512 parameters, a 2048-token BPE; builds in ~7 s).
 * Measured here (seed 7, 2 cores): it learns faster than `builtin:tiny` and, with about half as many
 * tokens per response, generates faster; the default vocabulary (4096) made the run ~1.5× slower.
 */
export const TORCH_DEMO_HF_MODEL = { arch: "qwen2", hidden: 128, layers: 2, vocab: 2048, seed: 0 } as const;

/**
 * The directory `tiny-qwen2` is built in under `outputDir`: `models/tiny-qwen2-<hash>`, the hash over
 * the builder's arguments and the builder script itself (a changed builder builds a new model).
 */
export function torchDemoModelDir(
  outputDir: string,
  o: Omit<TinyHfModelOptions, "out" | "python"> = TORCH_DEMO_HF_MODEL,
): string {
  const args = tinyHfModelArgs({ ...o, out: "", python: "" }).slice(3); // without the script and --out
  const hash = createHash("sha256")
    .update(JSON.stringify(args))
    .update(readFileSync(TINY_HF_MODEL_SCRIPT))
    .digest("hex")
    .slice(0, 12);
  return join(outputDir, "models", `${TORCH_DEMO_MODEL}-${hash}`);
}

/** What a Hugging Face model directory's config.json says, in a few words. */
function describeHfModel(dir: string): string {
  try {
    const c = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    const arch = Array.isArray(c["architectures"]) ? String(c["architectures"][0]) : String(c["model_type"]);
    return `${arch}, hidden ${String(c["hidden_size"])}, ${String(c["num_hidden_layers"])} layers, vocabulary ${String(c["vocab_size"])}`;
  } catch {
    return "a Hugging Face model directory";
  }
}

/**
 * The model the torch demo serves for `--model spec`: `builtin:*` as is; `tiny-qwen2` built into
 * {@link torchDemoModelDir} unless it is there already (built in a temporary directory, then renamed:
 * two demos at once each build, one keeps its copy); anything else must be a Hugging Face model
 * directory. Returns the learner's `model` (an absolute path for directories) and lines for people.
 */
export async function resolveTorchDemoModel(
  spec: string,
  python: string,
  outputDir: string,
  say: (text: string) => void,
): Promise<{ model: string; label: string }> {
  if (spec.startsWith("builtin:")) return { model: spec, label: spec };
  if (spec !== TORCH_DEMO_MODEL) {
    if (!isHfModelDir(spec))
      throw new UsageError(
        `'--model ${spec}': not a Hugging Face model directory (config.json, model.safetensors and tokenizer.json), ` +
          `nor '${TORCH_DEMO_MODEL}' or builtin:tiny`,
      );
    say(`model ${spec} (${describeHfModel(spec)})
`);
    return { model: resolve(spec), label: spec };
  }
  const dir = torchDemoModelDir(outputDir);
  if (isHfModelDir(dir)) {
    say(`model ${TORCH_DEMO_MODEL}: ${dir} (${describeHfModel(dir)}; built earlier, reused)
`);
  } else {
    say(
      `model ${TORCH_DEMO_MODEL}: building ${dir} with scripts/make-tiny-hf-model.py (random weights, a BPE tokenizer trained on this repository's text) ...
`,
    );
    const t0 = performance.now();
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(dirname(dir), { recursive: true });
    try {
      const built = await buildTinyHfModel({ ...TORCH_DEMO_HF_MODEL, python, out: tmp });
      try {
        renameSync(tmp, dir);
      } catch (e) {
        if (!isHfModelDir(dir)) throw e; // else another demo built it meanwhile: use that one
      }
      say(
        `built ${built.architecture}, ${built.parameters} parameters, ${built.vocab_size}-token BPE, in ${((performance.now() - t0) / 1000).toFixed(1)} s
`,
      );
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return { model: resolve(dir), label: `${TORCH_DEMO_MODEL} from ${dir}` };
}

/**
 * The PyTorch learner's settings of the `--learner torch` demo (also `experiment --learner torch`):
 * `model` on the CPU in float32, a supervised warm-up from `warmupFile` (`warmupSteps`; 0: none), and the learning
 * rate, sampling temperature and completion length measured for the tiny models.
 */
export function torchLearnerSettings(
  model: string,
  warmupFile: string,
  warmupSteps = 150,
): {
  loss: { klBeta: number; maxCompletionLength: number };
  optim: { lr: number; maxGradNorm: number };
  generation: { temperature: number; maxNewTokens: number };
  learner: Record<string, unknown>;
} {
  // A byte-level model spends one token per byte (a response is ~110); the BPE of tiny-qwen2 about 50.
  const maxNewTokens = model.startsWith("builtin:") ? 160 : 80;
  return {
    loss: { klBeta: 0, maxCompletionLength: maxNewTokens },
    // Measured here (seed 7, builtin:tiny): lr 1e-4 rises steadily; 3e-4 and above collapse the format
    // within steps. The same settings suit tiny-qwen2 (seeds 1, 2, 7: the last 10 steps 1.4–2.5 above the first 10).
    optim: { lr: 1e-4, maxGradNorm: 1 },
    // After the warm-up a byte-level model at temperature 1 still garbles the JSON too often for the
    // rewards to say much; 0.7 keeps most completions well-formed, so choices are what varies.
    generation: { temperature: 0.7, maxNewTokens },
    learner: {
      kind: "torch",
      model,
      device: "cpu",
      dtype: "float32",
      threads: 2,
      ...(warmupSteps > 0 ? { warmup: { file: warmupFile, steps: warmupSteps, lr: 0.003 } } : {}),
    },
  };
}

/**
 * The `--learner torch` demo's run document: `model` (a built `tiny-qwen2` directory by default in
 * the demo; `builtin:tiny` here when none is given) on the tool-call tasks as text prompts, warmed up
 * on the file {@link writeTorchDemoWarmup} writes.
 */
export function torchDemoRunDocument(
  seed = DEMO_SEED,
  steps = TORCH_DEMO_STEPS,
  runId = `demo-torch-${Date.now().toString(36)}`,
  model = "builtin:tiny",
): Record<string, unknown> {
  const torch = torchLearnerSettings(model, `${runPaths("runs", runId).dir}/warmup.jsonl`);
  return {
    run: { id: runId, seed, outputDir: "runs" },
    tasks: { source: "builtin", sets: ["tool_call"] },
    groupSize: 8,
    promptsPerStep: 3,
    steps,
    components: ["rlla-tool"],
    estimator: { name: "grpo_covariance_coefficient", options: { coefficientSumFloor: 1 } },
    loss: { type: "dapo", ...torch.loss },
    optim: torch.optim,
    generation: torch.generation,
    learner: torch.learner,
    groups: { deadlineMs: 120_000 },
  };
}

/** Writes the warm-up examples of the torch demo (seeded) to `file`. */
export function writeTorchDemoWarmup(file: string, seed: number): number {
  const examples = toolCallWarmupExamples(createRng(seed), 64);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, examples.map((e) => JSON.stringify(e)).join("\n") + "\n");
  return examples.length;
}

const avg = (ls: readonly MetricsLine[], f: (l: MetricsLine) => number | null | undefined) => {
  const v = ls.map(f).filter((x): x is number => typeof x === "number" && Number.isFinite(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
};

/** The demo command's options (parsing and `--help` come from this table; add a flag here). */
export const DEMO_COMMAND: CommandSpec = {
  name: "demo",
  summary: "what `npm start` runs: the mesh plus a short training run",
  description:
    "What `npm start` runs: the mesh on this machine plus a short training run on the built-in tool-call\n" +
    "tasks, then a summary and the run's report.",
  options: {
    learner: {
      type: "string",
      value: "embedded|torch",
      default: "embedded",
      description:
        "the learner: in-process, or the PyTorch one (needs .venv: bash scripts/bootstrap.sh --with-torch)",
    },
    seed: {
      type: "string",
      value: "N",
      default: String(DEMO_SEED),
      description: "the run's seed (an integer >= 0)",
    },
    steps: {
      type: "string",
      value: "N",
      description: "training steps (>= 2)",
      defaultText: `60, or ${TORCH_DEMO_STEPS} with --learner torch`,
    },
    model: {
      type: "string",
      value: "tiny-qwen2|builtin:tiny|DIR",
      description:
        "with --learner torch: the model (tiny-qwen2: a small random Qwen2 with a BPE tokenizer, built on first use into runs/models/; or a Hugging Face model directory)",
      defaultText: TORCH_DEMO_MODEL,
    },
    "log-format": LOG_FORMAT_OPTION,
    ui: UI_OPTION,
  },
  examples: ["reward-mesh demo --steps 20", "reward-mesh demo --learner torch"],
};

/** Usage of the demo command. */
export const DEMO_USAGE = usageLine(DEMO_COMMAND);

/**
 * The services the demo starts: the torch demo only those its run uses (tool-call); the embedded one
 * every service enabled by default, plus any its run uses — a service whose manifest says
 * `defaultEnabled: false` (reward-model, random test weights) only then.
 */
export function demoServices(config: RunConfig, torch: boolean): string[] {
  if (torch) return servicesOf(config);
  return [...new Set([...defaultServiceNames(), ...servicesOf(config)])].sort();
}

/** How the demo's start line names the model. */
function torchModelWords(label: string): string {
  if (label === "builtin:tiny")
    return "builtin:tiny, a small randomly initialised transformer with a byte-level tokenizer, not a pretrained LLM;";
  if (label.startsWith(TORCH_DEMO_MODEL))
    return `${label}, a small randomly initialised Qwen2 with a BPE tokenizer and a chat template, not a pretrained LLM;`;
  return `${label};`;
}

/** Runs the demo; returns the exit code. */
export async function runDemo(
  args: readonly string[],
  cli: CliConfig,
  out: Writable,
  err: Writable & { isTTY?: boolean },
): Promise<number> {
  const { rest, ui } = takeUiFlag(args);
  const { values: flags, positionals: positional } = parseCommand(DEMO_COMMAND, rest);
  if (positional.length) throw new UsageError(DEMO_USAGE);
  const logFormat = logFormatOf(flags, cli);
  // In JSON mode stdout carries only the result: the lines for people are left out.
  const say = (text: string) => {
    if (logFormat === "human") out.write(text);
  };
  const torch = flags["learner"] === "torch";
  if (!torch && flags["learner"] !== "embedded")
    throw new UsageError(`'--learner' must be 'embedded' or 'torch', got '${String(flags["learner"])}'`);
  const seed = Number(flags["seed"]);
  const steps = Number(flags["steps"] ?? (torch ? TORCH_DEMO_STEPS : 60));
  if (!Number.isInteger(seed) || seed < 0 || !Number.isInteger(steps) || steps < 2)
    throw new UsageError("'--seed' and '--steps' must be integers (steps >= 2)");
  if (!torch && flags["model"] !== undefined)
    throw new UsageError("'--model' is for '--learner torch' (the embedded learner has no model to choose)");
  const t0 = performance.now();
  const model = torch
    ? await resolveTorchDemoModel(String(flags["model"] ?? TORCH_DEMO_MODEL), cli.python, "runs", say)
    : undefined;
  const config = resolveRunConfig(
    model ? torchDemoRunDocument(seed, steps, undefined, model.model) : demoRunDocument(seed, steps),
  );
  if (config.learner.kind === "torch" && config.learner.warmup) {
    const n = writeTorchDemoWarmup(config.learner.warmup.file, seed);
    say(`wrote ${n} warm-up examples (format right, arguments random) to ${config.learner.warmup.file}\n`);
  }
  const services = demoServices(config, torch);
  say(
    `reward-mesh demo — run ${config.runId}, seed ${seed}\nstarting NATS JetStream and the reward services (${services.join(", ")})...\n`,
  );
  // The demo's code sandbox is bubblewrap (about 15 ms per run here, against about 110 ms for a Docker
  // container) unless the user chose a backend.
  const meshCli: CliConfig = { ...cli, env: { SANDBOX_BACKEND: "bwrap", ...cli.env } };
  servicesOf(config); // every service the run needs is available
  const mesh = await startMesh(meshCli, { services });
  let live: LivePage | undefined;
  let result: Awaited<ReturnType<typeof trainWithMesh>>;
  try {
    // The live page (--ui), before the first step; closed with the mesh.
    if (ui !== undefined) live = await openLivePage(config, ui, logFormat === "human" ? out : err, logFormat);
    if (logFormat === "human") printMesh(mesh, out);
    else writeMeshNotice(mesh, logFormat, err); // stdout carries only the result
    // The agent set is listed by the mesh's agentdojo service (AgentEnvironment.ListTasks).
    const tasks = await loadBuiltinTasks(config.tasks.sets, environmentOf(meshCli, mesh));
    say(
      torch
        ? `\nstarting the PyTorch learner (${torchModelWords(model?.label ?? "")} warmed up for ${config.learner.kind === "torch" ? config.learner.warmup?.steps : 0} supervised steps) ...\n`
        : `\ntraining the embedded learner (a small tabular softmax policy over task fragments, not an LLM): `,
    );
    const describeRun = `${tasks.length} tasks, G=${config.groupSize}, ${config.promptsPerStep} prompts/step, ${config.steps} steps, estimator ${config.estimator.name}, loss ${config.loss.type}\n`;
    if (!torch) say(describeRun);
    const progress = logFormat === "human" ? progressPrinter(err) : undefined;
    result = await trainWithMesh({
      cli: meshCli,
      config,
      tasks,
      withMesh: false,
      mesh,
      logFormat,
      ...stepSinks(progress, live),
      ...(torch
        ? { onLearner: (where: string) => say(`learner at ${where}\ntraining: ${describeRun}`) }
        : {}),
    });
    live?.finish(`finished after step ${result.lastStep}`);
  } finally {
    // An error or a stop during start-up: open pages say so rather than try to reconnect (no-op after a finish).
    live?.finish("the run ended early (see the command's output)");
    await live?.close();
    await mesh.stop();
  }
  const lines = readMetrics(runPaths(config.outputDir, config.runId).metrics);
  const n = Math.min(10, Math.floor(lines.length / 2));
  const first = lines.slice(0, n);
  const last = lines.slice(-n);
  const comps = Object.keys(lines[0]?.components ?? {});
  const w0 = avg(first, (l) => l.weightedReward);
  const w1 = avg(last, (l) => l.weightedReward);
  const wallSeconds = (performance.now() - t0) / 1000;
  if (logFormat === "json") {
    out.write(
      `${JSON.stringify({
        runId: config.runId,
        seed,
        estimator: config.estimator.name,
        loss: config.loss.type,
        steps: lines.length,
        window: n,
        weightedReward: { first: w0, last: w1 },
        components: Object.fromEntries(
          comps.map((c) => [
            c,
            {
              first: avg(first, (l) => l.components?.[c]?.mean),
              last: avg(last, (l) => l.components?.[c]?.mean),
            },
          ]),
        ),
        wallSeconds: Number(wallSeconds.toFixed(1)),
        report: result.report,
      })}\n`,
    );
    return 0;
  }
  const row = (name: string, a: number | null, b: number | null) =>
    `${name.padEnd(28)} ${a === null ? "–".padStart(10) : a.toFixed(4).padStart(10)} ${b === null ? "–".padStart(10) : b.toFixed(4).padStart(10)}\n`;
  out.write(`\n${"".padEnd(28)} ${`first ${n}`.padStart(10)} ${`last ${n}`.padStart(10)}\n`);
  out.write(row("weighted reward", w0, w1));
  for (const c of comps)
    out.write(
      row(
        c,
        avg(first, (l) => l.components?.[c]?.mean),
        avg(last, (l) => l.components?.[c]?.mean),
      ),
    );
  out.write(
    `\nestimator ${config.estimator.name}, loss ${config.loss.type}, ${lines.length} steps, wall time ${wallSeconds.toFixed(1)} s\n` +
      `weighted reward ${w0?.toFixed(4)} -> ${w1?.toFixed(4)} (${w0 !== null && w1 !== null ? `${w1 - w0 >= 0 ? "+" : ""}${(w1 - w0).toFixed(4)}` : "n/a"})\n` +
      `report ${result.report}\nmesh stopped.\n`,
  );
  return 0;
}
