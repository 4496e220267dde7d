import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ComponentStatus, type RewardResult } from "@reward-mesh/proto";
import type { ConfigError } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { DEFAULT_TOOL_CALL_OPTIONS, loadConfig } from "./config.js";
import { createToolCallService, ToolCallMetadata } from "./service.js";

const svc = createToolCallService();

type Task = {
  format?: string;
  groundTruth?: { name: string; argumentsJson: string }[];
  expectedResponse?: string;
  possibleAnswersJson?: string;
  toolsJson?: string;
};

function rollout(response: string, task: Task, metadata: Record<string, string> = {}) {
  return makeRollout({ response, metadata, task: { id: "t", kind: { case: "toolCall", value: task } } });
}

const byName = (r: RewardResult) => Object.fromEntries(r.components.map((c) => [c.name, c]));
const values = (r: RewardResult) => r.components.map((c) => c.value);

const NEWS = { format: "rlla", groundTruth: [{ name: "GetNews", argumentsJson: '{"page": "1"}' }] };
const newsCall = (page: string) =>
  `<think>fetch</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "${page}"}}\n</tool_call>`;

describe("tool-call service: rlla", () => {
  it("scores the worked example of the spec", async () => {
    const r = await svc.scoreRollout(rollout(newsCall("2"), NEWS));
    assert.deepEqual(
      r.components.map((c) => [c.name, c.value]),
      [
        ["format", 1],
        ["function_name", 0.5],
        ["parameter_name", 1],
        ["parameter_value", -1.5],
        ["exact_match", 0],
      ],
    );
    assert.match(byName(r)["exact_match"]!.details, /ToolRL R_correct=1$/);
  });

  it("an exact answer gets every maximum; the chat template is cut away", async () => {
    const r = await svc.scoreRollout(rollout(`<|im_start|>assistant\n${newsCall("1")}<|im_end|>`, NEWS));
    assert.deepEqual(values(r), [1, 0.5, 1, 1.5, 1]);
  });

  it("requires the <response> block iff the task has an expected response", async () => {
    const both = { ...NEWS, expectedResponse: "Here is the news." };
    assert.equal(byName(await svc.scoreRollout(rollout(newsCall("1"), both)))["format"]!.value, 0);
    const r = await svc.scoreRollout(rollout(`${newsCall("1")}\n<response>Here.</response>`, both));
    assert.equal(byName(r)["format"]!.value, 1);
  });

  it("a gold without tool call: correctness NOT_APPLICABLE with 0 (CorrGRPO gives 0)", async () => {
    const r = await svc.scoreRollout(
      rollout("<think>no tool needed</think>\n<response>Hi!</response>", {
        format: "rlla",
        expectedResponse: "Hi",
      }),
    );
    assert.deepEqual(values(r), [1, 0, 0, 0, 0]);
    assert.deepEqual(
      r.components.slice(1).map((c) => c.status),
      Array(4).fill(ComponentStatus.NOT_APPLICABLE),
    );
  });

  it("malformed output gets the minimum scores with the reason (status ERROR)", async () => {
    for (const [response, re] of [
      ["<think>x</think> I would call GetNews", /missing <tool_call> or <\/tool_call>/],
      ["<think>x</think>\n<tool_call>\nGetNews(page=1)\n</tool_call>", /line 1 is not JSON/],
      [`<think>x</think>\n<tool_call>\n{"page": "1"}\n</tool_call>`, /has no "name"/],
    ] as const) {
      const r = await svc.scoreRollout(rollout(response, NEWS));
      assert.deepEqual(values(r).slice(1), [-0.5, -1, -1.5, 0], response);
      assert.equal(byName(r)["function_name"]!.status, ComponentStatus.ERROR);
      assert.match(byName(r)["function_name"]!.details, re);
    }
    const huge = await svc.scoreRollout(rollout(newsCall("1") + " ".repeat(1024 * 1024), NEWS));
    assert.deepEqual(values(huge), [0, -0.5, -1, -1.5, 0]);
    assert.match(byName(huge)["format"]!.details, /more than the 1048576-byte limit/);
  });

  it("honours the per-rollout opening-<think> override and the toolrl style", async () => {
    const noOpen = `fetch</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "1"}}\n</tool_call>`;
    assert.equal(byName(await svc.scoreRollout(rollout(noOpen, NEWS)))["format"]!.value, 0);
    const r = await svc.scoreRollout(
      rollout(noOpen, NEWS, { [ToolCallMetadata.allowMissingOpeningThink]: "true" }),
    );
    assert.equal(byName(r)["format"]!.value, 1);
    await assert.rejects(
      svc.scoreRollout(rollout(noOpen, NEWS, { [ToolCallMetadata.allowMissingOpeningThink]: "maybe" })),
      /'rollout\.metadata\["tool_call\.allow_missing_opening_think"\]' must be true or false/,
    );
    const strict = createToolCallService({ ...DEFAULT_TOOL_CALL_OPTIONS, formatStyle: "toolrl" });
    const spaced = newsCall("1").replace("</think>\n", "</think>\n\n");
    assert.equal(byName(await svc.scoreRollout(rollout(spaced, NEWS)))["format"]!.value, 1);
    assert.equal(byName(await strict.scoreRollout(rollout(spaced, NEWS)))["format"]!.value, 0);
  });
});

describe("tool-call service: json (BFCL)", () => {
  const WEATHER = {
    format: "json",
    toolsJson:
      '[{"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}]',
    possibleAnswersJson: '[{"get_weather": {"city": ["San Francisco", "SF"], "days": [3, ""]}}]',
  };

  it("exact_match = 1 iff BFCL-valid", async () => {
    const ok = await svc.scoreRollout(rollout('[{"get_weather": {"city": "san francisco"}}]', WEATHER));
    assert.deepEqual(values(ok), [1, 0.5, 1, 1.5, 1]);
    const reasoned = await svc.scoreRollout(
      rollout('<think>SF it is</think>\n[{"get_weather": {"city": "SF"}}]', WEATHER),
    );
    assert.deepEqual(values(reasoned), [1, 0.5, 1, 1.5, 1], "reasoning before the JSON is skipped");
    const bad = await svc.scoreRollout(rollout('[{"get_weather": {"city": "SF", "days": 3.0}}]', WEATHER));
    assert.equal(byName(bad)["exact_match"]!.value, 0);
    assert.match(
      byName(bad)["exact_match"]!.details,
      /incorrect type for parameter 'days': expected integer, got float/,
    );
  });

  it("BFCL's underscore_to_dot: math_factorial by default (function-calling models), math.factorial when off", async () => {
    const task = { format: "json", possibleAnswersJson: '[{"math.factorial": {"number": [5]}}]' };
    const exact = async (response: string, metadata: Record<string, string> = {}, s = svc) =>
      byName(await s.scoreRollout(rollout(response, task, metadata)))["exact_match"]!;
    assert.equal((await exact('[{"math_factorial": {"number": 5}}]')).value, 1);
    const dotted = await exact('[{"math.factorial": {"number": 5}}]');
    assert.equal(dotted.value, 0);
    assert.match(dotted.details, /expected 'math_factorial', got 'math.factorial'/);
    const off = { "tool_call.bfcl_underscore_to_dot": "false" };
    assert.equal((await exact('[{"math.factorial": {"number": 5}}]', off)).value, 1);
    assert.equal((await exact('[{"math_factorial": {"number": 5}}]', off)).value, 0);
    const prompting = createToolCallService({ ...DEFAULT_TOOL_CALL_OPTIONS, bfclUnderscoreToDot: false });
    assert.equal((await exact('[{"math.factorial": {"number": 5}}]', {}, prompting)).value, 1);
    assert.equal(loadConfig({ TOOL_CALL_BFCL_UNDERSCORE_TO_DOT: "false" }).bfclUnderscoreToDot, false);
    assert.equal(loadConfig({}).bfclUnderscoreToDot, true);
  });

  it("uses the ground truth as the only allowed values when there are no possible answers", async () => {
    const task = { format: "json", groundTruth: [{ name: "f", argumentsJson: '{"x": 1.5}' }] };
    assert.equal(
      byName(await svc.scoreRollout(rollout('[{"name": "f", "arguments": {"x": 1.5}}]', task)))[
        "exact_match"
      ]!.value,
      1,
    );
    assert.equal(byName(await svc.scoreRollout(rollout('[{"f": {"x": 2}}]', task)))["exact_match"]!.value, 0);
  });

  it("irrelevance (no call expected): correct iff no call can be decoded", async () => {
    const task = { format: "json", possibleAnswersJson: "[]" };
    const text = await svc.scoreRollout(rollout("I can't do that with these tools.", task));
    assert.deepEqual([byName(text)["format"]!.value, byName(text)["exact_match"]!.value], [1, 1]);
    assert.equal(byName(text)["exact_match"]!.status, ComponentStatus.OK);
    assert.equal(byName(text)["function_name"]!.status, ComponentStatus.NOT_APPLICABLE);
    const called = await svc.scoreRollout(rollout('[{"f": {}}]', task));
    assert.equal(byName(called)["exact_match"]!.value, 0);
  });

  it("output that is not a JSON list of calls gets the minimum scores", async () => {
    const r = await svc.scoreRollout(rollout("get_weather(city='SF')", WEATHER));
    assert.deepEqual(values(r), [0, -0.5, -1, -1.5, 0]);
    assert.equal(byName(r)["parameter_value"]!.status, ComponentStatus.ERROR);
  });
});

describe("tool-call service: contract", () => {
  it("rejects bad tasks as INVALID_ARGUMENT naming the field", async () => {
    const cases: Array<[Task, RegExp]> = [
      [{ format: "xml" }, /'rollout\.task\.tool_call\.format' must be "rlla" or "json", got "xml"/],
      [
        { groundTruth: [{ name: "", argumentsJson: "{}" }] },
        /'rollout\.task\.tool_call\.ground_truth\[0\]\.name' is required/,
      ],
      [
        { groundTruth: [{ name: "f", argumentsJson: "[1]" }] },
        /'rollout\.task\.tool_call\.ground_truth\[0\]\.arguments_json' must be a JSON object/,
      ],
      [
        { groundTruth: [{ name: "f", argumentsJson: "{" }] },
        /ground_truth\[0\]\.arguments_json' expecting property name/,
      ],
      [
        { format: "json", possibleAnswersJson: '{"f": 1}' },
        /'rollout\.task\.tool_call\.possible_answers_json' must be a list/,
      ],
      [
        { format: "json", toolsJson: "[1]" },
        /'rollout\.task\.tool_call\.tools_json' \[0\] must be an object/,
      ],
    ];
    for (const [task, re] of cases) await assert.rejects(svc.scoreRollout(rollout("x", task)), re);
    await assert.rejects(
      svc.scoreRollout(makeRollout()),
      /'rollout\.task\.kind' must be one of toolCall, got custom/,
    );
  });

  it("never throws on arbitrary output and stays in the declared ranges", async () => {
    const ranges = new Map(svc.components.map((c) => [c.name, [c.min, c.max] as const]));
    const pieces = [
      "<think>",
      "</think>",
      "<tool_call>",
      "</tool_call>",
      "<response>",
      "</response>",
      "\n",
      " ",
      '{"name": "GetNews", "parameters": {"page": "1"}}',
      "{",
      "[",
      "]",
      '"',
      "1",
      "null",
    ];
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 300; n++) {
      const response = Array.from(
        { length: Math.floor(rand() * 12) },
        () => pieces[Math.floor(rand() * pieces.length)],
      ).join("");
      for (const task of [NEWS, { ...NEWS, format: "json" }]) {
        const r = await svc.scoreRollout(rollout(response, task));
        for (const c of r.components) {
          const [lo, hi] = ranges.get(c.name)!;
          assert.ok(c.value >= lo && c.value <= hi, `${c.name}=${c.value} for ${JSON.stringify(response)}`);
        }
      }
    }
  });

  it("loads and validates its configuration", () => {
    const c = loadConfig({
      TOOL_CALL_FORMAT_STYLE: "toolrl",
      TOOL_CALL_MAX_CALLS: " ",
      TOOL_CALL_GRPC_PORT: "0",
    });
    assert.deepEqual(
      [c.formatStyle, c.maxCalls, c.runtime.grpcPort, c.maxResponseBytes],
      ["toolrl", 1024, 0, 1048576],
    );
    assert.throws(
      () => loadConfig({ TOOL_CALL_FORMAT_STYLE: "loose" }),
      (e: ConfigError) =>
        e.name === "ConfigError" &&
        /'TOOL_CALL_FORMAT_STYLE' must be one of corrgrpo, toolrl/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ TOOL_CALL_MAX_RESPONSE_BYTES: "0" }),
      /'TOOL_CALL_MAX_RESPONSE_BYTES' must be in \[1,/,
    );
    assert.throws(
      () => loadConfig({ TOOL_CALL_ALLOW_MISSING_OPENING_THINK: "perhaps" }),
      /must be a boolean/,
    );
  });
});
