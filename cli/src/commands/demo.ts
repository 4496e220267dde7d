/**
 * `reward-mesh demo` (what `npm start` runs): brings up NATS and the reward services as separate
 * processes, trains the embedded learner for a short run on the built-in tasks through the real mesh,
 * prints a summary (reward per component at the start and the end, estimator, wall time), writes the
 * report, and shuts everything down.
 * @module
 */
import type { Writable } from "node:stream";
import { createLogger } from "@reward-mesh/sdk";
import {
  builtinTasks,
  type MetricsLine,
  readMetrics,
  resolveRunConfig,
  runPaths,
} from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { parseFlags, UsageError } from "../io.js";
import { SERVICES } from "../services.js";
import { progressPrinter, servicesOf, trainWithMesh } from "./train.js";
import { printMesh, startMesh } from "./up.js";

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

const avg = (ls: readonly MetricsLine[], f: (l: MetricsLine) => number | null | undefined) => {
  const v = ls.map(f).filter((x): x is number => typeof x === "number" && Number.isFinite(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
};

/** Runs the demo; returns the exit code. */
export async function runDemo(
  args: readonly string[],
  cli: CliConfig,
  out: Writable,
  err: Writable & { isTTY?: boolean },
): Promise<number> {
  const { flags, positional } = parseFlags(args, { seed: "string", steps: "string" });
  if (positional.length) throw new UsageError("usage: reward-mesh demo [--seed N] [--steps N]");
  const seed = Number(flags["seed"] ?? DEMO_SEED);
  const steps = Number(flags["steps"] ?? 60);
  if (!Number.isInteger(seed) || seed < 0 || !Number.isInteger(steps) || steps < 2)
    throw new UsageError("'--seed' and '--steps' must be integers (steps >= 2)");
  const t0 = performance.now();
  const config = resolveRunConfig(demoRunDocument(seed, steps));
  const tasks = builtinTasks(config.tasks.sets);
  out.write(
    `reward-mesh demo — run ${config.runId}, seed ${seed}\nstarting NATS JetStream and every reward service (${SERVICES.map((x) => x.name).join(", ")})...\n`,
  );
  // The demo's code sandbox is bubblewrap (about 15 ms per run here, against about 110 ms for a Docker
  // container) unless the user chose a backend.
  const meshCli: CliConfig = { ...cli, env: { SANDBOX_BACKEND: "bwrap", ...cli.env } };
  servicesOf(config); // every service the run needs is available
  const mesh = await startMesh(meshCli);
  let result: Awaited<ReturnType<typeof trainWithMesh>>;
  try {
    printMesh(mesh, out);
    out.write(
      `\ntraining the embedded learner (a small tabular softmax policy over task fragments, not an LLM): ${tasks.length} tasks, G=${config.groupSize}, ${config.promptsPerStep} prompts/step, ${config.steps} steps, estimator ${config.estimator.name}, loss ${config.loss.type}\n`,
    );
    result = await trainWithMesh({
      cli: meshCli,
      config,
      tasks,
      withMesh: false,
      mesh,
      logger: createLogger({ service: "demo", level: "warn" }),
      onStep: progressPrinter(err),
    });
  } finally {
    await mesh.stop();
  }
  const lines = readMetrics(runPaths(config.outputDir, config.runId).metrics);
  const n = Math.min(10, Math.floor(lines.length / 2));
  const first = lines.slice(0, n);
  const last = lines.slice(-n);
  const comps = Object.keys(lines[0]?.components ?? {});
  const row = (name: string, a: number | null, b: number | null) =>
    `${name.padEnd(28)} ${a === null ? "–".padStart(10) : a.toFixed(4).padStart(10)} ${b === null ? "–".padStart(10) : b.toFixed(4).padStart(10)}\n`;
  out.write(`\n${"".padEnd(28)} ${`first ${n}`.padStart(10)} ${`last ${n}`.padStart(10)}\n`);
  const w0 = avg(first, (l) => l.weightedReward);
  const w1 = avg(last, (l) => l.weightedReward);
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
    `\nestimator ${config.estimator.name}, loss ${config.loss.type}, ${lines.length} steps, wall time ${((performance.now() - t0) / 1000).toFixed(1)} s\n` +
      `weighted reward ${w0?.toFixed(4)} -> ${w1?.toFixed(4)} (${w0 !== null && w1 !== null ? `${w1 - w0 >= 0 ? "+" : ""}${(w1 - w0).toFixed(4)}` : "n/a"})\n` +
      `report ${result.report}\nmesh stopped.\n`,
  );
  return 0;
}
