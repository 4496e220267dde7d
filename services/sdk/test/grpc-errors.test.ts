/**
 * Regression tests of gRPC error semantics over a real grpc-js server on port 0: a bad item ends a
 * `ScoreStream` call cleanly with INVALID_ARGUMENT (every time — it used to hang about one call in
 * ten), undecodable request bytes are INVALID_ARGUMENT naming the problem (not INTERNAL), and reward
 * clients have a default deadline.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { type Client, grpc, type RewardService, ScoreRequestSchema } from "@reward-mesh/proto";
import {
  createLimiter,
  createRewardServiceClient,
  type RunningGrpcServer,
  silentLogger,
  startGrpcServer,
} from "../src/index.js";
import { makeRollout } from "../src/testing/index.js";
import { createEchoService } from "./fixtures.js";

/** Consumes a ScoreStream call: the result ids, then how it ended. */
async function drain(
  results: AsyncIterable<{ rolloutId: string }>,
): Promise<{ ids: string[]; err?: grpc.ServiceError }> {
  const ids: string[] = [];
  try {
    for await (const r of results) ids.push(r.rolloutId);
    return { ids };
  } catch (err) {
    return { ids, err: err as grpc.ServiceError };
  }
}

const identity = (b: Buffer) => b;

describe("ScoreStream with a bad item", () => {
  let server: RunningGrpcServer;
  let client: Client<typeof RewardService>;
  before(async () => {
    server = await startGrpcServer(createEchoService({ delayMs: 1 }), {
      port: 0,
      limiter: createLimiter(4),
      logger: silentLogger,
    });
    // A deadline far above the test's own bound: a call that ends by DEADLINE_EXCEEDED is the bug.
    client = createRewardServiceClient(server.address, { timeoutMs: 20_000 });
  });
  after(async () => {
    client.close();
    await server.close(1000);
  });

  it("[good, bad, good] ends every call with INVALID_ARGUMENT after the first result (50 runs)", {
    timeout: 120_000,
  }, async () => {
    for (let run = 0; run < 50; run++) {
      const good1 = makeRollout();
      async function* requests() {
        yield { rollout: good1 };
        yield { rollout: makeRollout({ groupId: "" }) };
        yield { rollout: makeRollout() };
      }
      const { ids, err } = await drain(client.scoreStream(requests()));
      assert.ok(err, `run ${run}: the call ended without an error`);
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `run ${run}: ${err.message}`);
      assert.match(err.details, /'requests\[1\]\.rollout\.group_id' is required/);
      assert.deepEqual(ids, [good1.id], `run ${run}`);
    }
  });

  it("the server stays usable after failed streams", async () => {
    const r = makeRollout({ response: "abc" });
    const res = await client.score({ rollout: r });
    assert.equal(res.rolloutId, r.id);
  });
});

describe("undecodable request bytes", () => {
  let server: RunningGrpcServer;
  let raw: grpc.Client;
  before(async () => {
    server = await startGrpcServer(createEchoService(), {
      port: 0,
      limiter: createLimiter(2),
      logger: silentLogger,
    });
    raw = new grpc.Client(server.address, grpc.credentials.createInsecure());
  });
  after(async () => {
    raw.close();
    await server.close(1000);
  });

  const unary = (bytes: Buffer) =>
    new Promise<grpc.ServiceError | null>((resolve) => {
      raw.makeUnaryRequest(
        "/rewardmesh.v1.RewardService/Score",
        identity,
        identity,
        bytes,
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (err) => resolve(err),
      );
    });

  it("Score: truncated bytes are INVALID_ARGUMENT naming the message type", async () => {
    // Field 1 (rollout), length 10, but only 2 bytes follow.
    const err = await unary(Buffer.from([0x0a, 0x0a, 0x0a, 0x00]));
    assert.ok(err);
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
    assert.match(err.details, /^request is not a valid rewardmesh\.v1\.ScoreRequest: /);
  });

  it("Score: invalid UTF-8 in a string field is INVALID_ARGUMENT", async () => {
    // ScoreRequest{rollout: Rollout{id: <0xff>}}
    const err = await unary(Buffer.from([0x0a, 0x03, 0x0a, 0x01, 0xff]));
    assert.ok(err);
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
    assert.match(err.details, /request is not a valid rewardmesh\.v1\.ScoreRequest: .*(utf-8|UTF-8)/);
  });

  it("ScoreStream: the undecodable item ends the call with INVALID_ARGUMENT naming its position", async () => {
    const good = makeRollout();
    const goodBytes = Buffer.from(
      toBinary(ScoreRequestSchema, create(ScoreRequestSchema, { rollout: good })),
    );
    const call = raw.makeBidiStreamRequest(
      "/rewardmesh.v1.RewardService/ScoreStream",
      identity,
      identity,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
    );
    call.write(goodBytes);
    call.write(Buffer.from([0xff, 0xff, 0xff]));
    call.write(goodBytes);
    call.end();
    let results = 0;
    const err = await new Promise<grpc.ServiceError | undefined>((resolve) => {
      call.on("data", () => results++);
      call.on("error", (e: grpc.ServiceError) => resolve(e));
      call.on("end", () => resolve(undefined));
    });
    assert.ok(err, "the call ended without an error");
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
    assert.match(err.details, /^requests\[1\] is not a valid rewardmesh\.v1\.ScoreRequest: /);
    assert.equal(results, 1);
  });
});

describe("reward-service client deadline", () => {
  it("a call without its own timeout ends at the client's default deadline", async () => {
    const server = await startGrpcServer(createEchoService({ delayMs: 10_000 }), {
      port: 0,
      limiter: createLimiter(1),
      logger: silentLogger,
    });
    const client = createRewardServiceClient(server.address, { timeoutMs: 200 });
    try {
      const t0 = Date.now();
      await assert.rejects(client.score({ rollout: makeRollout() }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
        return true;
      });
      async function* requests() {
        yield { rollout: makeRollout() };
      }
      const { err } = await drain(client.scoreStream(requests()));
      assert.equal(err?.code, grpc.status.DEADLINE_EXCEEDED);
      assert.ok(Date.now() - t0 < 8_000, "both calls ended near their deadline");
    } finally {
      client.close();
      await server.close(100);
    }
  });

  it("refuses a timeout that is not a positive number", () => {
    assert.throws(() => createRewardServiceClient("127.0.0.1:1", { timeoutMs: 0 }), /'defaultTimeoutMs'/);
  });
});
