/**
 * HTTP/JSON (`<PREFIX>_HTTP_PORT`, the Connect protocol) beside gRPC, over a real service on port 0: JSON in
 * and out for Describe and Score, the same errors as gRPC (INVALID_ARGUMENT → 400 with the same message),
 * strict JSON (an unknown field is a 400 naming it), the token, `GET /healthz` and the drain (real slow calls in
 * flight finish within the grace, over HTTP/1.1 and TLS HTTP/2; past it they are cut); and the configuration's
 * errors.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import http2 from "node:http2";
import { after, before, describe, it } from "node:test";
import { toJson } from "@bufbuild/protobuf";
import { createGrpcClient, grpc, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import {
  ConfigError,
  HealthStatus,
  loadServiceRuntimeOptions,
  type RunningService,
  silentLogger,
  startRewardService,
} from "../src/index.js";
import { createTestPki, type TestPki } from "../src/testing/index.js";
import { createEchoService, installTestTracing } from "./fixtures.js";

const TOKEN = "http-json-token-0123456789";

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const rollout = (response: string, metadata: Record<string, string> = {}) => ({
  id: "r1",
  runId: "run",
  groupId: "g",
  groupSize: 1,
  task: { id: "t", domain: "custom", custom: {} },
  response,
  metadata,
});

describe("HTTP/JSON beside gRPC (Connect protocol)", () => {
  let running: RunningService;
  let url: string;
  before(async () => {
    const options = loadServiceRuntimeOptions("ECHO", 0, {
      ECHO_HTTP_PORT: "0",
      ECHO_WORKER: "false",
      ECHO_GRPC_TOKEN: TOKEN,
    });
    assert.equal(options.httpPort, 0);
    running = await startRewardService(createEchoService(), options, silentLogger);
    assert.ok(running.grpc.httpUrl, "an HTTP URL is reported");
    assert.notEqual(running.grpc.httpPort, running.grpc.port);
    url = running.grpc.httpUrl;
  });
  after(() => running.close(500));

  const auth = { authorization: `Bearer ${TOKEN}` };

  it("Score: proto JSON in, proto JSON out (every field emitted), equal to the gRPC answer", async () => {
    const r = await post(`${url}/rewardmesh.v1.RewardService/Score`, { rollout: rollout("xyz") }, auth);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.rolloutId, "r1");
    assert.deepEqual(
      r.json.components.map((c: { name: string; value: number }) => [c.name, c.value]),
      [
        ["chars", 3],
        ["has_x", 1],
      ],
    );
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${TOKEN}`);
    const client = createGrpcClient(RewardService, running.grpc.address);
    try {
      const g = await client.score({ rollout: rollout("xyz") as never }, { timeoutMs: 5_000, metadata: md });
      const viaGrpc = toJson(RewardResultSchema, g, { alwaysEmitImplicit: true }) as Record<string, unknown>;
      // Timing fields differ per call; everything else is the same message.
      for (const k of ["durationMs", "scoredAt", "startedAt"]) {
        delete viaGrpc[k];
        delete r.json[k];
      }
      assert.deepEqual(r.json, viaGrpc);
    } finally {
      client.close();
    }
    // A value of 0 is emitted too (not dropped as the proto3 default).
    const zero = await post(`${url}/rewardmesh.v1.RewardService/Score`, { rollout: rollout("") }, auth);
    assert.equal(zero.json.components[0].value, 0);
  });

  it("ScoreBatch: one JSON call for many rollouts; a bad one gets its own error, an oversized batch is a 400", async () => {
    const r = await post(
      `${url}/rewardmesh.v1.RewardService/ScoreBatch`,
      {
        requests: [
          { rollout: rollout("xyz") },
          { rollout: { ...rollout("a", { reject: "1" }), id: "r2" } },
          { rollout: { ...rollout("ab"), id: "r3" } },
        ],
      },
      auth,
    );
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(
      r.json.results.map((x: { rolloutId: string; components: { value: number }[] }) => [
        x.rolloutId,
        x.components.map((c) => c.value),
      ]),
      [
        ["r1", [3, 1]],
        ["r2", []],
        ["r3", [2, 0]],
      ],
    );
    assert.deepEqual(r.json.errors, [
      { index: 1, code: 3, message: `'requests[1].rollout.metadata["reject"]' asks to be rejected` },
    ]);
    const big = await post(
      `${url}/rewardmesh.v1.RewardService/ScoreBatch`,
      { requests: Array.from({ length: 1025 }, () => ({ rollout: rollout("a") })) },
      auth,
    );
    assert.equal(big.status, 400);
    assert.equal(big.json.code, "invalid_argument");
    assert.match(big.json.message, /'requests' must hold at most 1024 ScoreRequests, got 1025/);
  });

  it("Describe answers the contract", async () => {
    const r = await post(`${url}/rewardmesh.v1.RewardService/Describe`, {}, auth);
    assert.equal(r.status, 200);
    assert.equal(r.json.name, "echo");
    assert.deepEqual(
      r.json.components.map((c: { name: string }) => c.name),
      ["chars", "has_x"],
    );
  });

  it("errors: the gRPC status as Connect's code and HTTP status, with the same message", async () => {
    const bad = await post(
      `${url}/rewardmesh.v1.RewardService/Score`,
      { rollout: rollout("a", { reject: "1" }) },
      auth,
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, "invalid_argument");
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${TOKEN}`);
    const client = createGrpcClient(RewardService, running.grpc.address);
    try {
      await assert.rejects(
        client.score({ rollout: rollout("a", { reject: "1" }) as never }, { timeoutMs: 5_000, metadata: md }),
        (err: grpc.ServiceError) => {
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
          assert.equal(bad.json.message, err.details);
          return true;
        },
      );
    } finally {
      client.close();
    }
    assert.match(bad.json.message, /rollout\.metadata\["reject"\]/);
    const unknown = await post(
      `${url}/rewardmesh.v1.RewardService/Score`,
      { rollout: rollout("a"), bogus: 1 },
      auth,
    );
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.code, "invalid_argument");
    assert.match(unknown.json.message, /bogus/);
    const notJson = await post(`${url}/rewardmesh.v1.RewardService/Score`, "{not json", auth);
    assert.equal(notJson.status, 400);
    const noRoute = await post(`${url}/rewardmesh.v1.RewardService/Nope`, {}, auth);
    assert.equal(noRoute.status, 404);
  });

  it("the token is required (401 naming the header) except for health", async () => {
    const r = await post(`${url}/rewardmesh.v1.RewardService/Describe`, {});
    assert.equal(r.status, 401);
    assert.equal(r.json.code, "unauthenticated");
    assert.match(r.json.message, /authorization: Bearer/);
    const wrong = await post(
      `${url}/rewardmesh.v1.RewardService/Describe`,
      {},
      { authorization: "Bearer nope" },
    );
    assert.equal(wrong.status, 401);
    const check = await post(`${url}/grpc.health.v1.Health/Check`, { service: "" });
    assert.equal(check.status, 200);
    assert.equal(check.json.status, "SERVING");
  });

  it("GET /healthz: 200 SERVING, then 503 NOT_SERVING once the drain begins", async () => {
    const ok = await fetch(`${url}/healthz`);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), {
      status: "SERVING",
      services: { "rewardmesh.v1.RewardService": "SERVING" },
    });
    running.grpc.health.setAll(HealthStatus.NOT_SERVING);
    const draining = await fetch(`${url}/healthz`);
    assert.equal(draining.status, 503);
    assert.equal(((await draining.json()) as { status: string }).status, "NOT_SERVING");
    running.grpc.health.setAll(HealthStatus.SERVING);
  });
});

describe("HTTP port configuration", () => {
  it("refuses an HTTP port equal to the gRPC or health port, and a non-number", () => {
    assert.throws(
      () => loadServiceRuntimeOptions("ECHO", 0, { ECHO_GRPC_PORT: "50100", ECHO_HTTP_PORT: "50100" }),
      (err: Error) =>
        err instanceof ConfigError && /ECHO_HTTP_PORT.*must differ from ECHO_GRPC_PORT/.test(err.message),
    );
    assert.throws(
      () => loadServiceRuntimeOptions("ECHO", 0, { ECHO_HEALTH_PORT: "8081", ECHO_HTTP_PORT: "8081" }),
      (err: Error) => err instanceof ConfigError && /must differ from ECHO_HEALTH_PORT/.test(err.message),
    );
    assert.throws(() => loadServiceRuntimeOptions("ECHO", 0, { ECHO_HTTP_PORT: "web" }), /ECHO_HTTP_PORT/);
    assert.equal(loadServiceRuntimeOptions("ECHO", 0, {}).httpPort, undefined);
  });
});

describe("HTTP/JSON with TLS: HTTPS with the gRPC port's certificate, HTTP/2 for ScoreStream", () => {
  let pki: TestPki;
  let running: RunningService;
  before(async () => {
    pki = createTestPki();
    const options = loadServiceRuntimeOptions("ECHO", 0, {
      ECHO_HTTP_PORT: "0",
      ECHO_WORKER: "false",
      ECHO_GRPC_TLS_CERT_FILE: pki.serverCert,
      ECHO_GRPC_TLS_KEY_FILE: pki.serverKey,
    });
    running = await startRewardService(createEchoService(), options, silentLogger);
  });
  after(async () => {
    await running.close(500);
    pki.remove();
  });

  it("answers Score over HTTPS (HTTP/1.1) and a bidirectional ScoreStream over h2, trusting the test CA", async () => {
    const url = running.grpc.httpUrl!;
    assert.match(url, /^https:\/\//);
    const ca = readFileSync(pki.caCert);
    const body = JSON.stringify({ rollout: rollout("xx") });
    const status = await new Promise<{ code: number; text: string }>((resolve, reject) => {
      const req = httpsRequest(
        `${url}/rewardmesh.v1.RewardService/Score`,
        { method: "POST", ca, headers: { "content-type": "application/json" } },
        (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d.toString()));
          res.on("end", () => resolve({ code: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    assert.equal(status.code, 200, status.text);
    assert.equal(JSON.parse(status.text).components[0].value, 2);
    // Connect streaming over HTTP/2: enveloped JSON messages (flag 0, 4-byte length), an end-of-stream envelope.
    const envelope = (flags: number, json: string) => {
      const payload = Buffer.from(json);
      const head = Buffer.alloc(5);
      head.writeUInt8(flags, 0);
      head.writeUInt32BE(payload.length, 1);
      return Buffer.concat([head, payload]);
    };
    const session = http2.connect(url, { ca });
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/rewardmesh.v1.RewardService/ScoreStream",
        "content-type": "application/connect+json",
      });
      const chunks: Buffer[] = [];
      stream.on("data", (d: Buffer) => chunks.push(d));
      const ended = new Promise<void>((r) => stream.on("end", () => r()));
      stream.write(envelope(0, JSON.stringify({ rollout: rollout("a") })));
      stream.end(envelope(0, JSON.stringify({ rollout: rollout("abcx") })));
      await ended;
      const all = Buffer.concat(chunks);
      const messages: { flags: number; json: Record<string, unknown> }[] = [];
      for (let at = 0; at < all.length; ) {
        const n = all.readUInt32BE(at + 1);
        messages.push({
          flags: all.readUInt8(at),
          json: JSON.parse(all.subarray(at + 5, at + 5 + n).toString()),
        });
        at += 5 + n;
      }
      const values = messages
        .filter((m) => m.flags === 0)
        .map((m) => (m.json["components"] as { value: number }[]).map((c) => c.value));
      assert.deepEqual(values, [
        [1, 0],
        [4, 1],
      ]);
      assert.equal(messages.at(-1)!.flags & 2, 2, "an end-of-stream envelope closes the stream");
    } finally {
      session.close();
    }
  });
});

describe("HTTP/JSON close drains like gRPC: in-flight calls finish within the grace, then are cut", {
  timeout: 30_000,
}, () => {
  /** A slow echo service on an HTTP port; `started` resolves once `n` calls are being scored. */
  async function slowService(delayMs: number, n: number, env: Record<string, string> = {}) {
    let count = 0;
    let startedResolve!: () => void;
    const started = new Promise<void>((r) => (startedResolve = r));
    const aborts: unknown[] = [];
    const options = loadServiceRuntimeOptions("ECHO", 0, {
      ECHO_HTTP_PORT: "0",
      ECHO_WORKER: "false",
      ...env,
    });
    const running = await startRewardService(
      createEchoService({
        delayMs,
        onStart: () => {
          if (++count === n) startedResolve();
        },
        onAbort: (reason) => aborts.push(reason),
      }),
      options,
      silentLogger,
    );
    return { running, started, aborts };
  }

  it("HTTP/1.1: two slow calls in flight both answer 200 after close() began; new work is refused", async () => {
    const { running, started, aborts } = await slowService(700, 2);
    const url = running.grpc.httpUrl!;
    const calls = ["ab", "abc"].map((resp) =>
      post(`${url}/rewardmesh.v1.RewardService/Score`, { rollout: rollout(resp) }),
    );
    await started;
    const t0 = Date.now();
    const closing = running.close(10_000);
    // Stop accepting: a new request does not get scored (refused connection, or 503 on a kept-alive one).
    const late = await post(`${url}/rewardmesh.v1.RewardService/Score`, { rollout: rollout("x") }).then(
      (r) => r.status,
      () => "refused",
    );
    assert.notEqual(late, 200);
    const results = await Promise.all(calls);
    assert.deepEqual(
      results.map((r) => [r.status, r.json.components[0].value]),
      [
        [200, 2],
        [200, 3],
      ],
    );
    await closing;
    assert.ok(Date.now() - t0 < 5_000, "close returns once the calls are done, not at the grace");
    assert.deepEqual(aborts, []);
  });

  it("a call past the grace is cut (its handler aborted) and close() returns soon after", async () => {
    const { running, started, aborts } = await slowService(30_000, 1);
    const call = post(`${running.grpc.httpUrl!}/rewardmesh.v1.RewardService/Score`, {
      rollout: rollout("ab"),
    }).then(
      (r) => r.status,
      () => "cut",
    );
    await started;
    const t0 = Date.now();
    await running.close(300);
    assert.ok(Date.now() - t0 < 5_000, `close took ${Date.now() - t0} ms`);
    assert.notEqual(await call, 200);
    assert.equal(aborts.length, 1);
  });

  it("TLS HTTP/2: the session gets a GOAWAY, its in-flight stream still answers 200", async () => {
    const pki = createTestPki();
    const { running, started } = await slowService(700, 1, {
      ECHO_GRPC_TLS_CERT_FILE: pki.serverCert,
      ECHO_GRPC_TLS_KEY_FILE: pki.serverKey,
    });
    const session = http2.connect(running.grpc.httpUrl!, { ca: readFileSync(pki.caCert) });
    try {
      const goaway = new Promise<void>((r) => session.once("goaway", () => r()));
      const stream = session.request({
        ":method": "POST",
        ":path": "/rewardmesh.v1.RewardService/Score",
        "content-type": "application/json",
      });
      const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
        let status = 0;
        let text = "";
        stream.on("response", (h) => (status = Number(h[":status"])));
        stream.on("data", (d: Buffer) => (text += d.toString()));
        stream.on("end", () => resolve({ status, text }));
        stream.on("error", reject);
      });
      stream.end(JSON.stringify({ rollout: rollout("abcd") }));
      await started;
      const closing = running.close(10_000);
      await goaway;
      const r = await response;
      assert.equal(r.status, 200, r.text);
      assert.equal(JSON.parse(r.text).components[0].value, 4);
      await closing;
    } finally {
      session.destroy();
      pki.remove();
    }
  });
});

describe("HTTP/JSON calls are labelled http in traces", () => {
  it("reward.transport is http for a Score over HTTP/JSON, grpc over gRPC", async () => {
    const { exporter } = installTestTracing();
    const options = loadServiceRuntimeOptions("ECHO", 0, { ECHO_HTTP_PORT: "0", ECHO_WORKER: "false" });
    const running = await startRewardService(createEchoService(), options, silentLogger);
    const client = createGrpcClient(RewardService, running.grpc.address);
    try {
      exporter.reset();
      const r = await post(`${running.grpc.httpUrl!}/rewardmesh.v1.RewardService/Score`, {
        rollout: rollout("http-call"),
      });
      assert.equal(r.status, 200);
      await client.score({ rollout: { ...rollout("grpc-call"), id: "r2" } }, { timeoutMs: 10_000 });
      const transports = exporter
        .getFinishedSpans()
        .filter((span) => span.attributes["reward.transport"] !== undefined)
        .map((span) => [
          span.attributes["rollout.id"] ?? span.attributes["reward.rollout_id"],
          span.attributes["reward.transport"],
        ]);
      assert.deepEqual(transports.map((t) => t[1]).sort(), ["grpc", "http"], JSON.stringify(transports));
    } finally {
      client.close();
      await running.close(500);
    }
  });
});
