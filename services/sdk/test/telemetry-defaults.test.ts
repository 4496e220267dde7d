/** Telemetry is exported only when an OTEL_* exporter variable says where (README: "traces off unless ..."). */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { applyTelemetryDefaults, signalExportConfigured, telemetryExportConfigured } from "../src/index.js";

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
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" },
      { OTEL_TRACES_EXPORTER: "otlp", OTEL_METRICS_EXPORTER: "prometheus", OTEL_LOGS_EXPORTER: "none" },
    ]) {
      const e: Record<string, string | undefined> = { ...env };
      assert.equal(telemetryExportConfigured(e), true);
      applyTelemetryDefaults(e);
      assert.deepEqual(e, env);
    }
  });

  it("decides per signal: a Prometheus port alone turns on /metrics, not OTLP traces", () => {
    const e: Record<string, string | undefined> = { OTEL_EXPORTER_PROMETHEUS_PORT: "9999" };
    assert.equal(signalExportConfigured("TRACES", e), false);
    applyTelemetryDefaults(e);
    assert.equal(e["OTEL_TRACES_EXPORTER"], "none");
    assert.equal(e["OTEL_METRICS_EXPORTER"], "prometheus");
    assert.equal(e["OTEL_LOGS_EXPORTER"], "none");
    const m: Record<string, string | undefined> = { OTEL_METRICS_EXPORTER: "prometheus" };
    applyTelemetryDefaults(m);
    assert.deepEqual(m, {
      OTEL_METRICS_EXPORTER: "prometheus",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
    });
    const o: Record<string, string | undefined> = { OTEL_TRACES_EXPORTER: "otlp" };
    applyTelemetryDefaults(o);
    assert.deepEqual(o, {
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
    });
    const t: Record<string, string | undefined> = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces",
    };
    applyTelemetryDefaults(t);
    assert.equal(t["OTEL_TRACES_EXPORTER"], undefined);
    assert.equal(t["OTEL_METRICS_EXPORTER"], "none");
  });

  it("a /metrics port already in use is reported on stderr, naming the port and the variable", async () => {
    const blocker = createServer();
    blocker.listen(0, "127.0.0.1");
    await once(blocker, "listening");
    const port = (blocker.address() as { port: number }).port;
    const sdk = fileURLToPath(new URL("../src/index.ts", import.meta.url));
    const script = [
      `const { applyTelemetryDefaults } = await import(${JSON.stringify(sdk)});`,
      `const { NodeSDK } = await import("@opentelemetry/sdk-node");`,
      "applyTelemetryDefaults();",
      'const otel = new NodeSDK({ serviceName: "bind-test" });',
      "otel.start();",
      "setTimeout(() => otel.shutdown(), 3000);",
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      env: {
        ...process.env,
        REWARD_MESH_TELEMETRY: "on",
        OTEL_TRACES_EXPORTER: "none",
        OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
        OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    try {
      await once(child, "exit");
    } finally {
      child.kill();
      blocker.close();
    }
    assert.match(stderr, /EADDRINUSE/);
    assert.match(
      stderr,
      new RegExp(`/metrics port ${port} cannot be bound: set OTEL_EXPORTER_PROMETHEUS_PORT`),
    );
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
