/**
 * The mesh's NATS users against a real `nats-server` started with the generated configuration
 * (`writeMeshAuth`): anonymous clients are refused, each service may publish only its own rewards and
 * dead letters, only the trainer publishes rollouts and advantages, and a forged result cannot make a
 * service's real one the dropped duplicate.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AckPolicy } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { ComponentStatus, RewardResultSchema } from "@reward-mesh/proto";
import {
  connectBus,
  createLimiter,
  defineRewardService,
  freePort,
  isPermissionViolation,
  type MeshBus,
  openBus,
  publishReward,
  publishRollout,
  type RunningWorker,
  Streams,
  silentLogger,
  startNatsServer,
  startWorker,
} from "../src/index.js";
import {
  makeRollout,
  readStream,
  type SecuredTestNats,
  startSecuredTestNats,
  testBusOptions,
} from "../src/testing/index.js";
import { createEchoService } from "./fixtures.js";

const forger = defineRewardService({
  name: "forger",
  version: "1",
  domains: ["code"],
  components: [{ name: "c", description: "c", min: 0, max: 1e9 }],
  score: async () => [{ name: "c", value: 0 }],
});

describe("NATS with the mesh's generated users", () => {
  let nats: SecuredTestNats;
  let admin: MeshBus;
  let trainer: MeshBus;
  let echo: MeshBus;
  let forgerBus: MeshBus;
  const workers: RunningWorker[] = [];

  const busAs = (auth: SecuredTestNats["auth"]["admin"], name: string) =>
    openBus({ ...testBusOptions(nats.url), auth }, name);

  before(async () => {
    nats = await startSecuredTestNats([
      { name: "echo", domains: ["custom"] },
      { name: forger.name, domains: forger.domains },
    ]);
    admin = await busAs(nats.auth.admin, "admin"); // provisions the streams
    trainer = await busAs(nats.auth.trainer, "trainer");
    echo = await busAs(nats.auth.services["echo"]!, "echo");
    forgerBus = await busAs(nats.auth.services["forger"]!, "forger");
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop(1000)));
    for (const b of [forgerBus, echo, trainer, admin]) await b?.close();
    await nats?.stop();
  });

  const result = (runId: string, rolloutId: string, service: string, value: number) =>
    create(RewardResultSchema, {
      rolloutId,
      runId,
      step: 1,
      groupId: "g1",
      index: 0,
      groupSize: 1,
      service,
      components: [{ name: "chars", value, status: ComponentStatus.OK }],
    });

  async function refused(what: string, p: Promise<unknown>): Promise<void> {
    await assert.rejects(p, (err: unknown) => {
      assert.ok(isPermissionViolation(err), `${what}: expected a permissions violation, got ${String(err)}`);
      return true;
    });
  }

  it("refuses an anonymous client, naming what to set", async () => {
    await assert.rejects(connectBus(nats.url, "anonymous"), /refused the connection.*requires credentials/);
  });

  it("refuses a service that has no stream to use, saying who creates streams", async () => {
    await admin.jsm.streams.delete(Streams.advantages);
    try {
      await assert.rejects(
        busAs(nats.auth.services["echo"]!, "echo-early"),
        /stream MESH_ADVANTAGES does not exist and this NATS user may not create it/,
      );
    } finally {
      await openBus({ ...testBusOptions(nats.url), auth: nats.auth.admin }, "admin-again").then((b) =>
        b.close(),
      );
    }
  });

  it("with MESH_STREAMS_WAIT_SECONDS, a service waits for the admin to provision the streams", async () => {
    await admin.jsm.streams.delete(Streams.advantages);
    const wait = (seconds: number) =>
      openBus(
        { ...testBusOptions(nats.url), auth: nats.auth.services["echo"]!, streamsWaitSeconds: seconds },
        "echo-waiting",
      );
    // Never provisioned within the wait: the same refusal, saying how long it waited.
    await assert.rejects(wait(1), /stream MESH_ADVANTAGES does not exist .* waited 1 s/);
    // Provisioned while it waits: the admin provisions half a second after the service started asking
    // (a service that did not wait would have been refused by then; one that waits never is).
    const waiting = wait(60);
    await new Promise((r) => setTimeout(r, 500));
    await assert.rejects(admin.jsm.streams.info(Streams.advantages), /stream not found/, "still missing");
    await openBus({ ...testBusOptions(nats.url), auth: nats.auth.admin }, "admin-late").then((b) =>
      b.close(),
    );
    const bus = await waiting;
    assert.ok(await bus.jsm.streams.info(Streams.advantages));
    await bus.close();
  });

  it("with MESH_STREAMS_WAIT_SECONDS, a wrong password still fails at once", async () => {
    const started = Date.now();
    let retries = 0;
    await assert.rejects(
      openBus(
        {
          ...testBusOptions(nats.url),
          auth: { user: "echo", password: "wrong" },
          streamsWaitSeconds: 60,
        },
        "echo-wrong",
        { onRetry: () => retries++ },
      ),
      /refused the connection/,
    );
    assert.equal(retries, 0, "an authorization refusal is never retried");
    assert.ok(Date.now() - started < 5000, "it did not wait");
  });

  it("a service may publish only its own rewards and dead letters", async () => {
    const ok = await publishReward(echo.js, result("sec1", "r-own", "echo", 1), "t");
    assert.equal(ok.duplicate, false);
    await refused(
      "another service's reward",
      publishReward(echo.js, result("sec1", "r-x", "forger", 1), "t"),
    );
    await refused("another service's DLQ", echo.js.publish("mesh.dlq.forger", "x"));
    await refused("a rollout", publishRollout(echo.js, makeRollout({ runId: "sec1" })));
    await refused("advantages", echo.js.publish("mesh.advantages.sec1", "x"));
    await refused("core publish on another's subject", echo.nc.request("mesh.rewards.sec1.forger.r-y", "x"));
  });

  it("a service cannot delete or purge streams, or widen its consumer to other domains", async () => {
    await refused("purge", echo.jsm.streams.purge(Streams.rewards));
    await refused("delete", echo.jsm.streams.delete(Streams.rewards));
    await refused("delete a message", echo.jsm.streams.deleteMessage(Streams.rewards, 1));
    await refused(
      "a consumer on every domain",
      echo.jsm.consumers.add(Streams.rollouts, {
        durable_name: "echo--custom",
        ack_policy: AckPolicy.Explicit,
        filter_subject: "mesh.rollouts.>",
      }),
    );
    await refused(
      "another service's consumer",
      echo.jsm.consumers.add(Streams.rollouts, {
        durable_name: "forger--code",
        ack_policy: AckPolicy.Explicit,
        filter_subject: "mesh.rollouts.code.>",
      }),
    );
    await refused("reading rewards", echo.js.consumers.get(Streams.rewards, "trainer-sec1"));
  });

  it("a service cannot listen on another user's inbox", async () => {
    for (const subject of ["_INBOX.>", "_INBOX_trainer.>", "mesh.>"]) {
      const sub = echo.nc.subscribe(subject);
      // nats.js closes a refused subscription with the server's error.
      const err = await sub.closed;
      assert.ok(isPermissionViolation(err), `${subject}: ${String(err)}`);
    }
  });

  it("the trainer publishes rollouts and advantages but no rewards", async () => {
    await publishRollout(trainer.js, makeRollout({ runId: "sec2" }));
    await trainer.js.publish("mesh.advantages.sec2", "x");
    await refused("a reward", publishReward(trainer.js, result("sec2", "r1", "echo", 1), "t"));
  });

  it("a forged result (on the forger's subject, with the old <rollout>:<service> msg-id) does not drop the real one", async () => {
    const runId = "sec3";
    const rollout = makeRollout({ runId, response: "the real response" });
    // The attack that worked with a stream-wide msg-id: publish first, claiming echo's id and name.
    const h = natsHeaders();
    const forged = result(runId, rollout.id, "echo", 99);
    await forgerBus.js.publish(
      `mesh.rewards.${runId}.forger.${rollout.id}`,
      toBinary(RewardResultSchema, forged),
      {
        msgID: `${rollout.id}:echo`,
        headers: h,
      },
    );
    const worker = await startWorker(createEchoService(), {
      bus: echo,
      limiter: createLimiter(2),
      logger: silentLogger,
      instance: "echo-1",
      ackWaitMs: 2_000,
    });
    workers.push(worker);
    await publishRollout(trainer.js, rollout);
    const stored = await readStream(
      admin,
      Streams.rewards,
      `mesh.rewards.${runId}.echo.*`,
      (d) => fromBinary(RewardResultSchema, d),
      1,
    );
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.value.components[0]!.value, rollout.response.length);
    assert.equal(worker.stats().duplicates, 0, "echo's result was stored, not taken for a duplicate");
  });
});

describe("MESH_STREAMS_WAIT_SECONDS while NATS is not up yet", () => {
  it("a bus opened before the server starts connects once it does", async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    let retries = 0;
    let failedOnce!: () => void;
    const firstFailure = new Promise<void>((r) => {
      failedOnce = r;
    });
    const opening = openBus({ ...testBusOptions(url), streamsWaitSeconds: 120 }, "early", {
      onRetry: () => {
        retries++;
        failedOnce();
      },
    });
    // The server starts only after the opener has been turned away at least once.
    await firstFailure;
    const server = await startNatsServer({ port });
    try {
      const bus = await opening;
      assert.ok(retries >= 1);
      assert.ok(await bus.jsm.streams.info(Streams.rewards), "the streams were provisioned");
      await bus.close();
    } finally {
      await server.stop();
    }
  });

  it("gives up after the wait, naming the URL, the wait and the last error", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    let retries = 0;
    await assert.rejects(
      openBus({ ...testBusOptions(url), streamsWaitSeconds: 3 }, "never", { onRetry: () => retries++ }),
      (err: Error) => {
        assert.match(err.message, new RegExp(`NATS JetStream at ${url} did not become available`));
        assert.match(err.message, /waited 3 s \(MESH_STREAMS_WAIT_SECONDS\)/);
        assert.match(err.message, /last error: NATS at .* is not reachable/);
        return true;
      },
    );
    assert.ok(retries >= 1, "it retried before giving up");
  });

  it("without a wait, an unreachable server fails at once, as before", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    await assert.rejects(openBus(testBusOptions(url), "no-wait"), /NATS at .* is not reachable/);
  });
});
