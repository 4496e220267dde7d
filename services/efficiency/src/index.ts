/**
 * `@reward-mesh/efficiency`: `efficiency = clip(1 − t_gen/t_ref, 0, 1)` for a solution that passes
 * every test, with CPU times measured in the same sandbox as the reference's.
 * @module
 */
export type { EfficiencyConfig, EfficiencyOptions } from "./config.js";
export { EFFICIENCY_DEFAULT_PORT, EFFICIENCY_ENV, EFFICIENCY_SERVICE_ENV, loadConfig } from "./config.js";
export type { EfficiencyServiceOptions } from "./service.js";
export {
  compareTimings,
  createEfficiencyService,
  EFFICIENCY_SERVICE_VERSION,
  efficiencyScore,
  mannWhitneyP,
  median,
  SIGNIFICANCE,
} from "./service.js";
