/**
 * Entrypoint of the efficiency service: config, OpenTelemetry SDK, the sandbox (its backend is logged
 * here), gRPC + JetStream worker, drain on SIGTERM, then the sandbox is closed.
 * Run with `reward-mesh serve efficiency`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { createSandbox } from "@reward-mesh/sandbox";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { createEfficiencyService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-efficiency" });
otel.start();
const logger = createLogger({ service: "efficiency", level: config.runtime.logLevel });
const sandbox = await createSandbox(config.sandbox, { logger });
await serveRewardService(
  createEfficiencyService({ ...config, sandboxInstance: sandbox }),
  config.runtime,
  logger,
  async () => {
    await sandbox.close();
    await otel.shutdown();
  },
);
