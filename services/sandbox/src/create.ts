/**
 * `createSandbox`: picks the backend (`docker`, `bwrap`, or `auto` = Docker when the daemon answers
 * and has the harness image, else bwrap), logs the choice, and bounds concurrency.
 * @module
 */
import { createLimiter, type Logger, silentLogger } from "@reward-mesh/sdk";
import { createBwrapEngine } from "./bwrap.js";
import type { SandboxConfig } from "./config.js";
import { createDockerEngine, dockerAnswers } from "./docker.js";
import { defaultLimits, resolveRequest, type SandboxEngine } from "./engine.js";
import type { Sandbox } from "./types.js";

/** Options of {@link createSandbox}. */
export interface CreateSandboxOptions {
  /** Where the backend choice and its problems are logged. @default silent */
  readonly logger?: Logger;
}

/** Wraps an engine with validation, default limits and the concurrency bound. */
function wrap(engine: SandboxEngine, config: SandboxConfig): Sandbox {
  const limits = defaultLimits(config);
  const limiter = createLimiter(config.concurrency);
  return {
    backend: engine.backend,
    description: engine.description,
    limits,
    get active() {
      return limiter.active;
    },
    get waiting() {
      return limiter.waiting;
    },
    run(request) {
      const resolved = resolveRequest(request, limits);
      return limiter.run(() => engine.execute(request, resolved.limits, resolved.files), request.signal);
    },
    close: () => engine.close(),
    ...(engine.warmStats ? { warmStats: engine.warmStats } : {}),
  };
}

/**
 * Creates the configured sandbox. Throws `ConfigError` when the chosen backend cannot work on this
 * host (naming the key to change); with `auto`, Docker's problems are logged and bwrap is tried.
 */
export async function createSandbox(
  config: SandboxConfig,
  options: CreateSandboxOptions = {},
): Promise<Sandbox> {
  const logger = options.logger ?? silentLogger;
  let engine: SandboxEngine;
  if (config.backend === "docker") {
    engine = await createDockerEngine(config, logger);
  } else if (config.backend === "bwrap") {
    engine = await createBwrapEngine(config, logger);
  } else if (await dockerAnswers(config.dockerHost, config.dockerPingTimeoutMs, config.dockerCertPath)) {
    try {
      engine = await createDockerEngine(config, logger);
    } catch (err) {
      logger.warn(
        {
          error: (err as Error).message,
        },
        "sandbox: Docker answers but cannot be used; falling back to bwrap",
      );
      engine = await createBwrapEngine(config, logger);
    }
  } else {
    logger.info({ dockerHost: config.dockerHost }, "sandbox: no Docker daemon answers; using bwrap");
    engine = await createBwrapEngine(config, logger);
  }
  logger.info(
    {
      backend: engine.backend,
      choice: config.backend,
      concurrency: config.concurrency,
    },
    `sandbox backend: ${engine.description}`,
  );
  return wrap(engine, config);
}
