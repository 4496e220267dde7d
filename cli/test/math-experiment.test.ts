/**
 * `reward-mesh experiment` on the built-in math set with label noise on `math/correct` (a short run:
 * the full sweep is the command in services/math/README.md): real NATS, the real math service; two
 * true flip rates (0 and 0.3) and S-GRPO at an assumed p (0.15) apart from them; the metrics carry the
 * clean value next to the observed one and the report plots it per condition.
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

it("runs GRPO and S-GRPO (assumed p apart from the true one) on the math set per flip rate and reports the clean curves", async () => {
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
        "--sgrpo-p",
        "0.15",
        "--seeds",
        "1",
        "--reward-noise",
        "0,0.3",
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
    const metrics = (run: string) =>
      readFileSync(join(exp, run, "metrics.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
    const lines = metrics("mexp-noise0_3-grpo-s1");
    assert.equal(lines.length, 3);
    for (const l of lines) {
      const correct = l.components["math/correct"];
      assert.equal(typeof l.weightedRewardClean, "number");
      assert.equal(l.weightedRewardClean, correct.cleanMean, "one component of weight 1");
      assert.equal(l.rewardNoise.p, 0.3);
      assert.ok(l.rewardNoise.flipped >= 0);
    }
    for (const l of metrics("mexp-noise0-s_grpo_0_15-s1"))
      assert.equal(l.rewardNoise, undefined, "p = 0: no flips");
    const resolved = (run: string) =>
      JSON.parse(readFileSync(join(exp, run, "resolved-config.json"), "utf8")) as {
        sgrpo: { p: number } | null;
        rewardNoise: { p: number };
      };
    for (const [run, sgrpoP, noise] of [
      ["mexp-noise0-s_grpo_0_15-s1", 0.15, 0],
      ["mexp-noise0_3-s_grpo_0_15-s1", 0.15, 0.3],
    ] as const)
      assert.deepEqual([resolved(run).sgrpo?.p, resolved(run).rewardNoise.p], [sgrpoP, noise], run);
    assert.equal(resolved("mexp-noise0_3-grpo-s1").sgrpo, null);
    const html = readFileSync(join(exp, "experiment.html"), "utf8");
    assert.match(html, /<h2>True flip rate p = 0\.3<\/h2>/);
    assert.match(html, /Clean weighted reward \(the services' values, before the injected noise\), p = 0\.3/);
    assert.match(html, /<th>clean weighted reward, last 10 steps/);
    const report = JSON.parse(readFileSync(join(exp, "experiment.json"), "utf8"));
    assert.deepEqual(report.arms, ["grpo", "s_grpo@0.15"]);
    assert.deepEqual(report.noise, [0, 0.3]);
    assert.deepEqual(
      report.conditions.map((c: { noise: number }) => c.noise),
      [0, 0.3],
    );
    for (const c of report.conditions)
      for (const arm of ["grpo", "s_grpo@0.15"]) {
        const a = c.arms[arm];
        assert.equal(a.seeds, 1);
        assert.ok(a.clean.final.mean >= 0 && a.clean.final.mean <= 1);
        assert.ok(a.clean.early.mean >= 0 && a.clean.early.mean <= 1);
        assert.equal(a.assumedP, arm === "grpo" ? undefined : 0.15);
      }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
