/**
 * `npm run bench:soak`: a bounded soak of one reward service at a fixed offered rate. A real `nats-server
 * -js` and the `length` service's real process (its `main.ts`, the cheapest scorer, so the figures are the
 * SDK's: worker, NATS client, telemetry) consume over JetStream while this process publishes rollouts at
 * `rate`/s for `seconds`, collects every `RewardResult`, and samples the service's memory.
 *
 * It reports, as one JSON object (printed, and written to `bench/results/soak.json`):
 *  - published (acked by JetStream) vs. results received, lost (= published − distinct results), duplicates;
 *  - publish→reward latency p50/p99/max over the whole run;
 *  - the service's RSS (`VmRSS` of `/proc/<pid>/status`) and V8 heap (`process.memoryUsage()` and heap
 *    spaces, appended by `bench/soak-probe.mjs` loaded into the service) over time, and a flatness verdict:
 *    after the warm-up, the mean of the second half of the samples against the first half, and the
 *    least-squares slope in MB/min. Memory is "flat" when the second half is within the tolerance of the
 *    first (a plateau, whatever its level); a leak keeps climbing and fails it.
 *
 * Knobs (flags win over environment variables; read here only):
 *   --seconds N | SOAK_SECONDS   duration of the publishing phase (default 600 = 10 minutes)
 *   --short     | SOAK_SHORT=1   120 s instead (development; the machine is shared, so figures are noisy)
 *   --rate N    | SOAK_RATE      offered rollouts/s (default 1000)
 *   --warmup N  | SOAK_WARMUP_SECONDS   samples ignored by the verdict (default min(60, seconds / 3))
 *   --tolerance-mb N | SOAK_TOLERANCE_MB  allowed growth between the halves after warm-up (default 8)
 *   SOAK_CONCURRENCY (LENGTH_CONCURRENCY of the service, default 8), SOAK_SAMPLE_MS (default 1000),
 *   SOAK_SERVICE_NODE_OPTIONS (extra Node flags for the service, e.g. `--max-semi-space-size=4`),
 *   SOAK_LIVE_HEAP=1 (a full GC in the service before every sample: the heap figures are then what is
 *   live, not what waits for the next major GC — for investigating growth; it changes the RSS curve),
 *   SOAK_OTEL_EXPORTER (OTEL_{TRACES,METRICS,LOGS}_EXPORTER of the service; default `default`: blank, i.e.
 *   what a service does with no OTEL_* setting at all — no export; `none`; `otlp` exports to
 *   OTEL_EXPORTER_OTLP_ENDPOINT, by default a collector on localhost:4318, absent here: the growth of issue 16).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { RewardResultSchema, RolloutSchema } from "@reward-mesh/proto";
import { openBus, publishRollout, Streams } from "@reward-mesh/sdk";
import { startServiceProcess, startTestNats, testBusOptions } from "@reward-mesh/sdk/testing";
import { machineInfo, writeBenchResult } from "./results.js";

/** The bench's configuration: flags, then environment, then defaults. */
function soakConfig() {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string" },
      short: { type: "boolean" },
      rate: { type: "string" },
      warmup: { type: "string" },
      "tolerance-mb": { type: "string" },
    },
  });
  const env = process.env;
  const num = (flag: string | undefined, key: string, def: number) => {
    const v = flag ?? env[key];
    if (v === undefined || v.trim() === "") return def;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${key} must be a positive number, got '${v}'`);
    return n;
  };
  const short = values.short === true || env["SOAK_SHORT"] === "1";
  const seconds = num(values.seconds, "SOAK_SECONDS", short ? 120 : 600);
  return {
    seconds,
    rate: num(values.rate, "SOAK_RATE", 1000),
    warmupSeconds: num(values.warmup, "SOAK_WARMUP_SECONDS", Math.min(60, seconds / 3)),
    toleranceMb: num(values["tolerance-mb"], "SOAK_TOLERANCE_MB", 8),
    concurrency: num(undefined, "SOAK_CONCURRENCY", 8),
    sampleMs: num(undefined, "SOAK_SAMPLE_MS", 1000),
    serviceNodeOptions: env["SOAK_SERVICE_NODE_OPTIONS"] ?? "",
    otelExporter: env["SOAK_OTEL_EXPORTER"] ?? "default",
    liveHeap: env["SOAK_LIVE_HEAP"] === "1",
    /** How long to wait for the last results after publishing stops. */
    drainMs: 60_000,
    /** Publishes not yet acked before the publisher waits (it never drops one). */
    maxPendingPublishes: 5_000,
  };
}

const MB = 1024 * 1024;
const round = (x: number, d = 2) => Number(x.toFixed(d));
const lengthMain = fileURLToPath(import.meta.resolve("@reward-mesh/length/main"));
const probePath = fileURLToPath(new URL("./soak-probe.mjs", import.meta.url));

function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** `VmRSS`, `RssAnon`, `RssFile` of `pid`, in bytes. */
function procMemory(pid: number): { rss: number; rssAnon: number; rssFile: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (key: string) =>
    Number(text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? Number.NaN) * 1024;
  return { rss: kb("VmRSS"), rssAnon: kb("RssAnon"), rssFile: kb("RssFile") };
}

/** Mean of the first and second half of `ys` after `warm`, and the least-squares slope per minute. */
function trend(points: ReadonlyArray<{ s: number; y: number }>, warmupSeconds: number) {
  const post = points.filter((p) => p.s >= warmupSeconds && Number.isFinite(p.y));
  if (post.length < 4) return undefined;
  const half = Math.floor(post.length / 2);
  const mean = (xs: ReadonlyArray<{ y: number }>) => xs.reduce((a, p) => a + p.y, 0) / xs.length;
  const mx = post.reduce((a, p) => a + p.s, 0) / post.length;
  const my = mean(post);
  let sxy = 0;
  let sxx = 0;
  for (const p of post) {
    sxy += (p.s - mx) * (p.y - my);
    sxx += (p.s - mx) ** 2;
  }
  return {
    firstHalfMeanMb: round(mean(post.slice(0, half))),
    secondHalfMeanMb: round(mean(post.slice(half))),
    growthMb: round(mean(post.slice(half)) - mean(post.slice(0, half))),
    slopeMbPerMin: round((sxy / sxx) * 60, 3),
    minMb: round(Math.min(...post.map((p) => p.y))),
    maxMb: round(Math.max(...post.map((p) => p.y))),
  };
}

const cfg = soakConfig();
const total = Math.round(cfg.rate * cfg.seconds);
const runId = `soak-${Date.now().toString(36)}`;
const probeDir = mkdtempSync(join(tmpdir(), "reward-mesh-soak-"));
const probeFile = join(probeDir, "probe.jsonl");
process.stderr.write(
  `soak: ${total} rollouts at ${cfg.rate}/s for ${cfg.seconds} s (warm-up ${cfg.warmupSeconds} s)\n`,
);

const nats = await startTestNats();
const bus = await openBus(testBusOptions(nats.url), "bench-soak");
const service = await startServiceProcess(lengthMain, {
  envPrefix: "LENGTH",
  natsUrl: nats.url,
  env: {
    LENGTH_CONCURRENCY: String(cfg.concurrency),
    NODE_OPTIONS:
      `--import ${probePath} ${cfg.liveHeap ? "--expose-gc " : ""}${cfg.serviceNodeOptions}`.trim(),
    SOAK_PROBE_GC: cfg.liveHeap ? "1" : "0",
    SOAK_PROBE_FILE: probeFile,
    SOAK_PROBE_MS: String(cfg.sampleMs),
    ...Object.fromEntries(
      ["OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER"].map((k) => [
        k,
        cfg.otelExporter === "default" ? "" : cfg.otelExporter,
      ]),
    ),
  },
});
const pid = service.child.pid!;
let exitCode: number | null = null;
try {
  // Results: an ephemeral consumer of this run's rewards; latency per rollout, a bitmap of those seen.
  const ci = await bus.jsm.consumers.add(Streams.rewards, {
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.New,
    filter_subject: `mesh.rewards.${runId}.length.*`,
    inactive_threshold: 60_000_000_000,
  });
  const results = await (await bus.js.consumers.get(Streams.rewards, ci.name)).consume({
    max_messages: 2048,
  });
  const sentAt = new Float64Array(total);
  const seen = new Uint8Array(total);
  const latencies = new Float64Array(total);
  let received = 0;
  let duplicates = 0;
  let foreign = 0;
  const collecting = (async () => {
    for await (const m of results as AsyncIterable<JsMsg>) {
      const now = performance.now();
      const id = fromBinary(RewardResultSchema, m.data).rolloutId;
      const i = Number(id.slice(runId.length + 1));
      if (!id.startsWith(`${runId}-`) || !Number.isInteger(i) || i < 0 || i >= total) {
        foreign++;
        continue;
      }
      if (seen[i]) {
        duplicates++;
        continue;
      }
      seen[i] = 1;
      latencies[received++] = now - sentAt[i]!;
    }
  })();

  // Memory samples of the service process.
  const t0 = performance.now();
  const samples: Array<{ s: number; t: number; rss: number; rssAnon: number; rssFile: number }> = [];
  const sample = () => {
    const m = procMemory(pid);
    if (m) samples.push({ s: (performance.now() - t0) / 1000, t: Date.now(), ...m });
  };
  sample();
  const sampler = setInterval(sample, cfg.sampleMs);

  // Publish at the offered rate: every tick, whatever is due (no drops; waits when acks lag far behind).
  let published = 0;
  let publishFailed = 0;
  let pending = 0;
  let next = 0;
  const rollout = (i: number) =>
    create(RolloutSchema, {
      id: `${runId}-${i}`,
      runId,
      step: Math.floor(i / 1024),
      groupId: `g${Math.floor(i / 8)}`,
      index: i % 8,
      groupSize: 8,
      response: "x".repeat(100 + (i % 200)),
      task: { id: "t", kind: { case: "custom", value: {} } },
    });
  while (next < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * cfg.rate));
    while (next < due && pending < cfg.maxPendingPublishes) {
      const i = next++;
      sentAt[i] = performance.now();
      pending++;
      publishRollout(bus.js, rollout(i)).then(
        () => {
          pending--;
          published++;
        },
        (err: unknown) => {
          pending--;
          publishFailed++;
          process.stderr.write(`publish ${i} failed: ${String(err)}\n`);
        },
      );
    }
    await sleep(5);
  }
  const publishSeconds = (performance.now() - t0) / 1000;
  const drainDeadline = performance.now() + cfg.drainMs;
  while ((pending > 0 || received < published) && performance.now() < drainDeadline) await sleep(50);
  const drainSeconds = (performance.now() - t0) / 1000 - publishSeconds;
  clearInterval(sampler);
  sample();
  results.stop();
  await collecting;
  exitCode = await service.stop();

  // The probe's heap samples, on the same clock as the RSS samples.
  const probe = readFileSync(probeFile, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map(
      (l) =>
        JSON.parse(l) as {
          t: number;
          rss: number;
          heapTotal: number;
          heapUsed: number;
          external: number;
          arrayBuffers: number;
          spacesMb: Record<string, number>;
        },
    );
  const tStart = samples[0]!.t;
  const heap = probe.map((p) => ({ ...p, s: (p.t - tStart) / 1000 }));
  const sorted = latencies.slice(0, received).sort();
  const rssTrend = trend(
    samples.map((x) => ({ s: x.s, y: x.rss / MB })),
    cfg.warmupSeconds,
  );
  const heapUsedTrend = trend(
    heap.map((x) => ({ s: x.s, y: x.heapUsed / MB })),
    cfg.warmupSeconds,
  );
  const heapTotalTrend = trend(
    heap.map((x) => ({ s: x.s, y: x.heapTotal / MB })),
    cfg.warmupSeconds,
  );
  const flat = rssTrend !== undefined && rssTrend.growthMb <= cfg.toleranceMb;
  const step = Math.max(1, Math.ceil(samples.length / 40));
  const at = (s: number) => heap.reduce((b, h) => (Math.abs(h.s - s) < Math.abs(b.s - s) ? h : b), heap[0]!);
  const result = {
    benchmark: "soak",
    date: new Date().toISOString(),
    machine: machineInfo(),
    service: "length (its real process), LENGTH_CONCURRENCY " + cfg.concurrency,
    config: {
      offeredPerSecond: cfg.rate,
      seconds: cfg.seconds,
      warmupSeconds: cfg.warmupSeconds,
      toleranceMb: cfg.toleranceMb,
      serviceNodeOptions: cfg.serviceNodeOptions,
      otelExporter: cfg.otelExporter,
      liveHeap: cfg.liveHeap,
    },
    rollouts: {
      offered: total,
      published,
      publishFailed,
      received,
      lost: published - received,
      duplicates,
      foreign,
      achievedPerSecond: round(published / publishSeconds, 1),
      drainSeconds: round(drainSeconds),
    },
    latencyMs: {
      p50: round(quantile(sorted, 0.5), 3),
      p90: round(quantile(sorted, 0.9), 3),
      p99: round(quantile(sorted, 0.99), 3),
      p999: round(quantile(sorted, 0.999), 3),
      max: round(sorted[sorted.length - 1] ?? Number.NaN, 3),
    },
    memory: {
      verdict: flat ? "flat" : "growing",
      rule: `RSS after ${cfg.warmupSeconds} s warm-up: second-half mean − first-half mean ≤ ${cfg.toleranceMb} MB`,
      rssStartMb: round(samples[0]!.rss / MB),
      rssEndMb: round(samples[samples.length - 1]!.rss / MB),
      rssPeakMb: round(Math.max(...samples.map((x) => x.rss)) / MB),
      rss: rssTrend,
      heapUsed: heapUsedTrend,
      heapTotal: heapTotalTrend,
      serviceExitCode: exitCode,
    },
    timeline: samples
      .filter((_, k) => k % step === 0 || k === samples.length - 1)
      .map((x) => {
        const h = at(x.s);
        return {
          s: round(x.s, 1),
          rssMb: round(x.rss / MB, 1),
          rssAnonMb: round(x.rssAnon / MB, 1),
          heapTotalMb: round(h.heapTotal / MB, 1),
          heapUsedMb: round(h.heapUsed / MB, 1),
          newSpaceMb: h.spacesMb["new_space"] ?? null,
          oldSpaceMb: h.spacesMb["old_space"] ?? null,
          externalMb: round(h.external / MB, 1),
        };
      }),
  };
  writeBenchResult("soak", result);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  if (result.rollouts.lost !== 0 || !flat) process.exitCode = 1;
} finally {
  if (exitCode === null) await service.stop();
  await bus.close();
  await nats.stop();
  rmSync(probeDir, { recursive: true, force: true });
}
