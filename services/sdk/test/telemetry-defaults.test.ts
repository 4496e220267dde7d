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

  it("REWARD_MESH_TELEMETRY=on turns traces (OTLP) and metrics (Prometheus) on; explicit OTEL_* values win", () => {
    const e: Record<string, string | undefined> = { REWARD_MESH_TELEMETRY: "on", OTEL_TRACES_EXPORTER: " " };
    applyTelemetryDefaults(e);
    assert.equal(e["OTEL_TRACES_EXPORTER"], "otlp");
    assert.equal(e["OTEL_METRICS_EXPORTER"], "prometheus");
    assert.equal(e["OTEL_LOGS_EXPORTER"], "none");
    const f: Record<string, string | undefined> = {
      REWARD_MESH_TELEMETRY: "true",
      OTEL_METRICS_EXPORTER: "otlp",
    };
    applyTelemetryDefaults(f);
    assert.equal(f["OTEL_METRICS_EXPORTER"], "otlp");
    const off: Record<string, string | undefined> = { REWARD_MESH_TELEMETRY: "off" };
    applyTelemetryDefaults(off);
    assert.equal(off["OTEL_TRACES_EXPORTER"], "none");
    assert.throws(() => applyTelemetryDefaults({ REWARD_MESH_TELEMETRY: "maybe" }), /REWARD_MESH_TELEMETRY/);
  });
});
