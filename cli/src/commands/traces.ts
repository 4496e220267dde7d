/**
 * `reward-mesh up --traces`: a local OTLP/HTTP receiver (the sdk's, JSON encoding) that stores every
 * process's spans in `<runs-dir>/traces.jsonl`, and the environment that points a process at it.
 * @module
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Writable } from "node:stream";
import { type OtlpReceiver, startOtlpReceiver } from "@reward-mesh/sdk";
import { UsageError } from "../io.js";

/**
 * The environment of a process that exports to the local receiver: telemetry on, traces as OTLP/HTTP
 * JSON (what the receiver decodes) flushed every 500 ms, Prometheus `/metrics` on `metricsPort`.
 */
export function meshTelemetryEnv(otlpEndpoint: string, metricsPort: number): Record<string, string> {
  return {
    REWARD_MESH_TELEMETRY: "on",
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_METRICS_EXPORTER: "prometheus",
    OTEL_LOGS_EXPORTER: "none",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlpEndpoint}/v1/traces`,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
    OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
    OTEL_BSP_SCHEDULE_DELAY: "500",
  };
}

/** Starts the receiver of `up --traces` and prints how a trainer joins it. */
export async function startTraceReceiver(
  flags: Readonly<Record<string, string | boolean>>,
  stdout: Writable,
): Promise<OtlpReceiver> {
  const portText = String(flags["traces-port"] ?? "4318");
  if (!/^\d+$/.test(portText) || Number(portText) > 65_535)
    throw new UsageError(`'--traces-port' must be a port number (0-65535), got '${portText}'`);
  const runsDir = resolve(String(flags["runs-dir"] ?? "runs"));
  mkdirSync(runsDir, { recursive: true });
  const file = join(runsDir, "traces.jsonl");
  const receiver = await startOtlpReceiver({ file, port: Number(portText) });
  stdout.write(
    `OTLP receiver   ${receiver.endpoint}  spans -> ${file}\n` +
      `                trainer: REWARD_MESH_TELEMETRY=on OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${receiver.endpoint}/v1/traces OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json OTEL_EXPORTER_PROMETHEUS_PORT=9464 reward-mesh train ...\n` +
      "                then: reward-mesh explain --run <id> --rollout <id> --waterfall\n",
  );
  return receiver;
}
