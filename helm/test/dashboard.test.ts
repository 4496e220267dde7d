/**
 * The Grafana dashboard (helm/reward-mesh/dashboards/reward-mesh.json) reads only metrics the code
 * exports, and shows every one of them. The exported names come from the instruments the sources
 * create (`createCounter("reward_mesh_...")`, ...) under the OpenTelemetry Prometheus exporter's naming:
 * a counter gets `_total`, a histogram `_bucket`/`_sum`/`_count`, a gauge keeps its name (the tracing
 * end-to-end test scrapes those names from running processes).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === "node_modules" || name === "test" || name.endsWith(".test.ts")) continue;
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** Prometheus series names of every mesh instrument, by instrument name. */
function exportedSeries(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const files = [
    ...readdirSync(join(root, "services")).flatMap((s) => sources(join(root, "services", s, "src"))),
    ...sources(join(root, "trainer", "src")),
  ];
  const re =
    /create(Counter|ObservableCounter|Histogram|ObservableGauge|UpDownCounter|Gauge)\(\s*"(reward_mesh_\w+)"/g;
  for (const f of files) {
    for (const m of readFileSync(f, "utf8").matchAll(re)) {
      const [, kind, name] = m as unknown as [string, string, string];
      out.set(
        name,
        kind === "Counter" || kind === "ObservableCounter"
          ? [`${name}_total`]
          : kind === "Histogram"
            ? [`${name}_bucket`, `${name}_sum`, `${name}_count`]
            : [name],
      );
    }
  }
  return out;
}

it("queries only exported metrics, and every exported metric", () => {
  const dash = JSON.parse(
    readFileSync(join(root, "helm/reward-mesh/dashboards/reward-mesh.json"), "utf8"),
  ) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  assert.ok(exprs.length > 0);
  const queried = new Set(exprs.flatMap((e) => e.match(/reward_mesh_\w+/g) ?? []));
  const exported = exportedSeries();
  assert.ok(exported.size >= 12, `found ${exported.size} instruments`);
  const series = new Set([...exported.values()].flat());
  for (const q of queried)
    assert.ok(series.has(q), `the dashboard queries '${q}', which no instrument exports`);
  for (const [name, names] of exported)
    assert.ok(
      names.some((n) => queried.has(n)),
      `the dashboard shows nothing of '${name}'`,
    );
});
