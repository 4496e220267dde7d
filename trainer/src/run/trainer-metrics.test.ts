import assert from "node:assert/strict";
import { it } from "node:test";
import { metrics } from "@opentelemetry/api";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { forgetRunMetrics, recordStepMetrics } from "./trainer-metrics.js";

/** A pull reader: what a Prometheus scrape collects. */
class PullReader extends MetricReader {
  protected override onForceFlush = async () => {};
  protected override onShutdown = async () => {};
}

const reader = new PullReader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

async function gauge(name: string): Promise<Map<string, number>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, number>();
  for (const sm of resourceMetrics.scopeMetrics)
    for (const m of sm.metrics)
      if (m.descriptor.name === name)
        for (const p of m.dataPoints) out.set(Object.values(p.attributes).join("/"), p.value as number);
  return out;
}

const line = (runId: string, means: Record<string, number | null>) => ({
  runId,
  timingsMs: { total: 10 },
  weightedReward: 0.5,
  components: Object.fromEntries(Object.entries(means).map(([k, mean]) => [k, { mean }])),
  denominatorShares: {
    components: Object.keys(means),
    grpoRow: Object.values(means),
    corrGrpoRow: Object.values(means),
  },
});

it("reward mean and denominator share show the last step only (NaN for a component without a value), a finished run's read NaN", async () => {
  recordStepMetrics(line("a", { "x/p": 0.25, "y/q": 0.75 }));
  assert.equal((await gauge("reward_mesh_trainer_reward_mean")).get("a/y/q"), 0.75);
  // y/q has no value this step (null): NaN, not the older 0.75.
  recordStepMetrics(line("a", { "x/p": 0.5, "y/q": null }));
  const means = await gauge("reward_mesh_trainer_reward_mean");
  assert.equal(means.get("a/x/p"), 0.5);
  assert.ok(Number.isNaN(means.get("a/y/q")));
  const shares = await gauge("reward_mesh_trainer_denominator_share");
  assert.ok(Number.isNaN(shares.get("a/y/q/grpo")));
  assert.equal(shares.get("a/x/p/corr_grpo"), 0.5);
  recordStepMetrics(line("b", { "x/p": 1 }));
  forgetRunMetrics("a");
  const after = await gauge("reward_mesh_trainer_reward_mean");
  for (const [k, v] of after) if (k.startsWith("a/")) assert.ok(Number.isNaN(v), k);
  assert.equal(after.get("b/x/p"), 1);
});
