/**
 * `reward-mesh experiment` on the built-in math set with label noise on `math/correct` (a short run:
 * the full 5-seed experiment is the command in services/math/README.md): real NATS, the real math
 * service; the metrics carry the clean value next to the observed one and the report plots it.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "@reward-mesh/sdk";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

function runBin(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env }, timeout: 120_000 },
      (err, _stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stderr }),
    );
  });
}

it("runs GRPO and S-GRPO on the math set under noise and reports the clean curve", async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "rm-math-exp-"));
  try {
    const cfg = join(dir, "math.yaml");
    writeFileSync(
      cfg,
      [
        `run: { outputDir: ${JSON.stringify(join(dir, "runs"))} }`,
        "tasks: { sets: [math] }",
        "groupSize: 4",
        "promptsPerStep: 3",
        "steps: 3",
        "components: [{ service: math, component: correct, weight: 1 }]",
      ].join("\n"),
    );
    const env = {
      NATS_URL: `nats://127.0.0.1:${port}`,
      REWARD_MESH_NATS_STORE: join(dir, "js"),
      REWARD_MESH_LOG_DIR: join(dir, "logs"),
    };
    const r = await runBin(
      [
        "experiment",
        "--config",
        cfg,
        "--estimators",
        "grpo,s_grpo",
        "--seeds",
        "1",
        "--reward-noise",
        "0.3",
        "--noise-components",
        "math/correct",
        "--id",
        "mexp",
        "--log-format",
        "json",
      ],
      env,
    );
    assert.equal(r.code, 0, r.stderr);
    const exp = join(dir, "runs", "mexp");
    const lines = readFileSync(join(exp, "mexp-grpo-s1", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 3);
    for (const l of lines) {
      const correct = l.components["math/correct"];
      assert.equal(typeof l.weightedRewardClean, "number");
      assert.equal(l.weightedRewardClean, correct.cleanMean, "one component of weight 1");
      assert.equal(l.rewardNoise.p, 0.3);
      assert.ok(l.rewardNoise.flipped >= 0);
    }
    const html = readFileSync(join(exp, "experiment.html"), "utf8");
    assert.match(html, /Clean weighted reward \(the services' values, before the injected noise\)/);
    assert.match(html, /<th>clean weighted reward, last 10 steps/);
    const summary = JSON.parse(readFileSync(join(exp, "experiment.json"), "utf8")).summary;
    for (const arm of ["grpo", "s_grpo"]) {
      assert.equal(summary[arm].seeds, 1);
      assert.ok(summary[arm].clean.mean >= 0 && summary[arm].clean.mean <= 1);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
