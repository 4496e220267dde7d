/**
 * The learner's gRPC server and client with mutual TLS and a bearer token: the embedded learner behind
 * `serveLearner` driven by `createRemoteLearner`, certificates made by openssl for this run.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { grpc } from "@reward-mesh/proto";
import { loadGrpcClientSecurity, loadGrpcServerSecurity } from "@reward-mesh/sdk";
import { createTestPki, type TestPki } from "@reward-mesh/sdk/testing";
import { createEmbeddedLearner } from "../src/learner/embedded.js";
import type { RemoteLearnerError } from "../src/learner/errors.js";
import { createRemoteLearner } from "../src/learner/remote.js";
import { type RunningLearnerServer, serveLearner } from "../src/learner/server.js";

const TOKEN = "learner-test-token-0123456789";

describe("learner over mutual TLS with a bearer token", () => {
  let pki: TestPki;
  let server: RunningLearnerServer;
  const learner = createEmbeddedLearner({ seed: 1 });
  before(async () => {
    pki = createTestPki();
    server = await serveLearner(learner, {
      security: loadGrpcServerSecurity("LEARNER", {
        LEARNER_GRPC_TLS_CERT_FILE: pki.serverCert,
        LEARNER_GRPC_TLS_KEY_FILE: pki.serverKey,
        LEARNER_GRPC_TLS_CLIENT_CA_FILE: pki.caCert,
        LEARNER_GRPC_TOKEN: TOKEN,
      }),
    });
  });
  after(async () => {
    await server.close(500);
    await learner.close();
    pki.remove();
  });
  const client = (env: Record<string, string>) =>
    createRemoteLearner(server.address, { security: loadGrpcClientSecurity(env), timeoutMs: 10_000 });
  const mtls = {
    REWARD_MESH_GRPC_TLS_CA_FILE: "",
    REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: "",
    REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: "",
  };
  before(() => {
    mtls.REWARD_MESH_GRPC_TLS_CA_FILE = pki.caCert;
    mtls.REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE = pki.clientCert;
    mtls.REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE = pki.clientKey;
  });

  it("a client with the CA, a client certificate and the token drives the learner", async () => {
    const remote = client({ ...mtls, REWARD_MESH_GRPC_TOKEN: TOKEN });
    try {
      const info = await remote.info();
      assert.equal(info.kind, "remote");
      assert.match(info.description, /^Remote learner at 127\.0\.0\.1:\d+/);
    } finally {
      await remote.close();
    }
  });

  it("without the token: UNAUTHENTICATED, not retryable; without a client certificate: UNAVAILABLE", async () => {
    const noToken = client(mtls);
    try {
      await assert.rejects(noToken.info(), (e: RemoteLearnerError) => {
        assert.equal(e.code, grpc.status.UNAUTHENTICATED);
        assert.equal(e.retryable, false);
        assert.match(e.message, /missing bearer token/);
        return true;
      });
    } finally {
      await noToken.close();
    }
    const noCert = client({ REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert, REWARD_MESH_GRPC_TOKEN: TOKEN });
    try {
      await assert.rejects(noCert.info(), (e: RemoteLearnerError) => e.code === grpc.status.UNAVAILABLE);
    } finally {
      await noCert.close();
    }
  });

  it("refuses plaintext to a remote learner unless allowed", () => {
    assert.throws(
      () => createRemoteLearner("gpu-node:50051"),
      /'REWARD_MESH_GRPC_INSECURE' is not set .*'gpu-node:50051'/,
    );
    createRemoteLearner("gpu-node:50051", {
      security: loadGrpcClientSecurity({ REWARD_MESH_GRPC_INSECURE: "1" }),
    }).close();
  });
});
