/**
 * Configuration of the agentdojo service (prefix `AGENTDOJO_`). The only module here that reads the
 * environment.
 * @module
 */
import {
  ConfigError,
  type Env,
  envBool,
  envEnum,
  envInt,
  envString,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { ATTACK_NAMES, type AttackName } from "./attacks.js";

/** Default gRPC port of the agentdojo RewardService. */
export const AGENTDOJO_DEFAULT_PORT = 50066;

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
}

/** Options of the AgentEnvironment server. */
export interface AgentEnvironmentOptions {
  /**
   * Serve AgentEnvironment next to the RewardService.
   * @default true
   */
  readonly enabled: boolean;
  /**
   * Most open sessions; `Reset` beyond it (after dropping idle ones) is UNAVAILABLE.
   * @default 1024 — one per in-flight rollout of a large batch; a session is a few KiB.
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
  readonly environment: AgentEnvironmentOptions;
  readonly runtime: ServiceRuntimeOptions;
}

/** Default scoring options (what `loadConfig({})` gives). */
export const DEFAULT_AGENTDOJO_OPTIONS: AgentDojoOptions = {
  maxResponseBytes: 1024 * 1024,
  maxCalls: 64,
  attackModelName: "the AI language model",
  defaultAttack: "important_instructions",
};

/**
 * Reads `AGENTDOJO_MAX_RESPONSE_BYTES`, `AGENTDOJO_MAX_CALLS`, `AGENTDOJO_ATTACK_MODEL_NAME`,
 * `AGENTDOJO_DEFAULT_ATTACK`, `AGENTDOJO_ENV_*` and the runtime options (`AGENTDOJO_GRPC_PORT`, ...).
 */
export function loadConfig(env: Env = processEnv()): AgentDojoConfig {
  const d = DEFAULT_AGENTDOJO_OPTIONS;
  const runtime = loadServiceRuntimeOptions("AGENTDOJO", AGENTDOJO_DEFAULT_PORT, env);
  const attackModelName = envString(env, "AGENTDOJO_ATTACK_MODEL_NAME", d.attackModelName);
  if (attackModelName.length > 200)
    throw new ConfigError("AGENTDOJO_ATTACK_MODEL_NAME", "must be at most 200 characters");
  return {
    maxResponseBytes: envInt(env, "AGENTDOJO_MAX_RESPONSE_BYTES", d.maxResponseBytes, 1, 64 * 1024 * 1024),
    maxCalls: envInt(env, "AGENTDOJO_MAX_CALLS", d.maxCalls, 1, 10_000),
    attackModelName,
    defaultAttack: envEnum(env, "AGENTDOJO_DEFAULT_ATTACK", ATTACK_NAMES, d.defaultAttack),
    environment: {
      enabled: envBool(env, "AGENTDOJO_ENV_ENABLED", true),
      maxSessions: envInt(env, "AGENTDOJO_ENV_MAX_SESSIONS", 1024, 1, 1_000_000),
      idleTimeoutMs: envInt(env, "AGENTDOJO_ENV_IDLE_TIMEOUT_MS", 600_000, 1000, 24 * 3600 * 1000),
    },
    runtime,
  };
}
