/**
 * Configuration of the length service (prefix `LENGTH_`). The only module here that reads the
 * environment.
 * @module
 */
import {
  type Env,
  envInt,
  envNumber,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { checkOverlongOptions } from "@reward-mesh/sdk/rewards";

/** Default gRPC port of the length service. */
export const LENGTH_DEFAULT_PORT = 50061;

/** Scoring options of the length service. */
export interface LengthOptions {
  /**
   * DAPO `L_max`: responses longer than this get the full penalty.
   * @default 20480 — the DAPO recipe (16384 + 4096).
   */
  readonly maxLength: number;
  /**
   * DAPO `L_cache`: the soft-penalty interval before `maxLength`.
   * @default 4096 — the DAPO recipe.
   */
  readonly cacheLength: number;
  /**
   * Penalty factor (verl `penalty_factor`); `overlong` lies in `[−penaltyFactor, 0]`.
   * @default 1
   */
  readonly penaltyFactor: number;
}

/** Everything the length process needs. */
export interface LengthConfig extends LengthOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `LENGTH_MAX_LENGTH`, `LENGTH_CACHE_LENGTH`, `LENGTH_PENALTY_FACTOR` and the runtime options. */
export function loadConfig(env: Env = processEnv()): LengthConfig {
  const options: LengthOptions = {
    maxLength: envInt(env, "LENGTH_MAX_LENGTH", 20_480, 1),
    cacheLength: envInt(env, "LENGTH_CACHE_LENGTH", 4_096, 1),
    penaltyFactor: envNumber(env, "LENGTH_PENALTY_FACTOR", 1, 0),
  };
  checkOverlongOptions({
    maxLength: options.maxLength,
    cacheLength: options.cacheLength,
    factor: options.penaltyFactor,
  });
  return { ...options, runtime: loadServiceRuntimeOptions("LENGTH", LENGTH_DEFAULT_PORT, env) };
}
