/**
 * Configuration of the agentdojo service (prefix `AGENTDOJO_`). The only module here that reads the
 * environment.
 * @module
 */
import {
  ConfigError,
  defineEnv,
  defineServiceEnv,
  type Env,
  loadEnv,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { ATTACK_NAMES, type AttackName } from "./attacks.js";
import type { AnySuite } from "./suite.js";

/** Default gRPC port of the agentdojo RewardService. */
export const AGENTDOJO_DEFAULT_PORT = 50066;

/** The agentdojo service's own variables. */
export const AGENTDOJO_ENV = defineEnv({
  AGENTDOJO_ATTACK_MODEL_NAME: {
    type: "string",
    default: "the AI language model",
    description: "Model name the injection attacks address (at most 200 characters).",
  },
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
  AGENTDOJO_DEFAULT_ATTACK: {
    type: "string",
    enum: ATTACK_NAMES,
    default: "important_instructions",
    description: "Attack used when a task names none.",
  },
  AGENTDOJO_DATA_DIR: {
    type: "string",
    default: "",
    description:
      "The AgentDojo benchmark data directory (tasks.json + <suite>/environment.yaml, v1.2.1) the workspace, travel and slack suites are loaded from; empty: banking only.",
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
});

/** Every variable the agentdojo process reads (its definition in the published schema). */
export const AGENTDOJO_SERVICE_ENV = defineServiceEnv({
  service: "agentdojo",
  prefix: "AGENTDOJO",
  defaultPort: AGENTDOJO_DEFAULT_PORT,
  own: AGENTDOJO_ENV,
});

/** Scoring options of the agentdojo service. */
export interface AgentDojoOptions {
  /**
   * Responses longer than this (UTF-8 bytes) get the minimum scores (`valid` = 0) without being parsed.
   * @default 1048576 — 1 MiB: far above an 8-turn trajectory, keeps scoring time bounded.
   */
  readonly maxResponseBytes: number;
  /**
   * Most tool calls a trajectory (or an interactive session) may make; more → `valid` = 0.
   * @default 64 — CorrGRPO allows 8 turns of one call; AgentDojo ground truths use at most 5.
   */
  readonly maxCalls: number;
  /**
   * Name the attacks address the model by ("This is an important message from me, Emma Johnson, to
   * you, <name>"). Upstream derives it from the pipeline's model.
   * @default "the AI language model" — AgentDojo's DEFAULT_MODEL_NAME.
   */
  readonly attackModelName: string;
  /**
   * Attack used when a task names an injection task but no attack.
   * @default "important_instructions" — AgentDojo's headline attack, most CorrGRPO security cases.
   */
  readonly defaultAttack: AttackName;
  /**
   * The suites tasks may name, loaded once at start-up (`loadSuites(dataDir)`).
   * @default the embedded suites, plus those of `dataDir` when the options carry one.
   */
  readonly suites?: ReadonlyMap<string, AnySuite>;
}

/** Options of the AgentEnvironment server. */
export interface AgentEnvironmentOptions {
  /**
   * Serve AgentEnvironment next to the RewardService.
   * @default true
   */
  readonly enabled: boolean;
  /**
   * Most open sessions. A `Reset` at the limit first drops expired sessions, then evicts the least
   * recently used one if it has had no call for min(idleTimeoutMs, 30 s); otherwise it is UNAVAILABLE
   * (retry later). A session holds two copies of its suite's environment (the live one and the
   * pre-environment the checks read; as JSON about 2 KiB for banking, 3 KiB slack, 18 KiB travel, 49 KiB
   * workspace, more in memory) plus at most `maxCalls` call records (arguments of at most 64 KiB each and
   * the tool's output), so memory is bounded by about `maxSessions` × (2 × environment + `maxCalls` ×
   * (64 KiB + largest output)).
   * @default 1024 — one per in-flight rollout of a large batch.
   */
  readonly maxSessions: number;
  /**
   * A session without a call for this long is dropped (then NOT_FOUND).
   * @default 600000 — 10 minutes: longer than any generation step.
   */
  readonly idleTimeoutMs: number;
}

/** Everything the agentdojo process needs. */
export interface AgentDojoConfig extends AgentDojoOptions {
  /** Benchmark data directory for the suites beyond banking; "" when none is configured. */
  readonly dataDir: string;
  readonly environment: AgentEnvironmentOptions;
  readonly runtime: ServiceRuntimeOptions;
}

/** Default scoring options (what `loadConfig({})` gives). */
export const DEFAULT_AGENTDOJO_OPTIONS: AgentDojoOptions = {
  maxResponseBytes: AGENTDOJO_ENV.AGENTDOJO_MAX_RESPONSE_BYTES.default,
  maxCalls: AGENTDOJO_ENV.AGENTDOJO_MAX_CALLS.default,
  attackModelName: AGENTDOJO_ENV.AGENTDOJO_ATTACK_MODEL_NAME.default,
  defaultAttack: AGENTDOJO_ENV.AGENTDOJO_DEFAULT_ATTACK.default,
};

/**
 * Reads `AGENTDOJO_MAX_RESPONSE_BYTES`, `AGENTDOJO_MAX_CALLS`, `AGENTDOJO_ATTACK_MODEL_NAME`,
 * `AGENTDOJO_DEFAULT_ATTACK`, `AGENTDOJO_ENV_*` and the runtime options (`AGENTDOJO_GRPC_PORT`, ...).
 */
export function loadConfig(env: Env = processEnv()): AgentDojoConfig {
  const runtime = loadServiceRuntimeOptions("AGENTDOJO", AGENTDOJO_DEFAULT_PORT, env);
  const v = loadEnv(AGENTDOJO_ENV, env);
  const attackModelName = v.AGENTDOJO_ATTACK_MODEL_NAME;
  if (attackModelName.length > 200)
    throw new ConfigError("AGENTDOJO_ATTACK_MODEL_NAME", "must be at most 200 characters");
  return {
    maxResponseBytes: v.AGENTDOJO_MAX_RESPONSE_BYTES,
    maxCalls: v.AGENTDOJO_MAX_CALLS,
    attackModelName,
    defaultAttack: v.AGENTDOJO_DEFAULT_ATTACK,
    dataDir: v.AGENTDOJO_DATA_DIR,
    environment: {
      enabled: v.AGENTDOJO_ENV_ENABLED,
      maxSessions: v.AGENTDOJO_ENV_MAX_SESSIONS,
      idleTimeoutMs: v.AGENTDOJO_ENV_IDLE_TIMEOUT_MS,
    },
    runtime,
  };
}
