/**
 * Configuration of the efficiency service (prefix `EFFICIENCY_`, plus the sandbox's `SANDBOX_*`). The
 * only module here that reads the environment.
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
import { loadSandboxConfig, SANDBOX_CONFIG_ENV, type SandboxConfig } from "@reward-mesh/sandbox";

/** Default gRPC port of the efficiency service. */
export const EFFICIENCY_DEFAULT_PORT = 50064;

/** The efficiency service's own variables. */
export const EFFICIENCY_ENV = defineEnv({
  EFFICIENCY_REPEATS: {
    type: "integer",
    minimum: 1,
    maximum: 100,
    default: 5,
    description:
      "Timed runs of the candidate (and of the reference on a cache miss), interleaved, before the first significance test.",
  },
  EFFICIENCY_MAX_REPEATS: {
    type: "integer",
    minimum: 1,
    maximum: 100,
    default: 9,
    description:
      "Most timed runs per side when the first ones are not conclusive (at least EFFICIENCY_REPEATS).",
  },
  EFFICIENCY_CACHE_SIZE: {
    type: "integer",
    minimum: 1,
    maximum: 10000000,
    default: 4096,
    description: "Reference timings kept (LRU).",
  },
});

/** Every variable the efficiency process reads (its definition in the published schema). */
export const EFFICIENCY_SERVICE_ENV = defineServiceEnv({
  service: "efficiency",
  prefix: "EFFICIENCY",
  defaultPort: EFFICIENCY_DEFAULT_PORT,
  own: EFFICIENCY_ENV,
  libraries: [SANDBOX_CONFIG_ENV],
});

/** Scoring options of the efficiency service. */
export interface EfficiencyOptions {
  /**
   * Timed runs of the candidate (and, on a cache miss, of the reference, interleaved with them) before
   * the first significance test.
   * @default 5
   */
  readonly repeats: number;
  /**
   * Most timed runs per side: while the candidate looks faster but not significantly so, one more run
   * of each is added, up to this many.
   * @default 9
   */
  readonly maxRepeats?: number;
  /**
   * Reference timings kept (by content hash of task + reference + limits + backend), LRU.
   * @default 4096
   */
  readonly cacheSize: number;
  /** How candidate and reference run (`SANDBOX_*`, see services/sandbox/README.md). */
  readonly sandbox: SandboxConfig;
}

/** Everything the efficiency process needs. */
export interface EfficiencyConfig extends EfficiencyOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `EFFICIENCY_REPEATS`, `EFFICIENCY_CACHE_SIZE`, `SANDBOX_*` and the runtime options. */
export function loadConfig(env: Env = processEnv()): EfficiencyConfig {
  const v = loadEnv(EFFICIENCY_ENV, env);
  return {
    repeats: v.EFFICIENCY_REPEATS,
    maxRepeats: Math.max(v.EFFICIENCY_REPEATS, v.EFFICIENCY_MAX_REPEATS),
    cacheSize: v.EFFICIENCY_CACHE_SIZE,
    sandbox: loadSandboxConfig(env),
    runtime: loadServiceRuntimeOptions("EFFICIENCY", EFFICIENCY_DEFAULT_PORT, env),
  };
}
