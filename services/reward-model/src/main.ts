/**
 * Entrypoint of the reward-model service: config, OpenTelemetry SDK, model load (a bad model file fails
 * here, naming it), gRPC + JetStream worker, drain on SIGTERM. Run with `reward-mesh serve reward-model`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { createRewardModelService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables; none is set: no export.
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-reward-model" });
otel.start();
const logger = createLogger({ service: "reward-model", level: config.runtime.logLevel });
const service = createRewardModelService(config);
await service.ready;
logger.info(
  { modelDir: config.modelDir, executionProvider: config.executionProvider, maxBatch: config.maxBatch },
  "reward model loaded",
);
await serveRewardService(service, config.runtime, logger, async () => {
  await service.close();
  await otel.shutdown();
});
