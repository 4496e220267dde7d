import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import type { ConfigError } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { createLengthService, responseLength } from "./service.js";

const vectors = JSON.parse(
  readFileSync(new URL("./dapo-overlong-vectors.json", import.meta.url), "utf8"),
) as {
  i_dapo_overlong: { L_max: number; L_cache: number; factor: number; expected: Record<string, number> };
};

const component = (
  r: Awaited<ReturnType<ReturnType<typeof createLengthService>["scoreRollout"]>>,
  name: string,
) => r.components.find((c) => c.name === name)!;

describe("length service", () => {
  const v = vectors.i_dapo_overlong;
  const svc = createLengthService({ maxLength: v.L_max, cacheLength: v.L_cache, penaltyFactor: v.factor });

  it("matches the DAPO overlong vector (i_dapo_overlong) at every listed length", async () => {
    for (const [len, want] of Object.entries(v.expected)) {
      const r = await svc.scoreRollout(makeRollout({ response: "", responseTokens: Number(len) }));
      if (Number(len) === 0) {
        // 0 tokens means "unknown": the service falls back to characters of an empty response.
        assert.equal(component(r, "length").details, "characters");
      }
      assert.equal(component(r, "length").value, Number(len));
      assert.ok(
        Math.abs(component(r, "overlong").value - want) <= 1e-12,
        `length ${len}: ${component(r, "overlong").value} vs ${want}`,
      );
      assert.ok(!Object.is(component(r, "overlong").value, -0), "no negative zero on the wire");
    }
  });

  it("counts Unicode code points, not UTF-16 units, when there is no token count", () => {
    assert.deepEqual(responseLength(makeRollout({ response: "a😀é" })), { length: 3, unit: "characters" });
    assert.deepEqual(responseLength(makeRollout({ response: "a😀é", responseTokens: 7 })), {
      length: 7,
      unit: "tokens",
    });
  });

  it("takes per-rollout limits from metadata", async () => {
    const r = await svc.scoreRollout(
      makeRollout({
        response: "x".repeat(12),
        metadata: { "overlong.max_length": "16", "overlong.cache_length": "8" },
      }),
    );
    assert.equal(component(r, "overlong").value, -0.5);
    assert.equal(component(r, "overlong").status, ComponentStatus.OK);
  });

  it("rejects bad metadata naming the key", async () => {
    await assert.rejects(
      svc.scoreRollout(makeRollout({ metadata: { "overlong.max_length": "ten" } })),
      /'rollout\.metadata\["overlong\.max_length"\]' must be a positive integer/,
    );
    await assert.rejects(
      svc.scoreRollout(
        makeRollout({ metadata: { "overlong.max_length": "10", "overlong.cache_length": "20" } }),
      ),
      /'rollout\.metadata\["overlong\.cache_length"\]' must be <= max length \(10\)/,
    );
    // Fuzz finding: 400 digits became Infinity and failed as an internal OverlongOptionsError.
    await assert.rejects(
      svc.scoreRollout(makeRollout({ metadata: { "overlong.max_length": "9".repeat(400) } })),
      {
        name: "InvalidArgumentError",
        message: `'rollout.metadata["overlong.max_length"]' must be at most 9007199254740991, got ${"9".repeat(30)}…`,
      },
    );
  });

  it("loads and validates its configuration", () => {
    // Blank values count as unset.
    const c = loadConfig({ LENGTH_MAX_LENGTH: " ", LENGTH_CACHE_LENGTH: "1024", LENGTH_GRPC_PORT: "0" });
    assert.equal(c.maxLength, 20_480);
    assert.equal(c.cacheLength, 1024);
    assert.equal(c.runtime.grpcPort, 0);
    assert.equal(c.runtime.concurrency, 8);
    assert.equal(c.runtime.bus.natsUrl, "nats://127.0.0.1:4222");
  });

  it("fails start-up on bad configuration with the key's name", () => {
    assert.throws(
      () => loadConfig({ LENGTH_MAX_LENGTH: "abc" }),
      (e: ConfigError) =>
        e.name === "ConfigError" && /'LENGTH_MAX_LENGTH' must be an integer/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ LENGTH_MAX_LENGTH: "100", LENGTH_CACHE_LENGTH: "200" }),
      /'cacheLength' must be in \(0, maxLength=100\]/,
    );
    assert.throws(
      () => loadConfig({ LENGTH_CONCURRENCY: "0" }),
      /'LENGTH_CONCURRENCY' must be in \[1, 4096\]/,
    );
    assert.throws(() => loadConfig({ LENGTH_WORKER: "maybe" }), /'LENGTH_WORKER' must be a boolean/);
  });
});
