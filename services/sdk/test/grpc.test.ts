/** RewardService, health and reflection over a real grpc-js server on port 0. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { context, trace } from "@opentelemetry/api";
import {
  ComponentStatus,
  createGrpcClient,
  createGrpcHandlers,
  createGrpcServiceDefinition,
  grpc,
  health,
  RewardService,
  reflectionV1,
} from "@reward-mesh/proto";
import {
  createLimiter,
  createRewardServiceImpl,
  injectIntoMetadata,
  MAX_SCORE_BATCH,
  MAX_SCORE_BATCH_BYTES,
  type RunningGrpcServer,
  scoreBatch,
  splitScoreBatch,
  silentLogger,
  startGrpcServer,
} from "../src/index.js";
import { makeRollout } from "../src/testing/index.js";
import { createEchoService, installTestTracing } from "./fixtures.js";

const { exporter, provider } = installTestTracing();
const aborts: unknown[] = [];

describe("gRPC RewardService", () => {
  let server: RunningGrpcServer;
  let client: ReturnType<typeof createGrpcClient<typeof RewardService>>;
  before(async () => {
    const def = createEchoService({ delayMs: 5, onAbort: (r) => aborts.push(r) });
    server = await startGrpcServer(def, { port: 0, limiter: createLimiter(4), logger: silentLogger });
    client = createGrpcClient(RewardService, server.address);
  });
  after(async () => {
    client.close();
    await server.close(1000);
  });

  it("Describe names the service and its components", async () => {
    const d = await client.describe({});
    assert.equal(d.name, "echo");
    assert.deepEqual(d.domains, ["custom"]);
    assert.deepEqual(
      d.components.map((c) => [c.name, c.min, c.max]),
      [
        ["chars", 0, Number.POSITIVE_INFINITY],
        ["has_x", 0, 1],
      ],
    );
  });

  it("Score returns every component and continues the caller's trace", async () => {
    exporter.reset();
    const span = trace.getTracer("test").startSpan("caller");
    const md = new grpc.Metadata();
    injectIntoMetadata(md, trace.setSpan(context.active(), span));
    const r = makeRollout({ response: "xyz", groupSize: 4, index: 3, groupId: "g7" });
    const res = await client.score({ rollout: r }, { metadata: md });
    span.end();
    assert.equal(res.rolloutId, r.id);
    assert.equal(res.service, "echo");
    assert.equal(res.index, 3);
    assert.equal(res.groupSize, 4);
    assert.deepEqual(
      res.components.map((c) => [c.name, c.value, c.status]),
      [
        ["chars", 3, ComponentStatus.OK],
        ["has_x", 1, ComponentStatus.OK],
      ],
    );
    assert.ok(res.durationMs >= 0);
    await provider.forceFlush();
    const scoreSpan = exporter.getFinishedSpans().find((s) => s.name === "reward/echo/score");
    assert.ok(scoreSpan, "score span exported");
    assert.equal(scoreSpan.spanContext().traceId, span.spanContext().traceId);
    assert.equal(scoreSpan.parentSpanContext?.spanId, span.spanContext().spanId);
  });

  it("ScoreStream answers in request order with back-pressure", async () => {
    const n = 200;
    const rollouts = Array.from({ length: n }, (_, i) => makeRollout({ response: "a".repeat(i) }));
    async function* requests() {
      for (const r of rollouts) yield { rollout: r };
    }
    const got: string[] = [];
    for await (const res of client.scoreStream(requests())) {
      got.push(res.rolloutId);
      assert.equal(res.components[0]!.value, rollouts[got.length - 1]!.response.length);
    }
    assert.deepEqual(
      got,
      rollouts.map((r) => r.id),
    );
  });

  it("ScoreStream works ping-pong (one request, wait for its answer, next)", async () => {
    let release: (() => void) | undefined;
    const r1 = makeRollout({ response: "one" });
    const r2 = makeRollout({ response: "two!" });
    async function* requests() {
      yield { rollout: r1 };
      await new Promise<void>((r) => (release = r));
      yield { rollout: r2 };
    }
    const it = client.scoreStream(requests())[Symbol.asyncIterator]();
    const a = await it.next();
    assert.equal(a.value?.rolloutId, r1.id);
    release!();
    const b = await it.next();
    assert.equal(b.value?.rolloutId, r2.id);
    assert.equal((await it.next()).done, true);
  });

  it("bad requests fail with INVALID_ARGUMENT naming the field", async () => {
    const cases: Array<[Parameters<typeof client.score>[0], string]> = [
      [{}, "'rollout' is required"],
      [{ rollout: makeRollout({ id: "" }) }, "'rollout.id' is required"],
      [{ rollout: makeRollout({ runId: "run.1" }) }, "'rollout.run_id' must match"],
      [{ rollout: makeRollout({ groupSize: 0 }) }, "'rollout.group_size' must be >= 1"],
      [{ rollout: makeRollout({ index: 2, groupSize: 2 }) }, "'rollout.index' must be < group_size (2)"],
      [
        { rollout: makeRollout({ metadata: { reject: "1" } }) },
        `'rollout.metadata["reject"]' asks to be rejected`,
      ],
    ];
    for (const [req, msg] of cases) {
      await assert.rejects(client.score(req), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.message);
        assert.ok(err.details.includes(msg), `${err.details} should include ${msg}`);
        return true;
      });
    }
  });

  it("a bad message in ScoreStream names its position", async () => {
    async function* requests() {
      yield { rollout: makeRollout() };
      yield { rollout: makeRollout({ groupId: "" }) };
    }
    await assert.rejects(
      (async () => {
        for await (const _ of client.scoreStream(requests())) {
          // consume
        }
      })(),
      (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.match(err.details, /'requests\[1\]\.rollout\.group_id' is required/);
        return true;
      },
    );
  });

  it("ScoreBatch scores every request in order, each as Score does (its own span under the caller's)", async () => {
    exporter.reset();
    const span = trace.getTracer("test").startSpan("caller");
    const md = new grpc.Metadata();
    injectIntoMetadata(md, trace.setSpan(context.active(), span));
    const rollouts = Array.from({ length: 50 }, (_, i) => makeRollout({ response: "x".repeat(i) }));
    const res = await client.scoreBatch(
      { requests: rollouts.map((r) => ({ rollout: r })) },
      { metadata: md },
    );
    span.end();
    assert.deepEqual(res.errors, []);
    assert.deepEqual(
      res.results.map((r) => r.rolloutId),
      rollouts.map((r) => r.id),
    );
    assert.deepEqual(
      res.results.map((r) => r.components.map((c) => c.value)),
      rollouts.map((r) => [r.response.length, r.response.length > 0 ? 1 : 0]),
    );
    const one = await client.score({ rollout: rollouts[7]! });
    assert.deepEqual(
      res.results[7]!.components.map((c) => [c.name, c.value, c.status, c.details]),
      one.components.map((c) => [c.name, c.value, c.status, c.details]),
    );
    await provider.forceFlush();
    const spans = exporter
      .getFinishedSpans()
      .filter(
        (s) => s.name === "reward/echo/score" && s.spanContext().traceId === span.spanContext().traceId,
      );
    assert.equal(spans.length, 50);
    assert.ok(spans.every((s) => s.parentSpanContext?.spanId === span.spanContext().spanId));
  });

  it("ScoreBatch: a bad rollout gets its own error (ScoreStream's code and message), the others are scored", async () => {
    const rollouts = [
      makeRollout({ response: "a" }),
      makeRollout({ groupId: "" }),
      makeRollout({ response: "bb" }),
      makeRollout({ metadata: { reject: "1" } }),
      makeRollout({ response: "xyz" }),
    ];
    const res = await client.scoreBatch({ requests: [...rollouts.map((r) => ({ rollout: r })), {}] });
    assert.equal(res.results.length, 6);
    assert.deepEqual(
      res.errors.map((e) => [e.index, e.code, e.message]),
      [
        [1, grpc.status.INVALID_ARGUMENT, "'requests[1].rollout.group_id' is required"],
        [3, grpc.status.INVALID_ARGUMENT, `'requests[3].rollout.metadata["reject"]' asks to be rejected`],
        [5, grpc.status.INVALID_ARGUMENT, "'requests[5].rollout' is required"],
      ],
    );
    assert.deepEqual(
      res.results.map((r) => [r.rolloutId, r.service, r.components.map((c) => c.value)]),
      [
        [rollouts[0]!.id, "echo", [1, 0]],
        [rollouts[1]!.id, "echo", []],
        [rollouts[2]!.id, "echo", [2, 0]],
        [rollouts[3]!.id, "echo", []],
        [rollouts[4]!.id, "echo", [3, 1]],
        ["", "echo", []],
      ],
    );
    // The same message ScoreStream ends with for the same request.
    async function* requests() {
      for (const r of rollouts) yield { rollout: r };
    }
    await assert.rejects(
      (async () => {
        for await (const _ of client.scoreStream(requests())) {
          // consume
        }
      })(),
      (err: grpc.ServiceError) => err.details === res.errors[0]!.message,
    );
  });

  it("ScoreBatch refuses an empty batch and one over 1024 requests, naming the limit", async () => {
    await assert.rejects(client.scoreBatch({ requests: [] }), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(err.details, "'requests' must hold at least one ScoreRequest");
      return true;
    });
    const requests = Array.from({ length: MAX_SCORE_BATCH + 1 }, () => ({ rollout: makeRollout() }));
    await assert.rejects(client.scoreBatch({ requests }), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.match(err.details, /^'requests' must hold at most 1024 ScoreRequests, got 1025/);
      return true;
    });
    const full = await client.scoreBatch({ requests: requests.slice(0, MAX_SCORE_BATCH) });
    assert.equal(full.results.length, 1024);
    assert.equal(full.errors.length, 0);
  });

  it("ScoreBatch: a request the service fails on is INTERNAL for it alone; the deadline fails the whole call", async () => {
    const flaky = createEchoService({ failFirst: new Map([["boom", 1]]) });
    const s = await startGrpcServer(flaky, { port: 0, limiter: createLimiter(2), logger: silentLogger });
    const c = createGrpcClient(RewardService, s.address);
    try {
      const res = await c.scoreBatch({
        requests: [{ rollout: makeRollout({ id: "ok" }) }, { rollout: makeRollout({ id: "boom" }) }],
      });
      assert.deepEqual(
        res.errors.map((e) => [e.index, e.code, e.message]),
        [[1, grpc.status.INTERNAL, "internal error: simulated infrastructure failure 1/1"]],
      );
      assert.equal(res.results[0]!.components.length, 2);
    } finally {
      c.close();
      await s.close(100);
    }
    const slow = createEchoService({ delayMs: 5_000 });
    const s2 = await startGrpcServer(slow, { port: 0, limiter: createLimiter(4), logger: silentLogger });
    const c2 = createGrpcClient(RewardService, s2.address);
    try {
      await assert.rejects(
        c2.scoreBatch(
          { requests: [{ rollout: makeRollout() }, { rollout: makeRollout() }] },
          { timeoutMs: 200 },
        ),
        (err: grpc.ServiceError) => err.code === grpc.status.DEADLINE_EXCEEDED,
      );
    } finally {
      c2.close();
      await s2.close(100);
    }
  });

  it("scoreBatch (the client helper) splits at the cap and numbers errors across the whole batch", async () => {
    const rollouts = Array.from({ length: MAX_SCORE_BATCH + 6 }, (_, i) =>
      makeRollout(i === MAX_SCORE_BATCH + 3 ? { groupId: "" } : { response: "x".repeat(i % 7) }),
    );
    const out = await scoreBatch(client, rollouts);
    assert.equal(out.rpc, "ScoreBatch");
    assert.deepEqual(
      out.results.map((r) => r.rolloutId),
      rollouts.map((r) => r.id),
    );
    assert.deepEqual(
      out.errors.map((e) => [e.index, e.code, e.message]),
      [[MAX_SCORE_BATCH + 3, grpc.status.INVALID_ARGUMENT, "'requests[3].rollout.group_id' is required"]],
    );
    assert.equal(out.results[MAX_SCORE_BATCH + 5]!.components[0]!.value, (MAX_SCORE_BATCH + 5) % 7);
  });

  it("scoreBatch falls back to ScoreStream on a real server without ScoreBatch (UNIMPLEMENTED), and remembers", async () => {
    // A grpc-js server hosting RewardService as a service written before ScoreBatch: its ScoreBatch records
    // the attempt, then answers UNIMPLEMENTED (as a server without the method does).
    const old = new grpc.Server();
    const handlers = createGrpcHandlers(
      RewardService,
      createRewardServiceImpl(createEchoService(), createLimiter(4), silentLogger),
    );
    let streams = 0;
    let batches = 0;
    const stream = handlers["scoreStream"] as (call: unknown) => void;
    handlers["scoreStream"] = (call: unknown) => {
      streams++;
      stream(call);
    };
    handlers["scoreBatch"] = (_call: unknown, callback: grpc.sendUnaryData<unknown>) => {
      batches++;
      callback({ code: grpc.status.UNIMPLEMENTED, details: "Method not found" });
    };
    old.addService(createGrpcServiceDefinition(RewardService), handlers);
    const port = await new Promise<number>((resolve, reject) =>
      old.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const c = createGrpcClient(RewardService, `127.0.0.1:${port}`);
    try {
      await assert.rejects(
        c.scoreBatch({ requests: [{ rollout: makeRollout() }] }),
        (err: grpc.ServiceError) => err.code === grpc.status.UNIMPLEMENTED,
      );
      batches = 0;
      const rollouts = ["a", "xx", "xyz"].map((response) => makeRollout({ response }));
      for (let k = 0; k < 2; k++) {
        const out = await scoreBatch(c, rollouts, { timeoutMs: 10_000 });
        assert.equal(out.rpc, "ScoreStream");
        assert.deepEqual(
          out.results.map((r) => [r.rolloutId, r.components.map((x) => x.value)]),
          [
            [rollouts[0]!.id, [1, 0]],
            [rollouts[1]!.id, [2, 1]],
            [rollouts[2]!.id, [3, 1]],
          ],
        );
      }
      assert.equal(batches, 1, "ScoreBatch asked once across both calls");
      assert.equal(streams, 2);
      // A batch of several calls asks with its first call alone, then streams the rest: one more attempt
      // (once the fallback has expired), never one per call.
      const c2 = createGrpcClient(RewardService, `127.0.0.1:${port}`);
      try {
        const many = Array.from({ length: 2 * MAX_SCORE_BATCH + 3 }, () => makeRollout());
        const out = await scoreBatch(c2, many, { timeoutMs: 20_000 });
        assert.deepEqual(
          out.results.map((r) => r.rolloutId),
          many.map((r) => r.id),
        );
        assert.equal(batches, 2);
      } finally {
        c2.close();
      }
    } finally {
      c.close();
      old.forceShutdown();
    }
  });

  it("scoreBatch cuts a batch by bytes too: 1024 rollouts of 8 KB, over one message's limit, are all scored", async () => {
    const rollouts = Array.from({ length: 1024 }, (_, i) =>
      makeRollout({ response: `${i} `.padEnd(8200, "a") }),
    );
    // One call of them all is over what the service accepts (MAX_MESSAGE_BYTES + the envelope).
    await assert.rejects(
      client.scoreBatch({ requests: rollouts.map((rollout) => ({ rollout })) }, { timeoutMs: 30_000 }),
      (err: grpc.ServiceError) => err.code === grpc.status.RESOURCE_EXHAUSTED,
    );
    assert.equal(splitScoreBatch(rollouts).length, 3);
    const out = await scoreBatch(client, rollouts, { timeoutMs: 30_000 });
    assert.equal(out.rpc, "ScoreBatch");
    assert.deepEqual(out.errors, []);
    assert.deepEqual(
      out.results.map((r) => [r.rolloutId, r.components[0]!.value]),
      rollouts.map((r) => [r.id, 8200]),
    );
    // A rollout over MAX_SCORE_BATCH_BYTES goes alone.
    const big = makeRollout({ response: "b".repeat(MAX_SCORE_BATCH_BYTES) });
    assert.deepEqual(splitScoreBatch([rollouts[0]!, big, rollouts[1]!]), [
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
  });

  /**
   * A real grpc-js server for the RESOURCE_EXHAUSTED paths: `limit` bytes a message both ways (default
   * grpc-js's), `details` bytes of details on every result (long answers), `busy` (ScoreBatch answers
   * RESOURCE_EXHAUSTED "busy", as an overloaded server or a proxy). It counts each rollout's scorings
   * (`scored`, ScoreBatch and ScoreStream) and the calls it handled (`calls`, with ScoreBatch's sizes).
   */
  async function sizedServer(o: { limit?: number; details?: number; busy?: boolean }) {
    const impl = createRewardServiceImpl(createEchoService(), createLimiter(4), silentLogger);
    const scored = new Map<string, number>();
    const calls: string[] = [];
    const count = <R extends { rolloutId?: string; components?: Array<{ details?: string }> }>(r: R): R => {
      const id = r.rolloutId ?? "";
      scored.set(id, (scored.get(id) ?? 0) + 1);
      if (o.details) r.components![0]!.details = "d".repeat(o.details);
      return r;
    };
    const handlers = createGrpcHandlers(RewardService, {
      ...impl,
      async scoreBatch(req, ctx) {
        calls.push(`ScoreBatch ${req.requests.length}`);
        const res = await impl.scoreBatch(req, ctx);
        for (const r of res.results ?? []) count(r);
        return res;
      },
      async *scoreStream(reqs, ctx) {
        calls.push("ScoreStream");
        for await (const r of impl.scoreStream(reqs, ctx)) yield count(r);
      },
    });
    if (o.busy)
      handlers["scoreBatch"] = (_call: unknown, callback: grpc.sendUnaryData<unknown>) => {
        calls.push("ScoreBatch busy");
        callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: "busy" });
      };
    const limits =
      o.limit === undefined
        ? {}
        : { "grpc.max_receive_message_length": o.limit, "grpc.max_send_message_length": o.limit };
    const server = new grpc.Server(limits);
    server.addService(createGrpcServiceDefinition(RewardService), handlers);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return { address: `127.0.0.1:${port}`, scored, calls, close: () => server.forceShutdown() };
  }

  it("scoreBatch halves a call whose REQUEST the service refuses as too big (nothing scored twice)", async () => {
    // 300 × 8 KB (2.4 MB, under MAX_SCORE_BATCH_BYTES) against a 1 MiB limit: refused unscored, halved until it fits.
    const s = await sizedServer({ limit: 1024 * 1024 });
    const c = createGrpcClient(RewardService, s.address);
    try {
      const direct = await c
        .scoreBatch({ requests: [{ rollout: makeRollout({ response: "x".repeat(2_000_000) }) }] })
        .catch((err: grpc.ServiceError) => err);
      assert.equal((direct as grpc.ServiceError).code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(
        (direct as grpc.ServiceError).details,
        /^Received message larger than max \(\d+ vs\.? \d+\)/,
      );
      const rollouts = Array.from({ length: 300 }, (_, i) =>
        makeRollout({ response: `${i} `.padEnd(8000, "a") }),
      );
      const out = await scoreBatch(c, rollouts, { timeoutMs: 30_000 });
      assert.equal(out.rpc, "ScoreBatch");
      assert.deepEqual(
        out.results.map((r) => r.rolloutId),
        rollouts.map((r) => r.id),
      );
      // 300 and 2 × 150 refused before the handler; 4 × 75 scored, once each.
      assert.deepEqual(s.calls, ["ScoreBatch 75", "ScoreBatch 75", "ScoreBatch 75", "ScoreBatch 75"]);
      assert.deepEqual(new Set(s.scored.values()), new Set([1]));
      assert.equal(s.scored.size, 300);
    } finally {
      c.close();
      s.close();
    }
  });

  it("scoreBatch redoes a call whose RESPONSE was too big once over ScoreStream (each rollout scored at most twice)", async () => {
    const rollouts = () => Array.from({ length: 300 }, () => makeRollout());
    // The server's send limit ("Sent message larger than max"): 300 results of 8 KB details are 2.4 MB.
    const s = await sizedServer({ limit: 1024 * 1024, details: 8192 });
    const c = createGrpcClient(RewardService, s.address);
    // The client's own receive limit ("Received message larger than max", about the response).
    const s2 = await sizedServer({ details: 8192 });
    const c2 = createGrpcClient(RewardService, s2.address, grpc.credentials.createInsecure(), {
      "grpc.max_receive_message_length": 1024 * 1024,
    });
    try {
      for (const [server, client] of [
        [s, c],
        [s2, c2],
      ] as const) {
        const rs = rollouts();
        const out = await scoreBatch(client, rs, { timeoutMs: 30_000 });
        assert.equal(out.rpc, "ScoreStream");
        assert.deepEqual(
          out.results.map((r) => [r.rolloutId, r.components[0]!.details.length]),
          rs.map((r) => [r.id, 8192]),
        );
        assert.deepEqual(server.calls, ["ScoreBatch 300", "ScoreStream"]);
        assert.deepEqual(
          [...server.scored.entries()],
          rs.map((r) => [r.id, 2]),
        );
      }
    } finally {
      c.close();
      c2.close();
      s.close();
      s2.close();
    }
  });

  it("scoreBatch throws a RESOURCE_EXHAUSTED that is not about size (a busy server) without retrying", async () => {
    const s = await sizedServer({ busy: true });
    const c = createGrpcClient(RewardService, s.address);
    try {
      const rollouts = Array.from({ length: 300 }, () => makeRollout());
      await assert.rejects(scoreBatch(c, rollouts, { timeoutMs: 30_000 }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
        assert.equal(err.details, "busy");
        return true;
      });
      assert.deepEqual(s.calls, ["ScoreBatch busy"]);
      assert.equal(s.scored.size, 0);
    } finally {
      c.close();
      s.close();
    }
  });

  it("scoreBatch: the first failed call cancels the others on the service; so does the caller's signal", async () => {
    // A real grpc-js server whose ScoreBatch fails (after 300 ms) a call whose first rollout is "fail", answers
    // one whose first rollout is "quick" at once, and otherwise waits 5 s for its cancellation.
    let cancelled = 0;
    const impl = createRewardServiceImpl(createEchoService(), createLimiter(4), silentLogger);
    const server = new grpc.Server();
    server.addService(
      createGrpcServiceDefinition(RewardService),
      createGrpcHandlers(RewardService, {
        ...impl,
        async scoreBatch(req, ctx) {
          const first = req.requests[0]?.rollout?.id ?? "";
          if (first === "quick") return impl.scoreBatch(req, ctx);
          if (first === "fail") {
            await new Promise((r) => setTimeout(r, 300));
            throw new Error("failed on purpose");
          }
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, 5_000);
            ctx.signal.addEventListener(
              "abort",
              () => {
                cancelled++;
                clearTimeout(t);
                resolve();
              },
              { once: true },
            );
          });
          ctx.signal.throwIfAborted();
          return impl.scoreBatch(req, ctx);
        },
      }),
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const c = createGrpcClient(RewardService, `127.0.0.1:${port}`);
    const waitFor = async (n: number) => {
      const until = Date.now() + 3_000;
      while (cancelled < n && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      return cancelled;
    };
    try {
      await scoreBatch(c, [makeRollout({ id: "quick" })]); // known to have ScoreBatch: no probe call
      const slow = Array.from({ length: MAX_SCORE_BATCH }, () => makeRollout());
      const t0 = Date.now();
      await assert.rejects(scoreBatch(c, [...slow, makeRollout({ id: "fail" })], { timeoutMs: 30_000 }));
      assert.ok(Date.now() - t0 < 3_000, `failed after ${Date.now() - t0} ms`);
      assert.equal(await waitFor(1), 1, "the other call kept running on the service");
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 300);
      await assert.rejects(scoreBatch(c, [...slow, ...slow], { signal: abort.signal, timeoutMs: 30_000 }));
      assert.equal(await waitFor(3), 3);
    } finally {
      c.close();
      server.forceShutdown();
    }
  });

  it("ScoreBatch keeps at most 2 × the limiter's capacity in flight: a Score behind a big batch is not starved", async () => {
    // Server-side ordering, not wall clock: how many of the batch's rollouts the service had scored when the
    // Score was sent, and when the Score itself was scored.
    let batchScored = 0;
    let scoreSeenAt = -1;
    const def = createEchoService({
      delayMs: 10,
      onScore: (id) => {
        if (id === "lone") scoreSeenAt = batchScored;
        else batchScored++;
      },
    });
    const s = await startGrpcServer(def, { port: 0, limiter: createLimiter(4), logger: silentLogger });
    const c = createGrpcClient(RewardService, s.address);
    try {
      await c.score({ rollout: makeRollout() }); // connected
      batchScored = 0;
      const big = c.scoreBatch({ requests: Array.from({ length: 512 }, () => ({ rollout: makeRollout() })) });
      const until = Date.now() + 10_000;
      while (batchScored < 16 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      const sentAt = batchScored;
      await c.score({ rollout: makeRollout({ id: "lone" }) });
      await big;
      assert.equal(batchScored, 512);
      // Queued behind the whole batch, the Score would be scored after all 512; behind its window (8 in
      // flight on 4 slots) after a few more. 128 leaves a wide margin for a loaded machine.
      assert.ok(
        sentAt >= 16 && scoreSeenAt >= 0 && scoreSeenAt - sentAt < 128,
        `the Score sent after ${sentAt} of the batch's rollouts was scored after ${scoreSeenAt} of 512`,
      );
    } finally {
      c.close();
      await s.close(100);
    }
  });

  it("the deadline becomes DEADLINE_EXCEEDED and aborts the score function", async () => {
    const slow = createEchoService({ delayMs: 5_000, onAbort: (r) => aborts.push(r) });
    const s = await startGrpcServer(slow, { port: 0, limiter: createLimiter(1), logger: silentLogger });
    const c = createGrpcClient(RewardService, s.address);
    try {
      const before = aborts.length;
      const t0 = Date.now();
      await assert.rejects(
        c.score({ rollout: makeRollout() }, { timeoutMs: 150 }),
        (err: grpc.ServiceError) => {
          assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
          return true;
        },
      );
      assert.ok(Date.now() - t0 < 4_000);
      // The server side saw its signal abort (poll: the abort lands right around the client's deadline).
      const until = Date.now() + 3_000;
      while (aborts.length === before && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      assert.equal(aborts.length, before + 1);
    } finally {
      c.close();
      await s.close(100);
    }
  });
});

describe("gRPC health and reflection", () => {
  let server: RunningGrpcServer;
  before(async () => {
    server = await startGrpcServer(createEchoService(), {
      port: 0,
      limiter: createLimiter(2),
      logger: silentLogger,
    });
  });
  after(async () => {
    await server.close(100);
  });

  it("Health.Check reports SERVING, NOT_FOUND for unknown services, and Watch sees NOT_SERVING", async () => {
    const h = createGrpcClient(health.Health, server.address);
    try {
      const S = health.HealthCheckResponse_ServingStatus;
      assert.equal((await h.check({ service: "" })).status, S.SERVING);
      assert.equal((await h.check({ service: "rewardmesh.v1.RewardService" })).status, S.SERVING);
      await assert.rejects(
        h.check({ service: "nope.Service" }),
        (e: grpc.ServiceError) => e.code === grpc.status.NOT_FOUND,
      );
      const watch = h.watch({ service: "rewardmesh.v1.RewardService" })[Symbol.asyncIterator]();
      assert.equal((await watch.next()).value?.status, S.SERVING);
      server.health.set("rewardmesh.v1.RewardService", S.NOT_SERVING);
      assert.equal((await watch.next()).value?.status, S.NOT_SERVING);
      server.health.set("rewardmesh.v1.RewardService", S.SERVING);
      assert.equal((await watch.next()).value?.status, S.SERVING);
      await watch.return?.();
    } finally {
      h.close();
    }
  });

  it("reflection lists services and serves file descriptors", async () => {
    const r = createGrpcClient(reflectionV1.ServerReflection, server.address);
    try {
      async function* reqs() {
        yield { messageRequest: { case: "listServices" as const, value: "" } };
        yield {
          messageRequest: {
            case: "fileContainingSymbol" as const,
            value: "rewardmesh.v1.RewardService.Score",
          },
        };
        yield { messageRequest: { case: "fileContainingSymbol" as const, value: "no.such.Symbol" } };
      }
      const res = [];
      for await (const x of r.serverReflectionInfo(reqs())) res.push(x);
      assert.equal(res.length, 3);
      const list = res[0]!.messageResponse;
      assert.equal(list.case, "listServicesResponse");
      const names = list.case === "listServicesResponse" ? list.value.service.map((s) => s.name) : [];
      assert.ok(names.includes("rewardmesh.v1.RewardService"));
      assert.ok(names.includes("grpc.health.v1.Health"));
      const files = res[1]!.messageResponse;
      assert.equal(files.case, "fileDescriptorResponse");
      if (files.case === "fileDescriptorResponse") {
        const decoded = files.value.fileDescriptorProto.map(
          (b) => fromBinary(FileDescriptorProtoSchema, b).name,
        );
        assert.equal(decoded[0], "rewardmesh/v1/reward_service.proto");
        assert.ok(decoded.includes("rewardmesh/v1/rollout.proto"));
        assert.ok(decoded.includes("google/protobuf/struct.proto"));
      }
      assert.equal(res[2]!.messageResponse.case, "errorResponse");
    } finally {
      r.close();
    }
  });

  it("`buf curl` calls Describe through server reflection alone (no local schema)", async () => {
    const buf = new URL("../../../node_modules/.bin/buf", import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(buf, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      "{}",
      `http://${server.address}/rewardmesh.v1.RewardService/Describe`,
    ]);
    const d = JSON.parse(stdout) as { name: string; components: Array<{ name: string }> };
    assert.equal(d.name, "echo");
    assert.deepEqual(
      d.components.map((c) => c.name),
      ["chars", "has_x"],
    );
  });
});
