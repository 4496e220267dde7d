/**
 * `npm run bench:mesh`: rollouts/s and publish→reward latency through NATS JetStream with the `length`
 * service (its real process entrypoint), 1 and 2 replicas, next to the raw JetStream publish+consume rate
 * on the same server (the physical limit of this path). Writes `bench/results/mesh.json`.
 *
 * Phases per configuration:
 *  - throughput: N rollouts published as fast as JetStream acks them (pipelined), time until the last
 *    reward is stored → rollouts/s;
 *  - latency: rollouts paced at a fixed rate below capacity, publish→reward latency p50/p99 measured by a
 *    consumer of `mesh.rewards.<run>.length.*` in this process.
 *
 *  - tracing cost: one replica with telemetry off (the default), with metrics only, with 10 % of traces
 *    sampled, and with every trace exported to a local OTLP receiver plus Prometheus metrics
 *    (`REWARD_MESH_TELEMETRY=on`), alternated 3 times, each after a warm-up of 1,000 rollouts: median
 *    throughput of each, their ratio to off, and the service's own CPU per rollout (`tracing` in the result).
 *
 * Knobs: BENCH_CONCURRENCY (LENGTH_CONCURRENCY of each replica, default 8, the service default) and
 * BENCH_OTEL_OFF=1 (OTEL_SDK_DISABLED in the service), BENCH_ONLY_TRACING=1 (only the tracing phase),
 * BENCH_TRACING_MODES (a subset of off,metrics,sampled,on), BENCH_TRACING_ROUNDS (default 3) and
 * BENCH_SERVICE_EXEC_ARGV (Node.js options of the tracing phase's service, e.g. `--cpu-prof --cpu-prof-dir=DIR`).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { RewardResultSchema, RolloutSchema } from "@reward-mesh/proto";
import {
  freePort,
  type MeshBus,
  openBus,
  publishRollout,
  Streams,
  startOtlpReceiver,
} from "@reward-mesh/sdk";
import {
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";
import { machineInfo, writeBenchResult } from "./results.js";

const N_THROUGHPUT = 5_000;
const TRACING_ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 3);
const TRACING_MODES = ["off", "metrics", "sampled", "on"] as const;
type TracingMode = (typeof TRACING_MODES)[number];
const tracingModes: readonly TracingMode[] = (() => {
  const want = (process.env.BENCH_TRACING_MODES ?? TRACING_MODES.join(",")).split(",").map((m) => m.trim());
  const bad = want.filter((m) => !(TRACING_MODES as readonly string[]).includes(m));
  if (bad.length > 0)
    throw new Error(
      `BENCH_TRACING_MODES: unknown mode(s) ${bad.join(", ")}; known: ${TRACING_MODES.join(", ")}`,
    );
  return want as TracingMode[];
})();
if (!Number.isInteger(TRACING_ROUNDS) || TRACING_ROUNDS < 1)
  throw new Error(`BENCH_TRACING_ROUNDS must be a positive integer, got ${process.env.BENCH_TRACING_ROUNDS}`);
const WARM_UP = 1_000;
const N_RAW = 10_000;
const LATENCY_RATE = 500; // rollouts/s offered in the latency phase
const LATENCY_SECONDS = 4;
const PIPELINE = 256;

const lengthMain = fileURLToPath(import.meta.resolve("@reward-mesh/length/main"));
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

async function pipelined(n: number, publish: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PIPELINE }, async () => {
      while (next < n) await publish(next++);
    }),
  );
}

/** Raw JetStream: pipelined publish of rollout-sized messages + durable pull consume with ack, concurrently. */
async function rawRate(bus: MeshBus): Promise<{ msgsPerSecond: number; publishPerSecond: number }> {
  await bus.jsm.streams.add({ name: "BENCH_RAW", subjects: ["bench.raw.>"] });
  await bus.jsm.consumers.add("BENCH_RAW", {
    durable_name: "raw",
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
  });
  const payload = toBinary(
    RolloutSchema,
    create(RolloutSchema, {
      id: "r-00000",
      runId: "bench",
      groupId: "g",
      groupSize: 8,
      response: "x".repeat(160),
      task: { id: "t", kind: { case: "custom", value: {} } },
    }),
  );
  const consumer = await bus.js.consumers.get("BENCH_RAW", "raw");
  const msgs = await consumer.consume({ max_messages: 512 });
  let got = 0;
  const t0 = performance.now();
  const done = (async () => {
    for await (const m of msgs) {
      m.ack();
      if (++got === N_RAW) break;
    }
  })();
  await pipelined(N_RAW, (i) => {
    const h = headers();
    h.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    return bus.js.publish(`bench.raw.${i % 8}`, payload, { msgID: `raw-${i}`, headers: h });
  });
  const tPub = performance.now();
  await done;
  const t1 = performance.now();
  await bus.jsm.streams.delete("BENCH_RAW");
  return { msgsPerSecond: N_RAW / ((t1 - t0) / 1000), publishPerSecond: N_RAW / ((tPub - t0) / 1000) };
}

/** Consumes `mesh.rewards.<run>.length.*`, recording receive times by rollout id. */
async function rewardCollector(bus: MeshBus, runId: string, expected: number) {
  const ci = await bus.jsm.consumers.add(Streams.rewards, {
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.New,
    filter_subject: `mesh.rewards.${runId}.length.*`,
    inactive_threshold: 30_000_000_000,
  });
  const consumer = await bus.js.consumers.get(Streams.rewards, ci.name);
  const msgs = await consumer.consume({ max_messages: 1024 });
  const received = new Map<string, number>();
  const done = (async () => {
    for await (const m of msgs as AsyncIterable<JsMsg>) {
      received.set(fromBinary(RewardResultSchema, m.data).rolloutId, performance.now());
      if (received.size >= expected) break;
    }
    msgs.stop();
  })();
  return { received, done };
}

function rollout(runId: string, i: number) {
  return create(RolloutSchema, {
    id: `${runId}-${i}`,
    runId,
    groupId: `g${Math.floor(i / 8)}`,
    index: i % 8,
    groupSize: 8,
    response: "x".repeat(100 + (i % 200)),
    task: { id: "t", kind: { case: "custom", value: {} } },
  });
}

/** Rollouts/s: N rollouts published pipelined, until the last reward is stored. */
async function throughput(bus: MeshBus, tag: string, n = N_THROUGHPUT): Promise<number> {
  const tRun = `bench-${tag}-${Date.now().toString(36)}`;
  const tCol = await rewardCollector(bus, tRun, n);
  const t0 = performance.now();
  await pipelined(n, (i) => publishRollout(bus.js, rollout(tRun, i)));
  await tCol.done;
  const t1 = Math.max(...tCol.received.values());
  return n / ((t1 - t0) / 1000);
}

const median = (xs: number[]) => quantile(xs, 0.5);

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Polls until the receiver has stored spans beyond `before` (a service's first export). */
async function firstExport(receiver: { received(): number }, before: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (receiver.received() <= before) {
    if (Date.now() > deadline)
      throw new Error("no span reached the OTLP receiver within 20 s of the warm-up");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * What tracing costs: one `length` replica with telemetry off (the default) and one with traces exported
 * as OTLP/HTTP JSON to a local receiver (the mesh's own, as `up --traces` runs it) plus Prometheus
 * metrics, alternated ROUNDS times on the same server; medians and their ratio.
 */
async function tracingCost(bus: MeshBus, natsUrl: string) {
  const dir = mkdtempSync(join(tmpdir(), "bench-traces-"));
  const receiver = await startOtlpReceiver({ file: join(dir, "spans.jsonl") });
  const rates = { off: [] as number[], metrics: [] as number[], sampled: [] as number[], on: [] as number[] };
  // The service's own CPU per rollout: what tracing costs it, whatever else the shared machine runs.
  const cpuUs = { off: [] as number[], metrics: [] as number[], sampled: [] as number[], on: [] as number[] };
  // This process's CPU per rollout (publisher, reward collector, OTLP receiver): it shares the machine.
  const benchCpuUs = {
    off: [] as number[],
    metrics: [] as number[],
    sampled: [] as number[],
    on: [] as number[],
  };
  try {
    for (let round = 0; round < TRACING_ROUNDS; round++) {
      for (const mode of tracingModes) {
        const env: Record<string, string> =
          mode !== "off"
            ? {
                REWARD_MESH_TELEMETRY: "on",
                ...(mode === "metrics" ? { OTEL_TRACES_EXPORTER: "none" } : {}),
                // Head sampling as production would run it: 1 trace in 10 recorded (and its children).
                ...(mode === "sampled"
                  ? { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }
                  : {}),
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
                OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
                OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
                OTEL_EXPORTER_PROMETHEUS_PORT: String(await freePort()),
              }
            : {};
        const p = await startServiceProcess(lengthMain, {
          envPrefix: "LENGTH",
          natsUrl,
          // E.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service in each mode.
          execArgv: (process.env.BENCH_SERVICE_EXEC_ARGV ?? "").split(" ").filter((a) => a !== ""),
          env: {
            LENGTH_CONCURRENCY: process.env.BENCH_CONCURRENCY ?? "8",
            // The helper turns exporters off unless told; "on" sets them back through the one switch.
            ...(mode !== "off"
              ? { OTEL_TRACES_EXPORTER: "", OTEL_METRICS_EXPORTER: "", OTEL_LOGS_EXPORTER: "" }
              : {}),
            ...env,
          },
        });
        try {
          // Warm-up: the first export loads the exporter's transport lazily and happens after 512 spans
          // or 5 s; with 10 % sampling the warm-up's ~300 spans wait for the 5 s timer, so wait for that
          // first export too, keeping it out of the measured run. Steady state is what a long run sees.
          const spansBefore = receiver.received();
          await throughput(bus, `warm-${mode}-${round}`, WARM_UP);
          if (mode === "sampled" || mode === "on") await firstExport(receiver, spansBefore);
          const c0 = cpuSeconds(p.child.pid!);
          const b0 = process.cpuUsage();
          rates[mode].push(await throughput(bus, `trace-${mode}-${round}`));
          cpuUs[mode].push(((cpuSeconds(p.child.pid!) - c0) / N_THROUGHPUT) * 1e6);
          const b = process.cpuUsage(b0);
          benchCpuUs[mode].push((b.user + b.system) / N_THROUGHPUT);
        } finally {
          await p.stop();
        }
      }
    }
  } finally {
    await receiver.close();
  }
  const spans = receiver.received();
  rmSync(dir, { recursive: true, force: true });
  const off = median(rates.off);
  const on = median(rates.on);
  return {
    rounds: TRACING_ROUNDS,
    rolloutsPerSecondOff: rates.off,
    rolloutsPerSecondMetricsOnly: rates.metrics,
    rolloutsPerSecondSampled10: rates.sampled,
    rolloutsPerSecondOn: rates.on,
    medianOff: off,
    medianMetricsOnly: median(rates.metrics),
    medianSampled10: median(rates.sampled),
    ratioSampled10Off: median(rates.sampled) / off,
    medianOn: on,
    ratioOnOff: on / off,
    serviceCpuMicrosPerRollout: {
      off: median(cpuUs.off),
      metricsOnly: median(cpuUs.metrics),
      sampled10: median(cpuUs.sampled),
      on: median(cpuUs.on),
    },
    serviceCpuRatioOnOff: median(cpuUs.on) / median(cpuUs.off),
    benchProcessCpuMicrosPerRollout: {
      off: median(benchCpuUs.off),
      metricsOnly: median(benchCpuUs.metrics),
      sampled10: median(benchCpuUs.sampled),
      on: median(benchCpuUs.on),
    },
    overheadPercent: 100 * (1 - on / off),
    spansReceived: spans,
  };
}

async function meshRun(bus: MeshBus, replicas: number) {
  // Throughput.
  const rolloutsPerSecond = await throughput(bus, `t${replicas}`);

  // Latency at a fixed offered rate.
  const lRun = `bench-l${replicas}-${Date.now().toString(36)}`;
  const n = LATENCY_RATE * LATENCY_SECONDS;
  const lCol = await rewardCollector(bus, lRun, n);
  const sentAt = new Map<string, number>();
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const due = start + (i * 1000) / LATENCY_RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const r = rollout(lRun, i);
    sentAt.set(r.id, performance.now());
    void publishRollout(bus.js, r);
  }
  await lCol.done;
  const lat = [...lCol.received].map(([id, t]) => t - sentAt.get(id)!);
  return {
    replicas,
    throughput: { rollouts: N_THROUGHPUT, rolloutsPerSecond },
    latency: {
      offeredPerSecond: LATENCY_RATE,
      rollouts: n,
      p50Ms: quantile(lat, 0.5),
      p99Ms: quantile(lat, 0.99),
      maxMs: Math.max(...lat),
    },
  };
}

const nats = await startTestNats();
const bus = await openBus(testBusOptions(nats.url), "bench-mesh");
const children: ServiceProcess[] = [];
try {
  const onlyTracing = process.env.BENCH_ONLY_TRACING === "1";
  const raw = onlyTracing ? { msgsPerSecond: Number.NaN, publishPerSecond: Number.NaN } : await rawRate(bus);
  process.stdout.write(
    `raw JetStream publish+consume+ack: ${raw.msgsPerSecond.toFixed(0)} msg/s (publish alone ${raw.publishPerSecond.toFixed(0)}/s)\n`,
  );
  const runs = [];
  for (const replicas of onlyTracing ? [] : [1, 2]) {
    while (children.length < replicas)
      children.push(
        await startServiceProcess(lengthMain, {
          envPrefix: "LENGTH",
          natsUrl: nats.url,
          env: {
            LENGTH_CONCURRENCY: process.env.BENCH_CONCURRENCY ?? "8",
            ...(process.env.BENCH_OTEL_OFF ? { OTEL_SDK_DISABLED: "true" } : {}),
          },
        }),
      );
    const r = await meshRun(bus, replicas);
    runs.push({ ...r, fractionOfRaw: r.throughput.rolloutsPerSecond / raw.msgsPerSecond });
    process.stdout.write(
      `length x${replicas}: ${r.throughput.rolloutsPerSecond.toFixed(0)} rollouts/s (${((100 * r.throughput.rolloutsPerSecond) / raw.msgsPerSecond).toFixed(1)} % of raw); ` +
        `latency at ${LATENCY_RATE}/s p50 ${r.latency.p50Ms.toFixed(2)} ms p99 ${r.latency.p99Ms.toFixed(2)} ms\n`,
    );
  }
  await Promise.all(children.splice(0).map((c) => c.stop()));
  const tracing = await tracingCost(bus, nats.url);
  process.stdout.write(
    `tracing: off ${tracing.medianOff.toFixed(0)} rollouts/s, metrics only ${tracing.medianMetricsOnly.toFixed(0)}, 10 % sampled traces ${tracing.medianSampled10.toFixed(0)}, all traces + metrics ${tracing.medianOn.toFixed(0)} rollouts/s (median of ${tracing.rounds}; on/off ${tracing.ratioOnOff.toFixed(3)}, overhead ${tracing.overheadPercent.toFixed(1)} %; ${tracing.spansReceived} spans received)\n` +
      `         service CPU per rollout: off ${tracing.serviceCpuMicrosPerRollout.off.toFixed(0)} µs, metrics only ${tracing.serviceCpuMicrosPerRollout.metricsOnly.toFixed(0)} µs, 10 % sampled ${tracing.serviceCpuMicrosPerRollout.sampled10.toFixed(0)} µs, all traces + metrics ${tracing.serviceCpuMicrosPerRollout.on.toFixed(0)} µs (x${tracing.serviceCpuRatioOnOff.toFixed(2)})\n` +
      `         bench process CPU per rollout: off ${tracing.benchProcessCpuMicrosPerRollout.off.toFixed(0)} µs, metrics only ${tracing.benchProcessCpuMicrosPerRollout.metricsOnly.toFixed(0)} µs, 10 % sampled ${tracing.benchProcessCpuMicrosPerRollout.sampled10.toFixed(0)} µs, all traces + metrics ${tracing.benchProcessCpuMicrosPerRollout.on.toFixed(0)} µs\n`,
  );
  const result = {
    benchmark: "mesh",
    date: new Date().toISOString(),
    machine: machineInfo(),
    natsServer: "local nats-server -js (file storage)",
    raw,
    runs,
    tracing,
  };
  // A partial run (some modes, only the tracing phase) does not replace the committed full result.
  if (onlyTracing || process.env.BENCH_TRACING_MODES) process.stdout.write(`${JSON.stringify(tracing)}\n`);
  else process.stdout.write(`wrote ${writeBenchResult("mesh", result)}\n`);
} finally {
  await Promise.all(children.map((c) => c.stop()));
  await bus.close();
  await nats.stop();
}
