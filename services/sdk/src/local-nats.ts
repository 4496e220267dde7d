/**
 * Starting a local `nats-server -js` for development, `reward-mesh up`, tests and benchmarks
 * (production uses the Helm chart's NATS). Readiness is polled (ports file, then a JetStream
 * account-info request), never slept for.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { envString, executableSearchPath, type NatsAuthOptions, processEnv } from "./config.js";
import { MeshError, UnavailableError } from "./errors.js";
import { isAuthorizationError, natsConnectionOptions } from "./nats-auth.js";
import { NATS_MAX_PAYLOAD } from "./validate.js";

/** A NATS server this process started (or found already running). */
export interface LocalNats {
  /** Client URL, e.g. `nats://127.0.0.1:4222`. */
  readonly url: string;
  /** True when this process started the server (and `stop()` will stop it). */
  readonly started: boolean;
  /** Stops the server we started (no-op for one we found) and removes its temporary store. */
  stop(): Promise<void>;
  /** Kills the server abruptly (SIGKILL) — for failure tests. */
  kill(): void;
}

/** Options of {@link startNatsServer}. */
export interface StartNatsOptions {
  /**
   * The `nats-server` binary.
   * @default `$NATS_SERVER_BIN`, else `nats-server` on PATH, else `/usr/sbin/nats-server` (Debian's package)
   */
  readonly binary?: string;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** -1 = a free port chosen by the server. @default -1 */
  readonly port?: number;
  /** JetStream store directory. @default a fresh temporary directory, removed on stop */
  readonly storeDir?: string;
  /** @default 15000 */
  readonly readyTimeoutMs?: number;
  /**
   * A `nats-server` configuration file (accounts, users, permissions: see `writeMeshAuth`), appended to
   * the mesh's `max_payload`; the command-line flags (host, port, store, `-js`) still apply on top of it.
   * @default none — an open server that accepts anonymous clients
   */
  readonly configFile?: string;
  /** Credentials the readiness check connects with (a server with auth refuses anonymous clients). */
  readonly auth?: NatsAuthOptions;
}

/** The nats-server binary to use, or undefined if none is installed. */
export function findNatsServerBinary(explicit?: string): string | undefined {
  if (explicit) return explicit;
  const fromEnv = envString(processEnv(), "NATS_SERVER_BIN", "");
  if (fromEnv) return fromEnv;
  for (const dir of executableSearchPath()) {
    if (dir && existsSync(join(dir, "nats-server"))) return join(dir, "nats-server");
  }
  return existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : undefined;
}

/**
 * Polls until `url` answers a JetStream request (connecting with `auth`) or `deadline` passes. A server
 * that refuses the credentials fails at once: it is up, and waiting will not change its mind.
 */
export async function waitForJetStream(
  url: string,
  deadline: number,
  child?: ChildProcess,
  auth?: NatsAuthOptions,
): Promise<void> {
  let lastErr: unknown;
  const credentials = natsConnectionOptions(auth);
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null)
      throw new UnavailableError(`nats-server exited with code ${child.exitCode}`);
    try {
      const nc = await connect({ ...credentials, servers: url, timeout: 1000, reconnect: false });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2000 });
        await jsm.getAccountInfo();
        return;
      } finally {
        await nc.close();
      }
    } catch (err) {
      if (isAuthorizationError(err)) throw new NatsAuthRefusedError(url, err);
      lastErr = err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new UnavailableError(`NATS JetStream at ${url} did not become ready: ${String(lastErr)}`, {
    cause: lastErr,
  });
}

/** A NATS server answers at `url` but refuses this client's credentials (or anonymous clients). */
export class NatsAuthRefusedError extends MeshError {
  override readonly name = "NatsAuthRefusedError";
  /** Other credentials may work; the same ones will not. */
  readonly retryable = false;
  constructor(url: string, cause: unknown) {
    super(`NATS at ${url} refused the connection: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

/**
 * Starts `nats-server -js` with the mesh's `max_payload` ({@link NATS_MAX_PAYLOAD}), and waits until
 * JetStream answers.
 */
export async function startNatsServer(options: StartNatsOptions = {}): Promise<LocalNats> {
  const binary = findNatsServerBinary(options.binary);
  if (!binary) {
    throw new UnavailableError(
      "nats-server is not installed: on Debian/Ubuntu run `apt-get install -y nats-server`",
    );
  }
  const host = options.host ?? "127.0.0.1";
  const work = await mkdtemp(join(tmpdir(), "reward-mesh-nats-"));
  const storeDir = options.storeDir ?? join(work, "js");
  // The mesh's message limit (nats-server takes max_payload from a config file only; its default is 1 MB).
  // nats-server reads one config file: the caller's (accounts, users) is appended to the mesh's limit.
  const configFile = join(work, "nats.conf");
  const extra = options.configFile ? `\n${await readFile(options.configFile, "utf8")}` : "";
  await writeFile(configFile, `max_payload: ${NATS_MAX_PAYLOAD}\n${extra}`, { mode: 0o600 });
  const args = [
    "-c",
    configFile,
    "-js",
    "-a",
    host,
    "-p",
    String(options.port ?? -1),
    "-sd",
    storeDir,
    "--ports_file_dir",
    work,
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const deadline = Date.now() + (options.readyTimeoutMs ?? 15_000);
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(work, { recursive: true, force: true });
  };
  try {
    let url: string | undefined;
    while (!url) {
      if (child.exitCode !== null)
        throw new UnavailableError(`nats-server exited (${child.exitCode}): ${stderr.trim()}`);
      if (Date.now() > deadline)
        throw new UnavailableError(`nats-server wrote no ports file: ${stderr.trim()}`);
      const f = (await readdir(work)).find((n) => n.endsWith(".ports"));
      if (f) {
        const ports = JSON.parse(await readFile(join(work, f), "utf8")) as { nats?: string[] };
        url = ports.nats?.[0];
      }
      if (!url) await new Promise((r) => setTimeout(r, 20));
    }
    await waitForJetStream(url, deadline, child, options.auth);
    return { url, started: true, stop: cleanup, kill: () => child.kill("SIGKILL") };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * True when a NATS server with JetStream answers at `url` within `timeoutMs` (connecting with `auth`).
 * Throws {@link NatsAuthRefusedError} when one answers but refuses the credentials.
 */
export async function isJetStreamReachable(
  url: string,
  timeoutMs = 1500,
  auth?: NatsAuthOptions,
): Promise<boolean> {
  try {
    await waitForJetStream(url, Date.now() + timeoutMs, undefined, auth);
    return true;
  } catch (err) {
    if (err instanceof NatsAuthRefusedError) throw err;
    return false;
  }
}

/**
 * Uses the NATS at `url` if it answers (to `options.auth`), else starts `nats-server -js` on that URL's
 * host and port with its store in `storeDir` (and `configFile`, when given).
 */
export async function ensureNats(
  url: string,
  options: Omit<StartNatsOptions, "host" | "port"> = {},
): Promise<LocalNats> {
  if (await isJetStreamReachable(url, 1500, options.auth))
    return { url, started: false, stop: async () => {}, kill: () => {} };
  const u = new URL(url.split(",")[0]!.trim());
  const host = u.hostname === "localhost" ? "127.0.0.1" : u.hostname;
  if (host !== "127.0.0.1" && host !== "::1") {
    throw new UnavailableError(
      `NATS at ${url} is not reachable, and it is not local, so it cannot be started here`,
    );
  }
  return startNatsServer({ ...options, host, port: Number(u.port || 4222) });
}
