/**
 * Starts the PyTorch learner (`trainer/learner-torch`, `python3 -m reward_mesh_learner serve`) as its own
 * process, as `reward-mesh train --with-mesh`, `up --learner torch`, the demo, tests and benchmarks do —
 * by default on port 0, reading the port it bound from its `listening` line on stdout — and resolves once
 * it reports SERVING (`grpc.health.v1`, polled, never a fixed sleep).
 * Drive it with {@link createRemoteLearner} at the returned address.
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { type GrpcClientSecurity, waitForLogRecord, waitServing } from "@reward-mesh/sdk";

/** The Python package's directory (what goes on `PYTHONPATH`). */
export const TORCH_LEARNER_DIR = fileURLToPath(new URL("../../learner-torch", import.meta.url));

/**
 * The project's Python environment, `.venv/bin/python` in the repository root (resolved from this file,
 * not the working directory): `bash scripts/bootstrap.sh --with-torch` creates it from
 * `python/requirements.lock` (torch, grpcio, protobuf, transformers, peft, …). `REWARD_MESH_PYTHON`
 * names another interpreter (the CLI's config reads it).
 */
export const DEFAULT_PYTHON = fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));

/** What to do when the interpreter is missing or lacks the learner's packages. */
const INSTALL_HINT =
  "run `bash scripts/bootstrap.sh --with-torch` (creates the repository's .venv from python/requirements.lock), " +
  "or set REWARD_MESH_PYTHON to an interpreter with torch, grpcio and protobuf";

/** Options of {@link startTorchLearner} (the `serve` command line). */
export interface TorchLearnerProcessOptions {
  /** `builtin:tiny`, `builtin:tiny4k`, `builtin:small` or a Hugging Face model directory. @default "builtin:tiny" */
  readonly model?: string;
  /** @default "auto" */
  readonly device?: string;
  /** @default "auto" */
  readonly dtype?: string;
  /** Seeds initialisation and sampling. @default 0 */
  readonly seed?: number;
  /** Restore this checkpoint directory (written by SaveCheckpoint). */
  readonly resume?: string;
  /** @default 0 (the whole mini-batch at once) */
  readonly microBatchSize?: number;
  readonly gradientCheckpointing?: boolean;
  /** @default 0 (full fine-tuning) */
  readonly loraRank?: number;
  /** torch CPU threads. @default 0 (torch's default) */
  readonly threads?: number;
  /** Supervised warm start on `{prompt|messages, response}` lines before serving. */
  readonly warmup?: { readonly file: string; readonly steps: number; readonly lr: number } | null;
  /** Interpreter. @default {@link DEFAULT_PYTHON} */
  readonly python?: string;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /**
   * @default 0: the learner binds a free port itself and prints it in its `listening` line, which is
   * where the address is read from (no port picked beforehand that another process could take first)
   */
  readonly port?: number;
  /** Where the process's stderr (its log) is appended; the last 20 000 characters are kept anyway. */
  readonly logFile?: string;
  /** How long model loading (and warm-up) may take. @default 300000 */
  readonly readyTimeoutMs?: number;
  /** Working directory of the process (relative checkpoint paths resolve against it). @default this process's */
  readonly cwd?: string;
  /**
   * Environment of the process (e.g. `CUDA_VISIBLE_DEVICES`, `LD_LIBRARY_PATH` on a GPU node); `PATH`
   * defaults to the system's, `PYTHONPATH` is always the package's directory. The learner's gRPC
   * security comes from here too (`LEARNER_GRPC_TLS_*`, `_TOKEN`, `_INSECURE`, falling back to
   * `REWARD_MESH_GRPC_*`; see the learner's README). @default only `PATH`
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * How to dial it for the readiness check: TLS trusting its certificate's CA, a client certificate
   * when it requires one. @default plaintext (it listens on loopback)
   */
  readonly security?: GrpcClientSecurity;
}

/** A running PyTorch learner process. */
export interface TorchLearnerProcess {
  /** `host:port` of its gRPC server. */
  readonly address: string;
  readonly child: ChildProcess;
  /** The tail of its stderr. */
  stderr(): string;
  /** SIGTERM, then the exit code (a clean shutdown gives 0). */
  stop(): Promise<number | null>;
}

/** Thrown when the interpreter lacks torch / grpcio / protobuf; says what to install. */
export class TorchUnavailableError extends Error {
  override readonly name = "TorchUnavailableError";
}

/**
 * Checks that `python` exists and can import what the learner needs; throws {@link TorchUnavailableError}
 * saying how to install it (`bash scripts/bootstrap.sh --with-torch`) otherwise.
 */
export function checkTorchAvailable(python = DEFAULT_PYTHON): void {
  if (python.includes("/") && !existsSync(python)) {
    throw new TorchUnavailableError(`no Python interpreter at ${python}: ${INSTALL_HINT}`);
  }
  try {
    execFileSync(python, ["-c", "import torch, grpc, google.protobuf"], { stdio: "pipe", timeout: 60_000 });
  } catch (err) {
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim().split("\n").at(-1) ?? String(err);
    throw new TorchUnavailableError(
      `the PyTorch learner needs torch, grpcio and protobuf for ${python} (${why}): ${INSTALL_HINT}`,
    );
  }
}

/** The `serve` arguments for `o` on `port`. */
export function torchServeArgs(o: TorchLearnerProcessOptions, port: number): string[] {
  const args = [
    "-m",
    "reward_mesh_learner",
    "serve",
    "--host",
    o.host ?? "127.0.0.1",
    "--port",
    String(port),
    "--model",
    o.model ?? "builtin:tiny",
    "--device",
    o.device ?? "auto",
    "--dtype",
    o.dtype ?? "auto",
    "--seed",
    String(o.seed ?? 0),
    "--micro-batch-size",
    String(o.microBatchSize ?? 0),
    "--lora-rank",
    String(o.loraRank ?? 0),
    "--threads",
    String(o.threads ?? 0),
  ];
  if (o.gradientCheckpointing) args.push("--gradient-checkpointing");
  if (o.resume !== undefined) args.push("--resume", o.resume);
  if (o.warmup) {
    args.push("--warmup-file", o.warmup.file, "--warmup-steps", String(o.warmup.steps));
    args.push("--warmup-lr", String(o.warmup.lr));
  }
  return args;
}

/** Starts the PyTorch learner and waits until it serves. */
export async function startTorchLearner(o: TorchLearnerProcessOptions = {}): Promise<TorchLearnerProcess> {
  const python = o.python ?? DEFAULT_PYTHON;
  if (python.includes("/") && !existsSync(python)) {
    throw new TorchUnavailableError(`no Python interpreter at ${python}: ${INSTALL_HINT}`);
  }
  const started = Date.now();
  let log: WriteStream | undefined;
  if (o.logFile) {
    mkdirSync(dirname(o.logFile), { recursive: true });
    log = createWriteStream(o.logFile, { flags: "a" });
  }
  // The learner resolves relative paths (checkpoints, warm-up file) against the caller's directory.
  const child = spawn(python, torchServeArgs(o, o.port ?? 0), {
    cwd: o.cwd ?? process.cwd(),
    env: {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      ...o.env,
      PYTHONPATH: TORCH_LEARNER_DIR,
      PYTHONUNBUFFERED: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  const onErr = (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
    log?.write(d);
  };
  child.stderr!.on("data", onErr);
  child.stdout!.on("data", (d: Buffer) => log?.write(d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const code = await exited;
    log?.end();
    return code;
  };
  const timeoutMs = o.readyTimeoutMs ?? 300_000;
  let address: string;
  try {
    // Its one JSON line on stdout once bound: {"event": "listening", "address": "HOST:PORT", ...}.
    const listening = await waitForLogRecord(
      child,
      (r) => r["event"] === "listening" && typeof r["address"] === "string",
      { what: "the torch learner's listening line", stream: "stdout", timeoutMs, describe: () => stderr },
    );
    const port = /:(\d+)$/.exec(listening["address"] as string)?.[1];
    if (port === undefined) {
      throw new Error(`the torch learner's listening line has no port: ${JSON.stringify(listening)}`);
    }
    address = `${o.host ?? "127.0.0.1"}:${port}`;
    await waitServing(address, {
      child,
      timeoutMs: Math.max(1_000, timeoutMs - (Date.now() - started)),
      describe: () => `torch learner stderr:\n${stderr}`,
      ...(o.security ? { security: o.security } : {}),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, child, stderr: () => stderr, stop };
}
