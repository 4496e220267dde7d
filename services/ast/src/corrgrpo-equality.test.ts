/**
 * The service's `similarity` equals an independent, in-repo re-computation of CorrGRPO's
 * `ast_similarity_reward` (`test/corrgrpo_ast_reference.py`, the plain recursive definition) to
 * 1e-12 on every ordered pair of a few hundred program pairs: HumanEval- and LeetCode-style
 * solutions, their renamed / operator-swapped / restructured variants, and code using the syntax
 * where tree-sitter's tree and CPython's `ast` differ most (decorators, comprehensions, f-strings,
 * chained comparisons and boolean operators, multiple targets, annotations, match, walrus, async).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { ParserPool } from "./parser-pool.js";
import { createAstService } from "./service.js";

const BASE = [
  "def has_close_elements(numbers, threshold):\n    for idx, elem in enumerate(numbers):\n        for idx2, elem2 in enumerate(numbers):\n            if idx != idx2:\n                distance = abs(elem - elem2)\n                if distance < threshold:\n                    return True\n    return False\n",
  "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n",
  "def separate_paren_groups(s):\n    out, cur, depth = [], [], 0\n    for c in s:\n        if c == '(':\n            depth += 1\n            cur.append(c)\n        elif c == ')':\n            depth -= 1\n            cur.append(c)\n            if depth == 0:\n                out.append(''.join(cur))\n                cur.clear()\n    return out\n",
  "from functools import lru_cache\n\n@lru_cache(maxsize=None)\ndef fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
  "def f(xs):\n    return sorted({x * x for x in xs if x % 2 == 0 and x > 0 or x < -10}, reverse=True)\n",
  'def greet(name, n=1, *args, k, **kw):\n    msg = f"hello {name!r:>{n}} and {len(args)}"\n    return msg if 0 < n <= 10 else None\n',
  "import heapq\nclass Solution:\n    def kSmallest(self, a, k):\n        h = []\n        for x in a:\n            heapq.heappush(h, -x)\n            if len(h) > k:\n                heapq.heappop(h)\n        return sorted(-y for y in h)\n",
  "a = b = c = 0\nx: int = 5\ny, *z = [1, 2, 3]\ndel z[0]\nassert x is not None, 'x'\n",
  "def g(v):\n    match v:\n        case [1, *rest]:\n            return rest\n        case {'k': w} if w:\n            return w\n        case _:\n            return (n := len(str(v)))\n",
  "async def h(q):\n    async with q as s:\n        async for item in s:\n            await item\n    try:\n        raise ValueError('x')\n    except (ValueError, KeyError) as e:\n        pass\n    finally:\n        return lambda a, b=2: a[1:b:2]\n",
  "class Node:\n    def __init__(self, val=0, next=None):\n        self.val = val\n        self.next = next\n\nclass Solution:\n    def reverse(self, head):\n        prev = None\n        while head:\n            head.next, prev, head = prev, head, head.next\n        return prev\n",
  "def mbpp(n):\n    global counter\n    total = 0\n    i = 1\n    while i <= n:\n        total ^= i << 1 | ~i & 3\n        i += 1\n    else:\n        pass\n    return -total if not n else +total\n",
  "def solve():\n    import sys\n    data = sys.stdin.read().split()\n    print(sum(map(int, data)))\n\nif __name__ == '__main__':\n    solve()\n",
  "from bisect import bisect_left\nclass Solution:\n    def lengthOfLIS(self, nums):\n        tails = []\n        for x in nums:\n            i = bisect_left(tails, x)\n            tails[i:i + 1] = [x]\n        return len(tails)\n",
];

const VARIANTS = (code: string): string[] => [
  code,
  code.replace(/\b(x|i|idx|n|s|a)\b/g, "renamed"),
  code.replace(/ - /g, " + ").replace(/ < /g, " >= "),
  `${code}\nEXTRA = [k for k in range(3)]\n`,
];

const PROGRAMS = [...new Set(BASE.flatMap(VARIANTS))];
const PAIRS: [string, string][] = [];
for (let i = 0; i < PROGRAMS.length; i++)
  for (let j = 0; j < PROGRAMS.length; j += i % 3 === 0 ? 1 : 2) PAIRS.push([PROGRAMS[i]!, PROGRAMS[j]!]);

const config = loadConfig({});
const pool = new ParserPool(config.parser);
after(() => pool.close());

describe("ast similarity = CorrGRPO's ast_similarity_reward", () => {
  it(`agrees with the re-computation to 1e-12 on ${PAIRS.length} program pairs`, async () => {
    assert.ok(PAIRS.length >= 300, String(PAIRS.length));
    const oracle = spawnSync(
      config.parser.python,
      ["-I", fileURLToPath(new URL("../test/corrgrpo_ast_reference.py", import.meta.url))],
      { input: JSON.stringify(PAIRS), encoding: "utf8", maxBuffer: 1 << 26 },
    );
    assert.equal(oracle.status, 0, oracle.stderr);
    const expected = JSON.parse(oracle.stdout) as (number | null)[];
    const svc = createAstService(config, { parserPool: pool });
    let distinct = new Set<number>();
    for (const [k, [cand, ref]] of PAIRS.entries()) {
      const r = await svc.scoreRollout(
        makeRollout({
          response: `\`\`\`python\n${cand}\`\`\``,
          task: {
            id: "t",
            kind: { case: "code", value: { language: "python", entryPoint: "", referenceSolution: ref } },
          },
        }),
      );
      const sim = r.components.find((c) => c.name === "similarity")!;
      assert.notEqual(expected[k], null, `pair ${k} parses`);
      assert.ok(Math.abs(sim.value - expected[k]!) <= 1e-12, `pair ${k}: ${sim.value} vs ${expected[k]}`);
      distinct = distinct.add(sim.value);
    }
    assert.ok(
      distinct.size > 100,
      `only ${distinct.size} distinct values: the pairs do not exercise the matcher`,
    );
  });
});
