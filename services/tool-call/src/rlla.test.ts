/** RLLA / ToolRL rules (`specs/rewards.md` §1.4, §6.1), one case per rule, plus the worked numbers. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pyJsonLoads } from "./py-json.js";
import {
  checkRllaFormat,
  extractAssistantText,
  extractRllaCalls,
  type GoldCall,
  matchScore,
  type RllaFormatOptions,
  scoreRllaCalls,
} from "./rlla.js";

const corr: RllaFormatOptions = { style: "corrgrpo", allowMissingOpeningThink: false };
const toolrl: RllaFormatOptions = { style: "toolrl", allowMissingOpeningThink: false };
const TOOL = { toolCall: true, response: false };
const RESP = { toolCall: false, response: true };
const BOTH = { toolCall: true, response: true };
const NONE = { toolCall: false, response: false };

const call = '{"name": "f", "parameters": {}}';
const fmt = (s: string, shape = TOOL, o = corr) => checkRllaFormat(s, shape, o).ok;

describe("RLLA format reward", () => {
  it("tool-only gold: <think> then one <tool_call> block at the end", () => {
    assert.ok(fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>`));
    assert.ok(fmt(`<think></think><tool_call>\n${call}\n${call}\n</tool_call>`), "\\s* allows no separator");
    assert.ok(
      !fmt(`<think>x</think>\n<tool_call>${call}\n</tool_call>`),
      "newline after <tool_call> required",
    );
    assert.ok(
      !fmt(`<think>x</think>\n<tool_call>\n${call}</tool_call>`),
      "newline before </tool_call> required",
    );
    assert.ok(!fmt("<think>x</think>\n<tool_call>\n</tool_call>"), "two distinct newlines required");
    assert.ok(!fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>\ntrailing`));
    assert.ok(!fmt(`x<think>x</think>\n<tool_call>\n${call}\n</tool_call>`), "must start with <think>");
    assert.ok(!fmt(`<think>x\n<tool_call>\n${call}\n</tool_call>`), "</think> required");
    assert.ok(
      !fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call><tool_call>\n${call}\n</tool_call>`),
      "exactly once",
    );
    assert.ok(
      fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>`, TOOL),
      "a response tag is not required",
    );
    assert.ok(fmt(`<think>x<response></think>\n<tool_call>\n${call}\n</tool_call>`, TOOL), "and not counted");
  });

  it("response-only gold", () => {
    assert.ok(fmt("<think>x</think>\n<response>hi</response>", RESP));
    assert.ok(fmt("<think>x</think>  <response></response>", RESP));
    assert.ok(!fmt("<think>x</think>\n<response>hi</response><response>again</response>", RESP));
    assert.ok(!fmt("<think>x</think>\n<response>hi", RESP));
    assert.ok(!fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>`, RESP));
  });

  it("tool + response gold: both blocks in order", () => {
    assert.ok(fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>\n<response>ok</response>`, BOTH));
    assert.ok(!fmt(`<think>x</think>\n<response>ok</response>\n<tool_call>\n${call}\n</tool_call>`, BOTH));
    assert.ok(!fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>`, BOTH), "response required");
    assert.ok(
      !fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>\nso\n<response>ok</response>`, BOTH),
    );
  });

  it("neither: only the think block (no tag counts, as upstream)", () => {
    assert.ok(fmt("<think>x</think>", NONE));
    assert.ok(fmt("<think>x</think><think></think>", NONE));
    assert.ok(!fmt("<think>x</think>\nmore", NONE));
    assert.ok(!fmt("<think></thin", NONE));
  });

  it("toolrl style wants exactly one newline between blocks", () => {
    assert.ok(
      fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call>\n<response>ok</response>`, BOTH, toolrl),
    );
    assert.ok(!fmt(`<think>x</think><tool_call>\n${call}\n</tool_call>`, TOOL, toolrl));
    assert.ok(!fmt(`<think>x</think>\n\n<tool_call>\n${call}\n</tool_call>`, TOOL, toolrl));
    assert.ok(
      !fmt(`<think>x</think>\n<tool_call>\n${call}\n</tool_call> <response>ok</response>`, BOTH, toolrl),
    );
  });

  it("optionally accepts a missing opening <think> (CorrGRPO 'think' models)", () => {
    const s = `reasoning</think>\n<tool_call>\n${call}\n</tool_call>`;
    assert.ok(!fmt(s));
    assert.ok(fmt(s, TOOL, { ...corr, allowMissingOpeningThink: true }));
  });

  it("extracts the assistant text from Qwen and Llama chat templates, stripped", () => {
    assert.equal(
      extractAssistantText("sys<|im_start|>assistant\n <think>a</think> <|im_end|>\npad"),
      "<think>a</think>",
    );
    assert.equal(
      extractAssistantText("<|start_header_id|>assistant<|end_header_id|>\n\nhello<|eot_id|>"),
      "hello",
    );
    assert.equal(extractAssistantText("  plain \n"), "plain");
  });

  it("runs in linear time on adversarial input", () => {
    const evil = `<think>${"</think> ".repeat(100_000)}${" ".repeat(300_000)}x<tool_call>\n`;
    const t = performance.now();
    for (const shape of [TOOL, RESP, BOTH, NONE]) checkRllaFormat(evil, shape, corr);
    assert.ok(performance.now() - t < 1000);
  });
});

const gold = (name: string, args: string): GoldCall => ({
  name,
  parameters: pyJsonLoads(args) as Map<string, never>,
});
const pred = (lines: string) => {
  const r = extractRllaCalls(`<think>t</think>\n<tool_call>\n${lines}\n</tool_call>`, 100);
  assert.ok(r.ok);
  return r.calls;
};

describe("RLLA correctness components", () => {
  it('spec §6.1 worked example: GetNews(page="1") vs page="2"', () => {
    const c = scoreRllaCalls(
      [gold("GetNews", '{"page": "1"}')],
      pred('{"name": "GetNews", "parameters": {"page": "2"}}'),
    );
    assert.deepEqual([c.functionName, c.parameterName, c.parameterValue], [0.5, 1, -1.5]);
    assert.equal(c.functionName + c.parameterName + c.parameterValue, 0, "CorrGRPO accuracy = 0.0");
    assert.equal(c.toolRlTotal, 1, "ToolRL R_correct = 6·2/3 − 3 = +1.0");
    assert.equal(c.exact, false);
  });

  it("exact equality of the call lists gives all maxima", () => {
    const c = scoreRllaCalls(
      [gold("a", '{"x": 1}'), gold("b", "{}")],
      pred('{"name": "a", "parameters": {"x": 1.0}}\n{"parameters": {}, "name": "b"}'),
    );
    assert.deepEqual(
      [c.functionName, c.parameterName, c.parameterValue, c.exact, c.toolRlTotal],
      [0.5, 1, 1.5, true, 3],
    );
  });

  it("order-free: swapped calls still reach every maximum (RLLA all-exact)", () => {
    const c = scoreRllaCalls(
      [gold("a", '{"x": 1}'), gold("b", '{"y": "z"}')],
      pred('{"name": "b", "parameters": {"y": "z"}}\n{"name": "a", "parameters": {"x": 1}}'),
    );
    assert.deepEqual([c.functionName, c.parameterName, c.parameterValue, c.exact], [0.5, 1, 1.5, true]);
    assert.equal(c.toolRlTotal, 3);
  });

  it("multiset Jaccard of names and the greedy per-gold matching", () => {
    assert.equal(matchScore(["a", "a", "b"], ["a", "c"]), 1 / 4);
    assert.equal(matchScore([], ["a"]), 0);
    assert.equal(matchScore([], []), 1);
    // gold a(x=1,y=2), b(); predicted a(x=1), a(x=1,y=3), c()
    const c = scoreRllaCalls(
      [gold("a", '{"x": 1, "y": 2}'), gold("b", "{}")],
      pred(
        '{"name": "a", "parameters": {"x": 1}}\n{"name": "a", "parameters": {"x": 1, "y": 3}}\n{"name": "c", "parameters": {}}',
      ),
    );
    // names J({a,b},{a,a,c}) = 1/4; a: candidate 1 → J=1/2 + 1, candidate 2 → J=1 + 1 → picks 2; b: none.
    assert.equal(c.functionName, (0.5 - -0.5) * 0.25 - 0.5);
    assert.equal(c.parameterName, (2 * 1) / 2 - 1);
    assert.equal(c.parameterValue, (3 * 1) / 2 - 1.5);
    assert.equal(c.toolRlTotal, (6 * (0.25 + 2)) / (1 + 3 + 1) - 3);
  });

  it("gold calls without parameters: nothing to predict → values at the maximum", () => {
    const c = scoreRllaCalls([gold("ping", "{}")], pred('{"name": "ping", "parameters": {"extra": 1}}'));
    assert.deepEqual([c.functionName, c.parameterName, c.parameterValue, c.exact], [0.5, -1, 1.5, false]);
  });

  it("Python == on values: 1 == 1.0 == True", () => {
    const c = scoreRllaCalls([gold("f", '{"n": 1}')], pred('{"name": "f", "parameters": {"n": true}}'));
    assert.equal(c.parameterValue, 1.5);
  });

  it("a predicted call that never matches (total 0) is not taken", () => {
    const c = scoreRllaCalls([gold("f", '{"a": 1}')], pred('{"name": "f", "parameters": {"b": 2}}'));
    assert.deepEqual([c.parameterName, c.parameterValue], [-1, -1.5]);
  });

  it("wrong shapes give all minima, as the Python raises", () => {
    const g = [gold("f", '{"a": 1}')];
    for (const [lines, re] of [
      ['{"parameters": {}}', /has no "name"/],
      ["[1, 2]", /is a list, not an object/],
      ['{"name": "f", "arguments": {"a": 1}}', /has no "parameters"/],
      ['{"name": "f", "parameters": [1]}', /"parameters" of type list/],
      ['{"name": ["f"], "parameters": {}}', /has a list as its name/],
    ] as const) {
      const c = scoreRllaCalls(g, pred(lines));
      assert.deepEqual(
        [c.functionName, c.parameterName, c.parameterValue, c.malformed],
        [-0.5, -1, -1.5, true],
        lines,
      );
      assert.match(c.details, re);
    }
    // A non-matching call without "parameters" is fine (the Python never reads it).
    const ok = scoreRllaCalls(g, pred('{"name": "f", "parameters": {"a": 1}}\n{"name": "g"}'));
    assert.equal(ok.malformed, false);
  });

  it("extraction: missing tags, non-JSON or empty lines give all minima", () => {
    assert.equal(extractRllaCalls("<think>x</think> no call", 10).ok, false);
    assert.equal(extractRllaCalls("<tool_call>\n{}\n", 10).ok, false);
    const empty = extractRllaCalls(`<tool_call>\n${call}\n\n${call}\n</tool_call>`, 10);
    assert.ok(!empty.ok && /line 2 is not JSON/.test(empty.reason));
    assert.ok(!extractRllaCalls("<tool_call>\n</tool_call>", 10).ok);
    assert.ok(
      !extractRllaCalls(`<tool_call>\n{'name': 'f'}\n</tool_call>`, 10).ok,
      "single quotes are not JSON",
    );
    const tooMany = extractRllaCalls(`<tool_call>\n${`${call}\n`.repeat(11)}</tool_call>`, 10);
    assert.ok(!tooMany.ok && /more than 10 lines/.test(tooMany.reason));
    // Only the first block counts (split("<tool_call>")[1]).
    const first = extractRllaCalls(
      `<tool_call>\n${call}\n</tool_call>\n<tool_call>\nbroken\n</tool_call>`,
      10,
    );
    assert.ok(first.ok && first.calls.length === 1);
  });
});
