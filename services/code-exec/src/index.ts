/**
 * `@reward-mesh/code-exec`: runs a Python solution against its tests in a sandbox and emits
 * CorrGRPO's staged components `format`, `syntax`, `compile`, `runtime`, `pass`, plus `pass_rate`.
 * @module
 */
export type { CodeExecConfig, ExecutionSemantics } from "./config.js";
export {
  CODE_EXEC_DEFAULT_PORT,
  CODE_EXEC_ENV,
  CODE_EXEC_SERVICE_ENV,
  EXECUTION_SEMANTICS,
  loadConfig,
} from "./config.js";
export type { CodeExecServiceOptions } from "./service.js";
export {
  CODE_EXEC_SERVICE_VERSION,
  codeExecComponents,
  corrgrpoOutcome,
  createCodeExecService,
  SEMANTICS_METADATA_KEY,
} from "./service.js";
