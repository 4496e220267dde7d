/** BFCL AST-checker rules (`specs/rewards.md` §6.2), one case per rule. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type BfclOptions,
  checkBfcl,
  DEFAULT_BFCL_OPTIONS,
  decodeJsonCalls,
  expectedName,
  parsePossibleAnswers,
  parseToolSchemas,
  type PredictedCall,
  scoreBfcl,
  standardizeString,
} from "./bfcl.js";

const schemas = parseToolSchemas(
  JSON.stringify([
    {
      name: "calc.area",
      parameters: {
        type: "dict",
        properties: {
          base: { type: "integer" },
          height: { type: "float" },
          unit: { type: "string" },
          weights: { type: "array", items: { type: "float" } },
          tags: { type: "array", items: { type: "string" } },
          opts: { type: "dict" },
          rows: { type: "array", items: { type: "dict" } },
          exact: { type: "boolean" },
        },
        required: ["base", "height"],
      },
    },
    {
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    },
  ]),
);

const answers = (json: string) => parsePossibleAnswers(json);
const decode = (s: string): PredictedCall[] => {
  const d = decodeJsonCalls(s, 100);
  assert.ok(d.ok, d.ok ? "" : d.reason);
  return d.calls;
};
/** Most cases below write dotted names as a prompting model does (BFCL `underscore_to_dot = False`). */
const PROMPTING: BfclOptions = { underscoreToDot: false };
const check = (response: string, possible: string, options = PROMPTING) =>
  checkBfcl(schemas, decode(response), answers(possible), options);
const valid = (response: string, possible: string, options = PROMPTING) => {
  const r = check(response, possible, options);
  assert.ok(r.valid, r.valid ? "" : r.error);
};
const invalid = (response: string, possible: string, re: RegExp, options = PROMPTING) => {
  const r = check(response, possible, options);
  assert.equal(r.valid, false, response);
  if (!r.valid) assert.match(r.error, re);
};

const AREA = '[{"calc.area": {"base": [10], "height": [5.0], "unit": ["units", ""]}}]';

describe("BFCL checker", () => {
  it("accepts a correct call, in either call shape", () => {
    valid('[{"calc.area": {"base": 10, "height": 5.0}}]', AREA);
    valid('[{"name": "calc.area", "arguments": {"base": 10, "height": 5.0, "unit": "units"}}]', AREA);
    valid('[{"name": "calc.area", "arguments": "{\\"base\\": 10, \\"height\\": 5.0}"}]', AREA);
  });

  it("matches the function name as BFCL's underscore_to_dot says: exactly one of math.factorial / math_factorial", () => {
    // Function-calling models (the default, BFCL's underscore_to_dot = True): only the underscored name.
    valid('[{"calc_area": {"base": 10, "height": 5.0}}]', AREA, DEFAULT_BFCL_OPTIONS);
    invalid(
      '[{"calc.area": {"base": 10, "height": 5.0}}]',
      AREA,
      /expected 'calc_area', got 'calc.area'/,
      DEFAULT_BFCL_OPTIONS,
    );
    // Prompting models (underscore_to_dot = False): only the dotted name.
    valid('[{"calc.area": {"base": 10, "height": 5.0}}]', AREA);
    invalid('[{"calc_area": {"base": 10, "height": 5.0}}]', AREA, /expected 'calc.area', got 'calc_area'/);
    invalid('[{"calc_volume": {"base": 10, "height": 5.0}}]', AREA, /wrong function name/);
    assert.equal(expectedName("a.b.c"), "a_b_c");
    assert.equal(expectedName("a.b.c", PROMPTING), "a.b.c");
    assert.equal(expectedName("plain"), "plain");
  });

  it("needs the required parameters and the non-optional ones of the possible answer", () => {
    invalid('[{"calc.area": {"base": 10}}]', AREA, /missing required parameter 'height'/);
    const noSchemaRequired = '[{"get_weather": {"city": ["Paris"], "unit": ["C"]}}]';
    invalid('[{"get_weather": {"city": "Paris"}}]', noSchemaRequired, /missing parameter 'unit'/);
    valid('[{"get_weather": {"city": "Paris"}}]', '[{"get_weather": {"city": ["Paris"]}}]');
  });

  it("rejects parameters missing from the schema or the possible answer", () => {
    invalid(
      '[{"calc.area": {"base": 10, "height": 5.0, "color": "red"}}]',
      AREA,
      /unexpected parameter 'color'/,
    );
    invalid(
      '[{"calc.area": {"base": 10, "height": 5.0, "exact": true}}]',
      AREA,
      /unexpected parameter 'exact'/,
    );
  });

  it("accepts an int for a float at top level only", () => {
    valid('[{"calc.area": {"base": 10, "height": 5}}]', AREA);
    invalid('[{"calc.area": {"base": 10.0, "height": 5.0}}]', AREA, /expected integer, got float/);
    invalid('[{"calc.area": {"base": true, "height": 5.0}}]', AREA, /expected integer, got bool/);
    const W = '[{"calc.area": {"base": [1], "height": [1.0], "weights": [[1.0, 3.0]]}}]';
    valid('[{"calc.area": {"base": 1, "height": 1.0, "weights": [1.0, 3.0]}}]', W);
    invalid(
      '[{"calc.area": {"base": 1, "height": 1.0, "weights": [1, 3]}}]',
      W,
      /incorrect type for parameter 'weights'/,
    );
  });

  it("compares strings after standardize_string", () => {
    assert.equal(standardizeString("April 1, 2024"), standardizeString("april 1 2024"));
    assert.equal(standardizeString("New-York_City*^ ./"), "newyorkcity");
    assert.equal(standardizeString("it's"), 'it"s');
    valid('[{"calc.area": {"base": 10, "height": 5.0, "unit": "UNITS."}}]', AREA);
    invalid(
      '[{"calc.area": {"base": 10, "height": 5.0, "unit": "metres"}}]',
      AREA,
      /invalid value for parameter 'unit'/,
    );
  });

  it("lists: element-wise standardised, equal to one allowed list (order matters)", () => {
    const T = '[{"calc.area": {"base": [1], "height": [1.0], "tags": [["a b", "c"], ["c", "a b"]]}}]';
    valid('[{"calc.area": {"base": 1, "height": 1.0, "tags": ["A-B", "c"]}}]', T);
    valid('[{"calc.area": {"base": 1, "height": 1.0, "tags": ["c", "ab"]}}]', T);
    invalid(
      '[{"calc.area": {"base": 1, "height": 1.0, "tags": ["c"]}}]',
      T,
      /invalid value for parameter 'tags'/,
    );
  });

  it("dicts: each key allowed, its value in that key's list; missing keys only when optional", () => {
    const D =
      '[{"calc.area": {"base": [1], "height": [1.0], "opts": [{"mode": ["fast", "quick"], "debug": [false, ""]}]}}]';
    valid('[{"calc.area": {"base": 1, "height": 1.0, "opts": {"mode": "Quick"}}}]', D);
    invalid('[{"calc.area": {"base": 1, "height": 1.0, "opts": {"debug": false}}}]', D, /opts/);
    invalid('[{"calc.area": {"base": 1, "height": 1.0, "opts": {"mode": "fast", "x": 1}}}]', D, /opts/);
  });

  it("lists of dicts: same length, per-position dict match", () => {
    const L = '[{"calc.area": {"base": [1], "height": [1.0], "rows": [[{"k": ["a"]}, {"k": ["b"]}]]}}]';
    valid('[{"calc.area": {"base": 1, "height": 1.0, "rows": [{"k": "A"}, {"k": "b"}]}}]', L);
    invalid('[{"calc.area": {"base": 1, "height": 1.0, "rows": [{"k": "b"}, {"k": "a"}]}}]', L, /rows/);
    invalid('[{"calc.area": {"base": 1, "height": 1.0, "rows": [{"k": "a"}]}}]', L, /rows/);
  });

  it("treats a value of the possible answer's type as a variable (compared as is)", () => {
    // The schema says integer, the possible answer holds a variable name.
    valid(
      '[{"calc.area": {"base": "b", "height": 1.0}}]',
      '[{"calc.area": {"base": ["b"], "height": [1.0]}}]',
    );
  });

  it("a schema type named like an Object member ('constructor') is an unknown type (fuzz finding)", () => {
    const odd = parseToolSchemas(
      '[{"name": "f", "parameters": {"properties": {"a": {"type": "constructor"}, "b": {"type": "array", "items": {"type": "toString"}}}}}]',
    );
    const r = checkBfcl(
      odd,
      decode('[{"f": {"a": {"k": "v"}, "b": ["x"]}}]'),
      answers('[{"f": {"a": [{"k": ["v"]}], "b": [["x"]]}}]'),
    );
    assert.ok(r.valid, r.valid ? "" : r.error);
  });

  it("parallel calls: order-free, distinct, and the count must match", () => {
    const P = '[{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}]';
    valid('[{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris"}}]', P);
    invalid(
      '[{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Rome"}}]',
      P,
      /no call matches 'get_weather' \(entry 1\)/,
    );
    invalid('[{"get_weather": {"city": "Rome"}}]', P, /wrong number of calls: expected 2, got 1/);
    // BFCL's first-fit, not an optimal matching: entry 1 (Paris or Rome) takes the first call (Paris),
    // so entry 2 (Paris only) finds just Rome — rejected, as BFCL rejects it (e.g. BFCL v4
    // parallel_178 with its two calls reversed), although a perfect matching exists.
    const G = '[{"get_weather": {"city": ["Paris", "Rome"]}}, {"get_weather": {"city": ["Paris"]}}]';
    invalid(
      '[{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}]',
      G,
      /no call matches 'get_weather' \(entry 2\): invalid value for parameter 'city'/,
    );
    valid('[{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris"}}]', G);
  });
});

describe("decoding and partial scores", () => {
  it("decodes fenced JSON, one object, and reports bad shapes", () => {
    assert.equal(decode('```json\n[{"get_weather": {"city": "Paris"}}]\n```').length, 1);
    assert.equal(decode('{"name": "get_weather", "parameters": {"city": "Paris"}}').length, 1);
    for (const [s, re] of [
      ["get_weather(city='Paris')", /not JSON/],
      ['"text"', /expected a JSON list of calls, got str/],
      ["[1]", /call 1 is a int/],
      ['[{"a": 1, "b": 2}]', /neither/],
      ['[{"name": "f", "arguments": "{bad"}]', /arguments string is not JSON/],
    ] as const) {
      const d = decodeJsonCalls(s, 10);
      assert.ok(!d.ok && re.test(d.reason), s);
    }
  });

  it("gives partial credit with the RLLA ranges, maxima when valid", () => {
    const a = answers('[{"get_weather": {"city": ["Paris"], "unit": ["C", ""]}}]');
    const ok = scoreBfcl(schemas, decode('[{"get_weather": {"city": "paris"}}]'), a);
    assert.deepEqual([ok.functionName, ok.parameterName, ok.parameterValue, ok.exact], [0.5, 1, 1.5, true]);
    const wrongValue = scoreBfcl(schemas, decode('[{"get_weather": {"city": "Rome"}}]'), a);
    // names J=1; params {city} vs required {city}: J=1; values: city fails, unit optional+absent → 1/2.
    assert.deepEqual(
      [wrongValue.functionName, wrongValue.parameterName, wrongValue.parameterValue],
      [0.5, 1, 0],
    );
    assert.equal(wrongValue.exact, false);
    const wrongName = scoreBfcl(schemas, decode('[{"get_time": {"city": "Paris"}}]'), a);
    assert.deepEqual(
      [wrongName.functionName, wrongName.parameterName, wrongName.parameterValue],
      [-0.5, -1, -1.5],
    );
  });

  it("rejects malformed possible answers and schemas", () => {
    assert.throws(() => parsePossibleAnswers('{"ground_truth": {"f": {}}}'), /must be a list/);
    assert.throws(
      () => parsePossibleAnswers('[{"f": {"x": 1}}]'),
      /\[0\]\.f\.x must be a list of allowed values/,
    );
    assert.throws(() => parseToolSchemas('[{"parameters": {}}]'), /\[0\]\.name must be a non-empty string/);
    assert.equal(
      parsePossibleAnswers('{"id": "simple_0", "ground_truth": [{"f": {"x": [1]}}]}')[0]!.name,
      "f",
    );
  });
});
