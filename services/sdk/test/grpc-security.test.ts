/**
 * gRPC TLS, mutual TLS and bearer tokens over real grpc-js servers on port 0, with certificates made by
 * `openssl` for this run; the plaintext policy; and the configuration's errors.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createGrpcClient, grpc, health, RewardService, reflectionV1 } from "@reward-mesh/proto";
import {
  type ConfigError,
  createLimiter,
  createSecureGrpcClient,
  type Env,
  type GrpcClientSecurity,
  type GrpcServerSecurity,
  grpcChannelSettings,
  hostOfTarget,
  isLoopbackHost,
  loadGrpcClientSecurity,
  loadGrpcServerSecurity,
  loadServiceRuntimeOptions,
  type RunningGrpcServer,
  silentLogger,
  startGrpcServer,
  waitServing,
} from "../src/index.js";
import { createTestPki, makeRollout, type TestPki } from "../src/testing/index.js";
import { createEchoService, listServicesByReflection, outcome } from "./fixtures.js";

const TOKEN = "test-token-0123456789abcdef";
let pki: TestPki;
before(() => {
  pki = createTestPki();
});
after(() => pki.remove());

const serverEnv = (extra: Env = {}): Env => ({
  ECHO_GRPC_TLS_CERT_FILE: pki.serverCert,
  ECHO_GRPC_TLS_KEY_FILE: pki.serverKey,
  ...extra,
});
const clientEnv = (extra: Env = {}): Env => ({ REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert, ...extra });

async function startEcho(security: GrpcServerSecurity, host = "127.0.0.1"): Promise<RunningGrpcServer> {
  return startGrpcServer(createEchoService(), {
    host,
    port: 0,
    limiter: createLimiter(4),
    logger: silentLogger,
    security,
  });
}

async function describeWith(address: string, security: GrpcClientSecurity): Promise<grpc.status | "ok"> {
  const c = createSecureGrpcClient(RewardService, address, security);
  try {
    return await outcome(c.describe({}, { timeoutMs: 5_000 }));
  } finally {
    c.close();
  }
}

describe("TLS", () => {
  let server: RunningGrpcServer;
  before(async () => {
    server = await startEcho(loadGrpcServerSecurity("ECHO", serverEnv()));
  });
  after(() => server.close(1000));

  it("a client trusting the CA scores over TLS", async () => {
    const c = createSecureGrpcClient(RewardService, server.address, loadGrpcClientSecurity(clientEnv()));
    try {
      const r = await c.score({ rollout: makeRollout({ response: "xyz" }) }, { timeoutMs: 5_000 });
      assert.deepEqual(
        r.components.map((x) => [x.name, x.value]),
        [
          ["chars", 3],
          ["has_x", 1],
        ],
      );
      await waitServing(server.address, { security: loadGrpcClientSecurity(clientEnv()), timeoutMs: 5_000 });
    } finally {
      c.close();
    }
  });

  it("a plaintext client is refused", async () => {
    const c = createGrpcClient(RewardService, server.address);
    try {
      assert.equal(await outcome(c.describe({}, { timeoutMs: 5_000 })), grpc.status.UNAVAILABLE);
    } finally {
      c.close();
    }
  });

  it("a client trusting another CA is refused", async () => {
    const other = loadGrpcClientSecurity({ REWARD_MESH_GRPC_TLS_CA_FILE: pki.otherCaCert });
    assert.equal(await describeWith(server.address, other), grpc.status.UNAVAILABLE);
  });

  it("the readiness wait reports the handshake failure instead of only timing out", async () => {
    await assert.rejects(
      waitServing(server.address, { timeoutMs: 300 }),
      /did not report SERVING.*last check/s,
    );
  });
});

describe("mutual TLS", () => {
  let server: RunningGrpcServer;
  before(async () => {
    server = await startEcho(
      loadGrpcServerSecurity("ECHO", serverEnv({ REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE: pki.caCert })),
    );
  });
  after(() => server.close(1000));

  it("a client with a certificate from the CA is served", async () => {
    const sec = loadGrpcClientSecurity(
      clientEnv({
        REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert,
        REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.clientKey,
      }),
    );
    assert.equal(await describeWith(server.address, sec), "ok");
  });

  it("a client without a certificate is refused", async () => {
    assert.equal(
      await describeWith(server.address, loadGrpcClientSecurity(clientEnv())),
      grpc.status.UNAVAILABLE,
    );
  });

  it("a client with a certificate from another CA is refused", async () => {
    const sec = loadGrpcClientSecurity(
      clientEnv({
        REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.otherClientCert,
        REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.otherClientKey,
      }),
    );
    assert.equal(await describeWith(server.address, sec), grpc.status.UNAVAILABLE);
  });
});

describe("bearer token", () => {
  let server: RunningGrpcServer;
  const tls = (extra: Env = {}) => loadGrpcClientSecurity(clientEnv(extra));
  before(async () => {
    server = await startEcho(loadGrpcServerSecurity("ECHO", serverEnv({ ECHO_GRPC_TOKEN: TOKEN })));
  });
  after(() => server.close(1000));

  it("the right token is served, on unary and streaming calls", async () => {
    const c = createSecureGrpcClient(RewardService, server.address, tls({ REWARD_MESH_GRPC_TOKEN: TOKEN }));
    try {
      assert.equal((await c.describe({})).name, "echo");
      async function* reqs() {
        for (const response of ["a", "bb"]) yield { rollout: makeRollout({ response }) };
      }
      const got: number[] = [];
      for await (const r of c.scoreStream(reqs(), { timeoutMs: 5_000 })) got.push(r.components[0]!.value);
      assert.deepEqual(got, [1, 2]);
    } finally {
      c.close();
    }
  });

  it("a missing or wrong token is UNAUTHENTICATED, naming the problem", async () => {
    const c = createSecureGrpcClient(RewardService, server.address, tls());
    try {
      await assert.rejects(c.describe({}), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.UNAUTHENTICATED);
        assert.match(e.details, /missing bearer token/);
        return true;
      });
      const md = new grpc.Metadata();
      md.set("authorization", "Bearer test-token-0123456789abcdeX");
      await assert.rejects(c.describe({}, { metadata: md }), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.UNAUTHENTICATED);
        assert.match(e.details, /invalid bearer token/);
        return true;
      });
      const basic = new grpc.Metadata();
      basic.set("authorization", `Basic ${TOKEN}`);
      assert.equal(await outcome(c.describe({}, { metadata: basic })), grpc.status.UNAUTHENTICATED);
    } finally {
      c.close();
    }
    const wrong = tls({ REWARD_MESH_GRPC_TOKEN: `${TOKEN}-but-longer` });
    assert.equal(await describeWith(server.address, wrong), grpc.status.UNAUTHENTICATED);
  });

  it("a handler never runs for an unauthenticated call (streams and reflection too)", async () => {
    const c = createSecureGrpcClient(RewardService, server.address, tls());
    const r = createSecureGrpcClient(reflectionV1.ServerReflection, server.address, tls());
    try {
      async function* reqs() {
        yield { rollout: makeRollout() };
      }
      const stream = async () => {
        for await (const _ of c.scoreStream(reqs(), { timeoutMs: 5_000 })) {
          // nothing may arrive
        }
      };
      assert.equal(await outcome(stream()), grpc.status.UNAUTHENTICATED);
      assert.equal(await outcome(listServicesByReflection(r)), grpc.status.UNAUTHENTICATED);
    } finally {
      c.close();
      r.close();
    }
  });

  it("health checks need no token (probes cannot send one) but still need TLS", async () => {
    const h = createSecureGrpcClient(health.Health, server.address, tls());
    try {
      const res = await h.check({ service: "" }, { timeoutMs: 5_000 });
      assert.equal(res.status, health.HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      h.close();
    }
    const plain = createGrpcClient(health.Health, server.address);
    try {
      assert.equal(
        await outcome(plain.check({ service: "" }, { timeoutMs: 5_000 })),
        grpc.status.UNAVAILABLE,
      );
    } finally {
      plain.close();
    }
  });

  it("works over plaintext on loopback too (development)", async () => {
    const s = await startEcho(loadGrpcServerSecurity("ECHO", { REWARD_MESH_GRPC_TOKEN: TOKEN }));
    try {
      const ok = loadGrpcClientSecurity({ REWARD_MESH_GRPC_TOKEN: TOKEN });
      assert.equal(await describeWith(s.address, ok), "ok");
      assert.equal(await describeWith(s.address, {}), grpc.status.UNAUTHENTICATED);
    } finally {
      await s.close(1000);
    }
  });
});

describe("plaintext policy", () => {
  it("a server on a non-loopback address without TLS refuses to start, naming the variables", async () => {
    const runtime = loadServiceRuntimeOptions("ECHO", 0, { ECHO_GRPC_HOST: "0.0.0.0" });
    await assert.rejects(startEcho(runtime.grpcSecurity!, "0.0.0.0"), (e: ConfigError) => {
      assert.equal(e.name, "ConfigError");
      assert.equal(e.key, "ECHO_GRPC_INSECURE");
      assert.match(e.message, /refusing a plaintext gRPC server on '0\.0\.0\.0'/);
      assert.match(e.message, /ECHO_GRPC_TLS_CERT_FILE and ECHO_GRPC_TLS_KEY_FILE/);
      assert.match(e.message, /ECHO_GRPC_INSECURE=1/);
      return true;
    });
    await assert.rejects(startEcho({}, "::"), /'security\.insecure' is not set/);
  });

  it("the explicit opt-in (per service or mesh-wide) or TLS lets it start", async () => {
    for (const env of [{ ECHO_GRPC_INSECURE: "1" }, { REWARD_MESH_GRPC_INSECURE: "true" }, serverEnv()]) {
      const s = await startEcho(loadGrpcServerSecurity("ECHO", env), "0.0.0.0");
      await s.close(0);
    }
    // A per-service value wins over the mesh-wide one.
    const off = loadGrpcServerSecurity("ECHO", { ECHO_GRPC_INSECURE: "0", REWARD_MESH_GRPC_INSECURE: "1" });
    assert.equal(off.insecure, false);
  });

  it("a client refuses plaintext to a non-loopback address unless allowed", () => {
    assert.throws(
      () => grpcChannelSettings("10.1.2.3:50061", loadGrpcClientSecurity({})),
      /'REWARD_MESH_GRPC_INSECURE' is not set .*'10\.1\.2\.3:50061'.*REWARD_MESH_GRPC_TLS_CA_FILE/,
    );
    grpcChannelSettings("10.1.2.3:50061", loadGrpcClientSecurity({ REWARD_MESH_GRPC_INSECURE: "1" }));
    grpcChannelSettings("localhost:50061", {});
    grpcChannelSettings("[::1]:50061", {});
  });

  it("recognises loopback hosts and target hosts", () => {
    for (const h of ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST", "a.localhost"])
      assert.equal(isLoopbackHost(h), true, h);
    for (const h of ["0.0.0.0", "::", "", "10.0.0.1", "::ffff:10.0.0.1", "example.com", "localhost.com"])
      assert.equal(isLoopbackHost(h), false, h);
    assert.equal(hostOfTarget("127.0.0.1:5"), "127.0.0.1");
    assert.equal(hostOfTarget("[::1]:5"), "::1");
    assert.equal(hostOfTarget("dns:///gpu-node:5"), "gpu-node");
    assert.equal(hostOfTarget("gpu-node"), "gpu-node");
    assert.equal(hostOfTarget("unix:/tmp/s.sock"), "localhost");
  });
});

describe("configuration errors name the variable", () => {
  const keyOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      assert.equal((err as Error).name, "ConfigError", String(err));
      return `${(err as ConfigError).key}: ${(err as Error).message}`;
    }
    assert.fail("expected a ConfigError");
  };
  const server = (env: Env) => () => loadGrpcServerSecurity("ECHO", env);
  const client = (env: Env) => () => loadGrpcClientSecurity(env);

  it("server settings", () => {
    assert.match(
      keyOf(server({ ECHO_GRPC_TLS_CERT_FILE: pki.serverCert })),
      /^ECHO_GRPC_TLS_KEY_FILE: .*must be set/,
    );
    assert.match(
      keyOf(server({ ECHO_GRPC_TLS_CERT_FILE: "/nonexistent/x.crt", ECHO_GRPC_TLS_KEY_FILE: pki.serverKey })),
      /^ECHO_GRPC_TLS_CERT_FILE: .*cannot read '\/nonexistent\/x\.crt' \(ENOENT\)/,
    );
    assert.match(
      keyOf(server({ ECHO_GRPC_TLS_CERT_FILE: pki.serverKey, ECHO_GRPC_TLS_KEY_FILE: pki.serverKey })),
      /^ECHO_GRPC_TLS_CERT_FILE: .*holds no PEM certificate/,
    );
    assert.match(
      keyOf(server({ ECHO_GRPC_TLS_CERT_FILE: pki.serverCert, ECHO_GRPC_TLS_KEY_FILE: pki.clientKey })),
      /^ECHO_GRPC_TLS_KEY_FILE: .*is not the private key of the certificate in ECHO_GRPC_TLS_CERT_FILE/,
    );
    assert.match(
      keyOf(server({ ECHO_GRPC_TLS_CERT_FILE: pki.serverCert, ECHO_GRPC_TLS_KEY_FILE: pki.caCert })),
      /^ECHO_GRPC_TLS_KEY_FILE: .*not a usable PEM private key/,
    );
    assert.match(
      keyOf(server({ REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE: pki.caCert })),
      /^REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE: .*needs TLS/,
    );
    assert.match(
      keyOf(server(serverEnv({ ECHO_GRPC_TLS_CLIENT_CA_FILE: pki.serverKey }))),
      /^ECHO_GRPC_TLS_CLIENT_CA_FILE: .*no PEM certificate/,
    );
    assert.match(
      keyOf(server(serverEnv({ REWARD_MESH_GRPC_INSECURE: "1" }))),
      /^REWARD_MESH_GRPC_INSECURE: .*together with ECHO_GRPC_TLS_CERT_FILE/,
    );
    assert.match(keyOf(server({ ECHO_GRPC_INSECURE: "maybe" })), /^ECHO_GRPC_INSECURE: .*boolean/);
  });

  it("tokens: length, characters, one source, files trimmed, never echoed", () => {
    const short = keyOf(server({ ECHO_GRPC_TOKEN: "s3cret" }));
    assert.match(short, /^ECHO_GRPC_TOKEN: .*at least 16 characters, got 6/);
    assert.doesNotMatch(short, /s3cret/);
    assert.match(keyOf(server({ ECHO_GRPC_TOKEN: "has space 0123456789" })), /visible ASCII/);
    assert.match(
      keyOf(server({ ECHO_GRPC_TOKEN: TOKEN, ECHO_GRPC_TOKEN_FILE: "/x" })),
      /^ECHO_GRPC_TOKEN_FILE: .*together with ECHO_GRPC_TOKEN/,
    );
    assert.match(
      keyOf(client({ REWARD_MESH_GRPC_TOKEN_FILE: "/nonexistent" })),
      /^REWARD_MESH_GRPC_TOKEN_FILE: .*ENOENT/,
    );
    const file = join(pki.dir, "token");
    writeFileSync(file, `${TOKEN}\n`);
    assert.equal(loadGrpcServerSecurity("ECHO", { REWARD_MESH_GRPC_TOKEN_FILE: file }).token?.value, TOKEN);
    assert.equal(loadGrpcClientSecurity({ REWARD_MESH_GRPC_TOKEN_FILE: file }).token?.value, TOKEN);
    // The per-service token wins over the mesh-wide one.
    const both = loadGrpcServerSecurity("ECHO", {
      ECHO_GRPC_TOKEN: TOKEN,
      REWARD_MESH_GRPC_TOKEN: `${TOKEN}x`,
    });
    assert.equal(both.token?.key, "ECHO_GRPC_TOKEN");
  });

  it("client settings", () => {
    assert.match(
      keyOf(client(clientEnv({ REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert }))),
      /^REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: .*must be set/,
    );
    assert.match(
      keyOf(client({ REWARD_MESH_GRPC_TLS_SERVER_NAME: "localhost" })),
      /^REWARD_MESH_GRPC_TLS_SERVER_NAME: .*needs TLS/,
    );
    assert.match(
      keyOf(client(clientEnv({ REWARD_MESH_GRPC_INSECURE: "1" }))),
      /^REWARD_MESH_GRPC_INSECURE: .*together with REWARD_MESH_GRPC_TLS_CA_FILE/,
    );
    assert.match(
      keyOf(client({ REWARD_MESH_GRPC_TLS_CA_FILE: pki.dir })),
      /^REWARD_MESH_GRPC_TLS_CA_FILE: .*cannot read/,
    );
  });
});
