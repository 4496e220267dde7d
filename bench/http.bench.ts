/**
 * HTTP/JSON (Connect protocol, `<PREFIX>_HTTP_PORT`) vs gRPC: per-call latency of one `Score`, side by side in
 * one run. One `length` service (scoring is a few microseconds, so the transport dominates) serves both ports;
 * one client calls sequentially (one call in flight), alternating blocks of gRPC and HTTP calls so both see the
 * same machine state: gRPC through the mesh's grpc-js client, HTTP/JSON through Node's `fetch` (keep-alive) with a
 * proto-JSON body. Client and server share this process (and its event loop). Reports median and p90 per call and
 * the HTTP/gRPC ratio. Writes `bench/results/http.json` and prints a table.
 *
 * Run: `npm run bench:http` (≈ 10 s; `BENCH_CALLS` sets the calls per transport, default 2000).
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { create, toJson } from "@bufbuild/protobuf";
import { createLengthService, loadConfig } from "@reward-mesh/length";
import { createGrpcClient, RewardService, ScoreRequestSchema } from "@reward-mesh/proto";
import { silentLogger, startRewardService } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { machineInfo, writeBenchResult } from "./results.js";

const CALLS = Number(process.env["BENCH_CALLS"] ?? 2000);
const BLOCK = 100;
const WARMUP = 200;

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

const t0 = performance.now();
const config = loadConfig({ LENGTH_GRPC_PORT: "0", LENGTH_HTTP_PORT: "0", LENGTH_WORKER: "false" });
const service = await startRewardService(createLengthService(config), config.runtime, silentLogger);
const client = createGrpcClient(RewardService, service.grpc.address);
const rollout = makeRollout({
  response: "def add(a, b):\n    return a + b\n",
  task: { id: "bench", kind: { case: "custom", value: {} } },
});
const request = create(ScoreRequestSchema, { rollout });
const httpBody = JSON.stringify(toJson(ScoreRequestSchema, request));
const url = `${service.grpc.httpUrl}/rewardmesh.v1.RewardService/Score`;

async function grpcCall(): Promise<void> {
  await client.score(request, { timeoutMs: 10_000 });
}
async function httpCall(): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: httpBody,
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  await res.json();
}

async function timed(fn: () => Promise<void>, n: number, into: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn();
    into.push((performance.now() - start) * 1000);
  }
}

const sink: number[] = [];
await timed(grpcCall, WARMUP, sink);
await timed(httpCall, WARMUP, sink);
const grpcUs: number[] = [];
const httpUs: number[] = [];
for (let done = 0, round = 0; done < CALLS; done += BLOCK, round++) {
  const n = Math.min(BLOCK, CALLS - done);
  if (round % 2 === 0) {
    await timed(grpcCall, n, grpcUs);
    await timed(httpCall, n, httpUs);
  } else {
    await timed(httpCall, n, httpUs);
    await timed(grpcCall, n, grpcUs);
  }
}
client.close();
await service.close(500);

const row = (xs: number[]) => ({
  calls: xs.length,
  medianMicros: Math.round(quantile(xs, 0.5)),
  p90Micros: Math.round(quantile(xs, 0.9)),
});
const grpcRow = row(grpcUs);
const httpRow = row(httpUs);
const report = {
  benchmark: "http",
  description:
    "Per-call latency of RewardService.Score (length service), one call in flight, client and server in one process: gRPC (grpc-js) vs HTTP/JSON (Connect protocol over HTTP/1.1, fetch keep-alive)",
  machine: machineInfo(),
  /** 1-minute load average at the end: on a shared machine the p90 mostly measures scheduling. */
  loadAverage1m: Number(loadavg()[0]!.toFixed(1)),
  grpc: grpcRow,
  httpJson: httpRow,
  ratio: {
    median: Number((httpRow.medianMicros / grpcRow.medianMicros).toFixed(2)),
    p90: Number((httpRow.p90Micros / grpcRow.p90Micros).toFixed(2)),
  },
  durationSeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
};
writeBenchResult("http", report);
console.log(`Score per-call latency (µs), ${report.machine.cpu}, node ${process.version}`);
console.log(`${"transport".padEnd(12)}${"median".padStart(10)}${"p90".padStart(10)}`);
console.log(
  `${"gRPC".padEnd(12)}${String(grpcRow.medianMicros).padStart(10)}${String(grpcRow.p90Micros).padStart(10)}`,
);
console.log(
  `${"HTTP/JSON".padEnd(12)}${String(httpRow.medianMicros).padStart(10)}${String(httpRow.p90Micros).padStart(10)}`,
);
console.log(`HTTP/gRPC ratio: median ×${report.ratio.median}, p90 ×${report.ratio.p90}`);
console.log(`wrote bench/results/http.json in ${report.durationSeconds} s`);
