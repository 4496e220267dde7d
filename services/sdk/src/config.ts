/**
 * Typed, validated configuration from environment variables. This is the only SDK module that reads
 * `process.env`. Blank values count as unset; bad values fail start-up with `'<KEY>' <problem>`.
 * @module
 */
import { ConfigError } from "./errors.js";

/** An environment: `process.env` or a plain object in tests. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The process environment (the one place the SDK touches `process.env`). */
export function processEnv(): Env {
  return process.env;
}

function raw(env: Env, key: string): string | undefined {
  const v = env[key];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === "" ? undefined : t;
}

/** Reads a string; `def` when unset. */
export function envString(env: Env, key: string, def: string): string {
  return raw(env, key) ?? def;
}

/** Reads an integer in `[min, max]`; `def` when unset. */
export function envInt(
  env: Env,
  key: string,
  def: number,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const v = raw(env, key);
  if (v === undefined) return def;
  if (!/^-?\d+$/.test(v)) throw new ConfigError(key, `must be an integer, got '${v}'`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(key, `must be in [${min}, ${max}], got ${n}`);
  return n;
}

/** Reads a finite number in `[min, max]`; `def` when unset. */
export function envNumber(env: Env, key: string, def: number, min = -Infinity, max = Infinity): number {
  const v = raw(env, key);
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new ConfigError(key, `must be a number, got '${v}'`);
  if (n < min || n > max) throw new ConfigError(key, `must be in [${min}, ${max}], got ${n}`);
  return n;
}

/** Reads a boolean (`true/false/1/0/yes/no/on/off`); `def` when unset. */
export function envBool(env: Env, key: string, def: boolean): boolean {
  const v = raw(env, key);
  if (v === undefined) return def;
  const l = v.toLowerCase();
  if (["true", "1", "yes", "on"].includes(l)) return true;
  if (["false", "0", "no", "off"].includes(l)) return false;
  throw new ConfigError(key, `must be a boolean (true/false), got '${v}'`);
}

/** Reads one of `choices`; `def` when unset. */
export function envEnum<T extends string>(env: Env, key: string, choices: readonly T[], def: T): T {
  const v = raw(env, key);
  if (v === undefined) return def;
  if (!(choices as readonly string[]).includes(v)) {
    throw new ConfigError(key, `must be one of ${choices.join(", ")}, got '${v}'`);
  }
  return v as T;
}

/**
 * Whether an `OTEL_*` exporter variable is set (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT`, ...):
 * telemetry is exported only then.
 */
export function telemetryExportConfigured(env: Env = processEnv()): boolean {
  return Object.keys(env).some(
    (k) => k.startsWith("OTEL_") && k.includes("EXPORTER") && raw(env, k) !== undefined,
  );
}

/**
 * Entrypoints call this before the OpenTelemetry SDK starts: unless an `OTEL_*` exporter variable says where
 * to export, it sets `OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none` in `env` (this process's environment).
 * Otherwise the SDK falls back to OTLP on `localhost:4318`; with no collector there, every batch of spans
 * (three per rollout) is held through up to five retries, old space fills with them and a service at
 * 1,000 rollouts/s sits at ~190–270 MB RSS instead of ~130 MB (`npm run bench:soak`).
 */
export function applyTelemetryDefaults(env: Record<string, string | undefined> = process.env): void {
  if (telemetryExportConfigured(env)) return;
  env["OTEL_TRACES_EXPORTER"] = "none";
  env["OTEL_METRICS_EXPORTER"] = "none";
  env["OTEL_LOGS_EXPORTER"] = "none";
}

/** The directories of `PATH`, in order. */
export function executableSearchPath(env: Env = processEnv()): string[] {
  return envString(env, "PATH", "")
    .split(":")
    .filter((d) => d !== "");
}

/** Options shared by every mesh process that talks to NATS. */
export interface BusOptions {
  /**
   * NATS server URL(s), comma-separated.
   * @default "nats://127.0.0.1:4222" — the local `nats-server -js` the project's scripts start.
   */
  readonly natsUrl: string;
  /**
   * Max age of messages kept in the mesh streams, in seconds (0 = unlimited).
   * @default 604800 (7 days) — enough to replay a run, bounded so disks do not fill.
   */
  readonly streamMaxAgeSeconds: number;
  /**
   * Max bytes per mesh stream (-1 = unlimited).
   * @default -1
   */
  readonly streamMaxBytes: number;
  /**
   * JetStream de-duplication window for `Nats-Msg-Id`, in ms.
   * @default 120000 — JetStream's default; a redelivered result is re-published well inside it.
   */
  readonly duplicateWindowMs: number;
  /**
   * Stream replicas (1 for a single server; 3 in the Helm chart's cluster).
   * @default 1
   */
  readonly streamReplicas: number;
}

/** Reads {@link BusOptions} from `NATS_URL` and `MESH_STREAM_*`. */
export function loadBusOptions(env: Env = processEnv()): BusOptions {
  return {
    natsUrl: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    streamMaxAgeSeconds: envInt(env, "MESH_STREAM_MAX_AGE_SECONDS", 604_800, 0),
    streamMaxBytes: envInt(env, "MESH_STREAM_MAX_BYTES", -1, -1),
    duplicateWindowMs: envInt(env, "MESH_DUPLICATE_WINDOW_MS", 120_000, 1_000),
    streamReplicas: envInt(env, "MESH_STREAM_REPLICAS", 1, 1, 5),
  };
}

/** Options of one reward-service process; every key is `<PREFIX>_<NAME>` (e.g. `LENGTH_GRPC_PORT`). */
export interface ServiceRuntimeOptions {
  /**
   * Address the gRPC server binds.
   * @default "127.0.0.1" — safe on a shared machine; the Helm chart sets 0.0.0.0.
   */
  readonly grpcHost: string;
  /**
   * gRPC port (0 = any free port, printed at start).
   * @default the service's own default port
   */
  readonly grpcPort: number;
  /**
   * Rollouts scored at once, over gRPC and JetStream together.
   * @default 8
   */
  readonly concurrency: number;
  /**
   * Whether to run the JetStream worker beside the gRPC server.
   * @default true
   */
  readonly workerEnabled: boolean;
  /**
   * How long JetStream waits for an ack before redelivering, in ms.
   * @default 30000
   */
  readonly ackWaitMs: number;
  /**
   * Deliveries after which a message that keeps failing goes to the DLQ instead of being retried.
   * @default 10
   */
  readonly maxDeliver: number;
  /**
   * First nak back-off in ms; doubles per delivery up to `nakBackoffMaxMs`.
   * @default 500
   */
  readonly nakBackoffMs: number;
  /** @default 30000 */
  readonly nakBackoffMaxMs: number;
  /**
   * pino log level.
   * @default "info"
   */
  readonly logLevel: string;
  /** NATS / stream options (unprefixed `NATS_URL`, `MESH_STREAM_*`). */
  readonly bus: BusOptions;
}

/** Reads {@link ServiceRuntimeOptions} for the service whose env prefix is `prefix` (e.g. `LENGTH`). */
export function loadServiceRuntimeOptions(
  prefix: string,
  defaultPort: number,
  env: Env = processEnv(),
): ServiceRuntimeOptions {
  const k = (name: string) => `${prefix}_${name}`;
  const nakBackoffMs = envInt(env, k("NAK_BACKOFF_MS"), 500, 0);
  const nakBackoffMaxMs = envInt(env, k("NAK_BACKOFF_MAX_MS"), 30_000, 0);
  if (nakBackoffMaxMs < nakBackoffMs) {
    throw new ConfigError(k("NAK_BACKOFF_MAX_MS"), `must be >= ${k("NAK_BACKOFF_MS")} (${nakBackoffMs})`);
  }
  return {
    grpcHost: envString(env, k("GRPC_HOST"), "127.0.0.1"),
    grpcPort: envInt(env, k("GRPC_PORT"), defaultPort, 0, 65_535),
    concurrency: envInt(env, k("CONCURRENCY"), 8, 1, 4096),
    workerEnabled: envBool(env, k("WORKER"), true),
    ackWaitMs: envInt(env, k("ACK_WAIT_MS"), 30_000, 100),
    maxDeliver: envInt(env, k("MAX_DELIVER"), 10, 1),
    nakBackoffMs,
    nakBackoffMaxMs,
    logLevel: envEnum(
      env,
      "LOG_LEVEL",
      ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
      "info",
    ),
    bus: loadBusOptions(env),
  };
}
