/**
 * code-exec with the Docker sandbox for real, behind a real gRPC server. Skips with a printed reason
 * only when Docker cannot exist here (not root and no daemon).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createGrpcClient, RewardService } from "@reward-mesh/proto";
import { createSandbox, type Sandbox } from "@reward-mesh/sandbox";
import { ensureDockerForTests } from "@reward-mesh/sandbox/testing";
import { createLimiter, type RunningGrpcServer, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { createCodeExecService } from "../src/index.js";
import { cases } from "./cases.js";

const docker = await ensureDockerForTests();
if (!docker.ok) console.log(`# skipping Docker code-exec tests: ${docker.reason}`);

describe("code-exec service (Docker sandbox, gRPC)", { skip: docker.ok ? false : docker.reason }, () => {
  let sandbox: Sandbox;
  let server: RunningGrpcServer;
  let client: ReturnType<typeof createGrpcClient<typeof RewardService>>;
  before(async () => {
    if (!docker.ok) return;
    sandbox = await createSandbox(docker.config);
    const def = createCodeExecService({ sandbox: docker.config, sandboxInstance: sandbox });
    server = await startGrpcServer(def, { port: 0, limiter: createLimiter(4), logger: silentLogger });
    client = createGrpcClient(RewardService, server.address);
  });
  after(async () => {
    client?.close();
    await server?.close(1000);
    await sandbox?.close();
  });

  const picked = cases.filter((c) =>
    /^(correct \(LeetCode\)|wrong answer|syntax error|runtime error|timeout|stdin → stdout tests, one wrong|memory bomb)/.test(
      c.name,
    ),
  );
  it(`gives the same components as bwrap for ${picked.length} cases`, async () => {
    assert.equal(picked.length, 7);
    const results = await Promise.all(
      picked.map((c) =>
        client.score({
          rollout: makeRollout({
            response: c.response,
            task: { id: "t", kind: { case: "code", value: c.task } },
          }),
        }),
      ),
    );
    results.forEach((r, i) => {
      const c = picked[i]!;
      const got = r.components.map((x) => x.value);
      got.forEach((v, j) => {
        assert.ok(Math.abs(v - c.expected[j]!) < 1e-12, `${c.name}: ${JSON.stringify(r.components)}`);
      });
      if (c.details) assert.match(r.components.find((x) => x.name === "pass")!.details, c.details, c.name);
    });
  });
});
