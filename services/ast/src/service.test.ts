import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { ParserPool } from "./parser-pool.js";
import { createAstService } from "./service.js";

const config = loadConfig({});
const pool = new ParserPool(config.parser);
const svc = createAstService(config, { parserPool: pool });
after(() => pool.close());
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
    // Python 2 print statements parse in tree-sitter but not in CPython (the old service said 1).
    const py2 = await score(fence('print "x"\n'));
    assert.equal(py2.syntax!.value, 0);
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
    assert.match(badCand.syntax!.details, /syntax error: SyntaxError at line \d+, column \d+/);
    assert.equal(badCand.similarity!.status, ComponentStatus.ERROR);
    const empty = await score("");
    assert.equal(empty.syntax!.details, "no code in the response");
  });

  it("a comparison too costly for the matcher is ERROR, not a stall (fuzz finding)", async () => {
    const deep = `def f():\n    return [${"1, ".repeat(3000)}]\n`;
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

  it("scores CPython's node sequence: x = a + 1 vs y = b - 2 is 16 of 18 tokens (Add vs Sub)", async () => {
    // Module Assign Name Store /Store /Name BinOp Name Load /Load /Name Add /Add Constant /Constant /BinOp /Assign /Module
    const r = await score(fence("x = a + 1\n"), "y = b - 2\n");
    assert.equal(r.similarity!.value, 32 / 36);
    assert.equal(r.similarity!.details, "16 of 18 (candidate) and 18 (reference) node tokens match");
  });

  it("a helper that cannot run is retried once, then scored as an infrastructure error", async () => {
    const broken = new ParserPool({ ...config.parser, python: "/nonexistent/python3", size: 1 });
    try {
      const r = await createAstService(config, { parserPool: broken }).scoreRollout(
        makeRollout({
          response: fence("x = 1\n"),
          task: {
            id: "t",
            kind: {
              case: "code",
              value: { language: "python", entryPoint: "f", referenceSolution: "x = 1\n" },
            },
          },
        }),
      );
      for (const c of r.components) {
        assert.equal(c.status, ComponentStatus.NOT_APPLICABLE, c.name);
        assert.equal(c.value, 0);
        assert.match(
          c.details,
          /^infrastructure error, not the candidate's: the parser helper could not start: .*ENOENT.*; the first helper: the parser helper could not start/,
        );
      }
    } finally {
      broken.close();
    }
  });

  it("a request past the timeout kills its helper, retries once, then reports the timeout", async () => {
    // 300 ms: the fresh helper's ordinary request below must answer within it on a loaded machine too.
    const slow = new ParserPool({ ...config.parser, timeoutMs: 300, size: 1 });
    try {
      // ~1–1.5 s of parsing (measured): far past 300 ms on any machine.
      const huge = `x = [${"(1, 2), ".repeat(1_000_000)}]\n`;
      const t0 = performance.now();
      const r = await slow.compare(huge, undefined, { maxTokens: 50_000, maxPairs: 4_000_000 });
      assert.equal(r.ok, false);
      assert.match(
        (r as { reason: string }).reason,
        /ran past 300 ms and was killed; the first helper: the parser helper ran past 300 ms/,
      );
      assert.ok(performance.now() - t0 < 10_000);
      // Fresh helpers answer ordinary requests afterwards.
      const ok = await slow.compare("x = 1\n", "y = 2\n", { maxTokens: 50_000, maxPairs: 4_000_000 });
      assert.ok(ok.ok && ok.ratio === 1, JSON.stringify(ok));
    } finally {
      slow.close();
    }
  });

  it("a candidate whose code kills the helpers (past the timeout) scores 0, not NOT_APPLICABLE", async () => {
    // 300 ms: the reference's parse must answer within it on a loaded machine too.
    const slow = new ParserPool({ ...config.parser, timeoutMs: 300, size: 1 });
    try {
      // ~1 s of parsing (3.2 MB, under the 4 MiB response limit): far past 300 ms; the reference parses at once.
      const huge = `x = [${"(1, 2), ".repeat(400_000)}]\n`;
      const r = await createAstService(config, { parserPool: slow }).scoreRollout(
        makeRollout({
          response: fence(huge),
          task: {
            id: "t",
            kind: {
              case: "code",
              value: { language: "python", entryPoint: "f", referenceSolution: "x = 1\n" },
            },
          },
        }),
      );
      for (const c of r.components) {
        assert.equal(c.status, ComponentStatus.ERROR, `${c.name}: ${c.details}`);
        assert.equal(c.value, 0);
        assert.match(
          c.details,
          /^the candidate's code could not be parsed within the parser helpers' limits: .*ran past 300 ms/,
        );
      }
    } finally {
      slow.close();
    }
  });

  it("a helper that never starts (hangs before its greeting) is killed at the timeout, not waited for forever", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ast-hang-"));
    const hang = join(dir, "python3");
    writeFileSync(hang, "#!/bin/sh\nexec sleep 60\n", { mode: 0o755 });
    const stuck = new ParserPool({ ...config.parser, python: hang, startupTimeoutMs: 300, size: 1 });
    try {
      const r = await stuck.compare("x = 1\n", undefined, { maxTokens: 50_000, maxPairs: 4_000_000 });
      assert.equal(r.ok, false);
      assert.match(
        (r as { reason: string }).reason,
        /did not start within 300 ms and was killed; the first helper: the parser helper did not start/,
      );
    } finally {
      stuck.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a reference past AST_MAX_TOKENS is the task's problem (NOT_APPLICABLE), a candidate past it is the candidate's", async () => {
    const small = createAstService({ ...config, maxTokens: 100 }, { parserPool: pool });
    const big = "def f(x):\n" + "    x = x + 1\n".repeat(20) + "    return x\n";
    const run = async (response: string, ref: string) =>
      Object.fromEntries(
        (
          await small.scoreRollout(
            makeRollout({
              response,
              task: {
                id: "t",
                kind: {
                  case: "code",
                  value: { language: "python", entryPoint: "f", referenceSolution: ref },
                },
              },
            }),
          )
        ).components.map((c) => [c.name, c]),
      );
    const refTooBig = await run(fence("def f(x):\n    return x\n"), big);
    assert.equal(refTooBig.similarity!.status, ComponentStatus.NOT_APPLICABLE, refTooBig.similarity!.details);
    assert.match(refTooBig.similarity!.details, /^reference_solution too large to compare/);
    const candTooBig = await run(fence(big), "def f(x):\n    return x\n");
    assert.equal(candTooBig.similarity!.status, ComponentStatus.ERROR, candTooBig.similarity!.details);
    assert.equal(candTooBig.similarity!.value, 0);
  });

  it("reads AST_MAX_TOKENS and the parser helpers' variables", () => {
    assert.equal(loadConfig({}).maxTokens, 50_000);
    assert.deepEqual(loadConfig({ AST_PARSERS: "3" }).parser, {
      python: "python3",
      size: 3,
      memoryMb: 512,
      timeoutMs: 10_000,
    });
    assert.equal(loadConfig({}).runtime.grpcPort, 50063);
    assert.throws(() => loadConfig({ AST_MAX_TOKENS: "5" }), /'AST_MAX_TOKENS' must be in \[100/);
  });
});
