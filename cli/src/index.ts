/**
 * `@reward-mesh/cli` as a library: start a local mesh from code (tests, notebooks, benchmarks).
 * @module
 */
export type { CliConfig } from "./config.js";
export { loadCliConfig } from "./config.js";
export type { MeshProcess, RunningMesh, StartMeshOptions } from "./commands/up.js";
export { startMesh } from "./commands/up.js";
export type { ServiceEntry } from "./services.js";
export { SERVICES, serviceEntry } from "./services.js";
