/** `npm start`'s demo, shortened: every service up, a few training steps through the mesh, a clean stop. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "@reward-mesh/sdk";

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

it("reward-mesh demo --learner torch warms builtin:tiny up and RL raises the tool-call reward", async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "rm-demo-torch-"));
  try {
    const { code, stdout, stderr } = await runBin(["demo", "--learner", "torch"], dir, port, 400_000);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /^tool-call\s+127\.0\.0\.1:\d+/m);
    assert.match(stdout, /^learner at 127\.0\.0\.1:\d+ \(pid \d+, log /m);
    assert.match(stdout, /not a pretrained LLM/);
    const m = stdout.match(/^weighted reward (-?\d+\.\d{4}) -> (-?\d+\.\d{4})/m);
    assert.ok(m, stdout);
    assert.ok(Number(m[2]) > Number(m[1]), `the weighted reward rose: ${m[1]} -> ${m[2]}`);
    assert.match(stdout, /mesh stopped\.$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
