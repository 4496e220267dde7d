/**
 * `telemetry.enabled`: every service and the trainer turn telemetry on (a Prometheus /metrics port, OTLP
 * traces only with `otel.endpoint`), their pods carry Prometheus scrape annotations, and the NetworkPolicies
 * let scrapers reach the metrics port. Off (the default) renders none of it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Any,
  envVar,
  find,
  type K8sObject,
  podSpec,
  renderChart,
  trainerWorkload,
  workloads,
} from "./helm.js";
import { validateAll } from "./validate.js";

const FULL = "rm-reward-mesh";
/** The service and trainer workloads (the pods that serve /metrics). */
const metricWorkloads = (objs: readonly K8sObject[]) =>
  workloads(objs).filter(
    (o) =>
      o.metadata.name.startsWith(`${FULL}-`) &&
      (podSpec(o).containers as Any[]).some((c) => c.name === "service"),
  );
const env = (o: K8sObject, name: string) =>
  (podSpec(o).containers as Any[]).map((c) => envVar(c, name)?.value).find((v) => v !== undefined);
const annotations = (o: K8sObject): Record<string, string> =>
  (o.kind === "Pod" ? o.metadata : o["spec"].template.metadata).annotations ?? {};

describe("telemetry values", () => {
  it("off by default: no switch, no annotations, no metrics ingress", async () => {
    const objs = await renderChart({ networkPolicy: { enabled: true } });
    for (const o of [...metricWorkloads(objs), trainerWorkload(objs)]) {
      assert.equal(env(o, "REWARD_MESH_TELEMETRY"), undefined, o.metadata.name);
      assert.equal(annotations(o)["prometheus.io/scrape"], undefined);
    }
    const clients = find(objs, "NetworkPolicy", `${FULL}-clients`);
    assert.deepEqual(clients["spec"].ingress, []);
  });

  it("telemetry.enabled turns it on in every service and the trainer, annotated for scraping, reachable through the NetworkPolicies", async () => {
    const objs = await renderChart({
      telemetry: {
        enabled: true,
        metricsPort: 9555,
        networkPolicyPeers: [{ namespaceSelector: { matchLabels: { name: "monitoring" } } }],
      },
      networkPolicy: { enabled: true },
    });
    validateAll(objs);
    const pods = [...metricWorkloads(objs), trainerWorkload(objs)];
    assert.ok(pods.length >= 2);
    for (const o of pods) {
      assert.equal(env(o, "REWARD_MESH_TELEMETRY"), "on", o.metadata.name);
      assert.equal(env(o, "OTEL_EXPORTER_PROMETHEUS_PORT"), "9555");
      assert.equal(env(o, "OTEL_EXPORTER_PROMETHEUS_HOST"), "0.0.0.0");
      // No otel.endpoint: no traces (not OTLP to localhost:4318).
      assert.equal(env(o, "OTEL_TRACES_EXPORTER"), "none");
      assert.deepEqual(
        { s: annotations(o)["prometheus.io/scrape"], p: annotations(o)["prometheus.io/port"] },
        { s: "true", p: "9555" },
      );
    }
    for (const name of [`${FULL}-services`, `${FULL}-clients`]) {
      const rules = find(objs, "NetworkPolicy", name)["spec"].ingress as Any[];
      const metrics = rules.find((r) => r.ports?.some((p: Any) => p.port === 9555));
      assert.ok(metrics, `${name} lets scrapers reach the metrics port`);
      assert.deepEqual(metrics.from, [{ namespaceSelector: { matchLabels: { name: "monitoring" } } }]);
    }
  });

  it("with otel.endpoint the traces go there", async () => {
    const objs = await renderChart({
      telemetry: { enabled: true },
      otel: { endpoint: "http://otel-collector:4318" },
    });
    const t = trainerWorkload(objs);
    assert.equal(env(t, "OTEL_TRACES_EXPORTER"), "otlp");
    assert.equal(env(t, "OTEL_EXPORTER_OTLP_ENDPOINT"), "http://otel-collector:4318");
    assert.equal(env(t, "OTEL_EXPORTER_PROMETHEUS_PORT"), "9464");
  });
});
