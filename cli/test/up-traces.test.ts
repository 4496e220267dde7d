/**
 * `reward-mesh up --traces`: the mesh's own OTLP receiver collects the spans of the service processes
 * `startMesh` starts (their trace continued from the caller's `traceparent`), and each service serves
 * Prometheus `/metrics` on a port of its own.
 */
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { it } from "node:test";
import { createGrpcClient, grpc, RewardService } from "@reward-mesh/proto";
import { freePort, readStoredSpans, startOtlpReceiver } from "@reward-mesh/sdk";
import { startTraceReceiver } from "../src/commands/traces.js";
import { loadCliConfig, startMesh } from "../src/index.js";

it("up --traces: spans of the service processes reach the local receiver; /metrics counts the call", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-up-traces-"));
  let printed = "";
  const out = new Writable({
    write(chunk, _enc, done) {
      printed += String(chunk);
      done();
    },
  });
  const receiver = await startTraceReceiver({ "traces-port": "0", "runs-dir": dir }, out);
  try {
    assert.match(printed, /OTLP receiver {3}http:\/\/127\.0\.0\.1:\d+ {2}spans -> .*traces\.jsonl/);
    const config = loadCliConfig({
      NATS_URL: `nats://127.0.0.1:${await freePort()}`,
      REWARD_MESH_NATS_STORE: join(dir, "js"),
      REWARD_MESH_LOG_DIR: join(dir, "logs"),
      PATH: process.env["PATH"],
    });
    const mesh = await startMesh(config, {
      services: ["length"],
      telemetry: { otlpEndpoint: receiver.endpoint },
    });
    try {
      const svc = mesh.services[0]!;
      assert.match(svc.metricsUrl ?? "", /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const traceId = "0af7651916cd43dd8448eb211c80319c";
      const md = new grpc.Metadata();
      md.set("traceparent", `00-${traceId}-b7ad6b7169203331-01`);
      const client = createGrpcClient(RewardService, svc.address);
      try {
        await client.score(
          {
            rollout: {
              id: "r1",
              runId: "up-traces",
              step: 1,
              groupId: "g",
              groupSize: 1,
              response: "hello",
              task: { id: "t", kind: { case: "custom", value: {} } },
            },
          },
          { metadata: md, timeoutMs: 10_000 },
        );
      } finally {
        client.close();
      }
      // The batch processor flushes every 500 ms under up --traces: poll the file.
      const file = join(dir, "traces.jsonl");
      const end = Date.now() + 20_000;
      let score: ReturnType<typeof readStoredSpans>[number] | undefined;
      while (!score && Date.now() < end) {
        score = readStoredSpans(file).find((s) => s.traceId === traceId && s.name === "reward/length/score");
        if (!score) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(score, `no score span of trace ${traceId} in ${file}`);
      assert.equal(score.parentSpanId, "b7ad6b7169203331");
      assert.equal(score.service, "reward-mesh-length");
      assert.equal(score.attributes["reward.rollout_id"], "r1");
      const metrics = await (await fetch(svc.metricsUrl!)).text();
      assert.match(metrics, /reward_mesh_score_requests_total\{service="length"[^}]*\} 1\n/);
    } finally {
      await mesh.stop();
    }
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("the receiver answers protobuf with 415 naming the JSON protocol, and a bad body with 400", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-otlp-"));
  const receiver = await startTraceReceiver(
    { "traces-port": "0", "runs-dir": dir },
    new Writable({ write: (_c, _e, d) => d() }),
  );
  try {
    const proto = await fetch(`${receiver.endpoint}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf" },
      body: new Uint8Array([1, 2, 3]),
    });
    assert.equal(proto.status, 415);
    assert.match(await proto.text(), /OTEL_EXPORTER_OTLP_PROTOCOL=http\/json/);
    const bad = await fetch(`${receiver.endpoint}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ spans: [] }),
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /no resourceSpans array/);
    assert.equal((await fetch(`${receiver.endpoint}/v1/other`, { method: "POST" })).status, 404);
    await assert.rejects(
      startTraceReceiver(
        { "traces-port": "99999", "runs-dir": dir },
        new Writable({ write: (_c, _e, d) => d() }),
      ),
      /'--traces-port' must be a port number/,
    );
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("the receiver checks every span's ids and times (400 naming the field, nothing of the batch stored), answers an oversized body 413 with Connection: close, and a torn stored line is skipped and reported", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-otlp-"));
  const file = join(dir, "spans.jsonl");
  const receiver = await startOtlpReceiver({ file, maxBodyBytes: 1024 });
  const post = (body: string) =>
    fetch(`${receiver.endpoint}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
  const span = (over: Record<string, unknown>) => ({
    traceId: "ab".repeat(16),
    spanId: "cd".repeat(8),
    name: "s",
    startTimeUnixNano: "1000",
    endTimeUnixNano: "2000",
    ...over,
  });
  const batch = (...spans: unknown[]) => JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] });
  try {
    for (const [bad, field] of [
      [{ traceId: "zz" }, "spans\\[1\\]\\.traceId"],
      [{ spanId: "q\n" }, "spans\\[1\\]\\.spanId"],
      [{ startTimeUnixNano: "abc" }, "spans\\[1\\]\\.startTimeUnixNano"],
      [{ links: "notarray" }, "spans\\[1\\]\\.links: is not an array"],
      [{ links: [{ traceId: "x", spanId: "cd".repeat(8) }] }, "spans\\[1\\]\\.links\\[0\\]\\.traceId"],
      [
        { links: [{ traceId: "ab".repeat(16), spanId: "cd".repeat(8), attributes: "x" }] },
        "spans\\[1\\]\\.links\\[0\\]\\.attributes: is not an array",
      ],
    ] as const) {
      const res = await post(batch(span({}), span(bad)));
      assert.equal(res.status, 400);
      assert.match(await res.text(), new RegExp(`resourceSpans\\[0\\]\\.scopeSpans\\[0\\]\\.${field}`));
    }
    const notArray = await post(JSON.stringify({ resourceSpans: [{ scopeSpans: {} }] }));
    assert.equal(notArray.status, 400);
    assert.match(await notArray.text(), /resourceSpans\[0\]\.scopeSpans: is not an array/);
    assert.equal(receiver.received(), 0, "a rejected batch stores nothing");
    const big = await post("x".repeat(200_000));
    assert.equal(big.status, 413);
    assert.equal(big.headers.get("connection"), "close");
    assert.equal((await post(batch(span({})))).status, 200);
    // A receiver killed mid-append leaves a torn last line: skipped and reported, the rest is read.
    appendFileSync(file, '{"traceId":"ab');
    const bad: number[] = [];
    const spans = readStoredSpans(file, { onBadLine: (n) => bad.push(n) });
    assert.equal(spans.length, 1);
    assert.deepEqual(bad, [2]);
    assert.equal(readStoredSpans(file, { traceId: "ef".repeat(16) }).length, 0);
    assert.equal(readStoredSpans(file, { traceId: "ab".repeat(16) }).length, 1);
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
