/**
 * The judging pool: a worker's start-up (seconds: the TypeScript loader and mathjs) is never charged
 * to a judgement's deadline, a judgement past its deadline is answered as a timeout and the worker
 * replaced, and an idle pool never keeps a process alive.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { createJudgePool, DEFAULT_ANSWER_LIMITS, type JudgeInput } from "../src/index.js";

const input = (response: string, answer: string): JudgeInput => ({
  response,
  answers: [answer],
  answerType: "",
  answerFormat: "auto",
  tolerance: 1e-6,
  allowLastNumber: false,
  limits: DEFAULT_ANSWER_LIMITS,
});

it("charges only the judgement to the deadline, times out the rest and recovers", async () => {
  // 200 ms is far below a worker's start-up: the first judgement still succeeds.
  const pool = createJudgePool({ workers: 1, timeLimitMs: 200 });
  try {
    const first = await pool.judge(input("\\boxed{\\frac{2}{4}}", "0.5"));
    assert.equal(first.kind, "ok");
    assert.equal(first.kind === "ok" && first.judgement.correct, true);
    const slow = await pool.judge(input("\\boxed{\\binom{2000000000}{1000000000}}", "1"));
    assert.deepEqual(slow, { kind: "timeout", limitMs: 200 });
    assert.equal(pool.timeouts, 1);
    const after = await pool.judge(input("\\boxed{3}", "3"));
    assert.equal(after.kind === "ok" && after.judgement.correct, true);
  } finally {
    await pool.close();
  }
  await assert.rejects(pool.judge(input("\\boxed{1}", "1")), /the judging pool is closed/);
});

it("lets a process that created the service exit by itself", async () => {
  const index = fileURLToPath(new URL("../src/index.ts", import.meta.url));
  const script = `const m = await import(${JSON.stringify(index)}); m.createMathService(m.loadConfig({})); console.log("created");`;
  const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { timeout: 60_000 },
      (err, stdout) => resolve({ code: err ? (err.code as number | null) : 0, stdout }),
    );
    child.stdin?.end();
  });
  assert.deepEqual(out, { code: 0, stdout: "created\n" });
});

it("answers failed, never hangs, when its workers cannot start (heap limit below start-up)", async () => {
  // 8 MiB cannot hold the TypeScript loader and mathjs: every worker dies before it is ready.
  const pool = createJudgePool({ workers: 1, timeLimitMs: 1000, memoryLimitMb: 8 });
  try {
    const outcome = await pool.judge(input("\\boxed{3}", "3"));
    assert.equal(outcome.kind, "failed");
    assert.match(outcome.kind === "failed" ? outcome.reason : "", /judging workers cannot start/);
    // Later judgements are answered at once with the same reason.
    assert.equal((await pool.judge(input("\\boxed{3}", "3"))).kind, "failed");
  } finally {
    await pool.close();
  }
});
