/** Telemetry is exported only when an OTEL_* exporter variable says where (README: "traces off unless ..."). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyTelemetryDefaults, telemetryExportConfigured } from "../src/index.js";

describe("applyTelemetryDefaults", () => {
  it("turns every exporter off when no OTEL_* exporter variable is set", () => {
    for (const env of [{}, { OTEL_SERVICE_NAME: "x" }, { OTEL_TRACES_EXPORTER: "  " }]) {
      const e: Record<string, string | undefined> = { ...env };
      assert.equal(telemetryExportConfigured(e), false);
      applyTelemetryDefaults(e);
      assert.equal(e["OTEL_TRACES_EXPORTER"], "none");
      assert.equal(e["OTEL_METRICS_EXPORTER"], "none");
      assert.equal(e["OTEL_LOGS_EXPORTER"], "none");
    }
  });

  it("leaves the environment alone when an exporter or an endpoint is configured", () => {
    for (const env of [
      { OTEL_TRACES_EXPORTER: "otlp" },
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" },
      { OTEL_METRICS_EXPORTER: "prometheus" },
    ]) {
      const e: Record<string, string | undefined> = { ...env };
      assert.equal(telemetryExportConfigured(e), true);
      applyTelemetryDefaults(e);
      assert.deepEqual(e, env);
    }
  });
});
