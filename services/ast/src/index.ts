/**
 * `@reward-mesh/ast`: `syntax` and CorrGRPO's identifier- and literal-independent AST `similarity` to
 * the reference solution, with tree-sitter.
 * @module
 */
export type { AstConfig, AstOptions } from "./config.js";
export { AST_DEFAULT_PORT, AST_ENV, AST_SERVICE_ENV, loadConfig } from "./config.js";
export type { ParsedCode } from "./node-sequence.js";
export { parseCode, pythonParser } from "./node-sequence.js";
export { matchingCharacters, sequenceRatio } from "./sequence-matcher.js";
export { AST_SERVICE_VERSION, createAstService } from "./service.js";
