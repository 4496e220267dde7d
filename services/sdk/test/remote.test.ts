/**
 * `connectRemoteService` against real gRPC servers on port 0: a hand-written RewardService (one that can
 * misbehave on purpose: out-of-range values, answers for the wrong rollout, refused rollouts) and a
 * server that goes away. What the sidecar does with what the remote sends.
 */
import assert from "node:assert/strict";
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

/** A remote whose `ScoreStream` answers by rollout id: `lie-*` out of range, `swap-*` for another id, `bad-*` refused. */
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
    score: async (req) => result(req.rollout!),
    async *scoreStream(reqs) {
      streams.opened++;
      for await (const req of reqs) {
        if (req.rollout!.id.startsWith("bad"))
          throw new InvalidArgumentError("rollout.metadata", "is refused");
        yield result(req.rollout!);
      }
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
