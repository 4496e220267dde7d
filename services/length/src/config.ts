/**
 * Configuration of the length service (prefix `LENGTH_`). The only module here that reads the
 * environment.
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
import { checkOverlongOptions } from "@reward-mesh/sdk/rewards";

/** Default gRPC port of the length service. */
export const LENGTH_DEFAULT_PORT = 50061;

/** The length service's own variables. */
export const LENGTH_ENV = defineEnv({
  LENGTH_MAX_LENGTH: {
    type: "integer",
    minimum: 1,
    default: 20480,
    description: "DAPO L_max: longer responses get the full penalty.",
  },
  LENGTH_CACHE_LENGTH: {
    type: "integer",
    minimum: 1,
    default: 4096,
    description: "DAPO L_cache: the soft-penalty interval before L_max.",
  },
  LENGTH_PENALTY_FACTOR: {
    type: "number",
    minimum: 0,
    default: 1,
    description: "Penalty factor; overlong lies in [-factor, 0].",
  },
});

/** Every variable the length process reads (its definition in the published schema). */
export const LENGTH_SERVICE_ENV = defineServiceEnv({
  service: "length",
  prefix: "LENGTH",
  defaultPort: LENGTH_DEFAULT_PORT,
  own: LENGTH_ENV,
});

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
  const v = loadEnv(LENGTH_ENV, env);
  const options: LengthOptions = {
    maxLength: v.LENGTH_MAX_LENGTH,
    cacheLength: v.LENGTH_CACHE_LENGTH,
    penaltyFactor: v.LENGTH_PENALTY_FACTOR,
  };
  checkOverlongOptions({
    maxLength: options.maxLength,
    cacheLength: options.cacheLength,
    factor: options.penaltyFactor,
  });
  return { ...options, runtime: loadServiceRuntimeOptions("LENGTH", LENGTH_DEFAULT_PORT, env) };
}
