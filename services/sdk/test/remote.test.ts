/**
 * `connectRemoteService` against real gRPC servers on port 0: a hand-written RewardService (one that can
 * misbehave on purpose: out-of-range values, answers for the wrong rollout, refused rollouts) and a
 * server that goes away. What the sidecar does with what the remote sends.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  ComponentRewardSchema,
  ComponentStatus,
  RewardResultSchema,
  RewardService,
  type Rollout,
} from "@reward-mesh/proto";
import {
  connectRemoteService,
  freePort,
  grpcService,
  InvalidArgumentError,
  type RunningGrpcServer,
  silentLogger,
  startGrpcServices,
} from "../src/index.js";
import { makeRollout } from "../src/testing/index.js";

/**
 * A remote whose `ScoreStream` answers by rollout id: `lie-*` out of range, `swap-*` for another id,
 * `bad-*` refused (in `Score` too), `boom-*` a failure of the remote (INTERNAL) in both calls.
 */
function remote(streams: { opened: number }) {
  const result = (r: Rollout) =>
    create(RewardResultSchema, {
      rolloutId: r.id.startsWith("swap") ? "someone-else" : r.id,
      runId: r.runId,
      components: [
        create(ComponentRewardSchema, {
          name: "x",
          value: r.id.startsWith("lie") ? 5 : r.response.length / 10,
          status: ComponentStatus.OK,
        }),
      ],
    });
  return grpcService(RewardService, {
    describe: async () => ({
      name: "far",
      version: "2.0.0",
      domains: ["custom"],
      components: [{ name: "x", description: "length / 10", min: 0, max: 1 }],
    }),
    score: async (req) => {
      if (req.rollout!.id.startsWith("bad")) throw new InvalidArgumentError("rollout.metadata", "is refused");
      if (req.rollout!.id.startsWith("boom")) throw new Error("the remote broke on this one");
      return result(req.rollout!);
    },
    async *scoreStream(reqs) {
      streams.opened++;
      const held: Rollout[] = [];
      let i = 0;
      for await (const req of reqs) {
        const r = req.rollout!;
        const idx = i++;
        if (r.id.startsWith("bad")) throw new InvalidArgumentError("rollout.metadata", "is refused");
        if (r.id.startsWith("boom")) throw new Error("the remote broke on this one");
        // `hold-*` is answered only later; `early-*` is refused naming its own index while the held
        // ones before it are still unanswered (a remote that checks requests ahead of answering).
        if (r.id.startsWith("hold")) {
          held.push(r);
          continue;
        }
        if (r.id.startsWith("early"))
          throw new InvalidArgumentError(`requests[${idx}].rollout.metadata`, "is refused early");
        for (const h of held.splice(0)) yield result(h);
        yield result(r);
      }
    },
    // connectRemoteService scores over ScoreStream only.
    scoreBatch: async () => {
      throw new Error("not called");
    },
  });
}

describe("a remote reward service through connectRemoteService", () => {
  const streams = { opened: 0 };
  let server: RunningGrpcServer;
  before(async () => {
    server = await startGrpcServices([remote(streams)], { logger: silentLogger });
  });
  after(() => server.close(0));

  it("takes name, version, domains and components from Describe, and scores over rotating ScoreStreams", async () => {
    const r = await connectRemoteService(server.address, { rotateAfter: 2 });
    try {
      const d = r.definition.describe();
      assert.deepEqual(
        [d.name, d.version, [...d.domains], d.components.map((c) => [c.name, c.min, c.max])],
        ["far", "2.0.0", ["custom"], [["x", 0, 1]]],
      );
      const before = streams.opened;
      const got = await Promise.all(
        [1, 2, 3, 4, 5].map((i) =>
          r.definition.scoreRollout(makeRollout({ id: `ok-${i}`, response: "x".repeat(i) })),
        ),
      );
      assert.deepEqual(
        got.map((g) => [g.rolloutId, g.service, g.serviceVersion, g.components[0]!.value]),
        [1, 2, 3, 4, 5].map((i) => [`ok-${i}`, "far", "2.0.0", i / 10]),
      );
      assert.equal(streams.opened - before, 3, "two requests per stream: 3 streams for 5 rollouts");
    } finally {
      r.close();
    }
  });

  it("refuses what breaks the remote's own contract, and dead-letters (InvalidArgument) what it refuses", async () => {
    const r = await connectRemoteService(server.address);
    try {
      await assert.rejects(r.definition.scoreRollout(makeRollout({ id: "lie-1" })), {
        name: "ServiceContractError",
        message: "service 'far' returned 'x' = 5, outside its declared [0, 1]",
      });
      await assert.rejects(r.definition.scoreRollout(makeRollout({ id: "swap-1" })), {
        name: "ServiceContractError",
        message: /answered rollout 'someone-else' for 'swap-1'/,
      });
      await assert.rejects(r.definition.scoreRollout(makeRollout({ id: "bad-1" })), (e: Error) => {
        assert.equal(e.name, "InvalidArgumentError");
        assert.match(e.message, /rejected by 'far': .*'rollout\.metadata' is refused/);
        return true;
      });
      // A refused rollout ends its stream only: the next rollout is scored on a new one.
      assert.equal(
        (await r.definition.scoreRollout(makeRollout({ id: "ok-9", response: "abc" }))).components[0]!.value,
        0.3,
      );
    } finally {
      r.close();
    }
  });

  it("removes its abort listener from the caller's signal when each rollout is done", async () => {
    const r = await connectRemoteService(server.address);
    const shutdown = new AbortController();
    try {
      for (let i = 0; i < 30; i++)
        await r.definition.scoreRollout(makeRollout({ id: `ok-l${i}`, response: "ab" }), {
          signal: shutdown.signal,
        });
      await assert.rejects(
        r.definition.scoreRollout(makeRollout({ id: "bad-l" }), { signal: shutdown.signal }),
        { name: "InvalidArgumentError" },
      );
      assert.equal(getEventListeners(shutdown.signal, "abort").length, 0);
    } finally {
      r.close();
    }
  });

  it("one failing rollout does not fail the others waiting on the same stream", async () => {
    const r = await connectRemoteService(server.address);
    try {
      const ids = ["ok-a", "ok-b", "boom-c", "ok-d", "ok-e"];
      const got = await Promise.allSettled(
        ids.map((id) => r.definition.scoreRollout(makeRollout({ id, response: "abcd" }))),
      );
      assert.deepEqual(
        got.map((g) => (g.status === "fulfilled" ? g.value.components[0]!.value : (g.reason as Error).name)),
        [0.4, 0.4, "UnavailableError", 0.4, 0.4],
      );
      assert.match((got[2] as PromiseRejectedResult).reason.message, /the remote broke on this one/);
    } finally {
      r.close();
    }
  });

  it("an INVALID_ARGUMENT naming a later request refuses that one, not the first unanswered", async () => {
    const r = await connectRemoteService(server.address);
    try {
      const ids = ["hold-1", "hold-2", "early-bad-3", "ok-4"];
      const got = await Promise.allSettled(
        ids.map((id) => r.definition.scoreRollout(makeRollout({ id, response: "ab" }))),
      );
      // early-bad-3 is scored on its own by `Score`, which does not refuse it; nobody else is blamed.
      assert.deepEqual(
        got.map((g) => (g.status === "fulfilled" ? g.value.components[0]!.value : (g.reason as Error).name)),
        [0.2, 0.2, 0.2, 0.2],
      );
      // Named exactly at the first unanswered request (after ok-7's result): refused from the stream.
      const named = await Promise.allSettled(
        ["ok-7", "early-8"].map((id) => r.definition.scoreRollout(makeRollout({ id, response: "ab" }))),
      );
      assert.equal(named[0]!.status, "fulfilled");
      assert.match((named[1] as PromiseRejectedResult).reason.message, /requests\[1\]\.rollout\.metadata/);
      const refused = await Promise.allSettled(
        ["hold-5", "bad-6"].map((id) => r.definition.scoreRollout(makeRollout({ id, response: "ab" }))),
      );
      // bad-6 ends the stream without an index: the held one is rescored, bad-6 refused by `Score`.
      assert.equal(refused[0]!.status, "fulfilled");
      assert.equal(refused[1]!.status, "rejected");
      assert.equal((refused[1] as PromiseRejectedResult).reason.name, "InvalidArgumentError");
    } finally {
      r.close();
    }
  });

  it("a remote that goes away: in-flight and later rollouts fail as retryable (UnavailableError)", async () => {
    const streams2 = { opened: 0 };
    const s = await startGrpcServices([remote(streams2)], { logger: silentLogger });
    const r = await connectRemoteService(s.address, { scoreTimeoutMs: 2000 });
    try {
      assert.equal(
        (await r.definition.scoreRollout(makeRollout({ id: "ok-1", response: "a" }))).components[0]!.value,
        0.1,
      );
      await s.close(0);
      await assert.rejects(
        r.definition.scoreRollout(makeRollout({ id: "ok-2" })),
        (e: Error & { retryable?: boolean }) => {
          assert.equal(e.name, "UnavailableError");
          assert.equal(e.retryable, true);
          return true;
        },
      );
    } finally {
      r.close();
    }
  });

  it("waits for Describe, then names the address it gave up on", async () => {
    const port = await freePort();
    const t0 = Date.now();
    await assert.rejects(connectRemoteService(`127.0.0.1:${port}`, { waitMs: 800 }), {
      name: "UnavailableError",
      message: `no reward service answered Describe at 127.0.0.1:${port} within 800 ms`,
    });
    assert.ok(Date.now() - t0 < 5000);
  });
});
