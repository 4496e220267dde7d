/**
 * `reward-mesh up`: the whole mesh on this machine. Ensures NATS JetStream at `NATS_URL` (starting
 * `nats-server -js` with generated users and least-privilege permissions when nothing answers, or on a
 * free port with users and store of its own when `NATS_URL` is unset and the default address is held by a
 * server it cannot use: see `mesh-nats.ts`), starts every available service as its own process with its own NATS
 * credentials and `<PREFIX>_GRPC_PORT=0` (the service binds a free port itself and names it in its `<name> ready`
 * log line: no port picked beforehand that another process could take), waits until each reports SERVING over
 * gRPC health, prints the addresses, and stops everything cleanly on Ctrl-C / SIGTERM.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Transform, type Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import {
  applyTelemetryDefaults,
  freePort,
  type LogFormat,
  type NatsAuthOptions,
  waitForLogRecord,
  waitServing,
} from "@reward-mesh/sdk";
import { checkTorchAvailable, startTorchLearner, type TorchLearnerProcess } from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { meshTelemetryEnv, startTraceReceiver } from "./traces.js";
import { defaultServiceNames, SERVICES, serviceEntry } from "../services.js";
import { startMeshNats } from "./mesh-nats.js";

/** One service process started by {@link startMesh}. */
export interface MeshProcess {
  readonly name: string;
  readonly address: string;
  readonly pid: number;
  readonly logFile: string;
  /** `http://127.0.0.1:<port>/metrics` when the service exports Prometheus metrics (`up --traces`). */
  readonly metricsUrl?: string;
}

/** A running local mesh. */
export interface RunningMesh {
  readonly natsUrl: string;
  /** True when `up` started NATS itself. */
  readonly natsStarted: boolean;
  /** The trainer's NATS credentials (undefined: anonymous, with `REWARD_MESH_NATS_AUTH=off`). */
  readonly trainerAuth: NatsAuthOptions | undefined;
  /** Where the generated NATS users are, when `up` generated them. */
  readonly credentialsDir: string | undefined;
  /**
   * One line when the mesh's NATS is not at the `NATS_URL` address with the shared users: what was found
   * there (a server open to anonymous clients, one requiring credentials reward-mesh does not have,
   * something that is not NATS, or the auth directory's lock held by a running process), and the URL of
   * the server started instead, with its own users and store. Shown by {@link printMesh}, and by
   * `train --with-mesh`, `experiment` and `demo` (a JSON log record with `--log-format json`).
   */
  readonly natsNotice: string | undefined;
  readonly services: readonly MeshProcess[];
  /** SIGTERM every service (graceful drain), wait for them, then stop NATS if we started it. */
  stop(): Promise<void>;
}

/** Options of {@link startMesh}. */
export interface StartMeshOptions {
  /** Services to start. @default all available */
  readonly services?: readonly string[];
  /**
   * How long the services together may take to become ready. A service that exits or fails fails start-up at
   * once; this bounds only a slow start (every service starting at the same time on a small machine).
   * @default 120000
   */
  readonly readyTimeoutMs?: number;
  /** Aborts start-up: what was started so far is stopped, and `startMesh` rejects with the reason. */
  readonly signal?: AbortSignal;
  /**
   * Telemetry of the service processes (`up --traces`): traces to this OTLP/HTTP JSON endpoint and a
   * Prometheus `/metrics` port of its own for each service. @default telemetry per the environment
   */
  readonly telemetry?: { readonly otlpEndpoint: string };
}

/** `p`, or a rejection with `signal.reason` as soon as `signal` aborts. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

const tsxImport = () => import.meta.resolve("tsx");

/**
 * Local processes export telemetry only when the user points them somewhere: without any OTEL
 * exporter setting, the SDK's default OTLP exporter would retry a collector that is not there.
 */
function telemetryDefaults(env: CliConfig["env"]): Record<string, string | undefined> {
  // The services' own rule (REWARD_MESH_TELEMETRY=on turns traces and /metrics on), decided here once.
  const e = { ...env };
  applyTelemetryDefaults(e);
  return e;
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-8).join("\n");
  } catch {
    return "(no log)";
  }
}

/** pino's level numbers (`silent`: nothing). */
const PINO_LEVELS: Readonly<Record<string, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};

/**
 * The `LOG_LEVEL` a service process runs at, and the level below which `up` drops its records from the log
 * file. The service's address comes from its info-level `<name> ready` line, so a service runs at `info` at
 * least; when the user's `LOG_LEVEL` is above that (`warn`, `error`, `fatal`, `silent`), the records under
 * it are dropped on their way to the log file, which then holds what that level gives. An unknown level
 * is passed on as it is: the service refuses it, naming the variable, and `up` shows its log tail.
 */
export function serviceLogLevel(userLevel: string | undefined): {
  readonly childLevel: string | undefined;
  readonly dropBelow: number | undefined;
} {
  const n = userLevel === undefined ? undefined : PINO_LEVELS[userLevel];
  if (n === undefined || n <= PINO_LEVELS["info"]!) return { childLevel: userLevel, dropBelow: undefined };
  return { childLevel: "info", dropBelow: n };
}

/**
 * A pass-through of a process's output that drops the JSON log records (one per line, pino's numeric
 * `level`) under `below`; every other line (a stack trace, a Python warning) passes as it is.
 */
export function logLevelFilter(below: number): Transform {
  let partial = "";
  const decoder = new StringDecoder("utf8"); // a character split between two reads stays whole
  const keep = (line: string) => {
    const s = line.trim();
    if (!s.startsWith("{")) return true;
    try {
      const rec = JSON.parse(s) as unknown;
      const level = rec !== null && typeof rec === "object" ? (rec as { level?: unknown }).level : undefined;
      return typeof level !== "number" || level >= below;
    } catch {
      return true;
    }
  };
  return new Transform({
    decodeStrings: true,
    transform(chunk: Buffer, _enc, done) {
      const lines = (partial + decoder.write(chunk)).split("\n");
      partial = lines.pop() ?? "";
      const out = lines.filter(keep);
      done(null, out.length > 0 ? `${out.join("\n")}\n` : undefined);
    },
    flush(done) {
      const rest = partial + decoder.end();
      done(null, rest !== "" && keep(rest) ? rest : undefined);
    },
  });
}

function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Starts NATS (if needed) and the services; resolves once all are SERVING. */
export async function startMesh(config: CliConfig, options: StartMeshOptions = {}): Promise<RunningMesh> {
  const names = options.services ?? defaultServiceNames();
  const entries = names.map(serviceEntry);
  const { signal } = options;
  const natsStarting = startMeshNats(config);
  let meshNats: Awaited<typeof natsStarting>;
  try {
    meshNats = await raceAbort(natsStarting, signal);
  } catch (err) {
    // Aborted while NATS was starting: stop it once it is up.
    await natsStarting.then(
      (m) => m.nats.stop(),
      () => {},
    );
    throw err;
  }
  const nats = meshNats.nats;
  const logDir = resolve(config.logDir);
  mkdirSync(logDir, { recursive: true });
  const children: ChildProcess[] = [];
  const started: MeshProcess[] = [];
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await Promise.all(children.map((c) => stopChild(c, 15_000)));
    await nats.stop();
  };
  try {
    await raceAbort(startServices(), signal);
  } catch (err) {
    await stop();
    throw err;
  }
  started.sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name));
  return {
    natsUrl: nats.url,
    natsStarted: nats.started,
    trainerAuth: meshNats.trainerAuth,
    credentialsDir: meshNats.credentialsDir,
    natsNotice: meshNats.notice,
    services: started,
    stop,
  };

  function startServices() {
    const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
    return Promise.all(
      entries.map(async (e) => {
        // Prometheus /metrics: a port per service (they share this host), picked here: the exporter
        // (@opentelemetry/exporter-prometheus) reads OTEL_EXPORTER_PROMETHEUS_PORT=0 as its default 9464 and
        // does not report the port it bound, so it cannot be started on port 0 and asked.
        const prometheus =
          options.telemetry ||
          /prometheus/.test(telemetryDefaults(config.env)["OTEL_METRICS_EXPORTER"] ?? "");
        const metricsPort = prometheus ? await freePort() : undefined;
        if (stopping) return; // start-up was aborted meanwhile: start nothing more
        const logFile = join(logDir, `${e.name}.log`);
        const log = createWriteStream(logFile, { flags: "a" });
        const env = telemetryDefaults(config.env);
        const { childLevel, dropBelow } = serviceLogLevel(env["LOG_LEVEL"]);
        const child = spawn(process.execPath, ["--import", tsxImport(), e.mainPath()], {
          env: {
            ...env,
            ...(childLevel !== undefined ? { LOG_LEVEL: childLevel } : {}),
            ...(metricsPort
              ? {
                  OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
                  OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
                }
              : {}),
            ...(options.telemetry ? meshTelemetryEnv(options.telemetry.otlpEndpoint, metricsPort!) : {}),
            ...meshNats.envFor(e.name),
            NATS_URL: nats.url,
            // The service binds a free port itself and names it in its ready line.
            [`${e.envPrefix}_GRPC_PORT`]: "0",
            [`${e.envPrefix}_GRPC_HOST`]: "127.0.0.1",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        // Both pipes into one file, closed once both have ended (and their filters flushed).
        let open = 2;
        for (const out of [child.stdout!, child.stderr!]) {
          const src = dropBelow === undefined ? out : out.pipe(logLevelFilter(dropBelow));
          src.pipe(log, { end: false });
          src.once("end", () => {
            if (--open === 0) log.end();
          });
        }
        const describe = () => `last log lines (${logFile}):\n${tail(logFile)}`;
        let address: string;
        try {
          const ready = await waitForLogRecord(
            child,
            (r) =>
              typeof r["msg"] === "string" && r["msg"].endsWith(" ready") && typeof r["address"] === "string",
            {
              what: `its "<name> ready" line with the address it bound`,
              timeoutMs: Math.max(0, deadline - Date.now()),
              describe,
            },
          );
          address = ready["address"] as string;
          await waitServing(address, {
            child,
            security: config.grpc,
            timeoutMs: Math.max(0, deadline - Date.now()),
            describe,
          });
        } catch (err) {
          throw new Error(`service '${e.name}': ${err instanceof Error ? err.message : String(err)}`);
        }
        started.push({
          name: e.name,
          address,
          pid: child.pid ?? -1,
          logFile,
          ...(metricsPort ? { metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` } : {}),
        });
      }),
    );
  }
}

/** The mesh's AgentEnvironment (its agentdojo process), where `train` lists the `agent` set. */
export function meshAgentEnvironmentAddress(mesh: RunningMesh): string | undefined {
  return mesh.services.find((s) => s.name === "agentdojo")?.address;
}

/**
 * Prints the mesh table, and when the mesh runs agentdojo the `export REWARD_MESH_AGENT_ENV_ADDR=…` line a
 * `reward-mesh train` against this mesh needs (the service is on a free port, not its default 50066).
 */
export function printMesh(mesh: RunningMesh, out: Writable): void {
  if (mesh.natsNotice) out.write(`${mesh.natsNotice}\n`);
  out.write(
    `NATS JetStream  ${mesh.natsUrl}${mesh.natsStarted ? "  (started by reward-mesh)" : "  (already running)"}\n`,
  );
  if (mesh.credentialsDir) {
    const t = mesh.trainerAuth;
    // NATS_URL too: the mesh's server may be on a free port rather than the default.
    out.write(
      `NATS users      ${mesh.credentialsDir}  (one NKEY per role, least privilege; anonymous clients refused)\n` +
        `                trainer: NATS_URL=${mesh.natsUrl} NATS_NKEY_SEED_FILE=${t?.nkeySeedFile} NATS_INBOX_PREFIX=${t?.inboxPrefix} reward-mesh train ...\n`,
    );
  }
  for (const s of mesh.services)
    out.write(
      `${s.name.padEnd(14)} ${s.address.padEnd(22)} pid ${s.pid}  log ${s.logFile}${s.metricsUrl ? `  metrics ${s.metricsUrl}` : ""}\n`,
    );
  const agentEnv = meshAgentEnvironmentAddress(mesh);
  if (agentEnv)
    out.write(
      `export REWARD_MESH_AGENT_ENV_ADDR=${agentEnv}  # for 'reward-mesh train' with the agent task set\n`,
    );
}

/**
 * The mesh's NATS notice (if any) for commands that do not print the mesh table: one line for people, or
 * with `json` one JSON log record shaped like the trainer's (pino's: level 40 = warn), with the URL and the
 * users' directory as fields.
 */
export function writeMeshNotice(mesh: RunningMesh, logFormat: LogFormat, out: Writable): void {
  if (!mesh.natsNotice) return;
  out.write(
    logFormat === "json"
      ? `${JSON.stringify({ level: 40, time: Date.now(), service: "reward-mesh", msg: mesh.natsNotice, natsUrl: mesh.natsUrl, natsUsersDir: mesh.credentialsDir })}\n`
      : `${mesh.natsNotice}\n`,
  );
}

/** The up command's options (parsing and `--help` come from this table; add a flag here). */
export const UP_COMMAND: CommandSpec = {
  name: "up",
  summary: "the whole mesh on this machine (NATS + every service [+ the PyTorch learner])",
  description:
    "The whole mesh on this machine: NATS JetStream (started with generated users when nothing answers at\n" +
    "NATS_URL; on a free port, with users and store of its own, when NATS_URL is unset and the default address\n" +
    "is held by a server it cannot use) and every reward service on a free port; prints the addresses, stops\n" +
    "everything on Ctrl-C. A second up starts a mesh of its own: join a running one with its NATS_URL and NATS_*.",
  options: {
    services: {
      type: "string",
      value: "a,b,...",
      description: `the services to start (${SERVICES.map((s) => s.name).join(", ")})`,
      defaultText: `every one enabled by default: ${defaultServiceNames().join(", ")}`,
    },
    learner: {
      type: "string",
      value: "torch",
      description: "also start the PyTorch learner (gRPC) for 'train' to use",
      defaultText: "none: train embeds its own",
    },
    model: {
      type: "string",
      value: "builtin:tiny|DIR",
      description: "the torch learner's model (with --learner torch)",
      defaultText: "builtin:tiny",
    },
    device: {
      type: "string",
      value: "auto|cpu|cuda",
      description: "the torch learner's device (with --learner torch)",
      defaultText: "auto",
    },
    traces: {
      type: "boolean",
      description:
        "spans of every process to a local OTLP receiver (<runs-dir>/traces.jsonl), /metrics per service",
    },
    "traces-port": {
      type: "string",
      value: "PORT",
      description: "port of the local OTLP/HTTP receiver (with --traces)",
      default: "4318",
    },
    "runs-dir": { type: "string", value: "DIR", description: "where --traces stores spans", default: "runs" },
  },
  notes: [
    "Environment: NATS_URL (default nats://127.0.0.1:4222; unset, a server there that is open to anonymous\n" +
      "clients or wants other credentials is left alone and ours runs on a free port), REWARD_MESH_NATS_STORE,\n" +
      "REWARD_MESH_NATS_AUTH_DIR, REWARD_MESH_LOG_DIR,\n" +
      "REWARD_MESH_NATS_AUTH=off (NATS without users, development only), REWARD_MESH_GRPC_* (TLS, tokens).",
  ],
  examples: ["reward-mesh up --services length,tool-call"],
};

/** Usage of the up command. */
export const UP_USAGE = usageLine(UP_COMMAND);

/** Runs `up` until SIGINT/SIGTERM. */
export async function runUp(args: readonly string[], config: CliConfig, stdout: Writable): Promise<number> {
  const { values: flags, positionals: positional } = parseCommand(UP_COMMAND, args);
  if (positional.length > 0) throw new UsageError(UP_USAGE);
  if (flags["learner"] !== undefined && flags["learner"] !== "torch")
    throw new UsageError(
      `'--learner' must be 'torch' (the embedded learner runs inside 'train'), got '${String(flags["learner"])}'`,
    );
  if (flags["learner"] === undefined && (flags["model"] !== undefined || flags["device"] !== undefined))
    throw new UsageError("'--model' and '--device' go with '--learner torch'");
  if (flags["learner"] === "torch") checkTorchAvailable(config.python);
  const services =
    typeof flags["services"] === "string" ? flags["services"].split(",").map((s) => s.trim()) : undefined;
  // Listen before starting anything: a Ctrl-C during start-up must still stop what was started.
  const signalled = new Promise<void>((resolveSignal) => {
    process.once("SIGINT", () => resolveSignal());
    process.once("SIGTERM", () => resolveSignal());
  });
  const traces = flags["traces"] ? await startTraceReceiver(flags, stdout) : undefined;
  const mesh = await startMesh(config, {
    services,
    ...(traces ? { telemetry: { otlpEndpoint: traces.endpoint } } : {}),
  }).catch(async (err: unknown) => {
    await traces?.close();
    throw err;
  });
  let learner: TorchLearnerProcess | undefined;
  try {
    if (flags["learner"] === "torch") {
      const logFile = resolve(config.logDir, "learner-torch.log");
      learner = await startTorchLearner({
        model: typeof flags["model"] === "string" ? flags["model"] : "builtin:tiny",
        device: typeof flags["device"] === "string" ? flags["device"] : "auto",
        python: config.python,
        env: config.env,
        security: config.grpc,
        logFile,
      });
      printMesh(mesh, stdout);
      stdout.write(
        `${"learner".padEnd(14)} ${learner.address.padEnd(22)} pid ${learner.child.pid}  log ${logFile}  (train with learner: grpc://${learner.address})\n`,
      );
    } else printMesh(mesh, stdout);
  } catch (err) {
    await mesh.stop();
    await traces?.close();
    throw err;
  }
  stdout.write("mesh is up; Ctrl-C to stop\n");
  await signalled;
  stdout.write("stopping...\n");
  await learner?.stop();
  await mesh.stop();
  await traces?.close();
  return 0;
}
