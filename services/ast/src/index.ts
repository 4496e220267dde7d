/**
 * `@reward-mesh/ast`: `syntax` and CorrGRPO's identifier- and literal-independent AST `similarity` to
 * the reference solution, computed by CPython's `ast` and `difflib` in a pool of parser helpers.
 * @module
 */
export type { AstConfig, AstOptions } from "./config.js";
export { AST_DEFAULT_PORT, AST_ENV, AST_SERVICE_ENV, loadConfig } from "./config.js";
export type { ParseAnswer, ParsedSide, ParseFailure, ParserPoolOptions } from "./parser-pool.js";
export { AST_HELPER_PATH, ParserPool } from "./parser-pool.js";
export type { AstServiceExtras } from "./service.js";
export { AST_SERVICE_VERSION, createAstService, MAX_MATCH_PAIRS } from "./service.js";
