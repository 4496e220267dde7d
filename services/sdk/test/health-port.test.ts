/**
 * The plaintext health-only port (`<PREFIX>_HEALTH_PORT`) for Kubernetes' gRPC probes, over real grpc-js
 * servers on port 0: with TLS and a bearer token on the main port, a plaintext client without a token
 * gets SERVING on the health port, UNIMPLEMENTED for every other service there, and NOT_SERVING once the
 * drain begins; and the configuration's errors.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createGrpcClient, grpc, health, RewardService, reflectionV1 } from "@reward-mesh/proto";
import {
  ConfigError,
  createSecureGrpcClient,
  type Env,
  loadGrpcClientSecurity,
  loadServiceRuntimeOptions,
  type RunningService,
  silentLogger,
  startRewardService,
} from "../src/index.js";
import { createTestPki, makeRollout, type TestPki } from "../src/testing/index.js";
import { createEchoService, listServicesByReflection, outcome } from "./fixtures.js";

const S = health.HealthCheckResponse_ServingStatus;
const TOKEN = "health-port-token-0123456789";

describe("health port: plaintext, health only, beside a TLS main port", () => {
  let pki: TestPki;
  let running: RunningService;
  let healthAddress: string;
  let closed = false;
  before(async () => {
    pki = createTestPki();
    const options = loadServiceRuntimeOptions("ECHO", 0, {
      // All interfaces, as in a pod: the main port needs TLS, the health port is plaintext anyway.
      ECHO_GRPC_HOST: "0.0.0.0",
      ECHO_HEALTH_PORT: "0",
      ECHO_WORKER: "false",
      ECHO_GRPC_TLS_CERT_FILE: pki.serverCert,
      ECHO_GRPC_TLS_KEY_FILE: pki.serverKey,
      ECHO_GRPC_TOKEN: TOKEN,
    });
    assert.equal(options.healthPort, 0);
    running = await startRewardService(createEchoService(), options, silentLogger);
    assert.ok(running.grpc.healthAddress, "a health address is reported");
    assert.notEqual(running.grpc.healthPort, 0);
    assert.notEqual(running.grpc.healthPort, running.grpc.port);
    healthAddress = running.grpc.healthAddress;
  });
  after(async () => {
    if (!closed) await running.close(500);
    pki.remove();
  });

  it("the main port still scores over TLS with the token, and refuses plaintext", async () => {
    const sec = loadGrpcClientSecurity({
      REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert,
      REWARD_MESH_GRPC_TOKEN: TOKEN,
    });
    const tls = createSecureGrpcClient(RewardService, running.grpc.address, sec);
    const plain = createGrpcClient(RewardService, running.grpc.address);
    try {
      const r = await tls.score({ rollout: makeRollout({ response: "abc" }) }, { timeoutMs: 5_000 });
      assert.equal(r.components[0]?.value, 3);
      assert.equal(await outcome(plain.describe({}, { timeoutMs: 5_000 })), grpc.status.UNAVAILABLE);
    } finally {
      tls.close();
      plain.close();
    }
  });

  it("a plaintext client without a token gets SERVING from Check and List", async () => {
    const h = createGrpcClient(health.Health, healthAddress);
    try {
      assert.equal((await h.check({ service: "" }, { timeoutMs: 5_000 })).status, S.SERVING);
      assert.equal(
        (await h.check({ service: "rewardmesh.v1.RewardService" }, { timeoutMs: 5_000 })).status,
        S.SERVING,
      );
      const list = await h.list({}, { timeoutMs: 5_000 });
      assert.equal(list.statuses["rewardmesh.v1.RewardService"]?.status, S.SERVING);
    } finally {
      h.close();
    }
  });

  it("serves nothing but health: scoring and reflection are UNIMPLEMENTED there", async () => {
    const r = createGrpcClient(RewardService, healthAddress);
    const refl = createGrpcClient(reflectionV1.ServerReflection, healthAddress);
    try {
      assert.equal(await outcome(r.describe({}, { timeoutMs: 5_000 })), grpc.status.UNIMPLEMENTED);
      assert.equal(
        await outcome(r.score({ rollout: makeRollout({ response: "x" }) }, { timeoutMs: 5_000 })),
        grpc.status.UNIMPLEMENTED,
      );
      assert.equal(await outcome(listServicesByReflection(refl)), grpc.status.UNIMPLEMENTED);
    } finally {
      r.close();
      refl.close();
    }
  });

  it("reports NOT_SERVING once the drain begins (one status map for both ports), then closes", async () => {
    const h = createGrpcClient(health.Health, healthAddress);
    try {
      const watch = h.watch({ service: "" })[Symbol.asyncIterator]();
      assert.equal((await watch.next()).value?.status, S.SERVING);
      const closing = running.close(2_000);
      closed = true;
      assert.equal((await watch.next()).value?.status, S.NOT_SERVING);
      await watch.return?.();
      await closing;
      assert.equal(
        await outcome(h.check({ service: "" }, { timeoutMs: 1_000 })),
        grpc.status.UNAVAILABLE,
        "the health port is closed with the main server",
      );
    } finally {
      h.close();
    }
  });
});

describe("<PREFIX>_HEALTH_PORT configuration", () => {
  const load = (env: Env) => loadServiceRuntimeOptions("LENGTH", 50061, env);
  const fails = (env: Env, pattern: RegExp) =>
    assert.throws(
      () => load(env),
      (e: unknown) => e instanceof ConfigError && pattern.test(e.message),
    );

  it("unset or blank: no health port", () => {
    assert.equal(load({}).healthPort, undefined);
    assert.equal(load({ LENGTH_HEALTH_PORT: "  " }).healthPort, undefined);
  });

  it("a port, or 0 for any free port", () => {
    assert.equal(load({ LENGTH_HEALTH_PORT: "8081" }).healthPort, 8081);
    assert.equal(load({ LENGTH_HEALTH_PORT: "0" }).healthPort, 0);
    assert.equal(load({ LENGTH_HEALTH_PORT: "0", LENGTH_GRPC_PORT: "0" }).healthPort, 0);
  });

  it("bad values name the variable", () => {
    fails({ LENGTH_HEALTH_PORT: "http" }, /^'LENGTH_HEALTH_PORT' must be an integer/);
    fails({ LENGTH_HEALTH_PORT: "-1" }, /^'LENGTH_HEALTH_PORT' must be in \[0, 65535\]/);
    fails({ LENGTH_HEALTH_PORT: "65536" }, /^'LENGTH_HEALTH_PORT' must be in \[0, 65535\]/);
    fails({ LENGTH_HEALTH_PORT: "80.5" }, /^'LENGTH_HEALTH_PORT' must be an integer/);
  });

  it("the gRPC port itself is an error", () => {
    fails(
      { LENGTH_HEALTH_PORT: "50061" },
      /^'LENGTH_HEALTH_PORT' must differ from LENGTH_GRPC_PORT \(50061\)/,
    );
    fails(
      { LENGTH_HEALTH_PORT: "9000", LENGTH_GRPC_PORT: "9000" },
      /^'LENGTH_HEALTH_PORT' must differ from LENGTH_GRPC_PORT \(9000\)/,
    );
  });
});
