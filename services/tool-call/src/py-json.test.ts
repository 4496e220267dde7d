import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MAX_JSON_DEPTH,
  pyEquals,
  pyFloat,
  pyFloatRepr,
  pyInt,
  pyJsonLoads,
  pyRepr,
  pyType,
  tryPyJsonLoads,
} from "./py-json.js";

describe("pyJsonLoads: json.loads semantics", () => {
  it("keeps int and float apart", () => {
    assert.equal(pyType(pyJsonLoads("1")), "int");
    assert.equal(pyType(pyJsonLoads("1.0")), "float");
    assert.equal(pyType(pyJsonLoads("1e3")), "float");
    assert.deepEqual(pyJsonLoads("123456789012345678901234567890"), pyInt(123456789012345678901234567890n));
  });

  it("accepts what Python accepts and rejects what it rejects", () => {
    assert.equal(pyType(pyJsonLoads("NaN")), "float");
    assert.deepEqual(pyJsonLoads(" -Infinity "), pyFloat(Number.NEGATIVE_INFINITY));
    assert.deepEqual(pyJsonLoads('"\\u00e9\\n"'), "é\n");
    const m = pyJsonLoads('{"a": 1, "b": 2, "a": 3}') as Map<string, unknown>;
    assert.deepEqual([...m.keys()], ["a", "b"], "a repeated key keeps its first position");
    assert.deepEqual(m.get("a"), pyInt(3), "and its last value");
    for (const bad of ["", "01", "1.", "[1,]", '{"a" 1}', "tru", '"a\tb"', "[1] x", "'a'", "{a: 1}"]) {
      assert.ok("error" in tryPyJsonLoads(bad), `should reject ${JSON.stringify(bad)}`);
    }
  });

  it("bounds nesting and integer length instead of overflowing", () => {
    assert.ok("error" in tryPyJsonLoads("[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1)));
    assert.ok(!("error" in tryPyJsonLoads("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH))));
    assert.match((tryPyJsonLoads("9".repeat(4301)) as { error: string }).error, /4300 digits/);
  });
});

describe("pyEquals: Python ==", () => {
  it("compares numbers across int, float and bool", () => {
    assert.ok(pyEquals(pyInt(1), pyFloat(1)));
    assert.ok(pyEquals(true, pyInt(1)));
    assert.ok(pyEquals(false, pyFloat(0)));
    assert.ok(!pyEquals(pyFloat(Number.NaN), pyFloat(Number.NaN)));
    assert.ok(!pyEquals(pyInt(2n ** 53n + 1n), pyFloat(2 ** 53)), "exact int/float comparison");
    assert.ok(!pyEquals("1", pyInt(1)));
    assert.ok(!pyEquals(null, false));
  });

  it("compares containers: lists in order, dicts by key", () => {
    assert.ok(pyEquals(pyJsonLoads('{"a": [1, 2.0], "b": null}'), pyJsonLoads('{"b": null, "a": [1.0, 2]}')));
    assert.ok(!pyEquals(pyJsonLoads("[1, 2]"), pyJsonLoads("[2, 1]")));
    assert.ok(!pyEquals(pyJsonLoads('{"a": 1}'), pyJsonLoads('{"a": 1, "b": 2}')));
  });
});

describe("repr", () => {
  it("prints like Python", () => {
    assert.equal(
      pyRepr(pyJsonLoads('{"a": [1, 2.5, true, null], "b": "it\'s"}')),
      `{'a': [1, 2.5, True, None], 'b': "it's"}`,
    );
    assert.deepEqual([1, 0.1, 1e16, 1e-5, 98.7].map(pyFloatRepr), ["1.0", "0.1", "1e+16", "1e-05", "98.7"]);
  });
});
