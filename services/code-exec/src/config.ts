/**
 * Configuration of the code-exec service (prefix `CODE_EXEC_`, plus the sandbox's `SANDBOX_*`). The
 * only module here that reads the environment.
 * @module
 */
import {
  defineServiceEnv,
  type Env,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";
import { loadSandboxConfig, SANDBOX_CONFIG_ENV, type SandboxConfig } from "@reward-mesh/sandbox";

/** Default gRPC port of the code-exec service. */
export const CODE_EXEC_DEFAULT_PORT = 50062;

/**
 * Every variable the code-exec process reads (its definition in the published schema): no own ones,
 * the sandbox's `SANDBOX_*` and the runtime's.
 */
export const CODE_EXEC_SERVICE_ENV = defineServiceEnv({
  service: "code-exec",
  prefix: "CODE_EXEC",
  defaultPort: CODE_EXEC_DEFAULT_PORT,
  own: {},
  libraries: [SANDBOX_CONFIG_ENV],
});

/** Everything the code-exec process needs. */
export interface CodeExecConfig {
  /**
   * How candidate code runs: backend, limits, concurrency (`SANDBOX_*`, see services/sandbox/README.md).
   * @default `SANDBOX_BACKEND=auto`, 5 s and 1024 MiB per execution (CorrGRPO's launcher)
   */
  readonly sandbox: SandboxConfig;
  /** gRPC, JetStream worker, log level (`CODE_EXEC_GRPC_PORT`, `CODE_EXEC_CONCURRENCY`, ...). */
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads `SANDBOX_*` and the `CODE_EXEC_*` runtime options. */
export function loadConfig(env: Env = processEnv()): CodeExecConfig {
  return {
    sandbox: loadSandboxConfig(env),
    runtime: loadServiceRuntimeOptions("CODE_EXEC", CODE_EXEC_DEFAULT_PORT, env),
  };
}
