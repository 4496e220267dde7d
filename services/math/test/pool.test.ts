/**
 * The judging pool: a worker's start-up (seconds: the TypeScript loader and mathjs) is never charged
 * to a judgement's deadline, a judgement past its deadline is answered as a timeout and the worker
 * replaced, and an idle pool never keeps a process alive.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { create, fromJson } from "@bufbuild/protobuf";
import { ComponentStatus, RolloutSchema, TaskSchema } from "@reward-mesh/proto";
import { createJudgePool, createMathService, DEFAULT_ANSWER_LIMITS, type JudgeInput } from "../src/index.js";

const input = (response: string, answer: string): JudgeInput => ({
  response,
  answers: [answer],
  answerType: "",
  answerFormat: "auto",
  tolerance: 1e-6,
  allowLastNumber: false,
  limits: DEFAULT_ANSWER_LIMITS,
});

it("charges only the judgement to the deadline, times out the rest and recovers", async (t) => {
  // 3 s is below a worker's start-up (~6 s measured): the first judgement still succeeds. It is wide
  // enough for a judgement on a fresh worker (the one after the timeout) on a loaded machine; the binomial
  // below takes ~30 s.
  const pool = createJudgePool({ workers: 1, timeLimitMs: 3_000 });
  try {
    const t0 = Date.now();
    const first = await pool.judge(input("\\boxed{\\frac{2}{4}}", "0.5"));
    // The worker's start-up was longer than the limit here, or the first check proved nothing: say which.
    if (Date.now() - t0 < 3_000)
      t.diagnostic(
        `the worker started and judged in ${Date.now() - t0} ms, under the 3 s limit: start-up not exercised`,
      );
    assert.equal(first.kind, "ok");
    assert.equal(first.kind === "ok" && first.judgement.correct, true);
    const slow = await pool.judge(input("\\boxed{\\binom{2000000000}{1000000000}}", "1"));
    assert.deepEqual(slow, { kind: "timeout", limitMs: 3_000 });
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

it("answers failed, never hangs, when its workers cannot start; the service scores that as ERROR", async () => {
  // 8 MiB cannot hold the TypeScript loader and mathjs: every worker dies before it is ready.
  const math = createMathService({
    timeLimitMs: 1000,
    workers: 1,
    tolerance: 1e-6,
    lastNumberFallback: false,
    maxAnswerChars: 2000,
    memoryLimitMb: 8,
  });
  try {
    const rollout = create(RolloutSchema, {
      id: "r",
      runId: "run",
      groupId: "g",
      groupSize: 1,
      task: fromJson(TaskSchema, { math: { problem: "p", answers: ["3"] } }),
      response: "\\boxed{3}",
    });
    const scored = await math.scoreRollout(rollout);
    const correct = scored.components.find((c) => c.name === "correct")!;
    assert.equal(correct.value, 0);
    assert.equal(correct.status, ComponentStatus.ERROR);
    assert.match(correct.details, /judging workers cannot start/);
    // Later judgements are answered at once with the same reason.
    const again = await math.pool.judge(input("\\boxed{3}", "3"));
    assert.equal(again.kind, "failed");
  } finally {
    await math.pool.close();
  }
});
