/**
 * The gRPC Secrets the chart generates work with the mesh's own TLS and token code: the length service
 * serves with the rendered `tls.crt`/`tls.key` and token (as its pod's `LENGTH_GRPC_*` variables name
 * them), and a client with only the rendered `ca.crt` and token — the helm test pod's files — scores a
 * rollout, dialling with the Service's DNS name; without the token it is refused.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { SERVICES } from "@reward-mesh/cli";
import {
  createLimiter,
  createRewardServiceClient,
  loadGrpcClientSecurity,
  loadGrpcServerSecurity,
  silentLogger,
  startGrpcServer,
} from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { container, envVar, find, renderChart } from "./helm.js";

const FULL = "rm-reward-mesh";

describe("generated gRPC TLS + token Secrets", async () => {
  const objs = await renderChart({ grpc: { tls: { mtls: { enabled: true } } } });
  const dir = mkdtempSync(join(tmpdir(), "rm-helm-grpc-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes a Secret's keys as files, like its volume. */
  function mount(secret: string): void {
    const data = find(objs, "Secret", secret)["data"] as Record<string, string>;
    for (const [k, v] of Object.entries(data)) {
      writeFileSync(join(dir, `${secret}.${k}`), Buffer.from(v, "base64"));
    }
  }
  mount(`${FULL}-grpc-tls`);
  mount(`${FULL}-grpc-client-tls`);
  mount(`${FULL}-grpc-token`);
  const file = (secret: string, key: string) => join(dir, `${secret}.${key}`);

  // The pod's variables, with the Secret volumes' paths mapped to the files above.
  const paths: Record<string, string> = {
    "/etc/reward-mesh/grpc-tls/tls.crt": file(`${FULL}-grpc-tls`, "tls.crt"),
    "/etc/reward-mesh/grpc-tls/tls.key": file(`${FULL}-grpc-tls`, "tls.key"),
    "/etc/reward-mesh/grpc-tls/ca.crt": file(`${FULL}-grpc-tls`, "ca.crt"),
    "/etc/reward-mesh/grpc-ca/ca.crt": file(`${FULL}-grpc-tls`, "ca.crt"),
    "/etc/reward-mesh/grpc-client-tls/tls.crt": file(`${FULL}-grpc-client-tls`, "tls.crt"),
    "/etc/reward-mesh/grpc-client-tls/tls.key": file(`${FULL}-grpc-client-tls`, "tls.key"),
    "/etc/reward-mesh/grpc-token/token": file(`${FULL}-grpc-token`, "token"),
  };
  function podEnv(c: { env: { name: string; value?: string }[] }): Record<string, string> {
    const env: Record<string, string> = {};
    for (const e of c.env) if (typeof e.value === "string") env[e.name] = paths[e.value] ?? e.value;
    return env;
  }

  const serverContainer = container(find(objs, "Deployment", `${FULL}-length`), "service");
  const testContainer = container(find(objs, "Pod", `${FULL}-test-score-length`), "score");
  const entry = SERVICES.find((s) => s.name === "length")!;
  const server = await startGrpcServer(await entry.load(), {
    host: "127.0.0.1",
    port: 0,
    limiter: createLimiter(4),
    logger: silentLogger,
    security: loadGrpcServerSecurity("LENGTH", podEnv(serverContainer)),
  });
  after(() => server.close(0));

  it("a client with the test pod's CA, client certificate and token scores through the Service's name", async () => {
    const env = {
      ...podEnv(testContainer),
      REWARD_MESH_GRPC_TLS_SERVER_NAME: `${FULL}-length.mesh.svc.cluster.local`,
    };
    assert.ok(envVar(testContainer, "REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE"));
    const client = createRewardServiceClient(server.address, { security: loadGrpcClientSecurity(env) });
    try {
      const rollout = makeRollout();
      const res = await client.score({ rollout });
      assert.equal(res.service, "length");
      assert.equal(res.rolloutId, rollout.id);
    } finally {
      client.close();
    }
  });

  it("a client without the token is refused", async () => {
    const env: Record<string, string> = {
      ...podEnv(testContainer),
      REWARD_MESH_GRPC_TLS_SERVER_NAME: `${FULL}-length`,
    };
    delete env["REWARD_MESH_GRPC_TOKEN_FILE"];
    const client = createRewardServiceClient(server.address, { security: loadGrpcClientSecurity(env) });
    try {
      await assert.rejects(client.score({ rollout: makeRollout() }), /UNAUTHENTICATED|Unauthenticated|16/);
    } finally {
      client.close();
    }
  });
});
