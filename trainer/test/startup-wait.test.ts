/**
 * The trainer's start-up wait (`startWaitSeconds`, `REWARD_MESH_START_WAIT_SECONDS` through the CLI): a
 * remote learner that starts listening after the run started, and a service whose durable consumer
 * appears after the run started, are waited for; at the deadline the usual errors say how long they
 * waited; configuration errors are never retried. Real nats-server, the real length service, the
 * embedded learner behind a real gRPC server on a free port.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLengthService } from "@reward-mesh/length";
import { grpc } from "@reward-mesh/proto";
import {
  freePort,
  type LogFields,
  type Logger,
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import { builtinTasks, createEmbeddedLearner, resolveRunConfig, runTraining } from "../src/index.js";
import { RemoteLearnerError } from "../src/learner/errors.js";
import { createRemoteLearner } from "../src/learner/remote.js";
import { type RunningLearnerServer, serveLearner } from "../src/learner/server.js";
import type { Learner } from "../src/learner/types.js";

let nats: LocalNats;
let bus: MeshBus;
let length: RunningService | undefined;
let dir: string;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "startup-wait-test");
  dir = mkdtempSync(join(tmpdir(), "rm-startup-wait-"));
});
after(async () => {
  await length?.close(1000);
  await bus.close();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the length service (it creates its durable consumer on domain `custom`) once. */
async function startLength(): Promise<void> {
  length ??= await startRewardService(
    createLengthService({ maxLength: 20_480, cacheLength: 4_096, penaltyFactor: 1 }),
    testRuntimeOptions(nats.url),
    silentLogger,
  );
}

const config = (id: string, services?: Record<string, string[]>) =>
  resolveRunConfig({
    run: { id, seed: 5, outputDir: dir },
    ...(services ? { services } : {}),
    tasks: { sets: ["custom"] },
    groupSize: 2,
    promptsPerStep: 1,
    steps: 1,
    components: [
      { service: "length", component: "overlong", weight: 1 },
      { service: "length", component: "length", weight: 0.001 },
    ],
    groups: { deadlineMs: 20_000 },
    validation: { describeTimeoutMs: 5_000 },
  });

/** A logger that keeps each message. */
function recordingLogger(): Logger & { readonly messages: string[] } {
  const messages: string[] = [];
  const log = (_f: LogFields, msg: string) => void messages.push(msg);
  const l = { messages, debug: log, info: log, warn: log, error: log, child: () => l };
  return l;
}

describe("the trainer's start-up wait", () => {
  it("waits for a service that creates its consumer after the run started", async () => {
    assert.equal(length, undefined, "no service consumes 'custom' yet");
    const learner = createEmbeddedLearner({ seed: 5 });
    const logger = recordingLogger();
    let retries = 0;
    let starting: Promise<void> | undefined;
    try {
      const result = await runTraining({
        config: config("late-consumer"),
        tasks: builtinTasks(["custom"]),
        bus,
        learner,
        logger,
        startWaitSeconds: 120,
        onStartRetry: (kind) => {
          assert.equal(kind, "consumer");
          retries++;
          // The durable consumer appears only once the run has been told there is none.
          starting ??= startLength();
        },
      });
      assert.equal(result.lastStep, 1);
      assert.ok(retries >= 1);
      assert.equal(
        logger.messages.filter((m) => m === "waiting for a consumer of domain custom").length,
        1,
        "logged once",
      );
    } finally {
      await starting;
      await learner.close();
    }
  });

  it("waits for a remote learner that starts listening after the run started", async () => {
    await startLength();
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const remote = createRemoteLearner(address, { timeoutMs: 10_000 });
    const embedded = createEmbeddedLearner({ seed: 5 });
    const logger = recordingLogger();
    let server: Promise<RunningLearnerServer> | undefined;
    let retries = 0;
    try {
      const result = await runTraining({
        config: config("late-learner"),
        tasks: builtinTasks(["custom"]),
        bus,
        learner: remote,
        logger,
        startWaitSeconds: 120,
        learnerWhere: address,
        onStartRetry: (kind) => {
          assert.equal(kind, "learner");
          retries++;
          // The learner listens only once the run has been turned away at least once.
          server ??= serveLearner(embedded, { port });
        },
      });
      assert.equal(result.lastStep, 1);
      assert.ok(retries >= 1);
      assert.equal(
        logger.messages.filter((m) => m === `waiting for the learner at ${address}`).length,
        1,
        "logged once",
      );
    } finally {
      await remote.close();
      await (await server)?.close(1000);
      await embedded.close();
    }
  });

  it("at the deadline, fails with the usual error and how long it waited", async () => {
    const remote = createRemoteLearner(`127.0.0.1:${await freePort()}`, { timeoutMs: 10_000 });
    try {
      await assert.rejects(
        runTraining({
          config: config("never-learner"),
          tasks: builtinTasks(["custom"]),
          bus,
          learner: remote,
          startWaitSeconds: 1,
        }),
        (err: Error) => {
          assert.ok(err instanceof RemoteLearnerError && err.code === grpc.status.UNAVAILABLE, String(err));
          assert.match(err.message, /\(after waiting 1 s\)$/);
          return true;
        },
      );
    } finally {
      await remote.close();
    }
    // A domain nobody consumes (the custom tasks moved to domain 'unserved'): the run config says length
    // scores it (so the pre-run domain check passes), but no length worker has a consumer for it.
    const learner = createEmbeddedLearner({ seed: 5 });
    try {
      await assert.rejects(
        runTraining({
          config: config("never-consumed", { length: ["custom", "unserved"] }),
          tasks: builtinTasks(["custom"]).map((t) => ({ ...t, task: { ...t.task, domain: "unserved" } })),
          bus,
          learner,
          startWaitSeconds: 1,
        }),
        /no service consumes domain 'unserved'.*\(after waiting 1 s\)$/s,
      );
    } finally {
      await learner.close();
    }
  });

  it("never retries a learner error other than UNAVAILABLE", async () => {
    let calls = 0;
    // Only info() is reached before the run fails.
    const broken = {
      info: async () => {
        calls++;
        throw new RemoteLearnerError(grpc.status.UNAUTHENTICATED, "Info: bad token", false);
      },
      close: async () => {},
    } as unknown as Learner;
    await assert.rejects(
      runTraining({
        config: config("bad-token"),
        tasks: builtinTasks(["custom"]),
        bus,
        learner: broken,
        startWaitSeconds: 60,
      }),
      /Info: bad token$/,
    );
    assert.equal(calls, 1);
    await broken.close();
  });
});
