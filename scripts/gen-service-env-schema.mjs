#!/usr/bin/env node
// Writes services/sdk/schema/service-env.schema.json: for each reward service, the environment variables
// its `loadConfig` reads, with type, bounds, default and description (JSON Schema draft-07: a service's
// definition validates an environment as a mapping of strings). The tables below are the one place the
// variables are described; test/service-env-schema.test.ts checks that the committed file is what this
// script writes, that each service's loader reads exactly the variables listed for it, and that a bad
// value of each typed variable fails start-up naming it.
//   node scripts/gen-service-env-schema.mjs          write the file
//   node scripts/gen-service-env-schema.mjs --check  fail when the committed file differs
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const SCHEMA_PATH = fileURLToPath(
  new URL("../services/sdk/schema/service-env.schema.json", import.meta.url),
);

/** @typedef {{type: "string"|"integer"|"number"|"boolean"|"file", default?: string|number|boolean, minimum?: number, maximum?: number, enum?: string[], description: string}} Var */

/** @param {string} description @returns {Var} */
const file = (description) => ({ type: "file", description });

/** Read by every service whatever its prefix (`@reward-mesh/sdk` loadBusOptions, loadNatsAuthOptions, LOG_LEVEL). */
const COMMON = {
  LOG_LEVEL: {
    type: "string",
    enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    default: "info",
    description: "pino log level.",
  },
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
  NATS_USER: { type: "string", description: "NATS user (with NATS_PASSWORD)." },
  NATS_PASSWORD: { type: "string", description: "NATS password (with NATS_USER)." },
  NATS_TOKEN: { type: "string", description: "NATS token." },
  NATS_NKEY_SEED_FILE: file("A file holding a user NKEY seed (SU...)."),
  NATS_CREDS_FILE: file("A .creds file (user JWT + seed; operator/JWT mode)."),
  NATS_TLS_CA_FILE: file("CA bundle that verifies the NATS server (implies TLS)."),
  NATS_TLS_CERT_FILE: file("Client certificate for mutual TLS to NATS (with NATS_TLS_KEY_FILE)."),
  NATS_TLS_KEY_FILE: file("Client key for mutual TLS to NATS (with NATS_TLS_CERT_FILE)."),
  NATS_INBOX_PREFIX: {
    type: "string",
    default: "_INBOX",
    description: "Prefix of this process's reply subjects (a NATS subject without wildcards).",
  },
};

/** gRPC server security: `<PREFIX>_GRPC_<NAME>`, each falling back to `REWARD_MESH_GRPC_<NAME>`. */
const GRPC_SECURITY = {
  TLS_CERT_FILE: file("PEM certificate chain of the gRPC server (TLS, with TLS_KEY_FILE)."),
  TLS_KEY_FILE: file("PEM private key of the gRPC server (with TLS_CERT_FILE)."),
  TLS_CLIENT_CA_FILE: file("PEM CA bundle: mutual TLS, every client must present a certificate it signed."),
  INSECURE: {
    type: "boolean",
    default: false,
    description: "Plaintext on a non-loopback address, explicitly allowed.",
  },
  TOKEN: {
    type: "string",
    description: "Bearer token every call but health checks must carry (at least 16 visible characters).",
  },
  TOKEN_FILE: file("A file holding the bearer token (instead of TOKEN)."),
};

/** `@reward-mesh/sdk` loadServiceRuntimeOptions: `<PREFIX>_<NAME>`. @param {number} port */
const runtime = (port) => ({
  GRPC_HOST: { type: "string", default: "127.0.0.1", description: "Address the gRPC server listens on." },
  GRPC_PORT: {
    type: "integer",
    minimum: 0,
    maximum: 65535,
    default: port,
    description: "Port of the gRPC server (0 = any free port).",
  },
  HEALTH_PORT: {
    type: "integer",
    minimum: 0,
    maximum: 65535,
    description:
      "A second, plaintext port on GRPC_HOST serving only grpc.health.v1.Health (the main port's statuses), for Kubernetes gRPC probes, which cannot speak TLS (0 = any free port; unset = none; must differ from GRPC_PORT). Plaintext is allowed there on any host: it carries only serving status.",
  },
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
});

/** `@reward-mesh/sandbox` loadSandboxConfig (code-exec, efficiency). */
const SANDBOX = {
  SANDBOX_BACKEND: {
    type: "string",
    enum: ["auto", "docker", "bwrap"],
    default: "auto",
    description: "How candidate code runs: docker, bwrap, or auto (docker when reachable, else bwrap).",
  },
  SANDBOX_CONCURRENCY: {
    type: "integer",
    minimum: 1,
    maximum: 1024,
    description: "Executions at once (default: the CPUs available).",
  },
  SANDBOX_TIME_LIMIT_MS: {
    type: "integer",
    minimum: 100,
    maximum: 600000,
    default: 5000,
    description: "Wall-time limit per execution.",
  },
  SANDBOX_MEMORY_LIMIT_MB: {
    type: "integer",
    minimum: 32,
    maximum: 65536,
    default: 1024,
    description: "Memory limit per execution.",
  },
  SANDBOX_MAX_PROCESSES: {
    type: "integer",
    minimum: 4,
    maximum: 4096,
    default: 64,
    description: "Process limit per execution.",
  },
  SANDBOX_MAX_OUTPUT_BYTES: {
    type: "integer",
    minimum: 1024,
    maximum: 1073741824,
    default: 1048576,
    description: "Output kept per stream per execution.",
  },
  SANDBOX_TMPFS_MB: {
    type: "integer",
    minimum: 1,
    maximum: 65536,
    default: 64,
    description: "Size of the execution's /tmp.",
  },
  SANDBOX_DOCKER_HOST: {
    type: "string",
    description:
      "Docker endpoint, unix:///path or tcp://host:port (default: DOCKER_HOST, else unix:///var/run/docker.sock).",
  },
  DOCKER_HOST: { type: "string", description: "Docker endpoint when SANDBOX_DOCKER_HOST is unset." },
  SANDBOX_DOCKER_CERT_PATH: {
    type: "string",
    description: "Docker TLS client certificates (default: DOCKER_CERT_PATH).",
  },
  DOCKER_CERT_PATH: {
    type: "string",
    description: "Docker TLS client certificates when SANDBOX_DOCKER_CERT_PATH is unset.",
  },
  SANDBOX_DOCKER_IMAGE: {
    type: "string",
    description: "Sandbox image (default: the image built from sandbox-images for this harness).",
  },
  SANDBOX_DOCKER_CPUS: { type: "number", default: 1, description: "CPUs per execution, in (0, 64]." },
  SANDBOX_DOCKER_PING_TIMEOUT_MS: {
    type: "integer",
    minimum: 50,
    maximum: 60000,
    default: 1500,
    description: "How long auto waits for Docker before choosing bwrap.",
  },
  SANDBOX_BWRAP_PATH: { type: "string", default: "bwrap", description: "The bubblewrap binary." },
  SANDBOX_BWRAP_MODE: {
    type: "string",
    enum: ["auto", "root", "rootless"],
    default: "auto",
    description:
      "bwrap confinement: root (per-run cgroups + setpriv, needs root), rootless (user namespace + rlimits); auto: root when run as root.",
  },
  SANDBOX_BWRAP_UID: {
    type: "integer",
    minimum: 1,
    maximum: 4294967294,
    default: 65534,
    description: "UID candidate code runs as under bwrap.",
  },
  SANDBOX_BWRAP_PREPARED: {
    type: "integer",
    minimum: 0,
    maximum: 1024,
    description: "bwrap sandboxes kept prepared (default: SANDBOX_CONCURRENCY).",
  },
  SANDBOX_CGROUP_PARENT: {
    type: "string",
    default: "",
    description: "Parent cgroup of bwrap's per-run cgroups (default: the service's own cgroup).",
  },
};

/** Each service: its env prefix, default gRPC port, own variables and whether it runs a sandbox. */
const SERVICES = {
  length: {
    prefix: "LENGTH",
    port: 50061,
    own: {
      LENGTH_MAX_LENGTH: {
        type: "integer",
        minimum: 1,
        default: 20480,
        description: "DAPO L_max: longer responses get the full penalty.",
      },
      LENGTH_CACHE_LENGTH: {
        type: "integer",
        minimum: 1,
        default: 4096,
        description: "DAPO L_cache: the soft-penalty interval before L_max.",
      },
      LENGTH_PENALTY_FACTOR: {
        type: "number",
        minimum: 0,
        default: 1,
        description: "Penalty factor; overlong lies in [-factor, 0].",
      },
    },
  },
  "code-exec": { prefix: "CODE_EXEC", port: 50062, own: {}, sandbox: true },
  ast: {
    prefix: "AST",
    port: 50063,
    own: {
      AST_MAX_TOKENS: {
        type: "integer",
        minimum: 100,
        maximum: 10000000,
        default: 50000,
        description: "Most tokens of candidate or reference compared.",
      },
    },
  },
  efficiency: {
    prefix: "EFFICIENCY",
    port: 50064,
    sandbox: true,
    own: {
      EFFICIENCY_REPEATS: {
        type: "integer",
        minimum: 1,
        maximum: 100,
        default: 3,
        description: "Timed runs of the candidate (minimum CPU time compared).",
      },
      EFFICIENCY_CACHE_SIZE: {
        type: "integer",
        minimum: 1,
        maximum: 10000000,
        default: 4096,
        description: "Reference timings kept (LRU).",
      },
    },
  },
  "tool-call": {
    prefix: "TOOL_CALL",
    port: 50065,
    own: {
      TOOL_CALL_MAX_RESPONSE_BYTES: {
        type: "integer",
        minimum: 1,
        maximum: 67108864,
        default: 1048576,
        description: "Longer responses get the minimum scores without being parsed.",
      },
      TOOL_CALL_MAX_CALLS: {
        type: "integer",
        minimum: 1,
        maximum: 100000,
        default: 1024,
        description: "Most calls scored; more give the minimum scores.",
      },
      TOOL_CALL_FORMAT_STYLE: {
        type: "string",
        enum: ["corrgrpo", "toolrl"],
        default: "corrgrpo",
        description: "corrgrpo: blocks separated by any whitespace; toolrl: exactly one newline.",
      },
      TOOL_CALL_ALLOW_MISSING_OPENING_THINK: {
        type: "boolean",
        default: false,
        description: "Accept responses without the opening <think>.",
      },
    },
  },
  agentdojo: {
    prefix: "AGENTDOJO",
    port: 50066,
    own: {
      AGENTDOJO_MAX_RESPONSE_BYTES: {
        type: "integer",
        minimum: 1,
        maximum: 67108864,
        default: 1048576,
        description: "Longer responses are not parsed.",
      },
      AGENTDOJO_MAX_CALLS: {
        type: "integer",
        minimum: 1,
        maximum: 10000,
        default: 64,
        description: "Most tool calls of one episode.",
      },
      AGENTDOJO_ATTACK_MODEL_NAME: {
        type: "string",
        default: "the AI language model",
        description: "Model name the injection attacks address (at most 200 characters).",
      },
      AGENTDOJO_DEFAULT_ATTACK: {
        type: "string",
        enum: [
          "important_instructions",
          "tool_knowledge",
          "direct",
          "ignore_previous",
          "system_message",
          "injecagent",
        ],
        default: "important_instructions",
        description: "Attack used when a task names none.",
      },
      AGENTDOJO_ENV_ENABLED: {
        type: "boolean",
        default: true,
        description: "Serve the multi-turn agent environment.",
      },
      AGENTDOJO_ENV_MAX_SESSIONS: {
        type: "integer",
        minimum: 1,
        maximum: 1000000,
        default: 1024,
        description: "Environment sessions open at once.",
      },
      AGENTDOJO_ENV_IDLE_TIMEOUT_MS: {
        type: "integer",
        minimum: 1000,
        maximum: 86400000,
        default: 600000,
        description: "A session without a call for this long is dropped.",
      },
    },
  },
};

const INTEGER = "^-?\\d+$";

/** One variable as a JSON Schema of its (string) value. @param {Var} v */
function property(v) {
  /** @type {Record<string, unknown>} */
  const p = { description: v.description, type: "string", "x-type": v.type };
  if (v.enum) p["enum"] = v.enum;
  if (v.type === "integer") p["pattern"] = INTEGER;
  if (v.type === "boolean") p["enum"] = ["true", "false", "1", "0", "yes", "no", "on", "off"]; // the loader also takes upper case
  if (v.minimum !== undefined) p["x-minimum"] = v.minimum;
  if (v.maximum !== undefined) p["x-maximum"] = v.maximum;
  if (v.default !== undefined) p["default"] = String(v.default);
  return p;
}

/** The schema, as the committed file holds it. */
export function buildServiceEnvSchema() {
  /** @type {Record<string, unknown>} */
  const definitions = {};
  for (const [name, s] of Object.entries(SERVICES)) {
    /** @type {Record<string, Var>} */
    const vars = { ...s.own };
    for (const [k, v] of Object.entries(runtime(s.port))) vars[`${s.prefix}_${k}`] = v;
    for (const [k, v] of Object.entries(GRPC_SECURITY)) {
      vars[`${s.prefix}_GRPC_${k}`] = v;
      vars[`REWARD_MESH_GRPC_${k}`] = {
        ...v,
        description: `${v.description} Fallback of ${s.prefix}_GRPC_${k}.`,
      };
    }
    Object.assign(vars, COMMON, s.sandbox ? SANDBOX : {});
    definitions[name] = {
      description: `Environment of the ${name} service (prefix ${s.prefix}_). Blank values count as unset; a bad value fails start-up naming the variable.`,
      type: "object",
      properties: Object.fromEntries(
        Object.keys(vars)
          .sort()
          .map((k) => [k, property(vars[k])]),
      ),
    };
  }
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "reward-mesh service environment",
    description:
      "Environment variables of each reward service, under definitions.<service>. Values are strings; x-type, x-minimum and x-maximum give the type and bounds the service's loader checks. Generated by scripts/gen-service-env-schema.mjs.",
    definitions,
  };
}

export const schemaText = () => `${JSON.stringify(buildServiceEnvSchema(), null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--check")) {
    if (readFileSync(SCHEMA_PATH, "utf8") !== schemaText()) {
      console.error(
        "gen-service-env-schema: services/sdk/schema/service-env.schema.json is stale — run node scripts/gen-service-env-schema.mjs",
      );
      process.exit(1);
    }
    console.log("gen-service-env-schema: services/sdk/schema/service-env.schema.json is up to date");
  } else {
    writeFileSync(SCHEMA_PATH, schemaText());
    console.log(`wrote ${SCHEMA_PATH}`);
  }
}
