/**
 * `math` and `gsm8k` imports: references taken the way the datasets state them (MATH's last box,
 * GSM8K's `####` number), and the imported tasks scored by the real math service.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, it } from "node:test";
import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { createMathService } from "@reward-mesh/math";
import { RolloutSchema, TaskSchema } from "@reward-mesh/proto";
import { importTasks, parseRecords, type TaskImportError } from "./importers.js";

const fixture = (f: string) =>
  parseRecords(readFileSync(new URL(`../../test/fixtures/import/${f}`, import.meta.url), "utf8"));

const math = createMathService({
  timeLimitMs: 5000,
  workers: 1,
  tolerance: 1e-6,
  lastNumberFallback: false,
  maxAnswerChars: 2000,
});
after(() => math.pool.close());

async function correct(task: JsonObject, response: string): Promise<number> {
  const rollout = create(RolloutSchema, {
    id: "r",
    runId: "run",
    groupId: "g",
    groupSize: 1,
    task: fromJson(TaskSchema, task),
    response,
  });
  const r = await math.scoreRollout(rollout);
  return r.components.find((c) => c.name === "correct")!.value;
}

describe("import --format math", () => {
  it("takes the last box of the solution (nested braces) or the answer field, and asks for a box", async () => {
    const tasks = importTasks("math", fixture("math.jsonl"));
    const answers = tasks.map((t) => ((t["math"] as JsonObject)["answers"] as string[])[0]);
    assert.deepEqual(answers, ["\\frac{5}{6}", "2", "(-1,1)"]);
    assert.deepEqual(
      tasks.map((t) => t["id"]),
      ["math-0", "math-1", "test-algebra-7.json"],
    );
    assert.match(tasks[0]!["prompt"] as string, /put your final answer within \\boxed\{\}\.$/);
    assert.equal(await correct(tasks[0]!, "So it is $\\boxed{\\dfrac{5}{6}}$."), 1);
    assert.equal(await correct(tasks[0]!, "So it is $\\boxed{\\frac{6}{5}}$."), 0);
    assert.equal(await correct(tasks[2]!, "$\\boxed{\\left(-1, 1\\right)}$"), 1);
  });

  it("names the record and field without a reference answer", () => {
    assert.throws(
      () => importTasks("math", parseRecords('{"problem": "p", "solution": "no box here"}\n')),
      (e: TaskImportError) =>
        e.name === "TaskImportError" && /line 1: 'solution' has no \\boxed\{…\} answer/.test(e.message),
    );
  });
});

describe("import --format gsm8k", () => {
  it("takes the number after #### (separators dropped) and scores #### lines strictly", async () => {
    const tasks = importTasks("gsm8k", fixture("gsm8k.jsonl"));
    const values = tasks.map((t) => t["math"] as JsonObject);
    assert.deepEqual(
      values.map((v) => [(v["answers"] as string[])[0], v["answerFormat"]]),
      [
        ["72", "gsm8k"],
        ["12000", "gsm8k"],
      ],
    );
    assert.equal(await correct(tasks[1]!, "12 * 1000 = 12000\n#### 12,000"), 1);
    // Strict like verl's default GSM8K reward: a final number without '####' is no answer.
    assert.equal(await correct(tasks[0]!, "So she sold 72 clips."), 0);
    assert.throws(
      () => importTasks("gsm8k", parseRecords('{"question": "q", "answer": "no marker"}\n')),
      /line 1: 'answer' must end with '#### <number>'/,
    );
  });
});
