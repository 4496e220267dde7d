/**
 * Fuzzing of `reward-mesh eval agentdojo`'s trajectory-set parser: mutated lines and values give parsed
 * cells or a `TrajectorySetError` naming the file and line, never a crash, a hang or a polluted prototype.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, mutatedText, mutatedValue, toJsonText } from "@reward-mesh/sdk/testing";
import { parseTrajectorySet } from "./commands/eval.js";

const SEEDS = [
  {
    suite: "banking",
    user_task: "user_task_0",
    injection_task: "injection_task_5",
    attack: "important_instructions",
    trajectory: {
      calls: [{ function: "read_file", args: { file_path: "bill-december-2023.txt" } }],
      final_answer: "Paid.",
    },
  },
  {
    suite: "banking",
    user_task_id: "user_task_3",
    injection_task: null,
    response: '{"calls": [], "final_answer": ""}',
  },
  {
    suite: "slack",
    user_task: "user_task_1",
    injection_task_id: "injection_task_1",
    response: "<tool_call>{}</tool_call>",
  },
];

function check(text: string): void {
  const r = fuzzCall("parseTrajectorySet", () => parseTrajectorySet(text, "set.jsonl"), [
    "TrajectorySetError",
  ]);
  if (!r.ok) {
    assert.match(r.error.message, /^set\.jsonl:\d+: /);
    return;
  }
  for (const l of r.value) {
    assert.ok(typeof l.suite === "string" && l.suite !== "" && typeof l.userTask === "string");
    assert.equal(typeof l.response, "string");
    assert.ok(
      l.injectionTask === null ? l.attack === "" : l.attack === undefined || typeof l.attack === "string",
    );
  }
}

describe("fuzz: eval trajectory sets", () => {
  it("mutated lines parse or fail naming the line", () => {
    fc.assert(
      fc.property(mutatedText(SEEDS.map((s) => JSON.stringify(s))), (line) => check(`${line}\n`)),
      fuzzParameters(300),
    );
  });
  it("mutated values parse or fail naming the line", () => {
    fc.assert(
      fc.property(mutatedValue(SEEDS), (v) => check(`# a comment\n\n${toJsonText(v)}\n`)),
      fuzzParameters(300),
    );
  });
});
