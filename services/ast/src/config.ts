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
import type { ParserPoolOptions } from "./parser-pool.js";

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
  AST_PYTHON: {
    type: "string",
    default: "python3",
    description: "Python interpreter of the parser helpers (CPython's ast; only the standard library).",
  },
  AST_PARSERS: {
    type: "integer",
    minimum: 1,
    maximum: 64,
    default: 2,
    description: "Long-lived parser helper processes.",
  },
  AST_PARSER_MEMORY_MB: {
    type: "integer",
    minimum: 64,
    maximum: 65536,
    default: 512,
    description: "Address-space limit of each parser helper, MiB.",
  },
  AST_PARSE_TIMEOUT_MS: {
    type: "integer",
    minimum: 100,
    maximum: 600000,
    default: 10000,
    description: "Wall time one parse-and-compare may take before its helper is killed and replaced.",
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
  /** The parser helpers (`AST_PYTHON`, `AST_PARSERS`, `AST_PARSER_MEMORY_MB`, `AST_PARSE_TIMEOUT_MS`). */
  readonly parser: ParserPoolOptions;
}

/** Everything the ast process needs. */
export interface AstConfig extends AstOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `AST_MAX_TOKENS`, the parser helpers' variables and the `AST_*` runtime options. */
export function loadConfig(env: Env = processEnv()): AstConfig {
  const e = loadEnv(AST_ENV, env);
  return {
    maxTokens: e.AST_MAX_TOKENS,
    parser: {
      python: e.AST_PYTHON,
      size: e.AST_PARSERS,
      memoryMb: e.AST_PARSER_MEMORY_MB,
      timeoutMs: e.AST_PARSE_TIMEOUT_MS,
    },
    runtime: loadServiceRuntimeOptions("AST", AST_DEFAULT_PORT, env),
  };
}
