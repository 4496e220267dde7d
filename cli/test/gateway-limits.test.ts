/**
 * The gateway's limits over real reward services (gRPC on port 0): a body past `maxBodyBytes` is a 413, a
 * request past `maxConcurrent` a 429, and the services' ScoreStreams are cancelled (their handlers aborted)
 * when the client goes away or when another service fails.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  createRewardServiceClient,
  defineRewardService,
  loadServiceRuntimeOptions,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type RunningGateway, startOpenRlhfGateway } from "../src/gateway/openrlhf.js";

/** A service `name` scoring domain custom: waits `delayMs` (honouring the abort) or fails at once. */
function slowService(name: string, o: { delayMs: number; fail?: boolean }) {
  const events = { started: 0, aborted: 0 };
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
      return [{ name: "v", value: 1 }];
    },
  });
  return { def, events };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const body = (n = 1) => JSON.stringify({ query: Array.from({ length: n }, () => "Q A"), prompts: ["Q "] });

describe("reward-mesh gateway limits and cancellation", { timeout: 60_000 }, () => {
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
    const services = names.map((name) => {
      const client = createRewardServiceClient((name === "slow" ? slowRunning : brokenRunning).grpc.address);
      clients.push(client);
      return { name, client, domains: ["custom"] };
    });
    const g = await startOpenRlhfGateway({
      components: names.map((service) => ({ service, component: "v", weight: 1 })),
      services,
      domain: "custom",
      host: "127.0.0.1",
      port: 0,
      timeoutMs: 60_000,
      ...extra,
    });
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
