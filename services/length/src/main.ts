/**
 * Entrypoint of the length service: config, OpenTelemetry SDK, gRPC + JetStream worker, drain on SIGTERM.
 * Run with `reward-mesh serve length`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { createLengthService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-length" });
otel.start();
const logger = createLogger({ service: "length", level: config.runtime.logLevel });
await serveRewardService(createLengthService(config), config.runtime, logger, () => otel.shutdown());
