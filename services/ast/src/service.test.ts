import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { parseCode, pythonParser } from "./node-sequence.js";
import { createAstService } from "./service.js";

const svc = createAstService({ maxTokens: 50_000 });
const reference =
  "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n";

async function score(response: string, ref = reference) {
  const r = await svc.scoreRollout(
    makeRollout({
      response,
      task: {
        id: "t",
        kind: {
          case: "code",
          value: { language: "python", entryPoint: "Solution().twoSum", referenceSolution: ref },
        },
      },
    }),
  );
  return Object.fromEntries(r.components.map((c) => [c.name, c]));
}
const fence = (code: string) => `\`\`\`python\n${code}\`\`\``;

describe("ast service", () => {
  it("is identifier- and literal-independent: renaming and new constants keep 1.0", async () => {
    const renamed = reference.replace(/seen/g, "memo").replace(/\bx\b/g, "value").replace(/\bi\b/g, "k");
    const r = await score(fence(`${renamed}# a comment\n`));
    assert.equal(r.similarity!.value, 1);
    assert.equal(r.syntax!.value, 1);
    const consts = await score(
      fence(
        reference
          .replace("seen = {}", "seen = dict()")
          .replace("[seen[target - x], i]", "[seen[target - x], i]"),
      ),
    );
    assert.ok(consts.similarity!.value < 1, "a call is not a dict display");
    const lit = await score(fence(`${reference}LIMIT = 10\n`), `${reference}LIMIT = "ten"\n`);
    assert.equal(lit.similarity!.value, 1);
  });

  it("sees operator kinds and structure", async () => {
    const minus = await score(fence(reference.replace("target - x in seen", "target + x in seen")));
    assert.ok(minus.similarity!.value < 1 && minus.similarity!.value > 0.9, String(minus.similarity!.value));
    const other = await score(
      fence("class Solution:\n    def twoSum(self, nums, target):\n        return sorted(nums)[:2]\n"),
    );
    assert.ok(other.similarity!.value < 0.7, String(other.similarity!.value));
  });

  it("NOT_APPLICABLE without a (parseable) reference; ERROR for an unparseable candidate", async () => {
    const none = await score(fence(reference), "");
    assert.equal(none.similarity!.status, ComponentStatus.NOT_APPLICABLE);
    assert.equal(none.similarity!.value, 0);
    assert.equal(none.syntax!.value, 1);
    const badRef = await score(fence(reference), "def f(:\n    pass\n");
    assert.equal(badRef.similarity!.status, ComponentStatus.NOT_APPLICABLE);
    assert.match(badRef.similarity!.details, /reference_solution does not parse/);
    const badCand = await score(fence(reference.replace("class Solution:", "class Solution")));
    assert.equal(badCand.syntax!.value, 0);
    assert.equal(badCand.syntax!.status, ComponentStatus.ERROR);
    assert.match(badCand.syntax!.details, /syntax error at line \d+, column \d+/);
    assert.equal(badCand.similarity!.status, ComponentStatus.ERROR);
    const empty = await score("");
    assert.equal(empty.syntax!.details, "no code in the response");
  });

  it("emits CorrGRPO-like pre-order tokens with closing tokens", async () => {
    const p = await pythonParser();
    assert.deepEqual(parseCode(p, "x = a + 1\n").tokens, [
      "module",
      "assignment",
      "identifier",
      "/identifier",
      "binary_operator",
      "identifier",
      "/identifier",
      "+",
      "constant",
      "/constant",
      "/binary_operator",
      "/assignment",
      "/module",
    ]);
    assert.deepEqual(parseCode(p, 'f"{x}"\n').tokens, [
      "module",
      "expression_statement",
      "fstring",
      "interpolation",
      "identifier",
      "/identifier",
      "/interpolation",
      "/fstring",
      "/expression_statement",
      "/module",
    ]);
  });

  it("a comparison too costly for the matcher is ERROR, not a 20 s stall (fuzz finding)", async () => {
    const deep = `def f():\n    return ${"[".repeat(5000)}${"]".repeat(5000)}\n`;
    const t = performance.now();
    const r = await score(fence(deep), deep);
    assert.ok(performance.now() - t < 5_000, `took ${Math.round(performance.now() - t)} ms`);
    assert.equal(r.similarity!.status, ComponentStatus.ERROR);
    assert.match(
      r.similarity!.details,
      /^too costly to compare \(\d+ pairs of equal node tokens, limit 4000000\)$/,
    );
    assert.equal(r.syntax!.value, 1);
  });

  it("reads AST_MAX_TOKENS", () => {
    assert.equal(loadConfig({}).maxTokens, 50_000);
    assert.equal(loadConfig({}).runtime.grpcPort, 50063);
    assert.throws(() => loadConfig({ AST_MAX_TOKENS: "5" }), /'AST_MAX_TOKENS' must be in \[100/);
  });
});
