/**
 * Entrypoint of the ast service: config, OpenTelemetry SDK, the parser helpers, gRPC + JetStream
 * worker, drain on SIGTERM. Run with `reward-mesh serve ast`.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { ParserPool } from "./parser-pool.js";
import { createAstService } from "./service.js";

const config = loadConfig();
// Exporters follow the standard OTEL_* variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, ...);
// none is set: no export (not OTLP to a localhost collector that may not exist).
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: "reward-mesh-ast" });
otel.start();
const logger = createLogger({ service: "ast", level: config.runtime.logLevel });
const parserPool = new ParserPool(config.parser);
await serveRewardService(createAstService(config, { parserPool }), config.runtime, logger, async () => {
  parserPool.close();
  await otel.shutdown();
});
