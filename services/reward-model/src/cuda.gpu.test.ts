/**
 * The CUDA execution provider on a machine that has it: the reference pairs scored on the GPU agree with
 * PyTorch's CPU scores. Skips, saying why, without an NVIDIA GPU or without onnxruntime-node's CUDA
 * libraries (the npm package does not ship them: `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild
 * onnxruntime-node` fetches them). CI has neither.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { it } from "node:test";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { BUNDLED_MODEL_DIR, loadConfig } from "./config.js";
import { createRewardModelService } from "./service.js";

const ortDir = dirname(createRequire(import.meta.url).resolve("onnxruntime-node/package.json"));
const cudaLib = join(ortDir, "bin", "napi-v6", "linux", process.arch, "libonnxruntime_providers_cuda.so");
const gpu = spawnSync("nvidia-smi", ["-L"], { encoding: "utf8" }).status === 0;
const skip = !gpu
  ? "no NVIDIA GPU (nvidia-smi -L fails)"
  : !existsSync(cudaLib)
    ? `onnxruntime-node has no CUDA libraries (${cudaLib}); ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node`
    : false;

it("scores the reference pairs with the CUDA execution provider as PyTorch did", { skip }, async () => {
  const reference = JSON.parse(readFileSync(join(BUNDLED_MODEL_DIR, "reference.json"), "utf8")) as {
    cases: { prompt: string; response: string; score: number }[];
  };
  const service = createRewardModelService({ ...loadConfig({}), executionProvider: "cuda" });
  try {
    await service.ready;
    const results = await Promise.all(
      reference.cases.map((c) =>
        service.scoreRollout(
          makeRollout({
            response: c.response,
            task: { id: "t", prompt: c.prompt, kind: { case: "custom", value: {} } },
          }),
        ),
      ),
    );
    results.forEach((r, i) => {
      const want = reference.cases[i]!.score;
      // GPU kernels (TF32 matmuls) round differently from the CPU: 1e-3, not 1e-5.
      assert.ok(
        Math.abs(r.components[0]!.value - want) <= 1e-3,
        `case ${i}: ${r.components[0]!.value} vs ${want}`,
      );
    });
  } finally {
    await service.close();
  }
});
