/**
 * `@reward-mesh/code-exec`: runs a Python solution against its tests in a sandbox and emits
 * CorrGRPO's staged components `format`, `syntax`, `compile`, `runtime`, `pass`, plus `pass_rate`.
 * @module
 */
export type { CodeExecConfig } from "./config.js";
export { CODE_EXEC_DEFAULT_PORT, CODE_EXEC_SERVICE_ENV, loadConfig } from "./config.js";
export type { CodeExecServiceOptions } from "./service.js";
export { CODE_EXEC_SERVICE_VERSION, codeExecComponents, createCodeExecService } from "./service.js";
