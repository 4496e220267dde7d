/** The efficiency service behind a real gRPC server on port 0, with a real bwrap sandbox. */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { ComponentStatus, createGrpcClient, RewardService } from "@reward-mesh/proto";
import { createSandbox, loadSandboxConfig, type Sandbox } from "@reward-mesh/sandbox";
import { createLimiter, type RunningGrpcServer, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { createEfficiencyService } from "../src/index.js";

const config = { ...loadSandboxConfig({}), backend: "bwrap" as const };
let sandbox: Sandbox;
let server: RunningGrpcServer;
let client: ReturnType<typeof createGrpcClient<typeof RewardService>>;
before(async () => {
  sandbox = await createSandbox(config);
  const def = createEfficiencyService({
    repeats: 2,
    cacheSize: 8,
    sandbox: config,
    sandboxInstance: sandbox,
  });
  server = await startGrpcServer(def, { port: 0, limiter: createLimiter(4), logger: silentLogger });
  client = createGrpcClient(RewardService, server.address);
});
after(async () => {
  client.close();
  await server.close(1000);
  await sandbox.close();
});

it("scores a group concurrently over gRPC", async () => {
  const task = {
    language: "python",
    test: "def check(candidate):\n    assert candidate([3, 1, 2]) == [1, 2, 3]\n",
    entryPoint: "sort_list",
    referenceSolution: "def sort_list(xs):\n    return sorted(xs)\n",
  };
  const responses = [
    "```python\ndef sort_list(xs):\n    return sorted(xs)\n```",
    "```python\ndef sort_list(xs):\n    return xs\n```",
  ];
  const results = await Promise.all(
    responses.map((response) =>
      client.score({
        rollout: makeRollout({ response, task: { id: "t", kind: { case: "code", value: task } } }),
      }),
    ),
  );
  const [same, wrong] = results.map((r) => r.components[0]!);
  assert.equal(same!.status, ComponentStatus.OK);
  assert.equal(same!.value, 0, "the reference against itself: inside the noise");
  assert.deepEqual([wrong!.value, wrong!.status], [0, ComponentStatus.OK]);
  assert.match(same!.details, /^t_gen [\d.]+ ms ±\d+%, t_ref [\d.]+ ms ±\d+%( \(cached\))? — CPU time/);
  assert.match(wrong!.details, /^not every test passes: 0\/1 tests passed/);
});
