/**
 * Fuzzing of the solution extracted from a model response (`extractCode`, shared by code-exec, ast
 * and efficiency): it always returns, in linear time (no regex backtracking on long runs), and finds
 * what the former regex version found. The `CodeTask` contract check is fuzzed through the ast
 * service. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, mutatedText } from "@reward-mesh/sdk/testing";
import { entryPointRoot, extractCode, normalizeCode } from "./extract.js";

/** `extractCode` as it was before the linear rewrite (regex fences, `/\s*$/`): the reference on short inputs. */
function extractCodeReference(response: string, entryPoint = ""): ReturnType<typeof extractCode> {
  const FENCE = /```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)^[ \t]*```/gm;
  const CODE_START =
    /^(?:from[ \t]+\S+[ \t]+import\b|import[ \t]+\S|class[ \t]|def[ \t]|async[ \t]+def[ \t]|@)/m;
  const root = entryPointRoot(entryPoint);
  const defines = !root
    ? undefined
    : root.kind === "class"
      ? new RegExp(`^[ \\t]*class[ \\t]+${root.name}\\b`, "m")
      : new RegExp(`^[ \\t]*(?:async[ \\t]+)?def[ \\t]+${root.name}[ \\t]*\\(`, "m");
  const text = response.replace(/\r\n?/g, "\n");
  const hasDef = (code: string) => (defines ? defines.test(code) : true);
  const blocks: string[] = [];
  for (const m of text.matchAll(FENCE))
    if (["", "python", "python3", "py"].includes(m[1]!.toLowerCase())) blocks.push(m[2]!);
  if (blocks.length > 0) {
    const withDef = blocks.filter(hasDef);
    const best = (withDef.length > 0 ? withDef : blocks).reduce((a, b) => (b.length > a.length ? b : a));
    const code = normalizeCode(best).replace(/\s*$/, "\n");
    return {
      code: code.trim() === "" ? "" : code,
      fenced: true,
      definesEntryPoint: hasDef(best),
      how: `fenced block${blocks.length > 1 ? ` (1 of ${blocks.length})` : ""}`,
    };
  }
  let rest = text;
  const think = rest.lastIndexOf("</think>");
  if (think >= 0) rest = rest.slice(think + "</think>".length);
  let how = "whole response (no fence)";
  const open = rest.match(/```[ \t]*(?:python3?|py)?[ \t]*\n/i);
  if (open && open.index !== undefined) {
    rest = rest.slice(open.index + open[0].length);
    how = "after an unclosed fence";
  } else {
    const def = defines?.exec(rest);
    const start = CODE_START.exec(rest);
    if (start && (!def || start.index <= def.index)) {
      if (start.index > 0) how = "from the first line of code (no fence)";
      rest = rest.slice(start.index);
    } else if (def) {
      rest = rest.slice(def.index);
      how = "from the entry point's definition (no fence)";
    }
  }
  const code = normalizeCode(rest).replace(/\s*$/, "\n");
  return { code: code.trim() === "" ? "" : code, fenced: false, definesEntryPoint: hasDef(rest), how };
}

const RESPONSES = [
  "<think>add them</think>\n```python\ndef add(a, b):\n    return a + b\n```\n",
  "Here you go:\n\n```py\nimport math\n\nclass Solution:\n\tdef twoSum(self, nums, target):\n\t\treturn [0, 1]\n```\nand\n```\nprint(1)\n```",
  "def add(a, b):\r\n    return a + b\r\n",
  "```python\ndef add(a, b):\n    return a",
  "\uFEFFfrom x import y\n@decorator\nasync def add(a, b):\n    return a + b  \n\n\n",
];

const ENTRY_POINTS = ["add", "Solution().twoSum", "", "  f(", "1bad", "__proto__", "a.b.c"];

describe("fuzz: code extraction from a response", () => {
  it("always returns normalised code (or none), in bounded time", () => {
    fc.assert(
      fc.property(mutatedText(RESPONSES), fc.constantFrom(...ENTRY_POINTS), (response, entryPoint) => {
        const r = fuzzCall("extractCode", () => extractCode(response, entryPoint));
        assert.ok(r.ok);
        const { code } = r.value;
        assert.ok(code === "" || code.endsWith("\n"), "code ends with one newline");
        assert.ok(!code.includes("\r"), "line ends are normalised");
      }),
      fuzzParameters(400),
    );
  });

  it("finds what the regex version found, on inputs short enough for the regexes", () => {
    const fences = [
      "```",
      "```python\n",
      "``` py3 x\n",
      "  ```\n",
      "\n```\n",
      "\u2028```\n",
      "a```\n",
      "</think>",
    ];
    const short = fc.oneof(
      mutatedText([...RESPONSES, ...fences]).filter((s) => s.length < 3_000),
      fc
        .array(fc.oneof(fc.constantFrom(...fences), fc.constantFrom("def add(a):\n", "x\n", " \t", "\n")), {
          maxLength: 12,
        })
        .map((a) => a.join("")),
    );
    fc.assert(
      fc.property(short, fc.constantFrom(...ENTRY_POINTS), (response, entryPoint) => {
        assert.deepEqual(extractCode(response, entryPoint), extractCodeReference(response, entryPoint));
      }),
      fuzzParameters(500),
    );
  });
});
