/** The gateway's float-preserving JSON writer, read back by Python's `json` (what OpenRLHF parses with). */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { stringifyFloats } from "../src/gateway/openrlhf.js";

const PY = "/usr/bin/python3";

/** Python's view of a JSON text: each leaf as [type name, repr]. */
function pythonReads(text: string): unknown {
  const r = spawnSync(
    PY,
    [
      "-c",
      "import json,sys\n" +
        "def leaf(v):\n" +
        "    if isinstance(v, dict): return {k: leaf(x) for k, x in v.items()}\n" +
        "    if isinstance(v, list): return [leaf(x) for x in v]\n" +
        "    return [type(v).__name__, repr(v)]\n" +
        "print(json.dumps(leaf(json.loads(sys.stdin.read()))))",
    ],
    { input: text, encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe("stringifyFloats (gateway answers)", () => {
  it("writes every number so that Python reads a float, and equal to the double", () => {
    const values = [
      0,
      -0,
      1,
      -1,
      2,
      0.5,
      1e-7,
      5e-324,
      2 ** 53,
      2 ** 53 + 2,
      1e20,
      1e21,
      1.7976931348623157e308,
      -123456789,
    ];
    const text = stringifyFloats({ rewards: values });
    const read = pythonReads(text) as { rewards: [string, string][] };
    assert.deepEqual(
      read.rewards.map(([t]) => t),
      values.map(() => "float"),
      text,
    );
    assert.deepEqual(
      JSON.parse(text).rewards,
      values.map((v) => (Object.is(v, -0) ? 0 : v)),
    );
    assert.equal(stringifyFloats(1), "1.0");
    assert.equal(stringifyFloats(-0), "0.0");
    assert.equal(stringifyFloats(1e21), "1e+21");
  });

  it("leaves strings, keys, booleans and null as JSON.stringify writes them, however they look", () => {
    const body = {
      error: 'a "quoted" \u0000F7 value\n',
      "\u0000F1": [true, false, null, "1", "\u0000F7"],
      nested: { n: 3, s: "3" },
      skipped: undefined,
    };
    const text = stringifyFloats(body);
    assert.deepEqual(JSON.parse(text), {
      error: body.error,
      "\u0000F1": body["\u0000F1"],
      nested: { n: 3, s: "3" },
    });
    assert.deepEqual((pythonReads(text) as { nested: unknown }).nested, {
      n: ["float", "3.0"],
      s: ["str", "'3'"],
    });
  });
});
