/**
 * Entrypoint of the math service: config, OpenTelemetry SDK, gRPC + JetStream worker, drain on SIGTERM.
 * Run with `reward-mesh serve math`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { createMathService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-math" });
otel.start();
const logger = createLogger({ service: "math", level: config.runtime.logLevel });
const service = createMathService(config);
await serveRewardService(service, config.runtime, logger, async () => {
  await service.pool.close();
  await otel.shutdown();
});
