/**
 * The AgentEnvironment behind mutual TLS and a bearer token (the process's `AGENTDOJO_GRPC_*` settings
 * cover it as they cover the RewardService on the same port), with certificates made by openssl.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { AgentEnvironment, grpc } from "@reward-mesh/proto";
import {
  createSecureGrpcClient,
  loadGrpcClientSecurity,
  loadServiceRuntimeOptions,
  type RunningGrpcServer,
  silentLogger,
  startGrpcServices,
} from "@reward-mesh/sdk";
import { createTestPki, type TestPki } from "@reward-mesh/sdk/testing";
import { AGENTDOJO_DEFAULT_PORT } from "../src/config.js";
import { agentEnvironmentService, createSessionManager, DEFAULT_AGENTDOJO_OPTIONS } from "../src/index.js";

const TOKEN = "agentdojo-test-token-0123456789";
const TASK = { suite: "banking", userTaskId: "user_task_13" };
let pki: TestPki;
let server: RunningGrpcServer;
const manager = createSessionManager({ ...DEFAULT_AGENTDOJO_OPTIONS, maxSessions: 4, idleTimeoutMs: 60_000 });

before(async () => {
  pki = createTestPki();
  // As `reward-mesh serve agentdojo` reads them, bound to all interfaces as in a container.
  const runtime = loadServiceRuntimeOptions("AGENTDOJO", AGENTDOJO_DEFAULT_PORT, {
    AGENTDOJO_GRPC_HOST: "0.0.0.0",
    AGENTDOJO_GRPC_TLS_CERT_FILE: pki.serverCert,
    AGENTDOJO_GRPC_TLS_KEY_FILE: pki.serverKey,
    AGENTDOJO_GRPC_TLS_CLIENT_CA_FILE: pki.caCert,
    AGENTDOJO_GRPC_TOKEN: TOKEN,
  });
  server = await startGrpcServices([agentEnvironmentService(manager)], {
    host: runtime.grpcHost,
    port: 0,
    logger: silentLogger,
    security: runtime.grpcSecurity!,
  });
});
after(async () => {
  await server.close(500);
  manager.stop();
  pki.remove();
});

const mtls = () => ({
  REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert,
  REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert,
  REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.clientKey,
});

it("a client with a certificate from the CA and the token opens a session", async () => {
  const env = createSecureGrpcClient(
    AgentEnvironment,
    server.address,
    loadGrpcClientSecurity({ ...mtls(), REWARD_MESH_GRPC_TOKEN: TOKEN }),
  );
  try {
    const r = await env.reset({ task: TASK }, { timeoutMs: 10_000 });
    assert.ok(r.sessionId.length > 0);
  } finally {
    env.raw.close();
  }
});

it("without the token: UNAUTHENTICATED; without a client certificate: refused at the handshake", async () => {
  const noToken = createSecureGrpcClient(AgentEnvironment, server.address, loadGrpcClientSecurity(mtls()));
  const noCert = createSecureGrpcClient(
    AgentEnvironment,
    server.address,
    loadGrpcClientSecurity({ REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert, REWARD_MESH_GRPC_TOKEN: TOKEN }),
  );
  try {
    await assert.rejects(
      noToken.reset({ task: TASK }, { timeoutMs: 10_000 }),
      (e: grpc.ServiceError) => e.code === grpc.status.UNAUTHENTICATED,
    );
    await assert.rejects(
      noCert.reset({ task: TASK }, { timeoutMs: 10_000 }),
      (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
    );
  } finally {
    noToken.raw.close();
    noCert.raw.close();
  }
});
