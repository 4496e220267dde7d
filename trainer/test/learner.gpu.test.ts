/**
 * The GPU learner check (`scripts/gpu-check.sh`) on a machine with CUDA: a random ~0.5B model in bf16,
 * Generate and TrainStep over gRPC, and a plain PyTorch reference step. Skips, saying why, where torch
 * sees no CUDA device (CI never has one).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { DEFAULT_PYTHON } from "../src/learner/torch-process.js";

/** The repository's .venv (a CPU torch) unless `REWARD_MESH_PYTHON` names one with CUDA. */
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
const probe = spawnSync(PYTHON, ["-c", "import torch; print(torch.cuda.is_available())"], {
  encoding: "utf8",
});
const cuda = probe.status === 0 && probe.stdout.trim() === "True";
const skip = cuda
  ? false
  : `no CUDA device visible to ${PYTHON} (torch ${probe.status === 0 ? "without CUDA" : "missing"})`;

describe("GPU learner check", () => {
  it("the learner's bf16 TrainStep is within 1.15× of a plain PyTorch step", {
    skip,
    timeout: 600_000,
  }, () => {
    const r = spawnSync("bash", ["scripts/gpu-check.sh"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { ...process.env, REWARD_MESH_PYTHON: PYTHON },
      encoding: "utf8",
      timeout: 540_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { learnerOverReference: number; parameterCount: number };
    assert.ok(out.parameterCount > 3e8, `a ~0.5B model (${out.parameterCount})`);
    assert.ok(out.learnerOverReference <= 1.15, `learner/reference = ${out.learnerOverReference}`);
  });
});
