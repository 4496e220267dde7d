/**
 * Entrypoint of the agentdojo service: config, the suites (banking embedded, the others from
 * `AGENTDOJO_DATA_DIR`), OpenTelemetry SDK, then one gRPC server with the RewardService and the
 * AgentEnvironment, plus the JetStream worker; SIGTERM drains both. Run with `reward-mesh serve agentdojo`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { BenchmarkDataError } from "./benchmark-data.js";
import { loadConfig } from "./config.js";
import { agentEnvironmentService, createSessionManager } from "./environment-service.js";
import { createAgentDojoService } from "./service.js";
import { loadSuites } from "./suites/index.js";

const config = loadConfig();
// The suites are read once, before anything is served: a bad data directory fails the start-up.
let suites: ReturnType<typeof loadSuites>;
try {
  suites = loadSuites(config.dataDir);
} catch (err) {
  // Whatever a suite builder throws (a BenchmarkDataError names the file and field; anything else, e.g.
  // the YAML parser refusing an alias bomb, is named by its class) ends the start-up with one line.
  const what =
    err instanceof BenchmarkDataError
      ? err.message
      : `cannot build the suites: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
  process.stderr.write(
    `agentdojo: AGENTDOJO_DATA_DIR=${config.dataDir}: ${what.replace(/\s*\n\s*/g, " ")}\n`,
  );
  process.exit(1);
}
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-agentdojo" });
otel.start();
const logger = createLogger({ service: "agentdojo", level: config.runtime.logLevel });
logger.info(
  {
    suites: [...suites.values()]
      .map((s) => `${s.name} (${s.userTasks.length}×${s.injectionTasks.length})`)
      .join(", "),
  },
  "agentdojo suites loaded",
);
// AgentEnvironment (interactive rollouts) is served on the same port as the RewardService.
const sessions = config.environment.enabled
  ? createSessionManager({
      maxSessions: config.environment.maxSessions,
      idleTimeoutMs: config.environment.idleTimeoutMs,
      maxCalls: config.maxCalls,
      attackModelName: config.attackModelName,
      defaultAttack: config.defaultAttack,
      suites,
    })
  : undefined;
await serveRewardService(
  createAgentDojoService({ ...config, suites }),
  config.runtime,
  logger,
  async () => {
    sessions?.stop();
    await otel.shutdown();
  },
  { extraServices: sessions ? [agentEnvironmentService(sessions, logger)] : [] },
);
