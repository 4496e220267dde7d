/**
 * The committed test model is what `model/build.py` builds: rebuilding it with Debian's python3-torch
 * gives the same files, byte for byte (fixed seed, one thread). Skipped, with the reason, without torch.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { BUNDLED_MODEL_DIR } from "./config.js";

const PYTHON = "/usr/bin/python3";
const FILES = ["tokenizer.json", "tokenizer_config.json", "model.onnx", "reference.json"];
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
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
