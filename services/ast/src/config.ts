/**
 * Configuration of the ast service (prefix `AST_`). The only module here that reads the environment.
 * @module
 */
import {
  type Env,
  envInt,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";

/** Default gRPC port of the ast service. */
export const AST_DEFAULT_PORT = 50063;

/** Scoring options of the ast service. */
export interface AstOptions {
  /**
   * Longest node-type sequence compared; longer code gets similarity 0 with status ERROR and a
   * reason. SequenceMatcher is quadratic in the worst case.
   * @default 50000 — far above a 2 048-token response (about 3 000 tokens of sequence).
   */
  readonly maxTokens: number;
}

/** Everything the ast process needs. */
export interface AstConfig extends AstOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `AST_MAX_TOKENS` and the `AST_*` runtime options. */
export function loadConfig(env: Env = processEnv()): AstConfig {
  return {
    maxTokens: envInt(env, "AST_MAX_TOKENS", 50_000, 100, 10_000_000),
    runtime: loadServiceRuntimeOptions("AST", AST_DEFAULT_PORT, env),
  };
}
