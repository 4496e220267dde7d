/**
 * One message limit for both transports: a 2 MiB rollout is scored over the bus (real nats-server started
 * by the SDK's starter, real JetStream worker) and over gRPC (real server on port 0), and a rollout past
 * `MAX_MESSAGE_BYTES` is refused by both, the bus with an error naming the limit before publishing.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { DeadLetterSchema, grpc, RewardResultSchema, RolloutSchema } from "@reward-mesh/proto";
import {
  createRewardServiceClient,
  MAX_MESSAGE_BYTES,
  type MeshBus,
  NATS_HEADER_ROOM,
  NATS_MAX_PAYLOAD,
  openBus,
  publishRollout,
  readStream,
  type RunningService,
  silentLogger,
  Streams,
  startRewardService,
} from "../src/index.js";
import {
  type LocalNats,
  makeRollout,
  startTestNats,
  testBusOptions,
  testRuntimeOptions,
} from "../src/testing/index.js";
import { createEchoService } from "./fixtures.js";

const MiB = 1024 * 1024;

describe("the mesh's message limit", () => {
  let nats: LocalNats;
  let bus: MeshBus;
  let service: RunningService;
  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "payload-test");
    service = await startRewardService(createEchoService(), testRuntimeOptions(nats.url), silentLogger);
  });
  after(async () => {
    await service.close(1000);
    await bus.close();
    await nats.stop();
  });

  it("the NATS server the SDK starts has max_payload 8 MiB: the message limit plus room for headers", () => {
    assert.equal(NATS_MAX_PAYLOAD, 8 * MiB);
    assert.equal(bus.nc.info?.max_payload, NATS_MAX_PAYLOAD);
    assert.equal(MAX_MESSAGE_BYTES, NATS_MAX_PAYLOAD - NATS_HEADER_ROOM);
  });

  it("a 2 MiB rollout is scored over the bus and over gRPC", async () => {
    const viaBus = makeRollout({ runId: "payload", response: "x".repeat(2 * MiB) });
    await publishRollout(bus.js, viaBus);
    const stored = await readStream(
      bus,
      Streams.rewards,
      "mesh.rewards.payload.echo.*",
      (d) => fromBinary(RewardResultSchema, d),
      1,
    );
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.value.rolloutId, viaBus.id);
    assert.equal(stored[0]!.value.components[0]!.value, 2 * MiB);

    const client = createRewardServiceClient(service.grpc.address);
    try {
      const viaGrpc = makeRollout({ response: "y".repeat(2 * MiB) });
      const res = await client.score({ rollout: viaGrpc });
      assert.equal(res.components[0]!.value, 2 * MiB);
    } finally {
      client.close();
    }
  });

  it("a rollout of exactly the limit is published; dead-lettered, it still reaches the DLQ (payload cut)", async () => {
    // Over MAX_RESPONSE_CHARS, so invalid; the dead letter (payload + reason) would pass the limit.
    const r = makeRollout({ runId: "payload", response: "" });
    // Exactly MAX_MESSAGE_BYTES encoded: the response field adds a tag byte and a 4-byte length.
    r.response = "w".repeat(MAX_MESSAGE_BYTES - toBinary(RolloutSchema, r).byteLength - 5);
    assert.equal(toBinary(RolloutSchema, r).byteLength, MAX_MESSAGE_BYTES);
    await publishRollout(bus.js, r);
    const dlq = await readStream(
      bus,
      Streams.dlq,
      "mesh.dlq.echo",
      (d) => fromBinary(DeadLetterSchema, d),
      1,
    );
    assert.equal(dlq.length, 1);
    assert.match(
      dlq[0]!.value.reason,
      /'rollout\.response' must be at most .*\(payload cut to its first \d+ of \d+ bytes\)$/,
    );
  });

  it("a rollout past the limit is refused by both, the bus naming the limit", async () => {
    const big = makeRollout({ runId: "payload", response: "z".repeat(MAX_MESSAGE_BYTES) });
    await assert.rejects(publishRollout(bus.js, big), (err: Error) => {
      assert.equal(err.name, "InvalidArgumentError");
      assert.match(
        err.message,
        new RegExp(
          `^'rollout' is \\d+ bytes encoded \\(id '${big.id}'\\), over the mesh's message limit \\(MAX_MESSAGE_BYTES\\) of ${MAX_MESSAGE_BYTES} bytes$`,
        ),
      );
      return true;
    });
    const client = createRewardServiceClient(service.grpc.address);
    try {
      await assert.rejects(client.score({ rollout: big }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED, err.message);
        return true;
      });
    } finally {
      client.close();
    }
  });
});
