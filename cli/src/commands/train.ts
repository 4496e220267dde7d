/**
 * `reward-mesh train --config run.yaml [--with-mesh]` and `reward-mesh report <run dir>`.
 *
 * `train` connects to NATS at `NATS_URL` (unset: the mesh `reward-mesh up` recorded, see `mesh-record.ts`)
 * and expects the services of the run's components to be running (`reward-mesh up`); `--with-mesh` starts NATS (if needed) and exactly those services for the run's
 * duration. A second Ctrl-C is not needed: SIGINT / SIGTERM stops at every phase — during start-up (what
 * was started is stopped), between steps, or while a step waits for its rewards (the step stays
 * journalled) — and running the same command again resumes.
 * @module
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import {
  createLogger,
  LOG_FORMATS,
  type LogFormat,
  type Logger,
  type MeshBus,
  openBus,
} from "@reward-mesh/sdk";
import {
  checkTorchAvailable,
  createEmbeddedLearner,
  createRemoteLearner,
  type Learner,
  type EnvironmentEndpoint,
  loadRunConfig,
  loadRunTasks,
  prepareRunDirectory,
  readMetrics,
  renderRunReport,
  resolveRunTasks,
  type RunConfig,
  runNeedsEnvironment,
  runPaths,
  runTraining,
  type StepReport,
  startTorchLearner,
  type TaskDefinition,
  type TrainingResult,
  withEpisodeEnvironment,
} from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { openLivePage, stepSinks, takeUiFlag, UI_OPTION } from "../live-ui.js";
import { SERVICES } from "../services.js";
import { meshBusOptions } from "./mesh-record.js";
import { meshAgentEnvironmentAddress, type RunningMesh, startMesh } from "./up.js";

/** The train command's options (parsing and `--help` come from this table; add a flag here). */
/** `--log-format`, shared by train, demo and experiment (see {@link logFormatOf}). */
export const LOG_FORMAT_OPTION = {
  type: "string",
  value: "human|json",
  description:
    "human: progress and readable warnings on the terminal, every log record in <run dir>/logs/trainer.jsonl; " +
    "json: JSON log records only on stderr and the result as one JSON object on stdout",
  defaultText: "REWARD_MESH_LOG_FORMAT, else human",
} as const;

export const TRAIN_COMMAND: CommandSpec = {
  name: "train",
  summary: "a training run (the same command again resumes it from its checkpoint)",
  description:
    "A training run from a run configuration; the same command again resumes the run from its checkpoint.\n" +
    "Expects NATS and the run's services (reward-mesh up) unless --with-mesh: the mesh at NATS_URL, or with\n" +
    "NATS_URL unset the one reward-mesh up recorded in <auth dir>/mesh.json (as its trainer user).",
  options: {
    config: {
      type: "string",
      value: "run.yaml",
      required: true,
      description: "the run configuration (YAML or JSON)",
    },
    "with-mesh": {
      type: "boolean",
      description: "start NATS (if nothing answers) and exactly the run's services for the run",
      defaultText: "off: the mesh at NATS_URL, else the one reward-mesh up runs",
    },
    steps: {
      type: "string",
      value: "N",
      description: "override the config's steps",
      defaultText: "the config's",
    },
    "run-id": {
      type: "string",
      value: "ID",
      description: "override the config's run id ([A-Za-z0-9_-]+)",
      defaultText: "the config's",
    },
    quiet: { type: "boolean", description: "no progress line per step on stderr", defaultText: "off" },
    "log-format": LOG_FORMAT_OPTION,
    ui: UI_OPTION,
  },
  notes: ["Writes runs/<run id>/: metrics.jsonl, checkpoints, resolved-config.json and report.html."],
  examples: ["reward-mesh train --config trainer/examples/tool-agent.yaml --with-mesh --steps 20"],
};

/** Usage of the train command. */
export const TRAIN_USAGE = usageLine(TRAIN_COMMAND);

/** The report command's arguments. */
export const REPORT_COMMAND: CommandSpec = {
  name: "report",
  summary: "write <run dir>/report.html from the run's metrics.jsonl",
  positionals: [{ name: "<run dir>", description: "a run directory, e.g. runs/demo-1" }],
  options: {},
  examples: ["reward-mesh report runs/demo-1"],
};

/** The log format a command runs with: `--log-format` if given, else the CLI configuration's. */
export function logFormatOf(flags: Readonly<Record<string, string | boolean>>, cli: CliConfig): LogFormat {
  const v = flags["log-format"];
  if (v === undefined) return cli.logFormat;
  if (!(LOG_FORMATS as readonly unknown[]).includes(v))
    throw new UsageError(`'--log-format' must be one of ${LOG_FORMATS.join(", ")}, got '${String(v)}'`);
  return v as LogFormat;
}

/** Where a run's log records go (JSON lines): `<run dir>/logs/trainer.jsonl`. */
export function runLogFile(config: RunConfig): string {
  return join(runPaths(config.outputDir, config.runId).dir, "logs", "trainer.jsonl");
}

/** Services a run needs (those of its components). */
export function servicesOf(config: RunConfig): string[] {
  const names = [...new Set(config.components.map((c) => c.service))];
  const known = new Set(SERVICES.map((s) => s.name));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length) {
    throw new UsageError(
      `the run uses services this build does not ship: ${unknown.join(", ")} (available: ${[...known].join(", ")})`,
    );
  }
  return names;
}

/** A progress bar on `out` (one updating line on a TTY, a line per step otherwise). */
export function progressPrinter(out: Writable & { isTTY?: boolean }): (r: StepReport) => void {
  const t0 = performance.now();
  let first: number | null = null;
  return (r) => {
    const w = r.metrics["weightedReward"] as number | null;
    if (first === null && w !== null) first = w;
    const width = 24;
    const done = Math.round((r.step / r.steps) * width);
    const bar = `${"█".repeat(done)}${"░".repeat(width - done)}`;
    const secs = (performance.now() - t0) / 1000;
    const fmt = (v: unknown, d = 3) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(d) : "–");
    // CorrGRPO's degenerate-group guard fired this step (the log has the warning with the details).
    const fallback = (r.metrics["groups"] as { corrFallback?: number } | undefined)?.corrFallback ?? 0;
    const warn = fallback > 0 ? ` ⚠ ${fallback} CorrGRPO fallback${fallback === 1 ? "" : "s"}` : "";
    const line = `step ${String(r.step).padStart(String(r.steps).length)}/${r.steps} ${bar} reward ${fmt(w)} (${w !== null && first !== null ? (w - first >= 0 ? "+" : "") + (w - first).toFixed(3) : "–"}) loss ${fmt(r.metrics["loss"], 4)} kl ${fmt(r.metrics["kl"], 4)} entropy ${fmt(r.metrics["entropy"], 2)} ${secs.toFixed(0)} s${warn}`;
    if (out.isTTY) out.write(`\r${line}${r.step === r.steps ? "\n" : ""}`);
    else out.write(`${line}\n`);
  };
}

/**
 * Where the built-in `agent` set is listed (`AgentEnvironment.ListTasks`) and where a run's `episodes`
 * are played when its config names no `episodes.environment`: the agentdojo service of a mesh the CLI
 * started, else `REWARD_MESH_AGENT_ENV_ADDR`.
 */
export function environmentOf(cli: CliConfig, mesh?: RunningMesh): EnvironmentEndpoint {
  const address = mesh ? meshAgentEnvironmentAddress(mesh) : undefined;
  return { address: address ?? cli.agentEnvironmentAddress, security: cli.grpc };
}

/** A run's learner and how to let go of it. */
export interface LearnerHandle {
  readonly learner: Learner;
  /** Where the learner runs, for people: `in process`, an address, a process and its log. */
  readonly where: string;
  close(): Promise<void>;
}

/**
 * Creates the learner a run asks for, resuming from the run's checkpoint when there is one: the
 * embedded learner in process, a remote one at its address, or the PyTorch learner started as its own
 * process (log under the CLI's log directory, SERVING before the first step, stopped by `close`).
 */
export async function learnerFor(config: RunConfig, cli: CliConfig): Promise<LearnerHandle> {
  const paths = runPaths(config.outputDir, config.runId);
  const l = config.learner;
  if (l.kind === "embedded") {
    const ckpt = paths.learnerCheckpoint;
    const learner = createEmbeddedLearner({
      seed: config.seed,
      ...(existsSync(ckpt) ? { checkpoint: ckpt } : {}),
    });
    return { learner, where: "in process", close: () => learner.close() };
  }
  if (l.kind === "grpc") {
    const learner = createRemoteLearner(l.address, { security: cli.grpc });
    return { learner, where: l.address, close: () => learner.close() };
  }
  checkTorchAvailable(cli.python);
  const logFile = join(cli.logDir, `learner-torch-${config.runId}.log`);
  const proc = await startTorchLearner({
    ...l,
    seed: config.seed,
    python: cli.python,
    env: cli.env,
    security: cli.grpc,
    logFile,
    ...(existsSync(paths.learnerCheckpointDir) ? { resume: paths.learnerCheckpointDir } : {}),
  });
  const learner = createRemoteLearner(proc.address, { security: cli.grpc });
  return {
    learner,
    where: `${proc.address} (pid ${proc.child.pid}, log ${logFile})`,
    async close() {
      await learner.close();
      await proc.stop();
    },
  };
}

/** Options of {@link trainWithMesh}. */
export interface TrainWithMeshOptions {
  readonly cli: CliConfig;
  readonly config: RunConfig;
  /**
   * The run's tasks; absent: resolved once the mesh is up (`resolveRunTasks`, the `agent` set listed by
   * the mesh's agentdojo service, see {@link environmentOf}).
   */
  readonly tasks?: readonly TaskDefinition[];
  readonly withMesh: boolean;
  /** An already running mesh to use (experiments share one). */
  readonly mesh?: RunningMesh;
  readonly onStep?: (r: StepReport) => void;
  /** Told where the learner runs once it is ready. */
  readonly onLearner?: (where: string) => void;
  /**
   * How the run's log records reach the console (`human`: warnings and errors as readable lines on
   * stderr; `json`: every record as a JSON line on stderr); every record also goes to {@link runLogFile}.
   */
  readonly logFormat: LogFormat;
  readonly signal?: AbortSignal;
}

/**
 * Runs one training run (optionally bringing up the mesh it needs) and writes its report (`report` is ""
 * when the run stopped before its first step).
 */
export async function trainWithMesh(o: TrainWithMeshOptions): Promise<TrainingResult & { report: string }> {
  // The run directory first: a bad run.outputDir is a clear error before anything is started.
  prepareRunDirectory(o.config.outputDir, o.config.runId);
  const logger = createLogger({
    service: "trainer",
    level: "info",
    format: o.logFormat,
    file: runLogFile(o.config),
  });
  try {
    return await trainInDirectory(o, logger);
  } finally {
    logger.close();
  }
}

async function trainInDirectory(
  o: TrainWithMeshOptions,
  logger: Logger,
): Promise<TrainingResult & { report: string }> {
  let mesh = o.mesh;
  const ownMesh = !mesh && o.withMesh;
  if (ownMesh)
    mesh = await startMesh(o.cli, {
      services: servicesOf(o.config),
      ...(o.signal ? { signal: o.signal } : {}),
    });
  // Where the mesh's NATS went when not to NATS_URL: a warning line for people, fields for JSON logs.
  if (ownMesh && mesh!.natsNotice)
    logger.warn(
      o.logFormat === "json" ? { natsUrl: mesh!.natsUrl, natsUsersDir: mesh!.credentialsDir } : {},
      mesh!.natsNotice,
    );
  try {
    // The tasks before the bus: a failed listing (an unreachable environment service) leaves no
    // connection open to keep the process alive.
    const environment = environmentOf(o.cli, mesh);
    const tasks = o.tasks ?? (await resolveRunTasks(o.config, environment));
    // Episodes without an environment of their own are played where the agent set is listed.
    const config = withEpisodeEnvironment(o.config, environment.address);
    // With a mesh of ours, the trainer connects as the mesh's trainer user; otherwise to the mesh at
    // NATS_URL, or (unset) to the one `reward-mesh up` recorded, as its trainer user.
    const bus = await openBus(
      mesh
        ? { ...o.cli.bus, natsUrl: mesh.natsUrl, ...(mesh.trainerAuth ? { auth: mesh.trainerAuth } : {}) }
        : await meshBusOptions(o.cli, { kind: "trainer" }),
      `trainer-${o.config.runId}`,
    );
    try {
      return await trainOnBus({ ...o, config }, tasks, bus, logger);
    } finally {
      await bus.close();
    }
  } finally {
    if (ownMesh) await mesh!.stop();
  }
}

/** The run itself, once its tasks are known and its bus is open (the caller closes the bus). */
async function trainOnBus(
  o: TrainWithMeshOptions,
  tasks: readonly TaskDefinition[],
  bus: MeshBus,
  logger: Logger,
): Promise<TrainingResult & { report: string }> {
  const handle = await learnerFor(o.config, o.cli);
  const learner = handle.learner;
  o.onLearner?.(handle.where);
  try {
    const result = await runTraining({
      config: o.config,
      tasks,
      bus,
      learner,
      logger,
      startWaitSeconds: o.cli.startWaitSeconds,
      learnerWhere: handle.where,
      environmentSecurity: o.cli.grpc, // the AgentEnvironment of `episodes`, when the run plays episodes
      ...(o.onStep ? { onStep: o.onStep } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const paths = runPaths(o.config.outputDir, o.config.runId);
    // Stopped before its first step: no metrics, no report.
    if (!existsSync(paths.metrics)) return { ...result, report: "" };
    const info = await learner.info();
    writeFileSync(
      paths.report,
      renderRunReport(
        o.config.runId,
        readMetrics(paths.metrics),
        `Learner ${info.name}: ${info.description}`,
      ),
    );
    return { ...result, report: paths.report };
  } finally {
    await handle.close();
  }
}

/** `reward-mesh train`. */
export async function runTrain(
  args: readonly string[],
  cli: CliConfig,
  stdout: Writable,
  stderr: Writable & { isTTY?: boolean },
): Promise<number> {
  const { rest, ui } = takeUiFlag(args);
  const { values: flags, positionals: positional } = parseCommand(TRAIN_COMMAND, rest);
  if (positional.length > 0 || typeof flags["config"] !== "string") throw new UsageError(TRAIN_USAGE);
  const logFormat = logFormatOf(flags, cli);
  let config = loadRunConfig(flags["config"]);
  if (typeof flags["steps"] === "string") {
    const n = Number(flags["steps"]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError("'--steps' must be a positive integer");
    config = { ...config, steps: n };
  }
  if (typeof flags["run-id"] === "string") {
    if (!/^[A-Za-z0-9_-]+$/.test(flags["run-id"]))
      throw new UsageError("'--run-id' must match [A-Za-z0-9_-]+");
    config = { ...config, runId: flags["run-id"] };
  }
  // A task file or the shipped sets now (a bad file fails before anything starts); the agent set is
  // listed by the environment service once the mesh is up.
  const tasks = runNeedsEnvironment(config) ? undefined : loadRunTasks(config);
  const abort = new AbortController();
  const onSignal = () => {
    if (logFormat === "human") stderr.write("\nstopping (checkpointed; run the same command to resume)...\n");
    abort.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  // The live page (--ui) lives as long as this command: closed in `finally` however the run ends.
  const live = ui === undefined ? undefined : await openLivePage(config, ui, stderr, logFormat);
  const progress = flags["quiet"] || logFormat === "json" ? undefined : progressPrinter(stderr);
  try {
    const r = await trainWithMesh({
      cli,
      config,
      ...(tasks ? { tasks } : {}),
      withMesh: flags["with-mesh"] === true,
      logFormat,
      ...stepSinks(progress, live),
      signal: abort.signal,
    });
    live?.finish(`${r.stopped ? "stopped" : "finished"} after step ${r.lastStep}`);
    if (logFormat === "json") {
      stdout.write(
        `${JSON.stringify({
          runId: r.runId,
          stopped: r.stopped,
          firstStep: r.firstStep,
          lastStep: r.lastStep,
          resumedFrom: r.resumedFrom ?? null,
          dir: r.dir,
          log: runLogFile(config),
          metrics: r.report ? join(r.dir, "metrics.jsonl") : null,
          report: r.report || null,
        })}\n`,
      );
      return 0;
    }
    stdout.write(
      `${r.stopped ? "stopped" : "finished"} run ${r.runId}: steps ${r.firstStep}..${r.lastStep}${r.resumedFrom ? ` (resumed after step ${r.resumedFrom})` : ""}${r.report ? `\nmetrics ${join(r.dir, "metrics.jsonl")}\nreport  ${r.report}` : ""}\n`,
    );
    return 0;
  } catch (err) {
    // Stopped during start-up (the mesh was starting): everything started is stopped again.
    if (!abort.signal.aborted || err !== abort.signal.reason) throw err;
    stdout.write(
      logFormat === "json"
        ? `${JSON.stringify({ runId: config.runId, stopped: true, startup: true })}\n`
        : `stopped run ${config.runId} during start-up\n`,
    );
    return 0;
  } finally {
    // An error or a stop during start-up: open pages say so rather than try to reconnect (no-op after a finish).
    live?.finish("the run ended early (see the command's output)");
    await live?.close();
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
}

/** `reward-mesh report <run dir>`. */
export function runReport(args: readonly string[], stdout: Writable): number {
  const { positionals } = parseCommand(REPORT_COMMAND, args);
  if (positionals.length !== 1) throw new UsageError(usageLine(REPORT_COMMAND));
  const dir = positionals[0]!;
  const metrics = join(dir, "metrics.jsonl");
  // A run that stopped before step 1 has its resolved config but no metrics: its report says so.
  const started = existsSync(join(dir, "resolved-config.json"));
  if (!existsSync(metrics) && !started)
    throw new UsageError(`'${dir}' has no metrics.jsonl (is it a run directory under runs/?)`);
  const out = join(dir, "report.html");
  const runId = dir.replace(/\/+$/, "").split("/").at(-1) ?? dir;
  writeFileSync(out, renderRunReport(runId, existsSync(metrics) ? readMetrics(metrics) : []));
  stdout.write(`${out}\n`);
  return 0;
}
