/**
 * Fuzzing of the trainer's file inputs: the YAML run configuration (`loadRunConfig`), task files
 * (`parseTaskFile`) and dataset imports (`parseRecords` → `importTasks`). Each returns a result or its
 * own named error (`RunConfigError`, `TaskFileError`, `TaskImportError`) naming the key, line or
 * record. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, mutatedText, mutatedValue, toJsonText } from "@reward-mesh/sdk/testing";
import { loadRunConfig, resolveRunConfig } from "./config.js";
import { IMPORT_FORMATS, importTasks, parseRecords } from "./importers.js";
import { parseTaskFile } from "./task-file.js";

const examples = fileURLToPath(new URL("../../examples/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "run-input-fuzz-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const YAML_SEEDS = [
  readFileSync(join(examples, "tool-agent.yaml"), "utf8"),
  readFileSync(join(examples, "text-tool-call.yaml"), "utf8"),
  "components: corrgrpo-code\n",
  "components: &c [rlla-tool]\nrewardNoise: {components: *c}\nservices: {__proto__: [code]}\n",
  "components:\n  - {service: length, component: overlong, weight: .nan}\nsteps: 1e400\nrun: {seed: 0x10}\n",
];

const DOC_SEEDS: unknown[] = [
  { components: "corrgrpo-code", run: { id: "r1", seed: 3 }, groupSize: 4 },
  {
    components: ["rlla-tool", { service: "length", component: "overlong", weight: 0.5 }],
    estimator: { name: "corr_grpo", options: { coefficientSumFloor: 1 } },
    sgrpo: { p: 0.1, component: "tool-call/format" },
    services: { length: ["code"] },
    learner: { kind: "torch", warmup: { file: "w.jsonl" } },
    generation: { stop: ["</s>"] },
    rewardNoise: { p: 0.1, components: ["length/overlong"] },
  },
];

describe("fuzz: run configuration", () => {
  it("a YAML file gives a run config or a RunConfigError naming the key", () => {
    const path = join(dir, "run.yaml");
    fc.assert(
      fc.property(fc.oneof(mutatedText(YAML_SEEDS), mutatedValue(DOC_SEEDS).map(toJsonText)), (text) => {
        writeFileSync(path, text);
        const r = fuzzCall("loadRunConfig", () => loadRunConfig(path), ["RunConfigError"]);
        if (!r.ok) assert.match(r.error.message, /^'.*' \S/s);
      }),
      fuzzParameters(150),
    );
  });

  it("a parsed document gives a run config or a RunConfigError naming the key", () => {
    fc.assert(
      fc.property(mutatedValue(DOC_SEEDS), (doc) => {
        const r = fuzzCall("resolveRunConfig", () => resolveRunConfig(doc), ["RunConfigError"]);
        if (!r.ok) return;
        // Names resolve to what the config itself declares, never to Object.prototype members.
        const c = r.value;
        assert.equal(Object.getPrototypeOf(c.serviceDomains), Object.prototype);
        for (const x of c.components) {
          assert.ok(Object.hasOwn(c.serviceDomains, x.service), `service '${x.service}' is not declared`);
          assert.equal(typeof x.weight, "number");
        }
        for (const set of c.tasks.sets) assert.ok(!(set in Object.prototype), `task set '${set}'`);
      }),
      fuzzParameters(400),
    );
  });
});

const TASK_LINES = readFileSync(join(examples, "tool-call-tasks.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "");
const TASK_VALUES = TASK_LINES.map((l) => JSON.parse(l) as unknown);

describe("fuzz: task files", () => {
  it("gives tasks or a TaskFileError naming the line", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(mutatedText(TASK_LINES), mutatedValue(TASK_VALUES).map(toJsonText)), {
          minLength: 1,
          maxLength: 3,
        }),
        (lines) => {
          const r = fuzzCall("parseTaskFile", () => parseTaskFile(lines.join("\n"), "tasks.jsonl"), [
            "TaskFileError",
          ]);
          if (!r.ok) assert.match(r.error.message, /^tasks\.jsonl(:\d+)?: \S/);
        },
      ),
      fuzzParameters(300),
    );
  });
});

const RECORDS: Record<(typeof IMPORT_FORMATS)[number], unknown[]> = {
  humaneval: [
    {
      task_id: "HumanEval/0",
      prompt: "def add(a, b):\n",
      canonical_solution: "    return a + b\n",
      test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
      entry_point: "add",
    },
  ],
  mbpp: [
    {
      task_id: 11,
      text: "Write add.",
      code: "def add(a, b):\n    return a + b",
      test_list: ["assert add(1, 2) == 3"],
      test_setup_code: "",
    },
  ],
  leetcodedataset: [
    {
      task_id: "two-sum",
      problem_description: "Add.",
      starter_code: "class Solution:\n    def add(self, a, b):\n",
      prompt: "from typing import *\n",
      test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
      entry_point: "Solution().add",
      completion: "class Solution:\n    def add(self, a, b):\n        return a + b\n",
    },
  ],
  rlla: [
    {
      instruction: 'You are a helpful assistant. <tools>\n[{"name": "f"}]\n</tools>',
      input: "call f",
      output: '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1.0}}\n</tool_call>',
    },
  ],
  bfcl: [
    {
      id: "simple_0",
      question: [[{ role: "user", content: "area?" }]],
      function: [{ name: "area", parameters: { type: "dict", properties: { b: { type: "integer" } } } }],
    },
  ],
  math: [
    { problem: "What is 1 + 1?", solution: "Since 1 + 1 = 2, the answer is $\\boxed{2}$.", level: "Level 1" },
    { problem: "Simplify 2/4.", answer: "\\frac{1}{2}", unique_id: "test/prealgebra/1.json" },
  ],
  gsm8k: [{ question: "Tom has 3 apples and buys 2. How many?", answer: "3 + 2 = 5\n#### 5" }],
};
const ANSWERS = [{ id: "simple_0", ground_truth: [{ area: { b: [10] } }] }];

describe("fuzz: dataset imports", () => {
  it("records give tasks or a TaskImportError listing the bad records", () => {
    fc.assert(
      fc.property(
        fc
          .constantFrom(...IMPORT_FORMATS)
          .chain((format) =>
            fc.tuple(
              fc.constant(format),
              fc.array(
                fc.oneof(
                  mutatedValue(RECORDS[format]).map(toJsonText),
                  mutatedText(RECORDS[format].map((r) => JSON.stringify(r))),
                ),
                { minLength: 1, maxLength: 3 },
              ),
              fc.boolean(),
              mutatedValue(ANSWERS).map(toJsonText),
            ),
          ),
        ([format, lines, asArray, answers]) => {
          const text = asArray ? `[${lines.join(",")}]` : lines.join("\n");
          const records = fuzzCall("parseRecords", () => parseRecords(text), ["TaskImportError"]);
          if (!records.ok) return;
          const answerRecords = fuzzCall("parseRecords", () => parseRecords(answers), ["TaskImportError"]);
          fuzzCall(
            `importTasks(${format})`,
            () =>
              importTasks(format, records.value, answerRecords.ok ? { answers: answerRecords.value } : {}),
            ["TaskImportError"],
          );
        },
      ),
      fuzzParameters(400),
    );
  });
});
