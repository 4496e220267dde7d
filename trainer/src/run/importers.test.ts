/**
 * Importers: dataset records → task files that `loadTaskFile` accepts, with the fields the services
 * score on; bad records are all reported by line and field, and nothing is written.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { create, fromJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { RolloutSchema, type Task, TaskSchema } from "@reward-mesh/proto";
import { createToolCallService } from "@reward-mesh/tool-call";
import {
  type ImportFormat,
  importTaskFile,
  importTasks,
  MAX_REPORTED_ISSUES,
  parseRecords,
  readRecordFile,
  type SourceRecord,
  TaskImportError,
} from "./importers.js";
import { loadTaskFile } from "./task-file.js";

const fixtures = fileURLToPath(new URL("../../test/fixtures/import/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "importers-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Imports a fixture file into a task file and loads it back, checking every line parses as a Task. */
function roundTrip(format: ImportFormat, file: string, answers?: string): Task[] {
  const out = join(dir, `${format}.jsonl`);
  const { count } = importTaskFile(format, join(fixtures, file), out, {
    ...(answers ? { answersPath: join(fixtures, answers) } : {}),
  });
  const lines = readFileSync(out, "utf8").split("\n");
  assert.match(
    lines[0]!,
    new RegExp(`^# reward-mesh tasks import --format ${format}: ${count} tasks from ${file}`),
  );
  const tasks = lines.slice(1, -1).map((l) => fromJson(TaskSchema, JSON.parse(l) as JsonObject));
  assert.equal(tasks.length, count);
  assert.deepEqual(
    loadTaskFile(out).map((t) => t.id),
    tasks.map((t) => t.id),
  );
  return tasks;
}

function codeOf(t: Task) {
  assert.equal(t.kind.case, "code");
  return t.kind.value as Extract<Task["kind"], { case: "code" }>["value"];
}
function toolCallOf(t: Task) {
  assert.equal(t.kind.case, "toolCall");
  return t.kind.value as Extract<Task["kind"], { case: "toolCall" }>["value"];
}

/** The TaskImportError `fn` throws. */
function importErrorOf(fn: () => unknown): TaskImportError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof TaskImportError, `expected a TaskImportError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the import to fail");
}

const records = (...values: unknown[]): SourceRecord[] =>
  values.map((value, i) => ({ location: `line ${i + 1}`, value }));

/** Runs each task as code-exec does (`prompt`, reference solution, `test`, `check(entry_point)`), in one python3. */
function failingReferences(tasks: readonly Task[]): string | null {
  const programs = tasks.map((t) => {
    const c = codeOf(t);
    return [t.id, [c.prompt, c.referenceSolution, c.test, `check(${c.entryPoint})`].join("\n\n")];
  });
  const script = [
    "import json, sys",
    "for name, src in json.load(sys.stdin):",
    "    try:",
    "        exec(compile(src, name, 'exec'), {'__name__': '__main__'})",
    "    except BaseException as e:",
    "        print(f'{name}: {type(e).__name__}: {e}')",
  ].join("\n");
  try {
    return execFileSync("python3", ["-c", script], {
      input: JSON.stringify(programs),
      encoding: "utf8",
      timeout: 30_000,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

describe("importTasks: code datasets", () => {
  it("humaneval: the prompt, test and entry point; the id with '/' sanitised", () => {
    const tasks = roundTrip("humaneval", "humaneval.jsonl");
    assert.deepEqual(
      tasks.map((t) => t.id),
      ["Fixture-0", "Fixture-1"],
    );
    const record = JSON.parse(readFileSync(join(fixtures, "humaneval.jsonl"), "utf8").split("\n")[0]!);
    const c = codeOf(tasks[0]!);
    assert.equal(c.language, "python");
    assert.equal(c.prompt, record.prompt);
    assert.equal(c.test, record.test);
    assert.equal(c.entryPoint, "running_max");
    assert.equal(c.referenceSolution, record.prompt + record.canonical_solution);
    assert.match(
      tasks[0]!.prompt,
      /^Complete the following Python function\..*```python code block\.\n\n```python\n/s,
    );
    assert.ok(tasks[0]!.prompt.includes(record.prompt));
    assert.equal(tasks[0]!.messages.length, 0);
  });

  it("mbpp: the asserts inside check(candidate) with the called function bound; the paper's prompt", () => {
    const tasks = roundTrip("mbpp", "mbpp.jsonl");
    assert.deepEqual(
      tasks.map((t) => t.id),
      ["mbpp-9001", "mbpp-9002"],
    );
    const [vowels, area] = tasks.map(codeOf);
    assert.equal(vowels!.entryPoint, "count_vowels");
    assert.equal(
      vowels!.test,
      "def check(candidate):\n    count_vowels = candidate\n    assert count_vowels('banana') == 3\n" +
        "    assert count_vowels('xyz') == 0\n    assert count_vowels('AEIOU') == 5\n",
    );
    assert.equal(
      vowels!.referenceSolution,
      "def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiou')",
    );
    // A helper is defined first, but the asserts call circle_area; the setup code comes first.
    assert.equal(area!.entryPoint, "circle_area");
    assert.match(
      area!.test,
      /^import math\n\ndef check\(candidate\):\n {4}circle_area = candidate\n {4}assert math\.isclose/,
    );
    assert.ok(!area!.test.includes("circle_area(0)"), "challenge_test_list is not used");
    assert.equal(
      tasks[0]!.prompt,
      "You are an expert Python programmer, and here is your task: Write a function to count the vowels in a string. " +
        "Your code should pass these tests:\n\nassert count_vowels('banana') == 3\nassert count_vowels('xyz') == 0\n" +
        "assert count_vowels('AEIOU') == 5\n\nAnswer with the code in a ```python code block.\n",
    );
  });

  it("leetcodedataset: the imports preamble, check(candidate), a method entry point", () => {
    const tasks = roundTrip("leetcodedataset", "leetcodedataset.jsonl");
    assert.deepEqual(
      tasks.map((t) => t.id),
      ["sum-of-evens", "reverse-words"],
    );
    const c = codeOf(tasks[0]!);
    assert.equal(c.entryPoint, "Solution().sumOfEvens");
    assert.equal(c.prompt, "import collections\nfrom typing import *\n\ninf = float('inf')\n");
    assert.match(c.referenceSolution, /^class Solution:\n {4}def sumOfEvens/);
    assert.match(c.test, /^def check\(candidate\):\n {4}assert candidate\(nums = \[1,2,3,4\]\) == 6/);
    const prompt = tasks[0]!.prompt;
    assert.ok(prompt.includes("Given an integer array nums, return the sum of its even elements."));
    assert.ok(
      prompt.includes("```python\nclass Solution:\n    def sumOfEvens(self, nums: List[int]) -> int:\n```"),
    );
  });

  it("the reference solutions pass the tests as code-exec runs them", (t) => {
    const tasks = [
      ...roundTrip("humaneval", "humaneval.jsonl"),
      ...roundTrip("mbpp", "mbpp.jsonl"),
      ...roundTrip("leetcodedataset", "leetcodedataset.jsonl"),
    ];
    const failures = failingReferences(tasks);
    if (failures === null) t.skip("no python3");
    else assert.equal(failures, "");
  });

  it("mbpp's sanitized shape (prompt, test_imports) is read too", () => {
    const [t] = importTasks(
      "mbpp",
      records({
        task_id: 7,
        prompt: "Write a function to return the square root of x rounded to 2 places.",
        code: "import math\ndef root2(x):\n    return round(math.sqrt(x), 2)\n",
        test_imports: ["import math"],
        test_list: ["assert math.isclose(root2(2), 1.41)"],
      }),
    );
    const c = codeOf(fromJson(TaskSchema, t!));
    assert.equal(c.entryPoint, "root2");
    assert.match(c.test, /^import math\n\ndef check\(candidate\):\n {4}root2 = candidate\n/);
  });
});

describe("importTasks: tool-call datasets", () => {
  const svc = createToolCallService();
  const score = async (t: Task, response: string) => {
    const r = await svc.scoreRollout(
      create(RolloutSchema, {
        id: "r",
        runId: "t",
        groupId: "g",
        groupSize: 1,
        task: t as MessageInitShape<typeof RolloutSchema>["task"],
        response,
      }),
    );
    return Object.fromEntries(r.components.map((c) => [c.name, c.value]));
  };

  it("rlla: chat messages, gold calls (several per turn), the <response>, tools from the system prompt", async () => {
    const tasks = roundTrip("rlla", "rlla.json");
    assert.deepEqual(
      tasks.map((t) => t.id),
      ["rlla-0", "rlla-1", "rlla-2"],
    );
    const source = JSON.parse(readFileSync(join(fixtures, "rlla.json"), "utf8")) as Array<
      Record<string, string>
    >;
    for (const [i, t] of tasks.entries()) {
      assert.deepEqual(
        t.messages.map((m) => [m.role, m.content]),
        [
          ["system", source[i]!["instruction"]],
          ["user", source[i]!["input"]],
        ],
      );
      assert.equal(toolCallOf(t).format, "rlla");
    }
    const multi = toolCallOf(tasks[1]!);
    assert.deepEqual(
      multi.groundTruth.map((g) => [g.name, g.argumentsJson]),
      [
        ["stock_quote", '{"symbol":"ACME"}'],
        ["company_news", '{"symbol":"ACME","limit":2}'],
      ],
    );
    assert.equal(multi.expectedResponse, "I am fetching the price and the latest news for ACME.");
    assert.deepEqual(
      (JSON.parse(multi.toolsJson) as Array<{ name: string; parameters: object }>).map((f) => f.name),
      ["stock_quote", "company_news"],
    );
    assert.deepEqual((JSON.parse(multi.toolsJson) as Array<{ parameters: object }>)[1]!.parameters, {
      symbol: { description: "Ticker symbol.", type: "string", default: "" },
      limit: { description: "How many items.", type: "int", default: "5" },
    });
    const responseOnly = toolCallOf(tasks[2]!);
    assert.deepEqual(responseOnly.groundTruth, []);
    assert.equal(responseOnly.expectedResponse, "You're welcome!");
    // The dataset's own gold turn is a perfect answer for the tool-call service.
    for (const [i, t] of tasks.slice(0, 2).entries()) {
      const s = await score(t, source[i]!["output"]!);
      assert.equal(s["exact_match"], 1, `${t.id}: ${JSON.stringify(s)}`);
      assert.equal(s["format"], 1);
    }
    assert.equal((await score(tasks[2]!, source[2]!["output"]!))["format"], 1);
  });

  it("rlla: numbers reach argumentsJson as written; the verl row shape is read too", () => {
    const big = '{"name": "pay", "parameters": {"account": 12345678901234567890, "amount": 2.0}}';
    const [t] = importTasks(
      "rlla",
      records({
        prompt: [
          { role: "system", content: "1. Name: pay\nDescription: Pay.\nParameters: not json" },
          { role: "user", content: "Pay 2 to my account." },
        ],
        reward_model: { style: "rule", ground_truth: `<think>x</think>\n<tool_call>\n${big}\n</tool_call>` },
        extra_info: { index: 17, split: "train" },
      }),
    );
    const task = fromJson(TaskSchema, t!);
    assert.equal(task.id, "rlla-17");
    assert.equal(
      toolCallOf(task).groundTruth[0]!.argumentsJson,
      '{"account":12345678901234567890,"amount":2.0}',
    );
    assert.equal(toolCallOf(task).toolsJson, '[{"name":"pay","description":"Pay.","parameters":"not json"}]');
  });

  it("bfcl: functions in a system message, possible answers as written, irrelevance expects no call", async () => {
    const tasks = roundTrip("bfcl", "bfcl.json", "bfcl-answers.json");
    assert.deepEqual(
      tasks.map((t) => t.id),
      ["simple_900", "parallel_900", "irrelevance_900"],
    );
    const [simple, parallel, irrelevance] = tasks.map(toolCallOf);
    assert.equal(simple!.format, "json");
    assert.equal(
      simple!.possibleAnswersJson,
      '[{"geometry.rectangle_area":{"width":[4.0],"height":[7.0],"unit":["m","metres",""]}}]',
    );
    assert.equal(JSON.parse(simple!.toolsJson)[0].name, "geometry.rectangle_area");
    // Shown as BFCL's function-calling models see it (underscore_to_dot): the name the service expects.
    assert.ok(tasks[0]!.messages[0]!.content.includes('"name":"geometry_rectangle_area"'));
    assert.ok(!tasks[0]!.messages[0]!.content.includes("geometry.rectangle_area"));
    assert.equal(irrelevance!.possibleAnswersJson, "[]");
    assert.equal(parallel!.groundTruth.length, 0);
    // The functions are shown to the policy; a system message of the record follows the instructions.
    const [system, user] = tasks[1]!.messages;
    assert.equal(system!.role, "system");
    assert.ok(system!.content.includes(parallel!.toolsJson));
    assert.ok(system!.content.endsWith("\n\nAnswer briefly."));
    assert.equal(user!.content, "Convert 10 EUR to USD and 20 GBP to JPY.");
    assert.deepEqual(
      tasks[0]!.messages.map((m) => m.role),
      ["system", "user"],
    );
    // Correct answers score exact_match 1 on the tool-call service.
    const right = [
      '[{"name": "geometry_rectangle_area", "arguments": {"width": 4, "height": 7}}]',
      '[{"convert_currency": {"amount": 20, "source": "GBP", "target": "JPY"}}, {"convert_currency": {"amount": 10, "source": "EUR", "target": "USD"}}]',
      "[]",
    ];
    for (const [i, t] of tasks.entries()) {
      assert.equal((await score(t, right[i]!))["exact_match"], 1, t.id);
    }
    assert.equal(
      (await score(tasks[0]!, '[{"geometry_rectangle_area": {"width": 5, "height": 7}}]'))["exact_match"],
      0,
    );
  });
});

describe("importTasks: bad records", () => {
  const he = { task_id: "X/1", prompt: "def f():\n", canonical_solution: "    return 1\n", entry_point: "f" };
  const test = "def check(candidate):\n    assert candidate() == 1\n";

  it("reports every bad record by line and field, all or nothing", () => {
    const err = importErrorOf(() =>
      importTasks(
        "humaneval",
        records(
          { ...he, test },
          { ...he, task_id: "X/2", test, entry_point: 42 },
          [1, 2],
          { ...he, task_id: "X/3", test: "assert f() == 1\n" },
          { ...he, test },
          { ...he, task_id: "X/4", test, entry_point: "not a name" },
        ),
      ),
    );
    assert.deepEqual(
      err.issues.map((i) => [i.location, i.field]),
      [
        ["line 2", "entry_point"],
        ["line 3", null],
        ["line 4", "test"],
        ["line 5", "id"],
        ["line 6", "entry_point"],
      ],
    );
    assert.equal(
      err.message,
      [
        "5 bad records:",
        "  line 2: 'entry_point' must be a non-empty string, got 42",
        "  line 3: not a JSON object: a list",
        "  line 4: 'test' must define check(candidate)",
        `  line 5: 'id' gives the id of line 1 again: "X-1"`,
        `  line 6: 'entry_point' must be a Python identifier, got "not a name"`,
      ].join("\n"),
    );
  });

  it("names the problem of each format's record", () => {
    const cases: Array<[ImportFormat, unknown, string]> = [
      [
        "mbpp",
        { task_id: 1, text: "t", code: "def g(x):\n    return x\n", test_list: [] },
        "'test_list' must not be empty",
      ],
      [
        "mbpp",
        { task_id: 1, text: "t", code: "def g(x):\n    return x\n", test_list: ["assert h(1) == 1"] },
        "'test_list' calls none of the functions 'code' defines (g)",
      ],
      [
        "mbpp",
        { task_id: 1, text: "t", code: "x = 1", test_list: ["print(1)"] },
        "'test_list[0]' must be an assert statement",
      ],
      [
        "mbpp",
        { task_id: null, text: "t", code: "x", test_list: [] },
        "'task_id' must be an integer or a non-empty string, got null",
      ],
      [
        "leetcodedataset",
        { task_id: "a", test, entry_point: "Solution().f", prompt: "" },
        "'problem_description' must be a non-empty string (or give 'query')",
      ],
      [
        "leetcodedataset",
        { task_id: "a", test, entry_point: "Solution(1).f" },
        "'entry_point' must be a Python name like Solution().twoSum",
      ],
      [
        "rlla",
        { instruction: "s", input: "u", output: '<tool_call>\n{"name": "f"}\n' },
        "'output' has <tool_call> without </tool_call>",
      ],
      [
        "rlla",
        { instruction: "s", input: "u", output: "<tool_call>\nf(x=1)\n</tool_call>" },
        "'output' <tool_call> line 1 is not JSON",
      ],
      [
        "rlla",
        {
          instruction: "s",
          input: "u",
          output: '<tool_call>\n{"name": "f", "parameters": [1]}\n</tool_call>',
        },
        `'output' <tool_call> line 1: "parameters" must be an object, got a list`,
      ],
      [
        "rlla",
        { instruction: "s", input: "u", output: "<tool_call>\n\n</tool_call>" },
        "'output' has an empty <tool_call> block",
      ],
      [
        "rlla",
        { instruction: "s", input: "", output: "<response>x</response>" },
        "'input' must be a non-empty string",
      ],
      [
        "bfcl",
        {
          id: "multi_turn_base_1",
          question: [[{ role: "user", content: "a" }], [{ role: "user", content: "b" }]],
          function: [],
        },
        "'question' has 2 turns; only single-turn BFCL categories can be imported",
      ],
      [
        "bfcl",
        { id: "simple_1", question: [[{ role: "bot", content: "a" }]], function: [] },
        "'question[0][0].role' must be one of system, user, assistant, tool, got \"bot\"",
      ],
      [
        "bfcl",
        {
          id: "simple_1",
          question: [[{ role: "user", content: "a" }]],
          function: [{ description: "no name" }],
        },
        "'function[0].name' must be a non-empty string, got nothing",
      ],
      [
        "bfcl",
        { id: "simple_1", question: [[{ role: "user", content: "a" }]], function: [] },
        `'id' has no possible answer (give the BFCL possible_answer file with --answers): "simple_1"`,
      ],
    ];
    for (const [format, record, message] of cases) {
      const err = importErrorOf(() => importTasks(format, records(record)));
      assert.ok(
        err.message.startsWith(`line 1: ${message}`),
        `${format}: ${err.message}\n  expected: ${message}`,
      );
    }
  });

  it("reports bad answer records and lists at most 20 issues", () => {
    const err = importErrorOf(() =>
      importTasks("bfcl", [], {
        answers: records({ id: "a", ground_truth: {} }, { id: "b", ground_truth: [1] }),
      }),
    );
    assert.deepEqual(
      err.issues.map((i) => `${i.location}: ${i.message}`),
      [
        "line 1: 'ground_truth' must be a list, got an object",
        "line 2: 'ground_truth[0]' must be a JSON object, got 1",
      ],
    );
    const many = importErrorOf(() =>
      importTasks("humaneval", records(...Array.from({ length: 25 }, () => ({})))),
    );
    assert.equal(many.issues.length, 25);
    const lines = many.message.split("\n");
    assert.equal(lines[0], "25 bad records:");
    assert.equal(lines.length, 1 + MAX_REPORTED_ISSUES + 1);
    assert.equal(lines.at(-1), "  ... and 5 more");
    assert.equal(importErrorOf(() => importTasks("mbpp", [])).message, "input: has no records");
  });
});

describe("record files and importTaskFile", () => {
  it("reads JSONL and JSON arrays, naming lines and records; invalid JSON lines are all reported", () => {
    assert.deepEqual(
      parseRecords('\n{"a": 1}\n\n{"a": 2}\n').map((r) => [r.location, r.value]),
      [
        ["line 2", { a: 1 }],
        ["line 4", { a: 2 }],
      ],
    );
    assert.deepEqual(
      parseRecords('[{"a": 1},\n {"a": 2.0}]', { source: "x.json" }).map((r) => [r.location, r.text]),
      [
        ["x.json record 1", '{"a": 1}'],
        ["x.json record 2", '{"a": 2.0}'],
      ],
    );
    const err = importErrorOf(() => parseRecords('{"a": 1}\n{oops\n{"b": \n', { source: "in.jsonl" }));
    assert.deepEqual(
      err.issues.map((i) => i.location),
      ["in.jsonl:2", "in.jsonl:3"],
    );
    assert.match(err.issues[0]!.message, /^not valid JSON \(/);
    assert.deepEqual(
      parseRecords('{"a": 1}\n{"a": 2}\n{oops\n', { limit: 2 }).map((r) => r.value),
      [{ a: 1 }, { a: 2 }],
    );
    assert.equal(
      importErrorOf(() => readRecordFile(join(dir, "none.jsonl"))).issues[0]!.message,
      "cannot be read (ENOENT)",
    );
  });

  it("writes nothing when a record is bad, and leaves an existing output untouched", () => {
    const input = join(dir, "bad-in.jsonl");
    const good = readFileSync(join(fixtures, "humaneval.jsonl"), "utf8");
    writeFileSync(input, `${good}{"task_id": "Fixture/9", "prompt": "def g():\\n"}\n`);
    const out = join(dir, "bad-out.jsonl");
    const err = importErrorOf(() => importTaskFile("humaneval", input, out));
    assert.equal(err.message, `${input}:3: 'test' must be a non-empty string, got nothing`);
    assert.ok(!existsSync(out));
    writeFileSync(out, "previous\n");
    importErrorOf(() => importTaskFile("humaneval", input, out));
    assert.equal(readFileSync(out, "utf8"), "previous\n");
    // A good import replaces it; no temporary file is left behind.
    assert.equal(importTaskFile("humaneval", input, out, { limit: 2 }).count, 2);
    assert.equal(loadTaskFile(out).length, 2);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith(".tmp")),
      [],
    );
    assert.equal(
      importErrorOf(() => importTaskFile("humaneval", input, input)).message,
      `${input}: is the input file`,
    );
  });
});
