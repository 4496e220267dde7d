/**
 * The trainer's Prometheus metrics, through `@opentelemetry/api` (exported by whatever SDK the entry
 * point installed; `REWARD_MESH_TELEMETRY=on` gives `/metrics` on `OTEL_EXPORTER_PROMETHEUS_PORT`).
 * Recorded once per step from the step's metrics line, so the dashboard and `metrics.jsonl` agree.
 * @module
 */
import { meshMeter, SECONDS_BUCKETS } from "@reward-mesh/sdk";

/** What {@link recordStepMetrics} reads from a step's metrics line. */
interface StepLine {
  readonly runId: string;
  readonly timingsMs: Readonly<Record<string, number>>;
  readonly weightedReward?: number | null;
  readonly components?: Readonly<Record<string, { readonly mean: number | null }>>;
  readonly denominatorShares?: {
    readonly components: readonly string[];
    readonly grpoRow: readonly (number | null)[];
    readonly corrGrpoRow: readonly (number | null)[];
  };
  readonly groups?: {
    readonly used: number;
    readonly dynamicSamplingDropped: number;
    readonly imputed: number;
    readonly corrFallback?: number;
  };
  readonly droppedGroups?: number;
  readonly rejectedResults?: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

let instruments: ReturnType<typeof createInstruments> | undefined;

function createInstruments() {
  const meter = meshMeter();
  const latest = {
    reward: new Map<string, number>(),
    shares: new Map<string, number>(),
  };
  const rewardMean = meter.createObservableGauge("reward_mesh_trainer_reward_mean", {
    description: "Mean reward of the last step: the weighted total and each component",
  });
  rewardMean.addCallback((r) => {
    for (const [k, v] of latest.reward) {
      const [run, component] = k.split("\u0000") as [string, string];
      r.observe(v, { run, component });
    }
  });
  const shares = meter.createObservableGauge("reward_mesh_trainer_denominator_share", {
    description:
      "Each component's share of the advantage denominator in the last step (GRPO and CorrGRPO views)",
  });
  shares.addCallback((r) => {
    for (const [k, v] of latest.shares) {
      const [run, component, view] = k.split("\u0000") as [string, string, string];
      r.observe(v, { run, component, view });
    }
  });
  return {
    latest,
    steps: meter.createCounter("reward_mesh_trainer_steps", { description: "Training steps applied" }),
    phase: meter.createHistogram("reward_mesh_trainer_step_phase_duration_seconds", {
      unit: "s",
      advice: { explicitBucketBoundaries: [...SECONDS_BUCKETS] },
      description: "Time of each phase of a step (generate, score, advantages, train, total)",
    }),
    groups: meter.createCounter("reward_mesh_trainer_groups", {
      description:
        "Groups per outcome: used, dropped (incomplete at the deadline), imputed, filtered (DAPO), corr_fallback (CorrGRPO's degenerate-group guard divided by GRPO's scale)",
    }),
    rejected: meter.createCounter("reward_mesh_trainer_rejected_results", {
      description: "Reward results that failed validation, per service and reason",
    }),
  };
}

/** Records one applied step. */
export function recordStepMetrics(line: StepLine): void {
  instruments ??= createInstruments();
  const m = instruments;
  const run = line.runId;
  m.steps.add(1, { run });
  for (const [phase, ms] of Object.entries(line.timingsMs)) m.phase.record(ms / 1000, { run, phase });
  // The gauges show this step only: a component without a value now (mean null, or absent) reads NaN, not
  // the value of an older step (the SDK keeps reporting an attribute set once observed, so NaN, not a gap).
  forgetRun(m.latest, run);
  if (typeof line.weightedReward === "number")
    m.latest.reward.set(`${run}\u0000weighted_total`, line.weightedReward);
  for (const [component, c] of Object.entries(line.components ?? {}))
    if (c.mean !== null) m.latest.reward.set(`${run}\u0000${component}`, c.mean);
  const sh = line.denominatorShares;
  sh?.components.forEach((component, k) => {
    const g = sh.grpoRow[k];
    const c = sh.corrGrpoRow[k];
    if (typeof g === "number") m.latest.shares.set(`${run}\u0000${component}\u0000grpo`, g);
    if (typeof c === "number") m.latest.shares.set(`${run}\u0000${component}\u0000corr_grpo`, c);
  });
  const g = line.groups;
  if (g) {
    m.groups.add(g.used, { run, outcome: "used" });
    m.groups.add(g.imputed, { run, outcome: "imputed" });
    m.groups.add(g.dynamicSamplingDropped, { run, outcome: "filtered" });
    m.groups.add(g.corrFallback ?? 0, { run, outcome: "corr_fallback" });
  }
  m.groups.add(line.droppedGroups ?? 0, { run, outcome: "dropped" });
  for (const [service, reasons] of Object.entries(line.rejectedResults ?? {}))
    for (const [reason, n] of Object.entries(reasons)) m.rejected.add(n, { run, service, reason });
}

/** Sets every gauge value of `run` to NaN (no value). */
function forgetRun(latest: { reward: Map<string, number>; shares: Map<string, number> }, run: string): void {
  const prefix = `${run}\u0000`;
  for (const map of [latest.reward, latest.shares])
    for (const k of map.keys()) if (k.startsWith(prefix)) map.set(k, Number.NaN);
}

/**
 * A finished run's gauges read NaN from now on (a process running many runs, e.g. `experiment`, does not
 * keep reporting the last values of finished runs as if current).
 */
export function forgetRunMetrics(run: string): void {
  if (instruments) forgetRun(instruments.latest, run);
}
