/** `npm start`'s demo, shortened: every service up, a few training steps through the mesh, a clean stop. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "@reward-mesh/sdk";
import { resolveTorchDemoModel } from "../src/commands/demo.js";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

/** Runs `reward-mesh <args>` in `dir` with its own NATS port, store and logs; resolves with its output. */
function runBin(
  args: readonly string[],
  dir: string,
  port: number,
  timeout: number,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      {
        cwd: dir,
        timeout,
        env: {
          ...process.env,
          NATS_URL: `nats://127.0.0.1:${port}`,
          REWARD_MESH_NATS_STORE: join(dir, "js"),
          REWARD_MESH_LOG_DIR: join(dir, "logs"),
        },
      },
      (err, out, errOut) =>
        resolve({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          stdout: out,
          stderr: errOut,
        }),
    );
  });
}

it("reward-mesh demo --steps 4 --ui trains through every service and shuts everything down", async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "rm-demo-"));
  try {
    const { code, stdout, stderr } = await runBin(["demo", "--steps", "4", "--ui"], dir, port, 180_000);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    for (const s of ["length", "tool-call", "agentdojo", "code-exec", "ast", "efficiency"])
      assert.match(stdout, new RegExp(`^${s}\\s+127\\.0\\.0\\.1:\\d+`, "m"));
    assert.match(stdout, /^weighted reward\s+-?\d+\.\d{4}\s+-?\d+\.\d{4}$/m);
    assert.match(stdout, /^code-exec\/pass\s/m);
    assert.match(stdout, /mesh stopped\.$/m);
    const report = stdout.match(/^report (\S+)$/m)?.[1];
    assert.ok(report && existsSync(join(dir, report)), "report written");
    // Logs stay off the terminal (--log-format human): the run's records are in its logs/trainer.jsonl.
    const jsonLines = `${stdout}\n${stderr}`.split("\n").filter((l) => l.trimStart().startsWith("{"));
    assert.deepEqual(jsonLines, [], "no JSON log line between the progress lines");
    const log = join(dir, dirname(report), "logs", "trainer.jsonl");
    assert.ok(
      readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .some((l) => (JSON.parse(l) as { msg?: string }).msg === "learner ready"),
      `${log} has the run's records`,
    );
    const portOpen = (p: number) =>
      new Promise<boolean>((r) => {
        const s = connect(p, "127.0.0.1");
        s.once("connect", () => {
          s.destroy();
          r(true);
        });
        s.once("error", () => r(false));
      });
    assert.equal(await portOpen(port), false, "the NATS the demo started is stopped");
    const ui = stdout.match(/^live page: http:\/\/127\.0\.0\.1:(\d+)\/$/m)?.[1];
    assert.ok(ui, `the live page's address is printed: ${stdout}`);
    assert.equal(await portOpen(Number(ui)), false, "the live page stopped with the demo");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("reward-mesh demo --learner torch builds tiny-qwen2 (a BPE tokenizer), warms it up, and RL raises the tool-call reward", async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "rm-demo-torch-"));
  try {
    const { code, stdout, stderr } = await runBin(["demo", "--learner", "torch"], dir, port, 400_000);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    // Built on first use into runs/models/tiny-qwen2-<hash>/ (the cwd is the test's directory).
    const built = stdout.match(/^model tiny-qwen2: building (runs\/models\/tiny-qwen2-[0-9a-f]{12}) /m)?.[1];
    assert.ok(built, stdout);
    assert.match(stdout, /^built Qwen2ForCausalLM, \d+ parameters, \d+-token BPE, in /m);
    for (const f of ["config.json", "model.safetensors", "tokenizer.json"])
      assert.ok(existsSync(join(dir, built, f)), `${built}/${f} is there`);
    assert.deepEqual(
      readdirSync(join(dir, "runs", "models")),
      [built.split("/").at(-1)],
      "no temporary build directory left",
    );
    assert.match(stdout, /^tool-call\s+127\.0\.0\.1:\d+/m);
    assert.match(stdout, /^learner at 127\.0\.0\.1:\d+ \(pid \d+, log /m);
    assert.match(
      stdout,
      /\(tiny-qwen2 from runs\/models\/tiny-qwen2-[0-9a-f]{12}, a small randomly initialised Qwen2 .*not a pretrained LLM; warmed up for 150 supervised steps\)/,
    );
    assert.match(stdout, /not a pretrained LLM/);
    const m = stdout.match(/^weighted reward (-?\d+\.\d{4}) -> (-?\d+\.\d{4})/m);
    assert.ok(m, stdout);
    assert.ok(Number(m[2]) > Number(m[1]), `the weighted reward rose: ${m[1]} -> ${m[2]}`);
    assert.match(stdout, /mesh stopped\.$/m);
    // The learner served the built directory, a BPE tokenizer (not the byte-level builtin:tiny).
    const log = stdout.match(/^learner at \S+ \(pid \d+, log (\S+?)\)?$/m)?.[1];
    assert.ok(log && existsSync(log), stdout);
    const ready = readFileSync(log, "utf8")
      .split("\n")
      .find((l) => l.includes('"event": "listening"'));
    assert.ok(ready, `the learner's log ${log} has its listening line`);
    const served = JSON.parse(ready) as { model: string; tokenizer: string };
    assert.equal(served.model, join(dir, built));
    assert.notEqual(served.tokenizer, "byte-level");

    // The next demo reuses the built model: no interpreter is needed to resolve it.
    const said: string[] = [];
    const reused = await resolveTorchDemoModel("tiny-qwen2", join(dir, "no-python"), join(dir, "runs"), (t) =>
      said.push(t),
    );
    assert.equal(reused.model, join(dir, built));
    assert.match(
      said.join(""),
      /^model tiny-qwen2: .*tiny-qwen2-[0-9a-f]{12} \(Qwen2ForCausalLM, .*built earlier, reused\)$/m,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("reward-mesh demo --model: a path that is no model directory, or --model without --learner torch, is a usage error", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-demo-model-"));
  try {
    const port = await freePort();
    const bad = await runBin(["demo", "--learner", "torch", "--model", join(dir, "nope")], dir, port, 60_000);
    assert.equal(bad.code, 2, `${bad.stdout}\n${bad.stderr}`);
    assert.match(bad.stderr, /'--model .*nope': not a Hugging Face model directory/);
    const embedded = await runBin(["demo", "--model", "builtin:tiny"], dir, port, 60_000);
    assert.equal(embedded.code, 2, `${embedded.stdout}\n${embedded.stderr}`);
    assert.match(embedded.stderr, /'--model' is for '--learner torch'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
