/**
 * A run config with `episodes` but no `episodes.environment`: `reward-mesh train` (here its
 * `trainWithMesh`, against a running mesh as after `reward-mesh up`) plays the episodes at the
 * AgentEnvironment it lists the `agent` set from (`REWARD_MESH_AGENT_ENV_ADDR`; a mesh the CLI starts
 * gives its agentdojo service's address through the same `environmentOf`). `runTraining` itself refuses
 * such a config when nobody filled the address in. Real nats-server, the real agentdojo reward service
 * and a real AgentEnvironment gRPC server on a free port.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  agentEnvironmentService,
  createAgentDojoService,
  createSessionManager,
  DEFAULT_AGENTDOJO_OPTIONS,
  type SessionManager,
} from "@reward-mesh/agentdojo";
import {
  openBus,
  type RunningGrpcServer,
  type RunningService,
  silentLogger,
  startGrpcServices,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import {
  createEmbeddedLearner,
  loadBuiltinTasks,
  readMetrics,
  resolveRunConfig,
  runPaths,
  runTraining,
} from "@reward-mesh/trainer";
import { trainWithMesh } from "../src/commands/train.js";
import { loadCliConfig } from "../src/config.js";

let nats: LocalNats;
let reward: RunningService;
let manager: SessionManager;
let server: RunningGrpcServer;
let dir: string;
let opened = 0;

before(async () => {
  nats = await startTestNats();
  reward = await startRewardService(
    createAgentDojoService(DEFAULT_AGENTDOJO_OPTIONS),
    testRuntimeOptions(nats.url),
    silentLogger,
  );
  manager = createSessionManager({
    maxSessions: 64,
    idleTimeoutMs: 60_000,
    maxCalls: 16,
    attackModelName: "Qwen",
    defaultAttack: "important_instructions",
  });
  // The real manager, counting the sessions it opens (the episodes must be played at this server).
  const counting: SessionManager = Object.assign(Object.create(manager) as SessionManager, {
    reset: (task: Parameters<SessionManager["reset"]>[0]) => {
      opened++;
      return manager.reset(task);
    },
  });
  server = await startGrpcServices([agentEnvironmentService(counting)], { logger: silentLogger });
  dir = mkdtempSync(join(tmpdir(), "rm-train-episodes-env-"));
});
after(async () => {
  await server.close(0);
  manager.stop();
  await reward.close(1000);
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const doc = (id: string) => ({
  run: { id, seed: 4, outputDir: dir },
  tasks: { sets: ["agent"] },
  groupSize: 2,
  promptsPerStep: 2,
  steps: 1,
  components: "agentdojo",
  estimator: "grpo",
  groups: { deadlineMs: 30_000 },
  episodes: { maxTurns: 2, maxTokens: 16, concurrency: 4 },
});

describe("episodes without episodes.environment", () => {
  it("reward-mesh train plays them at the AgentEnvironment it lists the agent set from", async () => {
    const config = resolveRunConfig(doc("env-filled"));
    assert.equal(config.episodes?.environment, undefined);
    const cli = {
      // NATS_URL names the test's NATS (with it unset, train looks for the mesh `reward-mesh up` recorded).
      ...loadCliConfig({
        REWARD_MESH_AGENT_ENV_ADDR: server.address,
        REWARD_MESH_LOG_DIR: dir,
        NATS_URL: nats.url,
      }),
      bus: testBusOptions(nats.url),
    };
    const r = await trainWithMesh({ cli, config, withMesh: false, logFormat: "human" });
    assert.equal(r.lastStep, 1);
    const paths = runPaths(dir, "env-filled");
    const resolved = JSON.parse(readFileSync(paths.config, "utf8")) as { episodes: { environment: string } };
    assert.equal(resolved.episodes.environment, server.address, "the address is recorded with the run");
    const [m] = readMetrics(paths.metrics) as unknown as [{ episodes: { count: number } }];
    assert.equal(m.episodes.count, 4, "promptsPerStep × G episodes");
    assert.equal(opened, 4, "every episode's session was opened at this server");
    assert.equal(manager.size, 0, "and closed");
  });

  it("runTraining refuses it when nobody filled the address in, naming the key", async () => {
    const config = resolveRunConfig(doc("env-missing"));
    const bus = await openBus(testBusOptions(nats.url), "episodes-env-test");
    const learner = createEmbeddedLearner({ seed: 1 });
    const tasks = await loadBuiltinTasks(["agent"], { address: server.address });
    try {
      await assert.rejects(
        runTraining({ config, tasks, bus, learner }),
        /'episodes\.environment' is not set: .*--with-mesh.*REWARD_MESH_AGENT_ENV_ADDR/,
      );
    } finally {
      await learner.close();
      await bus.close();
    }
  });
});
