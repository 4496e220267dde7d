/**
 * The PyTorch learner (`trainer/learner-torch`) as the trainer meets it: its own Python unit tests
 * (losses against the reference vectors in float64, gradients, KV cache, micro-batching, checkpoints),
 * then the learner conformance suite over real gRPC against `python3 -m reward_mesh_learner serve`
 * (`builtin:tiny` in float64 on the CPU), each test with a fresh process.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { grpc } from "@reward-mesh/proto";
import { loadGrpcClientSecurity } from "@reward-mesh/sdk";
import { createTestPki } from "@reward-mesh/sdk/testing";
import { type ConformanceFixtures, learnerConformanceSuite } from "../src/learner/conformance.js";
import { createRemoteLearner } from "../src/learner/remote.js";
import {
  checkTorchAvailable,
  DEFAULT_PYTHON,
  startTorchLearner,
  TORCH_LEARNER_DIR,
  type TorchLearnerProcessOptions,
} from "../src/learner/torch-process.js";

/** The repository's .venv (scripts/bootstrap.sh --with-torch), or `REWARD_MESH_PYTHON`. */
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
// `npm test` installs torch (scripts/bootstrap.sh --with-torch): a missing one is a failure, not a skip.
checkTorchAvailable(PYTHON);

const BASE: TorchLearnerProcessOptions = {
  python: PYTHON,
  model: "builtin:tiny",
  device: "cpu",
  dtype: "float64",
  threads: 1,
};

async function torchLearner(o: TorchLearnerProcessOptions) {
  const proc = await startTorchLearner({ ...BASE, ...o });
  const learner = createRemoteLearner(proc.address);
  return {
    learner,
    async teardown() {
      await learner.close();
      assert.equal(await proc.stop(), 0, `the learner exits cleanly on SIGTERM\n${proc.stderr()}`);
    },
  };
}

/** Text prompts for the suite: a one-token bandit and a longer completion. */
export const TEXT_FIXTURES: ConformanceFixtures = {
  policy: "text",
  bandit: { promptId: "bandit", contextKey: "conformance/bandit", text: "Pick one byte: ", maxTokens: 1 },
  code: { promptId: "code", contextKey: "conformance/code", text: "def f(x):", maxTokens: 12 },
  vocabularySize: 0,
  outOfVocabulary: 100_000,
  // A random byte-level model hits a letter or digit within a few tokens.
  stop: [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"],
  describes: /not a pretrained LLM/,
  lr: 0.01,
  logprobTolerance: 1e-9,
  restore: (path) => torchLearner({ resume: path }),
};

describe("the PyTorch learner's Python unit tests (.venv/bin/python -m unittest)", () => {
  it("pass", () => {
    const r = spawnSync(PYTHON, ["-m", "unittest", "discover", "-s", "tests"], {
      cwd: TORCH_LEARNER_DIR,
      env: { PATH: "/usr/bin:/bin", PYTHONPATH: TORCH_LEARNER_DIR, PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
      timeout: 600_000,
    });
    const tail = `${r.stdout}\n${r.stderr}`.split("\n").slice(-40).join("\n");
    assert.equal(r.status, 0, `python unittest failed:\n${tail}`);
    const ran = /Ran (\d+) tests?/.exec(r.stderr);
    assert.ok(ran && Number(ran[1]) > 0, `no Python test ran:\n${tail}`);
  });
});

describe("the PyTorch learner with mutual TLS and a bearer token (LEARNER_GRPC_* variables)", () => {
  it("serves the TypeScript client that has the CA, a client certificate and the token, and no other", async () => {
    const pki = createTestPki();
    const token = "torch-test-token-0123456789";
    const security = loadGrpcClientSecurity({
      REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert,
      REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert,
      REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.clientKey,
      REWARD_MESH_GRPC_TOKEN: token,
    });
    const proc = await startTorchLearner({
      ...BASE,
      env: {
        LEARNER_GRPC_TLS_CERT_FILE: pki.serverCert,
        LEARNER_GRPC_TLS_KEY_FILE: pki.serverKey,
        LEARNER_GRPC_TLS_CLIENT_CA_FILE: pki.caCert,
        LEARNER_GRPC_TOKEN: token,
      },
      security,
    });
    const ok = createRemoteLearner(proc.address, { security, timeoutMs: 30_000 });
    const noToken = createRemoteLearner(proc.address, {
      security: { ...security, token: undefined },
      timeoutMs: 30_000,
    });
    const plain = createRemoteLearner(proc.address, { timeoutMs: 30_000 });
    try {
      assert.equal((await ok.info()).model, "builtin:tiny");
      await assert.rejects(noToken.info(), (e: { code: number }) => e.code === grpc.status.UNAUTHENTICATED);
      await assert.rejects(plain.info(), (e: { code: number }) => e.code === grpc.status.UNAVAILABLE);
    } finally {
      await Promise.all([ok.close(), noToken.close(), plain.close()]);
      assert.equal(await proc.stop(), 0, proc.stderr());
      pki.remove();
    }
  });
});

learnerConformanceSuite("PyTorch learner (builtin:tiny, float64) over gRPC", {
  kind: "remote",
  fixtures: TEXT_FIXTURES,
  setup: (seed) => torchLearner({ seed }),
});

describe("scripts/gpu-check.sh --smoke (the GPU check's own path, on the CPU)", () => {
  it("serves a model, times TrainStep over gRPC against a plain PyTorch step, and prints the figures", () => {
    const r = spawnSync("bash", ["scripts/gpu-check.sh", "--smoke"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: "/usr/bin:/bin", REWARD_MESH_PYTHON: PYTHON },
      encoding: "utf8",
      timeout: 300_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(out["model"], "builtin:tiny");
    for (const k of [
      "learnerTokensPerSecond",
      "referenceTokensPerSecond",
      "learnerOverReference",
      "generateTokensPerSecond",
    ])
      assert.ok(typeof out[k] === "number" && (out[k] as number) > 0, k);
  });

  it("--verl: says why the verl GRPO run is not made (verl 0.9.1 needs a vLLM/SGLang/TensorRT-LLM rollout)", () => {
    const r = spawnSync("bash", ["scripts/gpu-check.sh", "--verl"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: "/usr/bin:/bin", REWARD_MESH_PYTHON: PYTHON },
      encoding: "utf8",
      timeout: 120_000,
    });
    assert.equal(r.status, 3, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(out["ran"], false);
    assert.match(String(out["reason"]), /server rollouts \(vllm, sglang, trtllm\)/);
    assert.ok(Array.isArray(out["missing"]) && (out["missing"] as string[]).length > 0, r.stdout);
    if (out["verl"] !== null) assert.deepEqual(out["rolloutBackends"], ["sglang", "trtllm", "vllm"]);
  });
});
