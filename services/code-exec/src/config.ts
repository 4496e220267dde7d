/**
 * Configuration of the code-exec service (prefix `CODE_EXEC_`, plus the sandbox's `SANDBOX_*`). The
 * only module here that reads the environment.
 * @module
 */
import {
  defineEnv,
  defineServiceEnv,
  loadEnv,
  type Env,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { loadSandboxConfig, SANDBOX_CONFIG_ENV, type SandboxConfig } from "@reward-mesh/sandbox";

/** Default gRPC port of the code-exec service. */
export const CODE_EXEC_DEFAULT_PORT = 50062;

/** How a check program's asserts are scored (see the README, "Execution semantics"). */
export const EXECUTION_SEMANTICS = ["per_assert", "corrgrpo"] as const;
/** One of {@link EXECUTION_SEMANTICS}. */
export type ExecutionSemantics = (typeof EXECUTION_SEMANTICS)[number];

/** The code-exec service's own variables. */
export const CODE_EXEC_ENV = defineEnv({
  CODE_EXEC_SEMANTICS: {
    type: "string",
    enum: EXECUTION_SEMANTICS,
    default: "per_assert",
    description:
      "per_assert: pass_rate counts every assert; corrgrpo: the run stops at the first failing assert, as CorrGRPO's released reward (runtime follows CorrGRPO in both).",
  },
});

/**
 * Every variable the code-exec process reads (its definition in the published schema): its own, the
 * sandbox's `SANDBOX_*` and the runtime's.
 */
export const CODE_EXEC_SERVICE_ENV = defineServiceEnv({
  service: "code-exec",
  prefix: "CODE_EXEC",
  defaultPort: CODE_EXEC_DEFAULT_PORT,
  own: CODE_EXEC_ENV,
  libraries: [SANDBOX_CONFIG_ENV],
});

/** Everything the code-exec process needs. */
export interface CodeExecConfig {
  /**
   * How candidate code runs: backend, limits, concurrency (`SANDBOX_*`, see services/sandbox/README.md).
   * @default `SANDBOX_BACKEND=auto`, 5 s and 1024 MiB per execution (CorrGRPO's launcher)
   */
  readonly sandbox: SandboxConfig;
  /** `CODE_EXEC_SEMANTICS`. @default "per_assert" */
  readonly semantics: ExecutionSemantics;
  /** gRPC, JetStream worker, log level (`CODE_EXEC_GRPC_PORT`, `CODE_EXEC_CONCURRENCY`, ...). */
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `SANDBOX_*`, `CODE_EXEC_SEMANTICS` and the `CODE_EXEC_*` runtime options. */
export function loadConfig(env: Env = processEnv()): CodeExecConfig {
  return {
    sandbox: loadSandboxConfig(env),
    semantics: loadEnv(CODE_EXEC_ENV, env).CODE_EXEC_SEMANTICS as ExecutionSemantics,
    runtime: loadServiceRuntimeOptions("CODE_EXEC", CODE_EXEC_DEFAULT_PORT, env),
  };
}
