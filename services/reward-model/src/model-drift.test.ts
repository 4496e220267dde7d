/**
 * The committed test model is what `model/build.py` builds: rebuilding it with Debian's python3-torch
 * gives the same tokenizer and ONNX files, byte for byte (fixed seed, one thread), and the same reference
 * computation. The reference scores are PyTorch's float32 forward pass, whose last bits depend on the
 * CPU's kernels (AVX2 vs AVX-512 machines differ by ~1e-7), so they are compared to 1e-6; token ids and
 * every other value exactly. Skipped, with the reason, without torch.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { BUNDLED_MODEL_DIR } from "./config.js";

const PYTHON = "/usr/bin/python3";
const FILES = ["tokenizer.json", "tokenizer_config.json", "model.onnx"];

/** Equal JSON values, fractional numbers to 1e-6 (relative above 1); the first difference's path, else "". */
function jsonDiff(a: unknown, b: unknown, path = "$"): string {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isInteger(a) && Number.isInteger(b)) return a === b ? "" : path;
    return Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b)) ? "" : path;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${path}.length`;
    for (let i = 0; i < a.length; i++) {
      const d = jsonDiff(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return "";
  }
  if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    if (ka.join("\0") !== kb.join("\0")) return `${path} (keys)`;
    for (const k of ka) {
      const d = jsonDiff(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        `${path}.${k}`,
      );
      if (d) return d;
    }
    return "";
  }
  return a === b ? "" : path;
}
const hasTorch = spawnSync(PYTHON, ["-c", "import torch"], { stdio: "ignore" }).status === 0;

it("model/build.py rebuilds the committed model files unchanged", {
  skip: hasTorch ? false : `${PYTHON} has no torch (bash scripts/bootstrap.sh --with-torch installs it)`,
}, () => {
  const out = mkdtempSync(join(tmpdir(), "rm-reward-model-build-"));
  try {
    const r = spawnSync(PYTHON, [join(BUNDLED_MODEL_DIR, "build.py"), out], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    for (const f of FILES) {
      assert.ok(
        readFileSync(join(out, f)).equals(readFileSync(join(BUNDLED_MODEL_DIR, f))),
        `${f} differs from a fresh build: rerun /usr/bin/python3 services/reward-model/model/build.py and commit`,
      );
    }
    const fresh = JSON.parse(readFileSync(join(out, "reference.json"), "utf8")) as unknown;
    const committed = JSON.parse(readFileSync(join(BUNDLED_MODEL_DIR, "reference.json"), "utf8")) as unknown;
    assert.equal(
      jsonDiff(fresh, committed),
      "",
      "reference.json differs from a fresh build (beyond float32 kernel noise): rerun build.py and commit",
    );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
