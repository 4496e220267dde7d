/**
 * `@reward-mesh/tool-call`: tool-call rewards — ToolRL/RLLA format and call matching (as CorrGRPO
 * scores RLLA-4K) and BFCL-style AST checks for JSON call lists.
 * @module
 */
export type { ToolCallConfig, ToolCallOptions } from "./config.js";
export {
  DEFAULT_TOOL_CALL_OPTIONS,
  loadConfig,
  TOOL_CALL_DEFAULT_PORT,
  TOOL_CALL_ENV,
  TOOL_CALL_SERVICE_ENV,
} from "./config.js";
export type { ParsedToolCallTask } from "./service.js";
export {
  createToolCallService,
  minimumScores,
  parseToolCallTask,
  TOOL_CALL_FORMATS,
  TOOL_CALL_SERVICE_VERSION,
  ToolCallComponents,
  ToolCallMetadata,
} from "./service.js";

// ---- scoring building blocks (pure functions, usable without the service) ----
export type {
  CheckResult,
  GoldCall,
  RllaCorrectness,
  RllaFormatOptions,
  RllaFormatStyle,
  RllaShape,
} from "./rlla.js";
export {
  checkRllaFormat,
  extractAssistantText,
  extractRllaCalls,
  matchScore,
  RLLA_FORMAT_STYLES,
  RllaRanges,
  scoreRllaCalls,
} from "./rlla.js";
export type { BfclOptions, BfclScores, FunctionSchema, PossibleAnswer, PredictedCall } from "./bfcl.js";
export {
  checkBfcl,
  checkCall,
  DEFAULT_BFCL_OPTIONS,
  expectedName,
  decodeJsonCalls,
  parsePossibleAnswers,
  parseToolSchemas,
  scoreBfcl,
  standardizeString,
} from "./bfcl.js";
export type { PyValue } from "./py-json.js";
export { pyEquals, pyJsonLoads } from "./py-json.js";
