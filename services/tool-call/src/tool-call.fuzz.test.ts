/**
 * Fuzzing of everything the tool-call service parses: model responses (RLLA `<tool_call>` blocks, BFCL
 * JSON call lists, Python-semantics JSON) and the task fields that arrive over the wire (gold arguments,
 * possible answers, tool schemas). Fixed seed, bounded runs (`@reward-mesh/sdk/testing` fuzz helpers).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  fuzzCall,
  fuzzCallAsync,
  fuzzParameters,
  makeRollout,
  mutatedText,
  nastyString,
} from "@reward-mesh/sdk/testing";
import { checkBfcl, decodeJsonCalls, parsePossibleAnswers, scoreBfcl } from "./bfcl.js";
import { pyEquals, pyJsonLoads, pyRepr, toPlain } from "./py-json.js";
import { checkRllaFormat, extractAssistantText, extractRllaCalls, scoreRllaCalls } from "./rlla.js";
import { createToolCallService, parseToolCallTask } from "./service.js";

const GOLD_ARGS = ['{"page": "1"}', '{"city": "SF", "days": 3, "units": {"t": "c"}}', "", "{}"];

const JSON_SEEDS = [
  ...GOLD_ARGS.filter((s) => s !== ""),
  '[{"name": "get_weather", "arguments": {"city": "SF"}}]',
  '[{"get_weather": {"city": "SF", "days": 3.0}}]',
  '{"name": "f", "arguments": "{\\"x\\": [1, 2.5, -3e2, true, null]}"}',
  '[1, -0, 1e400, NaN, -Infinity, "\\ud83d\\ude00", "\\u0000"]',
];

const RLLA_RESPONSES = [
  '<think>fetch the news</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "1"}}\n</tool_call>',
  '<|im_start|>assistant\n<think>two calls</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "2"}}\n{"name": "Weather", "parameters": {"city": "SF"}}\n</tool_call>\n<response>Done.</response><|im_end|>',
  "<think>no tool needed here</think>\n<response>Hi!</response>",
  '<|start_header_id|>assistant<|end_header_id|><think>x</think><tool_call>\n{"name": "a"}\n</tool_call><|eot_id|>',
];

const JSON_RESPONSES = [
  '[{"name": "get_weather", "arguments": {"city": "San Francisco", "days": 3}}]',
  '<think>reasoning</think>```json\n[{"get_weather": {"city": "SF"}}]\n```',
  '{"name": "get_weather", "arguments": "{\\"city\\": \\"SF\\"}"}',
  "[]",
];

const POSSIBLE_ANSWERS = [
  '[{"get_weather": {"city": ["San Francisco", "SF"], "days": [3, ""]}}]',
  '{"id": "x", "ground_truth": [{"f": {"a": [1, 1.0]}}, {"g": {}}]}',
  "[]",
];

const TOOLS = [
  '[{"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["city"]}}]',
  '{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"type": "float"}}}}}',
  "",
];

const GOLD = [
  {
    name: "GetNews",
    parameters: pyJsonLoads('{"page": "1"}') as Map<string, never>,
  },
];

describe("fuzz: py-json (json.loads with Python semantics)", () => {
  it("returns a value or throws PyJsonError; the value can be printed and compared", () => {
    fc.assert(
      fc.property(mutatedText(JSON_SEEDS), (text) => {
        const r = fuzzCall("pyJsonLoads", () => pyJsonLoads(text), ["PyJsonError"]);
        if (!r.ok) return;
        fuzzCall("pyRepr / toPlain / pyEquals", () => {
          pyRepr(r.value);
          toPlain(r.value);
          pyEquals(r.value, r.value);
        });
      }),
      fuzzParameters(400),
    );
  });
});

describe("fuzz: RLLA responses", () => {
  it("format check, call extraction and scoring never throw", () => {
    fc.assert(
      fc.property(
        mutatedText([...RLLA_RESPONSES, ...JSON_SEEDS]),
        fc.boolean(),
        fc.constantFrom("corrgrpo" as const, "toolrl" as const),
        (response, noThink, style) => {
          const text = fuzzCall("extractAssistantText", () => extractAssistantText(response));
          assert.ok(text.ok);
          for (const shape of [
            { toolCall: true, response: false },
            { toolCall: true, response: true },
            { toolCall: false, response: true },
            { toolCall: false, response: false },
          ])
            fuzzCall("checkRllaFormat", () =>
              checkRllaFormat(text.value, shape, { style, allowMissingOpeningThink: noThink }),
            );
          const calls = fuzzCall("extractRllaCalls", () => extractRllaCalls(text.value, 16));
          assert.ok(calls.ok);
          if (calls.value.ok) {
            const scored = fuzzCall("scoreRllaCalls", () =>
              scoreRllaCalls(GOLD, calls.value.ok ? calls.value.calls : []),
            );
            assert.ok(
              scored.ok && [scored.value.functionName, scored.value.toolRlTotal].every(Number.isFinite),
            );
          }
        },
      ),
      fuzzParameters(400),
    );
  });
});

describe("fuzz: BFCL JSON responses", () => {
  const task = parseToolCallTask({
    $typeName: "rewardmesh.v1.ToolCallTask",
    format: "json",
    groundTruth: [],
    expectedResponse: "",
    possibleAnswersJson: POSSIBLE_ANSWERS[0]!,
    toolsJson: TOOLS[0]!,
  });
  it("decoding and the AST check never throw", () => {
    fc.assert(
      fc.property(mutatedText([...JSON_RESPONSES, ...JSON_SEEDS]), (response) => {
        const decoded = fuzzCall("decodeJsonCalls", () => decodeJsonCalls(response, 16));
        assert.ok(decoded.ok);
        if (decoded.value.ok) {
          const calls = decoded.value.calls;
          const s = fuzzCall("scoreBfcl", () => scoreBfcl(task.schemas, calls, task.answers));
          assert.ok(s.ok && Number.isFinite(s.value.parameterValue));
        }
      }),
      fuzzParameters(400),
    );
  });
});

describe("fuzz: BFCL schema types", () => {
  const KNOWN = [
    "string",
    "integer",
    "float",
    "number",
    "boolean",
    "array",
    "tuple",
    "dict",
    "object",
    "any",
  ];
  it("a type BFCL does not know is checked like a missing type (the possible answer's type)", () => {
    fc.assert(
      fc.property(
        nastyString(12).filter((t) => !KNOWN.includes(t)),
        fc.constantFrom('"x"', "3", "2.5", "[1]", '{"k": ["v"]}', "true"),
        (type, value) => {
          const schema = (t: string | undefined) =>
            new Map([
              ["f", { name: "f", properties: new Map([["a", { type: t, itemsType: t }]]), required: [] }],
            ]);
          const answers = parsePossibleAnswers(`[{"f": {"a": [${value}]}}]`);
          const call = { name: "f", args: pyJsonLoads(`{"a": ${value}}`) as Map<string, never> };
          const unknown = fuzzCall("checkBfcl", () => checkBfcl(schema(type), [call], answers));
          const missing = checkBfcl(schema(undefined), [call], answers);
          assert.ok(unknown.ok);
          assert.deepEqual(unknown.value.valid, missing.valid, `type ${JSON.stringify(type)}`);
        },
      ),
      fuzzParameters(200),
    );
  });
});

type TaskFields = {
  format: string;
  argumentsJson: string;
  possibleAnswersJson: string;
  toolsJson: string;
};

const taskFields: fc.Arbitrary<TaskFields> = fc.record({
  format: fc.constantFrom("rlla", "json", "", "JSON", "__proto__"),
  argumentsJson: mutatedText([...GOLD_ARGS, ...JSON_SEEDS]),
  possibleAnswersJson: mutatedText(POSSIBLE_ANSWERS),
  toolsJson: mutatedText(TOOLS),
});

/** Task fields that parse, so that the response (not the task) is what is fuzzed. */
const validTaskFields: fc.Arbitrary<TaskFields> = fc.record({
  format: fc.constantFrom("rlla", "json"),
  argumentsJson: fc.constantFrom(...GOLD_ARGS),
  possibleAnswersJson: fc.constantFrom(...POSSIBLE_ANSWERS),
  toolsJson: fc.constantFrom(...TOOLS),
});

function toolCallRollout(response: string, f: TaskFields) {
  return makeRollout({
    response,
    task: {
      id: "t",
      kind: {
        case: "toolCall",
        value: {
          format: f.format,
          groundTruth: [{ name: "get_weather", argumentsJson: f.argumentsJson }],
          possibleAnswersJson: f.possibleAnswersJson,
          toolsJson: f.toolsJson,
        },
      },
    },
  });
}

describe("fuzz: tool-call task fields (wire input)", () => {
  it("parseToolCallTask returns a task or throws InvalidArgumentError naming the field", () => {
    fc.assert(
      fc.property(taskFields, (f) => {
        const rollout = toolCallRollout("", f);
        const r = fuzzCall("parseToolCallTask", () => parseToolCallTask(rollout.task!.kind.value as never), [
          "InvalidArgumentError",
        ]);
        if (!r.ok) assert.match(r.error.message, /^'rollout\.task\.tool_call\.[a-z_[\]0-9.]+' \S/);
      }),
      fuzzParameters(400),
    );
  });

  it("the service scores any response within the declared ranges, or refuses the task", async () => {
    const svc = createToolCallService();
    const range = new Map(svc.components.map((c) => [c.name, c]));
    await fc.assert(
      fc.asyncProperty(
        mutatedText([...RLLA_RESPONSES, ...JSON_RESPONSES]),
        fc.oneof({ arbitrary: validTaskFields, weight: 4 }, { arbitrary: taskFields, weight: 1 }),
        async (response, f) => {
          const r = await fuzzCallAsync(
            "scoreRollout",
            () => svc.scoreRollout(toolCallRollout(response, f)),
            ["InvalidArgumentError"],
          );
          if (!r.ok) return;
          for (const c of r.value.components) {
            const d = range.get(c.name)!;
            assert.ok(
              c.value >= d.min && c.value <= d.max,
              `${c.name} = ${c.value} outside [${d.min}, ${d.max}]`,
            );
          }
        },
      ),
      fuzzParameters(300),
    );
  });
});
