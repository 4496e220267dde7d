/**
 * What the command line reads from the environment (the CLI's one config module).
 * @module
 */
import { dirname, join } from "node:path";
import {
  type BusOptions,
  envBool,
  envEnum,
  envInt,
  envString,
  type GrpcClientSecurity,
  loadBusOptions,
  LOG_FORMATS,
  type LogFormat,
  loadGrpcClientSecurity,
  processEnv,
} from "@reward-mesh/sdk";
import { DEFAULT_PYTHON } from "@reward-mesh/trainer";

/** Options of the CLI process. */
export interface CliConfig {
  /** NATS and stream settings (`NATS_URL`, `MESH_STREAM_*`). */
  readonly bus: BusOptions;
  /**
   * Whether the user chose the NATS server: `NATS_URL` set (not blank). When it is not, `bus.natsUrl` is
   * the default address, and a mesh the CLI starts moves to a free port when a server it cannot use holds it
   * (open to anonymous clients, requiring other credentials, not NATS: see `commands/mesh-nats.ts`); a
   * server the user named is never replaced.
   */
  readonly natsUrlExplicit: boolean;
  /**
   * Where `reward-mesh up` keeps NATS's JetStream store when it starts a server itself at the `NATS_URL`
   * address; a server on a free port (or one started while another process holds `<natsAuthDir>/up.lock`)
   * keeps its store in a fresh `<natsStoreDir>/<id>`, removed when it stops.
   * @default ".nats/js" under the current directory
   */
  readonly natsStoreDir: string;
  /**
   * Whether the NATS server `up`/`demo` start runs with generated users and least-privilege
   * permissions (`on`), or open to anonymous clients (`off`: an explicit opt-out for development).
   * @default "on"
   */
  readonly natsAuth: "on" | "off";
  /**
   * Where `up` writes the generated NATS users (NKEY seeds, mode 0600) and the server configuration, held
   * by the lock file `up.lock` while its server runs; a server on a free port (or one started while that
   * lock is held by a live process) has its users in a fresh `<natsAuthDir>/<id>`, removed when it stops.
   * @default "auth" next to the JetStream store (".nats/auth")
   */
  readonly natsAuthDir: string;
  /**
   * Where `up`/`demo` write the services' logs.
   * @default "runs/logs"
   */
  readonly logDir: string;
  /**
   * How `train`/`demo`/`experiment` show logs (`REWARD_MESH_LOG_FORMAT`, overridden by `--log-format`):
   * `human`, progress for people with warnings and errors as readable lines on stderr; `json`, JSON log
   * records only on stderr and only the result (one JSON object) on stdout. Either way every record
   * also goes to `<run dir>/logs/trainer.jsonl`.
   * @default "human"
   */
  readonly logFormat: LogFormat;
  /**
   * The interpreter of the PyTorch learner (`REWARD_MESH_PYTHON`).
   * @default the repository's `.venv/bin/python` (`bash scripts/bootstrap.sh --with-torch` creates it)
   */
  readonly python: string;
  /**
   * How the CLI's gRPC clients connect (`score --addr`, readiness checks of `up`, the learner):
   * `REWARD_MESH_GRPC_TLS_CA_FILE`, `_TLS_CLIENT_CERT_FILE`/`_KEY_FILE`, `_TOKEN`/`_TOKEN_FILE`, `_INSECURE`.
   * @default plaintext, to loopback addresses only
   */
  readonly grpc: GrpcClientSecurity;
  /**
   * How long `train` waits at start for its learner to listen (a remote `grpc://` learner still
   * loading) and for a service to consume each task domain (`REWARD_MESH_START_WAIT_SECONDS`, seconds;
   * 0 = fail at once). NATS itself is waited for with `MESH_STREAMS_WAIT_SECONDS`.
   * @default 0
   */
  readonly startWaitSeconds: number;
  /**
   * A trace link template for `explain` (`REWARD_MESH_TRACE_URL`), `{traceId}` replaced by the trace id.
   * @default "" (no link)
   */
  readonly traceUrlTemplate: string;
  /**
   * Where `train` (without `--with-mesh`) lists the built-in `agent` set (`AgentEnvironment.ListTasks`
   * of the agentdojo service) and where `tasks export agentdojo --addr` / `eval` may ask
   * (`REWARD_MESH_AGENT_ENV_ADDR`). A mesh the CLI starts itself gives its own agentdojo address instead.
   * @default "127.0.0.1:50066" (agentdojo's default port)
   */
  readonly agentEnvironmentAddress: string;
  /**
   * With `NATS_URL` unset, how long `train`, `serve --remote` and `check` wait for `reward-mesh up` to
   * record its mesh (`<natsAuthDir>/mesh.json`) when none is recorded yet (a `reward-mesh up &` started just
   * before), in milliseconds; a starting `up` is then waited for while it lives. Not an environment
   * variable: a {@link CliDefaults} entry.
   * @default 15000
   */
  readonly meshAppearMs: number;
  /** The environment handed to service processes. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Defaults that tests (or an embedding program) may replace; the environment still wins. */
export interface CliDefaults {
  /**
   * The NATS address used when `NATS_URL` is not set.
   * @default "nats://127.0.0.1:4222" (the SDK's default, where Debian's nats-server service listens)
   */
  readonly natsUrl?: string;
  /** {@link CliConfig.meshAppearMs}. @default 15000 */
  readonly meshAppearMs?: number;
}

/** Reads the CLI configuration. */
export function loadCliConfig(env = processEnv(), defaults: CliDefaults = {}): CliConfig {
  const natsStoreDir = envString(env, "REWARD_MESH_NATS_STORE", ".nats/js");
  // Blank counts as unset, as for every variable.
  const natsUrlExplicit = envString(env, "NATS_URL", "") !== "";
  const busEnv =
    natsUrlExplicit || defaults.natsUrl === undefined ? env : { ...env, NATS_URL: defaults.natsUrl };
  return {
    bus: loadBusOptions(busEnv),
    natsUrlExplicit,
    natsStoreDir,
    natsAuth: envEnum(env, "REWARD_MESH_NATS_AUTH", ["on", "off"], "on"),
    natsAuthDir: envString(env, "REWARD_MESH_NATS_AUTH_DIR", join(dirname(natsStoreDir), "auth")),
    logDir: envString(env, "REWARD_MESH_LOG_DIR", "runs/logs"),
    logFormat: envEnum(env, "REWARD_MESH_LOG_FORMAT", LOG_FORMATS, "human"),
    python: envString(env, "REWARD_MESH_PYTHON", DEFAULT_PYTHON),
    grpc: loadGrpcClientSecurity(env),
    startWaitSeconds: envInt(env, "REWARD_MESH_START_WAIT_SECONDS", 0, 0, 86400),
    traceUrlTemplate: envString(env, "REWARD_MESH_TRACE_URL", ""),
    agentEnvironmentAddress: envString(env, "REWARD_MESH_AGENT_ENV_ADDR", "127.0.0.1:50066"),
    meshAppearMs: defaults.meshAppearMs ?? 15_000,
    env,
  };
}

/**
 * Sets environment variables of this process, for code that reads its settings from the environment at
 * import (a service's entrypoint served in process by `reward-mesh serve`, as in its container).
 */
export function exportEnvironment(vars: Readonly<Record<string, string>>): void {
  Object.assign(process.env, vars);
}

/**
 * Whether `reward-mesh serve <service>` runs the service's JetStream worker (`<PREFIX>_WORKER`, default
 * true): only then does the service need NATS, and so the mesh `reward-mesh up` recorded.
 */
export function serviceRunsWorker(prefix: string, env = processEnv()): boolean {
  return envBool(env, `${prefix}_WORKER`, true);
}
