import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { entryPointRoot, extractCode, normalizeCode } from "./extract.js";

const sol = "class Solution:\n    def f(self):\n        return 1\n";

describe("extractCode (CorrGRPO §1.3 item 1)", () => {
  it("takes the ```python block, fenced", () => {
    const r = extractCode(`Sure!\n\`\`\`python\n${sol}\`\`\`\nDone.`, "Solution().f");
    assert.equal(r.code, sol);
    assert.equal(r.fenced, true);
    assert.equal(r.definesEntryPoint, true);
  });

  it("prefers the block defining the entry point, then the longest; ignores other languages", () => {
    const helper = "def helper():\n    return 2 + 2 + 2 + 2 + 2 + 2 + 2 + 2 + 2\n";
    const r = extractCode(
      `\`\`\`py\n${helper}\`\`\`\n\`\`\`cpp\nclass Solution {};\n\`\`\`\n\`\`\`Python\n${sol}\`\`\``,
      "Solution().f",
    );
    assert.equal(r.code, sol);
    assert.match(r.how, /1 of 2/);
    const none = extractCode(`\`\`\`\nx = 1\n\`\`\`\n\`\`\`python\nyy = 22\n\`\`\``, "Solution().f");
    assert.equal(none.code, "yy = 22\n");
    assert.equal(none.definesEntryPoint, false);
  });

  it("without a fence: after the last </think>, from the first line of code", () => {
    const r = extractCode(
      `<think>class Solution: wrong</think>Here is my answer.\nfrom typing import List\n${sol}`,
      "Solution().f",
    );
    assert.equal(r.code, `from typing import List\n${sol}`);
    assert.equal(r.fenced, false);
    assert.equal(r.definesEntryPoint, true);
  });

  it("takes the whole response when nothing looks like code (then it will not parse)", () => {
    const r = extractCode("I cannot solve this.", "f");
    assert.equal(r.code, "I cannot solve this.\n");
    assert.equal(r.fenced, false);
  });

  it("treats a truncated (unclosed) fence as unfenced code", () => {
    const r = extractCode(`Answer:\n\`\`\`python\n${sol}`, "Solution().f");
    assert.equal(r.code, sol);
    assert.equal(r.fenced, false);
  });

  it("tolerates \\r\\n and tab indentation", () => {
    const r = extractCode("```python\r\ndef f(x):\r\n\tif x:\r\n\t\treturn 1\r\n    return 0\r\n```", "f");
    assert.equal(r.code, "def f(x):\n    if x:\n        return 1\n    return 0\n");
    assert.equal(r.definesEntryPoint, true);
  });

  it("returns empty code for an empty block", () => {
    assert.equal(extractCode("```python\n\n```", "f").code, "");
    assert.equal(extractCode("", "f").code, "");
  });
});

describe("entryPointRoot / normalizeCode", () => {
  it("finds the definition an entry point needs", () => {
    assert.deepEqual(entryPointRoot("Solution().twoSum"), { kind: "class", name: "Solution" });
    assert.deepEqual(entryPointRoot("has_close_elements"), { kind: "def", name: "has_close_elements" });
    assert.equal(entryPointRoot(""), undefined);
  });

  it("expands leading tabs to 4-column stops and strips a BOM", () => {
    assert.equal(normalizeCode("\uFEFFa\n\t b\n  \tc\r"), "a\n     b\n    c\n");
  });
});

describe("extractCode in linear time (fuzz findings)", () => {
  // The regex versions took seconds for 50 KB and minutes for a 1 MiB response.
  const within = (what: string, response: string, ms = 1_000) => {
    const t = performance.now();
    const r = extractCode(response, "f");
    assert.ok(performance.now() - t < ms, `${what} took ${Math.round(performance.now() - t)} ms`);
    return r;
  };

  it("a long run of blanks before the end of the code (`/\\s*$/` was quadratic)", () => {
    const r = within("blanks", `def f():\n    return 1${" ".repeat(200_000)}x`);
    assert.ok(r.code.startsWith("def f():\n    return 1 "));
    assert.equal(within("newlines", `def f(): pass${"\n".repeat(200_000)}`).code, "def f(): pass\n");
  });

  it("many unclosed fences (every opening rescanned to the end)", () => {
    const r = within("fences", "a```\n".repeat(50_000));
    assert.equal(r.fenced, false);
  });

  it("an opening fence followed by a long run of blanks (`[ \\t]*(py)?[ \\t]*` backtracked)", () => {
    assert.equal(within("open fence", `\`\`\`${" ".repeat(100_000)}x`).fenced, false);
  });
});
