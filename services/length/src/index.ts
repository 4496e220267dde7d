/**
 * `@reward-mesh/length`: response length and DAPO's soft overlong penalty.
 * @module
 */
export type { LengthConfig, LengthOptions } from "./config.js";
export { LENGTH_DEFAULT_PORT, LENGTH_ENV, LENGTH_SERVICE_ENV, loadConfig } from "./config.js";
export { createLengthService, LENGTH_SERVICE_VERSION, LengthMetadata, responseLength } from "./service.js";
