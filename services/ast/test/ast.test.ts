/** The ast service behind a real gRPC server on port 0. */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { ComponentStatus, createGrpcClient, RewardService } from "@reward-mesh/proto";
import { createLimiter, type RunningGrpcServer, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { createAstService, loadConfig, ParserPool } from "../src/index.js";

const config = loadConfig({});
const pool = new ParserPool(config.parser);

let server: RunningGrpcServer;
let client: ReturnType<typeof createGrpcClient<typeof RewardService>>;
before(async () => {
  server = await startGrpcServer(createAstService(config, { parserPool: pool }), {
    port: 0,
    limiter: createLimiter(4),
    logger: silentLogger,
  });
  client = createGrpcClient(RewardService, server.address);
});
after(async () => {
  client.close();
  await server.close(1000);
  pool.close();
});

it("Describe lists similarity and syntax; Score compares with the reference", async () => {
  const d = await client.describe({});
  assert.deepEqual(
    d.components.map((c) => c.name),
    ["similarity", "syntax"],
  );
  const r = await client.score({
    rollout: makeRollout({
      response: "```python\ndef add(a, b):\n    return a + b\n```",
      task: {
        id: "t",
        kind: {
          case: "code",
          value: { entryPoint: "add", referenceSolution: "def plus(x, y):\n    return x + y\n" },
        },
      },
    }),
  });
  assert.deepEqual(
    r.components.map((c) => [c.name, c.value, c.status]),
    [
      ["similarity", 1, ComponentStatus.OK],
      ["syntax", 1, ComponentStatus.OK],
    ],
  );
  await assert.rejects(
    client.score({ rollout: makeRollout({ response: "x" }) }),
    (e: { code: number }) => e.code === 3,
  );
});
