/**
 * Entrypoint of the agentdojo service: config, OpenTelemetry SDK, then one gRPC server with the
 * RewardService and the AgentEnvironment, plus the JetStream worker; SIGTERM drains both.
 * Run with `reward-mesh serve agentdojo`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { agentEnvironmentService, createSessionManager } from "./environment-service.js";
import { createAgentDojoService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-agentdojo" });
otel.start();
const logger = createLogger({ service: "agentdojo", level: config.runtime.logLevel });
// AgentEnvironment (interactive rollouts) is served on the same port as the RewardService.
const sessions = config.environment.enabled
  ? createSessionManager({
      maxSessions: config.environment.maxSessions,
      idleTimeoutMs: config.environment.idleTimeoutMs,
      maxCalls: config.maxCalls,
      attackModelName: config.attackModelName,
      defaultAttack: config.defaultAttack,
    })
  : undefined;
await serveRewardService(
  createAgentDojoService(config),
  config.runtime,
  logger,
  async () => {
    sessions?.stop();
    await otel.shutdown();
  },
  { extraServices: sessions ? [agentEnvironmentService(sessions, logger)] : [] },
);
