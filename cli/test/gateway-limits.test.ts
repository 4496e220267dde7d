/**
 * The gateway's limits over real reward services (gRPC on port 0): a body past `maxBodyBytes` is a 413, a
 * request past `maxConcurrent` a 429, and the services' calls are cancelled (their handlers aborted)
 * when the client goes away or when another service fails. Each request is one ScoreBatch call per service;
 * a real grpc-js server without ScoreBatch (a service written before it) is scored over ScoreStream with the
 * same answers, the same errors and the same cancellation. Shutdown drains: a request in flight finishes
 * within the grace period (programmatic close and SIGTERM of the real `reward-mesh gateway` process), new
 * connections are refused meanwhile, and past the grace what is left is cancelled with a 503.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createGrpcHandlers, createGrpcServiceDefinition, grpc, RewardService } from "@reward-mesh/proto";
import {
  createLimiter,
  createRewardServiceClient,
  createRewardServiceImpl,
  defineRewardService,
  InvalidArgumentError,
  loadServiceRuntimeOptions,
  type RunningService,
  silentLogger,
  startRewardService,
  toGrpcStatus,
} from "@reward-mesh/sdk";
import {
  type OpenRlhfGatewayOptions,
  type RunningGateway,
  startOpenRlhfGateway,
} from "../src/gateway/openrlhf.js";

/** A service `name` scoring domain custom: waits `delayMs` (honouring the abort) or fails at once. */
function slowService(name: string, o: { delayMs: number; fail?: boolean }) {
  const events = { started: 0, aborted: 0, finishedAt: 0 };
  const def = defineRewardService({
    name,
    version: "0.0.1",
    domains: ["custom"],
    components: [{ name: "v", description: "1 after a delay", min: 0, max: 1 }],
    score: async (_r, ctx) => {
      events.started++;
      if (o.fail) throw new Error(`${name} is broken`);
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, o.delayMs);
        ctx.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(t);
            events.aborted++;
            reject(ctx.signal.reason);
          },
          { once: true },
        );
      });
      events.finishedAt = Date.now();
      return [{ name: "v", value: 1 }];
    },
  });
  return { def, events };
}

type ServiceDef = ReturnType<typeof defineRewardService>;

/**
 * `def` served by a plain grpc-js server on port 0 (the SDK's handlers and status mapping), counting the calls of each RPC;
 * `withoutScoreBatch`: the server has no ScoreBatch method, as a service written before it (grpc-js answers
 * UNIMPLEMENTED).
 */
async function countingServer(def: ServiceDef, o: { withoutScoreBatch: boolean }) {
  const server = new grpc.Server();
  const definition = { ...createGrpcServiceDefinition(RewardService) } as Record<string, unknown>;
  const handlers = createGrpcHandlers(
    RewardService,
    createRewardServiceImpl(def, createLimiter(8), silentLogger),
    { toStatus: toGrpcStatus },
  );
  const calls = { scoreBatch: 0, scoreStream: 0, score: 0 };
  for (const rpc of ["scoreBatch", "scoreStream", "score"] as const) {
    const handle = handlers[rpc] as (...a: unknown[]) => void;
    handlers[rpc] = (...a: unknown[]) => {
      calls[rpc]++;
      handle(...a);
    };
  }
  if (o.withoutScoreBatch) {
    delete definition["scoreBatch"];
    delete handlers["scoreBatch"];
  }
  server.addService(definition as grpc.ServiceDefinition, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    calls,
    close: () => server.forceShutdown(),
  };
}

// Polls: a long limit costs nothing when the condition comes true (a process start under load takes seconds).
async function until(cond: () => boolean, what: string): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > 30_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const body = (n = 1) => JSON.stringify({ query: Array.from({ length: n }, () => "Q A"), prompts: ["Q "] });

/**
 * A gateway on a free port over `services` (each scoring domain custom with component `v`, weight 1): a
 * client per service, put in `clients` for the caller to close.
 */
function customGateway(
  services: readonly { name: string; address: string }[],
  clients: { close(): void }[],
  extra: Partial<OpenRlhfGatewayOptions> = {},
): Promise<RunningGateway> {
  return startOpenRlhfGateway({
    components: services.map(({ name }) => ({ service: name, component: "v", weight: 1 })),
    services: services.map(({ name, address }) => {
      const client = createRewardServiceClient(address);
      clients.push(client);
      return { name, client, domains: ["custom"] };
    }),
    domain: "custom",
    host: "127.0.0.1",
    port: 0,
    timeoutMs: 60_000,
    ...extra,
  });
}

describe("reward-mesh gateway limits and cancellation", { timeout: 180_000 }, () => {
  const slow = slowService("slow", { delayMs: 20_000 });
  const broken = slowService("broken", { delayMs: 0, fail: true });
  let slowRunning: RunningService;
  let brokenRunning: RunningService;
  const gateways: RunningGateway[] = [];
  const clients: { close(): void }[] = [];
  before(async () => {
    slowRunning = await startRewardService(
      slow.def,
      loadServiceRuntimeOptions("SLOW", 0, { SLOW_WORKER: "false" }),
      silentLogger,
    );
    brokenRunning = await startRewardService(
      broken.def,
      loadServiceRuntimeOptions("BROKEN", 0, { BROKEN_WORKER: "false" }),
      silentLogger,
    );
  });
  after(async () => {
    for (const g of gateways) await g.close();
    for (const c of clients) c.close();
    await slowRunning.close(0);
    await brokenRunning.close(0);
  });

  async function gateway(
    names: ("slow" | "broken")[],
    extra: { maxConcurrent?: number; maxBodyBytes?: number },
  ) {
    const services = names.map((name) => ({
      name,
      address: (name === "slow" ? slowRunning : brokenRunning).grpc.address,
    }));
    const g = await customGateway(services, clients, extra);
    gateways.push(g);
    return `${g.url}/get_reward`;
  }

  it("413 past the body limit; 429 past the concurrency limit; a client going away cancels the streams", async () => {
    const url = await gateway(["slow"], { maxConcurrent: 1, maxBodyBytes: 200 });
    const big = await fetch(url, { method: "POST", body: body(40) });
    assert.equal(big.status, 413);
    assert.match(((await big.json()) as { error: string }).error, /larger than 200 bytes/);
    const client = new AbortController();
    const first = fetch(url, { method: "POST", body: body(), signal: client.signal }).catch(() => "gone");
    await until(() => slow.events.started === 1, "the first request to be scored");
    const second = await fetch(url, { method: "POST", body: body() });
    assert.equal(second.status, 429);
    assert.equal(second.headers.get("retry-after"), "1");
    client.abort();
    assert.equal(await first, "gone");
    // The service's handler is cancelled long before its 20 s.
    await until(() => slow.events.aborted === 1, "the slow service's call to be cancelled");
  });

  it("one service failing cancels the other services' streams and answers at once", async () => {
    const url = await gateway(["slow", "broken"], {});
    const before = slow.events.aborted;
    const t0 = Date.now();
    const r = await fetch(url, { method: "POST", body: body() });
    assert.ok(r.status >= 500, `status ${r.status}`);
    assert.ok(Date.now() - t0 < 10_000, `answered after ${Date.now() - t0} ms`);
    await until(() => slow.events.aborted === before + 1, "the slow service's call to be cancelled");
  });
});

describe("reward-mesh gateway: one ScoreBatch per service, ScoreStream for a service without it", {
  timeout: 60_000,
}, () => {
  /** Scores `v` = the response's length; refuses a response saying "bad" (INVALID_ARGUMENT). */
  const picky = defineRewardService({
    name: "picky",
    version: "0.0.1",
    domains: ["custom"],
    components: [{ name: "v", description: "the response's length", min: 0, max: 100 }],
    score: async (r) => {
      if (r.response.includes("bad"))
        throw new InvalidArgumentError("rollout.response", "must not say 'bad'");
      return [{ name: "v", value: r.response.length }];
    },
  });
  const legacySlow = slowService("legacy", { delayMs: 20_000 });
  const servers: { close(): void }[] = [];
  const clients: { close(): void }[] = [];
  const gateways: RunningGateway[] = [];
  after(async () => {
    for (const g of gateways) await g.close(0);
    for (const c of clients) c.close();
    for (const s of servers) s.close();
  });

  async function gatewayFor(address: string, name = "picky") {
    const g = await customGateway([{ name, address }], clients);
    gateways.push(g);
    return `${g.url}/get_reward`;
  }
  const post = async (url: string, query: string[]) => {
    const r = await fetch(url, {
      method: "POST",
      body: JSON.stringify({ query, prompts: query.map(() => "Q ") }),
    });
    return { status: r.status, json: (await r.json()) as Record<string, unknown> };
  };

  it("the same answers and the same per-query errors over ScoreBatch and over the ScoreStream fallback", async () => {
    const batch = await countingServer(picky, { withoutScoreBatch: false });
    const legacy = await countingServer(picky, { withoutScoreBatch: true });
    servers.push(batch, legacy);
    const viaBatch = await gatewayFor(batch.address);
    const viaStream = await gatewayFor(legacy.address);
    const query = ["Q a", "Q abc", "Q ab"];
    const expected = {
      rewards: [1, 3, 2],
      scores: [1, 3, 2],
      extra_logs: { "picky/v": [1, 3, 2], "picky/v/applicable": [1, 1, 1] },
    };
    for (const url of [viaBatch, viaStream]) {
      for (let k = 0; k < 2; k++) assert.deepEqual(await post(url, query), { status: 200, json: expected });
      // A refused rollout: 400 naming the query it came from, whichever RPC scored it.
      assert.deepEqual(await post(url, ["Q ok", "Q a bad one", "Q bad"]), {
        status: 400,
        json: {
          error: "reward service: INVALID_ARGUMENT: picky: query[1]: 'rollout.response' must not say 'bad'",
        },
      });
    }
    // One ScoreBatch call per request (3 requests), nothing streamed; the legacy service: one ScoreStream per
    // request (its first ScoreBatch was answered UNIMPLEMENTED by grpc-js, and the client remembers it).
    assert.deepEqual(batch.calls, { scoreBatch: 3, scoreStream: 0, score: 0 });
    assert.deepEqual(legacy.calls, { scoreBatch: 0, scoreStream: 3, score: 0 });
  });

  it("a client going away cancels the fallback ScoreStream too", async () => {
    const legacy = await countingServer(legacySlow.def, { withoutScoreBatch: true });
    servers.push(legacy);
    const url = await gatewayFor(legacy.address, "legacy");
    const client = new AbortController();
    const first = fetch(url, { method: "POST", body: body(), signal: client.signal }).catch(() => "gone");
    await until(() => legacySlow.events.started === 1, "the request to be scored");
    assert.equal(legacy.calls.scoreStream, 1);
    client.abort();
    assert.equal(await first, "gone");
    await until(() => legacySlow.events.aborted === 1, "the legacy service's stream to be cancelled");
  });
});

describe("reward-mesh gateway shutdown drains", { timeout: 90_000 }, () => {
  // Scores in 1.5 s: long enough to be in flight when the gateway is told to stop.
  const steady = slowService("steady", { delayMs: 1_500 });
  const stuck = slowService("stuck", { delayMs: 60_000 });
  let steadyRunning: RunningService;
  let stuckRunning: RunningService;
  const clients: { close(): void }[] = [];
  before(async () => {
    steadyRunning = await startRewardService(
      steady.def,
      loadServiceRuntimeOptions("STEADY", 0, { STEADY_WORKER: "false" }),
      silentLogger,
    );
    stuckRunning = await startRewardService(
      stuck.def,
      loadServiceRuntimeOptions("STUCK", 0, { STUCK_WORKER: "false" }),
      silentLogger,
    );
  });
  after(async () => {
    for (const c of clients) c.close();
    await steadyRunning.close(0);
    await stuckRunning.close(0);
  });

  async function gateway(name: "steady" | "stuck", shutdownGraceMs: number): Promise<RunningGateway> {
    const address = (name === "steady" ? steadyRunning : stuckRunning).grpc.address;
    return customGateway([{ name, address }], clients, { timeoutMs: 120_000, shutdownGraceMs });
  }

  it("close(): refuses new connections, lets the request in flight finish, then resolves", async () => {
    const g = await gateway("steady", 20_000);
    const url = `${g.url}/get_reward`;
    const started = steady.events.started;
    const inFlight = fetch(url, { method: "POST", body: body() });
    await until(() => steady.events.started === started + 1, "the request to be scored");
    assert.equal(g.inFlight(), 1);
    let closedAt = 0;
    let leftInFlight = -1;
    const closing = g.close().then(() => {
      closedAt = Date.now();
      leftInFlight = g.inFlight();
    });
    // Not accepting any more: a new connection is refused while the first request is still being scored.
    await assert.rejects(fetch(`${g.url}/healthz`), /fetch failed/);
    const r = await inFlight;
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("connection"), "close");
    assert.deepEqual(await r.json(), {
      rewards: [1],
      scores: [1],
      extra_logs: { "steady/v": [1], "steady/v/applicable": [1] },
    });
    await closing;
    // It waited for the score to end rather than closing at once, and nothing was left when it resolved.
    assert.ok(
      steady.events.finishedAt > 0 && closedAt >= steady.events.finishedAt,
      "close resolved before the score ended",
    );
    assert.equal(leftInFlight, 0);
    assert.equal(steady.events.aborted, 0, "nothing was cancelled");
  });

  it("past the grace period the requests left are cancelled (503, their streams too) and close resolves", async () => {
    const g = await gateway("stuck", 300);
    const started = stuck.events.started;
    const aborted = stuck.events.aborted;
    const inFlight = fetch(`${g.url}/get_reward`, { method: "POST", body: body() });
    await until(() => stuck.events.started === started + 1, "the request to be scored");
    const t0 = Date.now();
    await g.close();
    assert.ok(Date.now() - t0 < 10_000, `closed after ${Date.now() - t0} ms`);
    const r = await inFlight;
    assert.equal(r.status, 503);
    assert.match(((await r.json()) as { error: string }).error, /shutting down.*grace ended/);
    await until(() => stuck.events.aborted === aborted + 1, "the service's call to be cancelled");
  });

  it("SIGTERM of the reward-mesh gateway process drains the request in flight, then exits 0", async () => {
    const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
    const child = spawn(
      process.execPath,
      [
        bin,
        "gateway",
        "--components",
        "steady/v=1",
        "--services",
        `steady=${steadyRunning.grpc.address}`,
        "--domain",
        "custom",
        "--port",
        "0",
        "--shutdown-grace-seconds",
        "20",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      await until(() => /get_reward/.test(out) || child.exitCode !== null, "the gateway to listen");
      const url = /(http:\/\/\S+\/get_reward)/.exec(out)?.[1];
      assert.ok(url, out);
      const started = steady.events.started;
      const inFlight = fetch(url, { method: "POST", body: body() });
      await until(() => steady.events.started === started + 1, "the request to be scored");
      child.kill("SIGTERM");
      const r = await inFlight;
      assert.equal(r.status, 200, out);
      assert.deepEqual(((await r.json()) as { rewards: number[] }).rewards, [1]);
      assert.equal(await exited, 0, out);
      assert.match(out, /stopping: no new requests; 1 being scored get up to 20 s to finish/);
      assert.match(out, /gateway stopped/);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});
