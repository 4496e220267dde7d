/**
 * Configuration of the tool-call service (prefix `TOOL_CALL_`). The only module here that reads the
 * environment.
 * @module
 */
import {
  defineEnv,
  defineServiceEnv,
  type Env,
  loadEnv,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { RLLA_FORMAT_STYLES, type RllaFormatStyle } from "./rlla.js";

/** Default gRPC port of the tool-call service. */
export const TOOL_CALL_DEFAULT_PORT = 50065;

/** The tool-call service's own variables. */
export const TOOL_CALL_ENV = defineEnv({
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
    enum: RLLA_FORMAT_STYLES,
    default: "corrgrpo",
    description: "corrgrpo: blocks separated by any whitespace; toolrl: exactly one newline.",
  },
  TOOL_CALL_ALLOW_MISSING_OPENING_THINK: {
    type: "boolean",
    default: false,
    description: "Accept responses without the opening <think>.",
  },
  TOOL_CALL_BFCL_UNDERSCORE_TO_DOT: {
    type: "boolean",
    default: true,
    description:
      "BFCL's underscore_to_dot for json tasks: true (its function-calling models) expects math_factorial for math.factorial; false expects math.factorial.",
  },
});

/** Every variable the tool-call process reads (its definition in the published schema). */
export const TOOL_CALL_SERVICE_ENV = defineServiceEnv({
  service: "tool-call",
  prefix: "TOOL_CALL",
  defaultPort: TOOL_CALL_DEFAULT_PORT,
  own: TOOL_CALL_ENV,
});

/** Scoring options of the tool-call service. */
export interface ToolCallOptions {
  /**
   * Responses longer than this (UTF-8 bytes) get the minimum scores without being parsed.
   * @default 1048576 — 1 MiB: far above any real tool-call answer, keeps scoring time bounded.
   */
  readonly maxResponseBytes: number;
  /**
   * Most calls (lines of a `<tool_call>` block, or entries of a JSON list) scored; more → minimum scores.
   * @default 1024 — RLLA gold has at most 5 calls; this only bounds the matching work.
   */
  readonly maxCalls: number;
  /**
   * `corrgrpo`: blocks may be separated by any whitespace (`\s*`, CorrGRPO's relaxed regex);
   * `toolrl`: exactly one newline (ToolRL's original regex).
   * @default "corrgrpo" — the reward CorrGRPO trained with (`specs/rewards.md` §1.4).
   */
  readonly formatStyle: RllaFormatStyle;
  /**
   * Accept responses without the opening `<think>` (CorrGRPO does when the model name contains
   * "think", because such chat templates open the block themselves). Per rollout:
   * metadata `tool_call.allow_missing_opening_think` = `true` / `false`.
   * @default false — the RLLA system prompt asks for `<think>`.
   */
  readonly allowMissingOpeningThink: boolean;
  /**
   * `json` tasks: BFCL's `underscore_to_dot` — true (its function-calling models) expects the gold
   * name with `.` → `_` (`math_factorial`), false the dotted name; exactly one is accepted.
   * @default true
   */
  readonly bfclUnderscoreToDot: boolean;
}

/** Everything the tool-call process needs. */
export interface ToolCallConfig extends ToolCallOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Default scoring options (what `loadConfig({})` gives). */
export const DEFAULT_TOOL_CALL_OPTIONS: ToolCallOptions = {
  maxResponseBytes: TOOL_CALL_ENV.TOOL_CALL_MAX_RESPONSE_BYTES.default,
  maxCalls: TOOL_CALL_ENV.TOOL_CALL_MAX_CALLS.default,
  formatStyle: TOOL_CALL_ENV.TOOL_CALL_FORMAT_STYLE.default,
  allowMissingOpeningThink: TOOL_CALL_ENV.TOOL_CALL_ALLOW_MISSING_OPENING_THINK.default,
  bfclUnderscoreToDot: TOOL_CALL_ENV.TOOL_CALL_BFCL_UNDERSCORE_TO_DOT.default,
};

/**
 * Reads `TOOL_CALL_MAX_RESPONSE_BYTES`, `TOOL_CALL_MAX_CALLS`, `TOOL_CALL_FORMAT_STYLE`,
 * `TOOL_CALL_ALLOW_MISSING_OPENING_THINK`, `TOOL_CALL_BFCL_UNDERSCORE_TO_DOT` and the runtime options (`TOOL_CALL_GRPC_PORT`, ...).
 */
export function loadConfig(env: Env = processEnv()): ToolCallConfig {
  const v = loadEnv(TOOL_CALL_ENV, env);
  return {
    maxResponseBytes: v.TOOL_CALL_MAX_RESPONSE_BYTES,
    maxCalls: v.TOOL_CALL_MAX_CALLS,
    formatStyle: v.TOOL_CALL_FORMAT_STYLE,
    allowMissingOpeningThink: v.TOOL_CALL_ALLOW_MISSING_OPENING_THINK,
    bfclUnderscoreToDot: v.TOOL_CALL_BFCL_UNDERSCORE_TO_DOT,
    runtime: loadServiceRuntimeOptions("TOOL_CALL", TOOL_CALL_DEFAULT_PORT, env),
  };
}
