import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { convertStringLists, isStringList, pyLiteralEval } from "./py-literal.js";

const CASES = [
  "['a@b.c', 'd@e.f']",
  '["x"]',
  "  [1, 2.5, -3, 0x1F, 1_000, 1e3, .5]",
  "[True, False, None]",
  "[('a', 1), {'k': [1]}, {1, 2}]",
  "(['a'])",
  "('a', 'b')",
  "{'a', 'b'}",
  "['a' 'b', r'\\n', '\\x41\\u00e9\\101', \"it's\"]",
  "[1,]",
  "['''x\ny''']",
  "[\n  'a',  # comment\n  'b'\n]",
  "[a]",
  "['a'",
  "not a list",
  "[1 2]",
  "[012]",
  "[b'x']",
  "[b'x' 'y']",
  "[1j]",
  "['\\N{DASH}']",
  "[-'a']",
  "[]",
  "[[]]",
  "\t[1]\n",
  "[1] + [2]",
];

test("isStringList agrees with Python's ast.literal_eval + isinstance(list) on every case", () => {
  const py = spawnSync(
    "/usr/bin/python3",
    [
      "-c",
      "import ast,json,sys\nfor s in json.load(sys.stdin):\n  try:\n    v=ast.literal_eval(s); print(json.dumps([isinstance(v,list), v if isinstance(v,list) else None], default=list))\n  except Exception: print(json.dumps([False,None]))",
    ],
    { input: JSON.stringify(CASES), encoding: "utf8" },
  );
  assert.equal(py.status, 0, py.stderr);
  const want = py.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as [boolean, unknown]);
  CASES.forEach((s, i) => {
    assert.equal(isStringList(s), want[i]![0], `is_string_list(${JSON.stringify(s)})`);
    if (want[i]![0] && !s.includes("b'"))
      assert.deepEqual(pyLiteralEval(s)!.value, want[i]![1], `literal_eval(${JSON.stringify(s)})`);
  });
});

test("convertStringLists converts only list-literal strings and leaves the rest (and the input) alone", () => {
  const args = { recipients: "['a@b.c']", body: "hello [world]", n: 3, t: "('a',)" };
  const out = convertStringLists(args) as Record<string, unknown>;
  assert.deepEqual(out, { recipients: ["a@b.c"], body: "hello [world]", n: 3, t: "('a',)" });
  assert.equal(args.recipients, "['a@b.c']");
  const same = { a: "x" };
  assert.equal(convertStringLists(same), same);
  assert.equal(convertStringLists(null), null);
});
