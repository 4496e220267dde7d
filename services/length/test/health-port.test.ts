/**
 * `LENGTH_HEALTH_PORT` through the real entrypoint (`serveRewardService`): the process serves plaintext
 * health on that port (0 here: one it binds and logs as `healthAddress`) next to its gRPC port, and
 * SIGTERM closes both (exit 0).
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { createGrpcClient, grpc, health, RewardService } from "@reward-mesh/proto";
import { startServiceProcess } from "@reward-mesh/sdk/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

it("serves health only on LENGTH_HEALTH_PORT and closes it on SIGTERM", async () => {
  const service = await startServiceProcess(main, {
    envPrefix: "LENGTH",
    natsUrl: "nats://127.0.0.1:1", // unused: gRPC only
    env: { LENGTH_WORKER: "false", LENGTH_HEALTH_PORT: "0" }, // 0: it binds one, logs it
  });
  const address = service.healthAddress;
  assert.ok(address, `the ready line names healthAddress\n${service.stderr()}`);
  assert.notEqual(address, service.address);
  const h = createGrpcClient(health.Health, address);
  const r = createGrpcClient(RewardService, address);
  try {
    const S = health.HealthCheckResponse_ServingStatus;
    assert.equal((await h.check({ service: "" }, { timeoutMs: 5_000 })).status, S.SERVING);
    await assert.rejects(r.describe({}, { timeoutMs: 5_000 }), { code: grpc.status.UNIMPLEMENTED });
    assert.equal(await service.stop(), 0, service.stderr());
    await assert.rejects(h.check({ service: "" }, { timeoutMs: 1_000 }), { code: grpc.status.UNAVAILABLE });
  } finally {
    h.close();
    r.close();
    await service.stop();
  }
});
