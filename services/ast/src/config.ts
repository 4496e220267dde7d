/**
 * Configuration of the ast service (prefix `AST_`). The only module here that reads the environment.
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

/** Default gRPC port of the ast service. */
export const AST_DEFAULT_PORT = 50063;

/** The ast service's own variables. */
export const AST_ENV = defineEnv({
  AST_MAX_TOKENS: {
    type: "integer",
    minimum: 100,
    maximum: 10000000,
    default: 50000,
    description: "Most tokens of candidate or reference compared.",
  },
});

/** Every variable the ast process reads (its definition in the published schema). */
export const AST_SERVICE_ENV = defineServiceEnv({
  service: "ast",
  prefix: "AST",
  defaultPort: AST_DEFAULT_PORT,
  own: AST_ENV,
});

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
    maxTokens: loadEnv(AST_ENV, env).AST_MAX_TOKENS,
    runtime: loadServiceRuntimeOptions("AST", AST_DEFAULT_PORT, env),
  };
}
