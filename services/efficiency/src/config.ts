/**
 * Configuration of the efficiency service (prefix `EFFICIENCY_`, plus the sandbox's `SANDBOX_*`). The
 * only module here that reads the environment.
 * @module
 */
import {
  type Env,
  envInt,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { loadSandboxConfig, type SandboxConfig } from "@reward-mesh/sandbox";

/** Default gRPC port of the efficiency service. */
export const EFFICIENCY_DEFAULT_PORT = 50064;

/** Scoring options of the efficiency service. */
export interface EfficiencyOptions {
  /**
   * Timed runs of the candidate (and, on a cache miss, of the reference, interleaved with them);
   * the minimum CPU time of the runs is compared (interference only ever adds time).
   * @default 3
   */
  readonly repeats: number;
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
  return {
    repeats: envInt(env, "EFFICIENCY_REPEATS", 3, 1, 100),
    cacheSize: envInt(env, "EFFICIENCY_CACHE_SIZE", 4_096, 1, 10_000_000),
    sandbox: loadSandboxConfig(env),
    runtime: loadServiceRuntimeOptions("EFFICIENCY", EFFICIENCY_DEFAULT_PORT, env),
  };
}
