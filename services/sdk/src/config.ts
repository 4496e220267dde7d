/**
 * Typed, validated configuration from environment variables. This is the only SDK module that reads
 * `process.env`. Blank values count as unset; bad values fail start-up with `'<KEY>' <problem>`.
 * @module
 */
import { readFileSync, statSync } from "node:fs";
import { DiagLogLevel, diag } from "@opentelemetry/api";
import { defineEnv, type EnvSpec, envSchema, loadEnv, prefixEnv, readEnv } from "./env-spec.js";
import { ConfigError } from "./errors.js";
import {
  type BearerToken,
  checkCertificates,
  checkKeyPair,
  type GrpcClientSecurity,
  type GrpcServerSecurity,
  type PemFile,
} from "./grpc-security.js";

/** An environment: `process.env` or a plain object in tests. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The process environment (the one place the SDK touches `process.env`). */
export function processEnv(): Env {
  return process.env;
}

/**
 * The rollout domains a discovered service consumes as configured: the comma-separated value of its
 * manifest's `domainsEnv` variable when that is declared and set, else the manifest's `domains` (its
 * default). Discovery's check of a loaded definition, the mesh's NATS credentials and the trainer's
 * default domains all use this list, so a documented domains variable widens or narrows all of them.
 */
export function configuredServiceDomains(
  manifest: { readonly domains: readonly string[]; readonly domainsEnv?: string | undefined },
  env: Env = processEnv(),
): readonly string[] {
  const key = manifest.domainsEnv;
  const v = key === undefined ? undefined : raw(env, key);
  if (key === undefined || v === undefined) return manifest.domains;
  const domains = v
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "");
  if (domains.length === 0) throw new ConfigError(key, "must list at least one domain");
  for (const d of domains)
    if (!/^[a-z][a-z0-9_-]*$/.test(d))
      throw new ConfigError(key, `has an invalid domain '${d}' (want [a-z][a-z0-9_-]*)`);
  return [...new Set(domains)];
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

/** The signals the OpenTelemetry SDK exports, as named in `OTEL_<SIGNAL>_EXPORTER`. */
const SIGNALS = ["TRACES", "METRICS", "LOGS"] as const;

/**
 * Whether `signal` (`TRACES`, `METRICS`, `LOGS`) is configured to be exported: its own
 * `OTEL_<SIGNAL>_EXPORTER` or `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`, the shared
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, or for metrics `OTEL_EXPORTER_PROMETHEUS_{PORT,HOST}`. A variable of
 * another signal does not count (a Prometheus port alone must not turn on OTLP traces).
 */
export function signalExportConfigured(signal: (typeof SIGNALS)[number], env: Env = processEnv()): boolean {
  const set = (k: string) => raw(env, k) !== undefined;
  return (
    set(`OTEL_${signal}_EXPORTER`) ||
    set(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`) ||
    set("OTEL_EXPORTER_OTLP_ENDPOINT") ||
    (signal === "METRICS" && (set("OTEL_EXPORTER_PROMETHEUS_PORT") || set("OTEL_EXPORTER_PROMETHEUS_HOST")))
  );
}

/** Whether any signal is configured to be exported ({@link signalExportConfigured}). */
export function telemetryExportConfigured(env: Env = processEnv()): boolean {
  return SIGNALS.some((s) => signalExportConfigured(s, env));
}

/**
 * Entrypoints call this before the OpenTelemetry SDK starts. Per signal, unless a variable of that signal
 * says where to export ({@link signalExportConfigured}), it sets `OTEL_<SIGNAL>_EXPORTER=none` in `env`
 * (this process's environment); a Prometheus port or host alone selects the `prometheus` metrics exporter.
 * Otherwise the SDK falls back to OTLP on `localhost:4318`; with no collector there, every batch of spans
 * (three per rollout) is held through up to five retries, old space fills with them and a service at
 * 1,000 rollouts/s sits at ~190–270 MB RSS instead of ~130 MB (`npm run bench:soak`).
 *
 * It also installs an OpenTelemetry diagnostics logger at WARN (see {@link installTelemetryDiagnostics})
 * when `env` is this process's environment, so a `/metrics` port that cannot be bound is reported.
 */
export function applyTelemetryDefaults(env: Record<string, string | undefined> = process.env): void {
  if (env === process.env) installTelemetryDiagnostics(env);
  const unset = (k: string) => raw(env, k) === undefined;
  if (envBool(env, "REWARD_MESH_TELEMETRY", false)) {
    // The one switch: OTLP traces (to OTEL_EXPORTER_OTLP_ENDPOINT, the SDK's default otherwise) and a
    // Prometheus `/metrics` endpoint (OTEL_EXPORTER_PROMETHEUS_PORT, 9464 by default); any OTEL_*
    // variable set explicitly wins.
    if (unset("OTEL_TRACES_EXPORTER")) env["OTEL_TRACES_EXPORTER"] = "otlp";
    if (unset("OTEL_METRICS_EXPORTER")) env["OTEL_METRICS_EXPORTER"] = "prometheus";
    if (unset("OTEL_LOGS_EXPORTER")) env["OTEL_LOGS_EXPORTER"] = "none";
    return;
  }
  const prometheusOnly =
    unset("OTEL_METRICS_EXPORTER") &&
    unset("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") &&
    unset("OTEL_EXPORTER_OTLP_ENDPOINT") &&
    (!unset("OTEL_EXPORTER_PROMETHEUS_PORT") || !unset("OTEL_EXPORTER_PROMETHEUS_HOST"));
  for (const signal of SIGNALS)
    if (!signalExportConfigured(signal, env)) env[`OTEL_${signal}_EXPORTER`] = "none";
  if (prometheusOnly) env["OTEL_METRICS_EXPORTER"] = "prometheus";
}

let diagnosticsInstalled = false;

/**
 * Installs a diagnostics logger on `@opentelemetry/api` that writes the SDK's warnings and errors to
 * stderr (the SDK is silent otherwise: a Prometheus `/metrics` port already in use was swallowed). A
 * bind failure names the port and the variable that sets it. Idempotent.
 */
export function installTelemetryDiagnostics(env: Env = processEnv()): void {
  if (diagnosticsInstalled) return;
  diagnosticsInstalled = true;
  const write = (level: string, message: string, args: unknown[]) => {
    const text = [message, ...args.map((a) => (a instanceof Error ? a.message : String(a)))].join(" ");
    // The SDK warns that an exporter set to "none" leaves that signal off: that is telemetry off as
    // configured (applyTelemetryDefaults sets it), not a problem to print on every command.
    if (/_EXPORTER contains "none"/.test(text)) return;
    const bind = /(EADDRINUSE|EACCES|EADDRNOTAVAIL)/.exec(text);
    const hint = bind
      ? ` (the Prometheus /metrics port ${raw(env, "OTEL_EXPORTER_PROMETHEUS_PORT") ?? "9464"} cannot be bound: set OTEL_EXPORTER_PROMETHEUS_PORT to a free port)`
      : "";
    process.stderr.write(`${JSON.stringify({ level, msg: `opentelemetry: ${text}${hint}` })}\n`);
  };
  diag.setLogger(
    {
      error: (m, ...a) => write("error", m, a),
      warn: (m, ...a) => write("warn", m, a),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}

/** `REWARD_MESH_TELEMETRY`: the one switch that turns telemetry on (read by {@link applyTelemetryDefaults}). */
export const TELEMETRY_ENV = defineEnv({
  REWARD_MESH_TELEMETRY: {
    type: "boolean",
    default: false,
    description:
      "Turn telemetry on: OTLP traces (OTEL_EXPORTER_OTLP_ENDPOINT) and Prometheus /metrics (OTEL_EXPORTER_PROMETHEUS_PORT, default 9464). Explicit OTEL_* variables win.",
  },
});

/** The directories of `PATH`, in order. */
export function executableSearchPath(env: Env = processEnv()): string[] {
  return envString(env, "PATH", "")
    .split(":")
    .filter((d) => d !== "");
}

/**
 * How a process authenticates to NATS (and whether it uses TLS). At most one of user/password, token,
 * NKEY seed or `.creds` file; TLS combines with any of them. Every path is checked at start-up.
 */
export interface NatsAuthOptions {
  /** `NATS_USER` (with `NATS_PASSWORD`). */
  readonly user?: string;
  /** `NATS_PASSWORD` (with `NATS_USER`). */
  readonly password?: string;
  /** `NATS_TOKEN`. */
  readonly token?: string;
  /** `NATS_NKEY_SEED_FILE`: a file holding a user NKEY seed (`SU...`). */
  readonly nkeySeedFile?: string;
  /** `NATS_CREDS_FILE`: a `.creds` file (user JWT + seed; operator/JWT mode). */
  readonly credsFile?: string;
  /** `NATS_TLS_CA_FILE`: CA bundle that verifies the server (implies TLS). */
  readonly tlsCaFile?: string;
  /** `NATS_TLS_CERT_FILE`: client certificate (with `NATS_TLS_KEY_FILE`) for mutual TLS. */
  readonly tlsCertFile?: string;
  /** `NATS_TLS_KEY_FILE`: client key (with `NATS_TLS_CERT_FILE`). */
  readonly tlsKeyFile?: string;
  /**
   * `NATS_INBOX_PREFIX`: prefix of this process's reply subjects (JetStream publish acks, pulled
   * messages). With per-user permissions each user may subscribe only to its own prefix, so one user
   * cannot read another's replies. @default "_INBOX"
   */
  readonly inboxPrefix?: string;
}

/** The environment variables of {@link NatsAuthOptions}, by option. */
export const NatsAuthEnv = {
  user: "NATS_USER",
  password: "NATS_PASSWORD",
  token: "NATS_TOKEN",
  nkeySeedFile: "NATS_NKEY_SEED_FILE",
  credsFile: "NATS_CREDS_FILE",
  tlsCaFile: "NATS_TLS_CA_FILE",
  tlsCertFile: "NATS_TLS_CERT_FILE",
  tlsKeyFile: "NATS_TLS_KEY_FILE",
  inboxPrefix: "NATS_INBOX_PREFIX",
} as const satisfies Record<keyof NatsAuthOptions, string>;

/** `NATS_USER`, `NATS_PASSWORD`, `NATS_TOKEN`, the NATS credential and TLS files, `NATS_INBOX_PREFIX`. */
export const NATS_AUTH_ENV = defineEnv({
  NATS_USER: { type: "string", description: "NATS user (with NATS_PASSWORD)." },
  NATS_PASSWORD: { type: "string", description: "NATS password (with NATS_USER)." },
  NATS_TOKEN: { type: "string", description: "NATS token." },
  NATS_NKEY_SEED_FILE: { type: "file", description: "A file holding a user NKEY seed (SU...)." },
  NATS_CREDS_FILE: { type: "file", description: "A .creds file (user JWT + seed; operator/JWT mode)." },
  NATS_TLS_CA_FILE: { type: "file", description: "CA bundle that verifies the NATS server (implies TLS)." },
  NATS_TLS_CERT_FILE: {
    type: "file",
    description: "Client certificate for mutual TLS to NATS (with NATS_TLS_KEY_FILE).",
  },
  NATS_TLS_KEY_FILE: {
    type: "file",
    description: "Client key for mutual TLS to NATS (with NATS_TLS_CERT_FILE).",
  },
  NATS_INBOX_PREFIX: {
    type: "string",
    default: "_INBOX",
    description: "Prefix of this process's reply subjects (a NATS subject without wildcards).",
  },
});

/** Checks that the file variable `key` (set to `path`) names a file. */
function checkedFile(key: string, path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (err) {
    throw new ConfigError(key, `names a file that cannot be read: ${(err as Error).message}`, { cause: err });
  }
  if (!isFile) throw new ConfigError(key, `must name a file, got '${path}'`);
  return path;
}

/**
 * Reads {@link NatsAuthOptions} from `NATS_USER`, `NATS_PASSWORD`, `NATS_TOKEN`, `NATS_NKEY_SEED_FILE`,
 * `NATS_CREDS_FILE`, `NATS_TLS_CA_FILE`, `NATS_TLS_CERT_FILE`, `NATS_TLS_KEY_FILE`, `NATS_INBOX_PREFIX`
 * ({@link NATS_AUTH_ENV}). Files must exist; their contents are checked when connecting (still at start-up).
 */
export function loadNatsAuthOptions(env: Env = processEnv()): NatsAuthOptions {
  const E = NatsAuthEnv;
  const { values: v, set } = readEnv(NATS_AUTH_ENV, env);
  const inboxPrefix = set.has(E.inboxPrefix) ? v.NATS_INBOX_PREFIX : undefined;
  const o: Record<string, string | undefined> = {
    user: v.NATS_USER,
    password: v.NATS_PASSWORD,
    token: v.NATS_TOKEN,
    nkeySeedFile: checkedFile(E.nkeySeedFile, v.NATS_NKEY_SEED_FILE),
    credsFile: checkedFile(E.credsFile, v.NATS_CREDS_FILE),
    tlsCaFile: checkedFile(E.tlsCaFile, v.NATS_TLS_CA_FILE),
    tlsCertFile: checkedFile(E.tlsCertFile, v.NATS_TLS_CERT_FILE),
    tlsKeyFile: checkedFile(E.tlsKeyFile, v.NATS_TLS_KEY_FILE),
    inboxPrefix,
  };
  if ((o["user"] === undefined) !== (o["password"] === undefined)) {
    const [set, unset] = o["user"] === undefined ? [E.password, E.user] : [E.user, E.password];
    throw new ConfigError(unset, `must be set together with ${set}`);
  }
  if ((o["tlsCertFile"] === undefined) !== (o["tlsKeyFile"] === undefined)) {
    const [set, unset] =
      o["tlsCertFile"] === undefined ? [E.tlsKeyFile, E.tlsCertFile] : [E.tlsCertFile, E.tlsKeyFile];
    throw new ConfigError(unset, `must be set together with ${set} (mutual TLS needs both)`);
  }
  const methods = (["user", "token", "nkeySeedFile", "credsFile"] as const).filter((k) => o[k] !== undefined);
  if (methods.length > 1) {
    throw new ConfigError(
      E[methods[1]!],
      `cannot be combined with ${E[methods[0]!]}: set one way to authenticate to NATS`,
    );
  }
  if (o["inboxPrefix"] !== undefined && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(o["inboxPrefix"])) {
    throw new ConfigError(
      E.inboxPrefix,
      `must be a NATS subject without wildcards, got '${o["inboxPrefix"]}'`,
    );
  }
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as NatsAuthOptions;
}

// ---- gRPC security: TLS, mutual TLS, bearer token (see grpc-security.ts) ----

/** Prefix of the mesh-wide gRPC security variables (every client's, and every server's fallback). */
export const GRPC_SHARED_PREFIX = "REWARD_MESH_GRPC";

/** Reads a variable: its (trimmed, non-blank) value or undefined. */
type Get = (key: string) => string | undefined;

/** The first of `keys` that is set, and its value. */
function firstSet(get: Get, keys: readonly string[]): { key: string; value: string } | undefined {
  for (const key of keys) {
    const value = get(key);
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

function readSetting(key: string, path: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(key, `cannot read '${path}' (${code ?? String(err)})`, { cause: err });
  }
  if (data.length === 0) throw new ConfigError(key, `'${path}' is empty`);
  return data;
}

/** Reads the PEM file named by the first of `keys` that is set. */
function pemFile(get: Get, keys: readonly string[]): PemFile | undefined {
  const s = firstSet(get, keys);
  return s && { pem: readSetting(s.key, s.value), key: s.key, path: s.value };
}

/** The gRPC server security variables, `<NAME>` of `<PREFIX>_GRPC_<NAME>` and `REWARD_MESH_GRPC_<NAME>`. */
const GRPC_SECURITY_ENV = defineEnv({
  TLS_CERT_FILE: {
    type: "file",
    description: "PEM certificate chain of the gRPC server (TLS, with TLS_KEY_FILE).",
  },
  TLS_KEY_FILE: { type: "file", description: "PEM private key of the gRPC server (with TLS_CERT_FILE)." },
  TLS_CLIENT_CA_FILE: {
    type: "file",
    description: "PEM CA bundle: mutual TLS, every client must present a certificate it signed.",
  },
  INSECURE: {
    type: "boolean",
    default: false,
    description: "Plaintext on a non-loopback address, explicitly allowed.",
  },
  TOKEN: {
    type: "string",
    description: "Bearer token every call but health checks must carry (at least 16 visible characters).",
  },
  TOKEN_FILE: { type: "file", description: "A file holding the bearer token (instead of TOKEN)." },
});

const grpcServerSecurityEnvs = new Map<string, EnvSpec>();

/**
 * The variables {@link loadGrpcServerSecurity} reads for `prefix`: each `<PREFIX>_GRPC_<NAME>` and its
 * fallback `REWARD_MESH_GRPC_<NAME>`.
 */
export function grpcServerSecurityEnv(prefix: string): EnvSpec {
  let spec = grpcServerSecurityEnvs.get(prefix);
  if (!spec) {
    spec = {
      ...prefixEnv(`${prefix}_GRPC`, GRPC_SECURITY_ENV),
      ...Object.fromEntries(
        Object.entries(GRPC_SECURITY_ENV).map(([k, v]) => [
          `${GRPC_SHARED_PREFIX}_${k}`,
          { ...v, description: `${v.description} Fallback of ${prefix}_GRPC_${k}.` },
        ]),
      ),
    };
    grpcServerSecurityEnvs.set(prefix, spec);
  }
  return spec;
}

/** Shortest bearer token accepted: 16 characters (e.g. `openssl rand -hex 32` gives 64). */
export const MIN_TOKEN_LENGTH = 16;

function checkToken(key: string, value: string): BearerToken {
  if (!/^[\x21-\x7e]+$/.test(value))
    throw new ConfigError(
      key,
      "must be visible ASCII characters without spaces (it goes into a metadata header)",
    );
  if (value.length < MIN_TOKEN_LENGTH)
    throw new ConfigError(key, `must be at least ${MIN_TOKEN_LENGTH} characters, got ${value.length}`);
  return { value, key };
}

/**
 * Reads a bearer token from `<P>_TOKEN` or `<P>_TOKEN_FILE` (the file's content, trimmed), for the
 * first prefix `P` of `prefixes` that sets either; both at once is an error.
 */
function bearerToken(get: Get, prefixes: readonly string[]): BearerToken | undefined {
  for (const p of prefixes) {
    const value = get(`${p}_TOKEN`);
    const file = get(`${p}_TOKEN_FILE`);
    if (value !== undefined && file !== undefined)
      throw new ConfigError(`${p}_TOKEN_FILE`, `is set together with ${p}_TOKEN; set one of them`);
    if (value !== undefined) return checkToken(`${p}_TOKEN`, value);
    if (file !== undefined) {
      const key = `${p}_TOKEN_FILE`;
      return checkToken(key, readSetting(key, file).toString("utf8").trim());
    }
  }
  return undefined;
}

/**
 * Reads how the gRPC server of the process with env prefix `prefix` (e.g. `LENGTH`, `LEARNER`)
 * secures its port. Each `<PREFIX>_GRPC_<NAME>` falls back to `REWARD_MESH_GRPC_<NAME>`:
 *
 * * `TLS_CERT_FILE`, `TLS_KEY_FILE`: PEM certificate chain and private key → TLS;
 * * `TLS_CLIENT_CA_FILE`: PEM CA bundle → mutual TLS (every client must present a certificate it signed);
 * * `TOKEN` or `TOKEN_FILE`: every call but health checks must carry `authorization: Bearer <token>`;
 * * `INSECURE` (boolean): plaintext on a non-loopback address, explicitly allowed.
 *
 * Files are read and checked here (certificate and key must match); an error names the variable.
 * With none set: plaintext, and the server refuses to start on a non-loopback address.
 */
export function loadGrpcServerSecurity(prefix: string, env: Env = processEnv()): GrpcServerSecurity {
  const levels = [`${prefix}_GRPC`, GRPC_SHARED_PREFIX];
  const keys = (name: string) => levels.map((l) => `${l}_${name}`);
  const read = readEnv(grpcServerSecurityEnv(prefix), env);
  const values = read.values as Readonly<Record<string, unknown>>;
  // a set variable's value (an unset INSECURE reads as its default, false: unset here)
  const get: Get = (k) => (read.set.has(k) ? String(values[k]) : undefined);
  const cert = pemFile(get, keys("TLS_CERT_FILE"));
  const key = pemFile(get, keys("TLS_KEY_FILE"));
  const clientCa = pemFile(get, keys("TLS_CLIENT_CA_FILE"));
  const insecureSetting = firstSet(get, keys("INSECURE"));
  const insecure = insecureSetting ? values[insecureSetting.key] === true : false;
  if (cert && !key) throw new ConfigError(`${prefix}_GRPC_TLS_KEY_FILE`, `must be set with ${cert.key}`);
  if (key && !cert) throw new ConfigError(`${prefix}_GRPC_TLS_CERT_FILE`, `must be set with ${key.key}`);
  if (clientCa && !cert)
    throw new ConfigError(
      clientCa.key,
      `needs TLS: set ${prefix}_GRPC_TLS_CERT_FILE and ${prefix}_GRPC_TLS_KEY_FILE as well`,
    );
  if (insecure && cert)
    throw new ConfigError(insecureSetting!.key, `is set together with ${cert.key}; choose TLS or plaintext`);
  if (cert && key) checkKeyPair(cert, key);
  if (clientCa) checkCertificates(clientCa);
  const token = bearerToken(get, levels);
  return {
    ...(cert && key ? { tls: { cert, key, ...(clientCa ? { clientCa } : {}) } } : {}),
    ...(token ? { token } : {}),
    insecure,
    hints: {
      tls: `${prefix}_GRPC_TLS_CERT_FILE and ${prefix}_GRPC_TLS_KEY_FILE`,
      insecure: `${prefix}_GRPC_INSECURE`,
    },
  };
}

/** The variables {@link loadGrpcClientSecurity} reads (every gRPC client of the process). */
export const GRPC_CLIENT_SECURITY_ENV = defineEnv({
  REWARD_MESH_GRPC_TLS_CA_FILE: {
    type: "file",
    description: "PEM CA bundle the servers' certificates must chain to (turns TLS on).",
  },
  REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: {
    type: "file",
    description: "PEM certificate of this client, for mutual TLS (with TLS_CLIENT_KEY_FILE).",
  },
  REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: {
    type: "file",
    description: "PEM private key of this client (with TLS_CLIENT_CERT_FILE).",
  },
  REWARD_MESH_GRPC_TLS_SERVER_NAME: {
    type: "string",
    description: "Name checked against server certificates instead of the dialled host.",
  },
  REWARD_MESH_GRPC_INSECURE: {
    type: "boolean",
    default: false,
    description: "Plaintext to non-loopback addresses, explicitly allowed.",
  },
  REWARD_MESH_GRPC_TOKEN: {
    type: "string",
    description: "Bearer token sent with every call (at least 16 visible characters).",
  },
  REWARD_MESH_GRPC_TOKEN_FILE: {
    type: "file",
    description: "A file holding the bearer token (instead of TOKEN).",
  },
});

/**
 * Reads how this process's gRPC clients connect (one setting for every server they dial):
 *
 * * `REWARD_MESH_GRPC_TLS_CA_FILE`: PEM CA bundle the servers' certificates must chain to → TLS;
 * * `REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE`, `..._CLIENT_KEY_FILE`: this client's certificate (mutual
 *   TLS; TLS with the system's roots when no CA file is set);
 * * `REWARD_MESH_GRPC_TLS_SERVER_NAME`: the name checked against server certificates instead of the
 *   dialled host;
 * * `REWARD_MESH_GRPC_TOKEN` or `..._TOKEN_FILE`: sent as `authorization: Bearer <token>`;
 * * `REWARD_MESH_GRPC_INSECURE` (boolean): plaintext to non-loopback addresses, explicitly allowed.
 *
 * With none set: plaintext, to loopback addresses only.
 */
export function loadGrpcClientSecurity(env: Env = processEnv()): GrpcClientSecurity {
  const P = GRPC_SHARED_PREFIX;
  const read = readEnv(GRPC_CLIENT_SECURITY_ENV, env);
  const values = read.values as Readonly<Record<string, unknown>>;
  const set: ReadonlySet<string> = read.set;
  const get: Get = (k) => (set.has(k) ? String(values[k]) : undefined);
  const ca = pemFile(get, [`${P}_TLS_CA_FILE`]);
  const cert = pemFile(get, [`${P}_TLS_CLIENT_CERT_FILE`]);
  const key = pemFile(get, [`${P}_TLS_CLIENT_KEY_FILE`]);
  const serverName = read.values.REWARD_MESH_GRPC_TLS_SERVER_NAME;
  const insecure = read.values.REWARD_MESH_GRPC_INSECURE;
  if (cert && !key) throw new ConfigError(`${P}_TLS_CLIENT_KEY_FILE`, `must be set with ${cert.key}`);
  if (key && !cert) throw new ConfigError(`${P}_TLS_CLIENT_CERT_FILE`, `must be set with ${key.key}`);
  const tlsOn = ca !== undefined || cert !== undefined;
  if (serverName !== undefined && !tlsOn)
    throw new ConfigError(`${P}_TLS_SERVER_NAME`, `needs TLS: set ${P}_TLS_CA_FILE as well`);
  if (insecure && tlsOn)
    throw new ConfigError(
      `${P}_INSECURE`,
      `is set together with ${(ca ?? cert)!.key}; choose TLS or plaintext`,
    );
  if (ca) checkCertificates(ca);
  if (cert && key) checkKeyPair(cert, key);
  const token = bearerToken(get, [P]);
  return {
    ...(tlsOn
      ? {
          tls: {
            ...(ca ? { ca } : {}),
            ...(cert && key ? { cert, key } : {}),
            ...(serverName !== undefined ? { serverName } : {}),
          },
        }
      : {}),
    ...(token ? { token } : {}),
    insecure,
  };
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
  /**
   * Credentials and TLS (`NATS_USER`/`NATS_PASSWORD`, `NATS_TOKEN`, `NATS_NKEY_SEED_FILE`,
   * `NATS_CREDS_FILE`, `NATS_TLS_*`, `NATS_INBOX_PREFIX`).
   * @default none — an anonymous, plain-text connection (what a server with auth on refuses)
   */
  readonly auth?: NatsAuthOptions;
  /**
   * How long a process waits at start for NATS to be reachable, JetStream to answer and the streams it
   * may not create to be provisioned before it gives up (seconds; 0 = fail at once). Credentials the
   * server refuses fail at once regardless. In a cluster NATS, the provisioning Job and the services
   * start together.
   * @default 0
   */
  readonly streamsWaitSeconds?: number;
}

/** `NATS_URL` and `MESH_*`: where the mesh's NATS is and how its streams are made. */
export const BUS_ENV = defineEnv({
  NATS_URL: {
    type: "string",
    default: "nats://127.0.0.1:4222",
    description: "The NATS server(s) of the mesh.",
  },
  MESH_STREAM_MAX_AGE_SECONDS: {
    type: "integer",
    minimum: 0,
    default: 604800,
    description: "Age after which JetStream discards messages of the mesh streams (0 = never).",
  },
  MESH_STREAM_MAX_BYTES: {
    type: "integer",
    minimum: -1,
    default: -1,
    description: "Size limit of each mesh stream (-1 = none).",
  },
  MESH_DUPLICATE_WINDOW_MS: {
    type: "integer",
    minimum: 1000,
    default: 120000,
    description: "JetStream de-duplication window of published messages.",
  },
  MESH_STREAM_REPLICAS: {
    type: "integer",
    minimum: 1,
    maximum: 5,
    default: 1,
    description: "Replicas of the mesh streams (clustered NATS).",
  },
  MESH_STREAMS_WAIT_SECONDS: {
    type: "integer",
    minimum: 0,
    maximum: 86400,
    default: 0,
    description:
      "How long a process waits at start for the mesh's NATS: for the server to be reachable, for JetStream to answer (not 503 during leader election) and for the streams it may not create to be provisioned, retrying 250 ms doubling to 2 s (0 = fail at once; a refusal of the credentials always fails at once; the Helm chart sets it, since NATS, its provisioning Job and the services start together).",
  },
});

/** Reads {@link BusOptions} from `NATS_URL`, `MESH_STREAM_*` ({@link BUS_ENV}) and the NATS credential variables. */
export function loadBusOptions(env: Env = processEnv()): BusOptions {
  const v = loadEnv(BUS_ENV, env);
  return {
    natsUrl: v.NATS_URL,
    streamMaxAgeSeconds: v.MESH_STREAM_MAX_AGE_SECONDS,
    streamMaxBytes: v.MESH_STREAM_MAX_BYTES,
    duplicateWindowMs: v.MESH_DUPLICATE_WINDOW_MS,
    streamReplicas: v.MESH_STREAM_REPLICAS,
    streamsWaitSeconds: v.MESH_STREAMS_WAIT_SECONDS,
    auth: loadNatsAuthOptions(env),
  };
}

/** Options of one reward-service process; every key is `<PREFIX>_<NAME>` (e.g. `LENGTH_GRPC_PORT`). */
export interface ServiceRuntimeOptions {
  /**
   * Address the gRPC server binds.
   * @default "127.0.0.1" — safe on a shared machine. A container binds 0.0.0.0, which needs TLS
   * (`<PREFIX>_GRPC_TLS_CERT_FILE`/`_KEY_FILE`) or the explicit `<PREFIX>_GRPC_INSECURE=1`.
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
  /**
   * TLS, mutual TLS and bearer token of the gRPC port (`<PREFIX>_GRPC_TLS_*`, `_TOKEN`, `_INSECURE`;
   * see {@link loadGrpcServerSecurity}).
   * @default plaintext, refused on a non-loopback `grpcHost`
   */
  readonly grpcSecurity?: GrpcServerSecurity;
  /**
   * `<PREFIX>_HEALTH_PORT`: a second gRPC port on `grpcHost` that serves only `grpc.health.v1.Health`,
   * in plaintext, for Kubernetes' native gRPC probes (which cannot speak TLS). It shares the main
   * server's status map (NOT_SERVING while draining shows on both) and carries nothing but serving
   * status, so plaintext is allowed there on any host. 0 = any free port (logged at start).
   * @default undefined — no health port
   */
  readonly healthPort?: number;
  /**
   * `<PREFIX>_HTTP_PORT`: serve the service as HTTP/JSON too (the Connect protocol: `POST
   * /rewardmesh.v1.RewardService/Score` with a JSON body, `GET /healthz`) on this port of `grpcHost`, with the
   * gRPC port's TLS and token. 0 = any free port (logged at start).
   * @default undefined — no HTTP port
   */
  readonly httpPort?: number;
}

/** `LOG_LEVEL`. */
export const LOG_ENV = defineEnv({
  LOG_LEVEL: {
    type: "string",
    enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    default: "info",
    description: "pino log level.",
  },
});

/** Read by every service whatever its prefix: `LOG_LEVEL`, {@link BUS_ENV}, {@link NATS_AUTH_ENV}. */
export const COMMON_SERVICE_ENV: EnvSpec = { ...LOG_ENV, ...BUS_ENV, ...NATS_AUTH_ENV };

/** The runtime variables of a service, `<NAME>` of `<PREFIX>_<NAME>`; `GRPC_PORT`'s default is the service's. */
function runtimeEnv(defaultPort: number) {
  return defineEnv({
    NAK_BACKOFF_MS: {
      type: "integer",
      minimum: 0,
      default: 500,
      description: "First redelivery delay after a retryable failure (doubling).",
    },
    NAK_BACKOFF_MAX_MS: {
      type: "integer",
      minimum: 0,
      default: 30000,
      description: "Longest redelivery delay (>= NAK_BACKOFF_MS).",
    },
    GRPC_PORT: {
      type: "integer",
      minimum: 0,
      maximum: 65535,
      default: defaultPort,
      description: "Port of the gRPC server (0 = any free port).",
    },
    HEALTH_PORT: {
      type: "integer",
      minimum: 0,
      maximum: 65535,
      description:
        "A second, plaintext port on GRPC_HOST serving only grpc.health.v1.Health (the main port's statuses), for Kubernetes gRPC probes, which cannot speak TLS (0 = any free port; unset = none; must differ from GRPC_PORT). Plaintext is allowed there on any host: it carries only serving status.",
    },
    HTTP_PORT: {
      type: "integer",
      minimum: 0,
      maximum: 65535,
      description:
        "Also serve the service as HTTP/JSON (Connect protocol: POST /rewardmesh.v1.RewardService/Score with a JSON body; GET /healthz) on this port of GRPC_HOST, with the gRPC port's TLS and token (0 = any free port; unset = none; must differ from GRPC_PORT and HEALTH_PORT).",
    },
    GRPC_HOST: { type: "string", default: "127.0.0.1", description: "Address the gRPC server listens on." },
    CONCURRENCY: {
      type: "integer",
      minimum: 1,
      maximum: 4096,
      default: 8,
      description: "Rollouts scored at once by the JetStream worker.",
    },
    WORKER: { type: "boolean", default: true, description: "Run the JetStream worker (false = gRPC only)." },
    ACK_WAIT_MS: {
      type: "integer",
      minimum: 100,
      default: 30000,
      description: "JetStream ack wait: a rollout not acknowledged in this time is redelivered.",
    },
    MAX_DELIVER: {
      type: "integer",
      minimum: 1,
      default: 10,
      description: "Deliveries of a rollout before it is given up.",
    },
  });
}

const serviceRuntimeEnvs = new Map<string, EnvSpec>();

/**
 * The variables {@link loadServiceRuntimeOptions} reads itself for `prefix` (`<PREFIX>_GRPC_PORT`,
 * `<PREFIX>_CONCURRENCY`, ...) and `LOG_LEVEL`; the bus and gRPC security add theirs.
 */
export function serviceRuntimeEnv(prefix: string, defaultPort: number): EnvSpec {
  const id = `${prefix}:${defaultPort}`;
  let spec = serviceRuntimeEnvs.get(id);
  if (!spec) {
    spec = { ...prefixEnv(prefix, runtimeEnv(defaultPort)), ...LOG_ENV };
    serviceRuntimeEnvs.set(id, spec);
  }
  return spec;
}

/** Reads {@link ServiceRuntimeOptions} for the service whose env prefix is `prefix` (e.g. `LENGTH`). */
export function loadServiceRuntimeOptions(
  prefix: string,
  defaultPort: number,
  env: Env = processEnv(),
): ServiceRuntimeOptions {
  const k = (name: string) => `${prefix}_${name}`;
  const v = loadEnv(serviceRuntimeEnv(prefix, defaultPort), env) as Readonly<Record<string, unknown>>;
  const int = (name: string) => v[k(name)] as number;
  const nakBackoffMs = int("NAK_BACKOFF_MS");
  const nakBackoffMaxMs = int("NAK_BACKOFF_MAX_MS");
  if (nakBackoffMaxMs < nakBackoffMs) {
    throw new ConfigError(k("NAK_BACKOFF_MAX_MS"), `must be >= ${k("NAK_BACKOFF_MS")} (${nakBackoffMs})`);
  }
  const grpcPort = int("GRPC_PORT");
  const healthPort = v[k("HEALTH_PORT")] as number | undefined;
  if (healthPort !== undefined && healthPort !== 0 && healthPort === grpcPort) {
    throw new ConfigError(
      k("HEALTH_PORT"),
      `must differ from ${k("GRPC_PORT")} (${grpcPort}): the health port is a second, plaintext port`,
    );
  }
  const httpPort = v[k("HTTP_PORT")] as number | undefined;
  if (httpPort !== undefined && httpPort !== 0 && (httpPort === grpcPort || httpPort === healthPort)) {
    throw new ConfigError(
      k("HTTP_PORT"),
      `must differ from ${httpPort === grpcPort ? k("GRPC_PORT") : k("HEALTH_PORT")} (${httpPort}): HTTP/JSON has a port of its own`,
    );
  }
  return {
    grpcHost: v[k("GRPC_HOST")] as string,
    grpcPort,
    concurrency: int("CONCURRENCY"),
    workerEnabled: v[k("WORKER")] as boolean,
    ackWaitMs: int("ACK_WAIT_MS"),
    maxDeliver: int("MAX_DELIVER"),
    nakBackoffMs,
    nakBackoffMaxMs,
    logLevel: v["LOG_LEVEL"] as string,
    bus: loadBusOptions(env),
    grpcSecurity: loadGrpcServerSecurity(prefix, env),
    ...(healthPort !== undefined ? { healthPort } : {}),
    ...(httpPort !== undefined ? { httpPort } : {}),
  };
}

/** The whole environment of one reward service: what its `loadConfig` reads, for the published schema. */
export interface ServiceEnv {
  /** The service's name (`length`): its definition in the schema. */
  readonly service: string;
  /** Its env prefix (`LENGTH`). */
  readonly prefix: string;
  /** Its default gRPC port. */
  readonly defaultPort: number;
  /** Every variable: its own, the runtime's, gRPC security's, the common ones and any libraries'. */
  readonly variables: EnvSpec;
}

/**
 * Declares a reward service's whole environment from its own variables (`own`) and those of the
 * libraries its `loadConfig` also reads (`libraries`, e.g. the sandbox's `SANDBOX_ENV`); the runtime,
 * gRPC security and common variables are added here. `scripts/gen-service-env-schema.mjs` writes the
 * schema from every service's export of one.
 */
export function defineServiceEnv(o: {
  readonly service: string;
  readonly prefix: string;
  readonly defaultPort: number;
  readonly own: EnvSpec;
  readonly libraries?: readonly EnvSpec[];
}): ServiceEnv {
  const libraries = Object.assign({}, ...(o.libraries ?? [])) as EnvSpec;
  return {
    service: o.service,
    prefix: o.prefix,
    defaultPort: o.defaultPort,
    variables: {
      ...o.own,
      ...serviceRuntimeEnv(o.prefix, o.defaultPort),
      ...grpcServerSecurityEnv(o.prefix),
      ...COMMON_SERVICE_ENV,
      ...libraries,
    },
  };
}

/** Whether `x` is a {@link ServiceEnv} (what the schema generator looks for among a config module's exports). */
export function isServiceEnv(x: unknown): x is ServiceEnv {
  const o = x as Partial<ServiceEnv> | null;
  return (
    typeof o === "object" &&
    o !== null &&
    typeof o.service === "string" &&
    typeof o.prefix === "string" &&
    typeof o.defaultPort === "number" &&
    typeof o.variables === "object"
  );
}

/** A service's definition in `services/sdk/schema/service-env.schema.json`. */
export function serviceEnvSchema(s: ServiceEnv): Record<string, unknown> {
  return envSchema(
    s.variables,
    `Environment of the ${s.service} service (prefix ${s.prefix}_). Blank values count as unset; a bad value fails start-up naming the variable.`,
  );
}
