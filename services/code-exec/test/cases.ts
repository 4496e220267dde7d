/**
 * Small real problems in HumanEval / LeetCodeDataset / APPS style, written for these tests, with the
 * components CorrGRPO's staging implies (`specs/rewards.md` §1.3: empty → 0,0,0,0,0; no colon →
 * 1,0,0,0,0; stray return → 1,1,0,0,0; ZeroDivisionError → 1,1,1,0,0; wrong → 1,1,1,1,0;
 * correct → 1,1,1,1,1; correct unfenced → 0,1,1,1,1; fenced function without class Solution →
 * format 0 and a runtime error). Shared by the bwrap and the Docker tests.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CodeTaskSchema } from "@reward-mesh/proto";

type CodeTaskInit = Omit<MessageInitShape<typeof CodeTaskSchema>, "$typeName">;

/** LeetCodeDataset style: verifier prompt, `class Solution`, `check(candidate)` with keyword asserts. */
export const twoSum: CodeTaskInit = {
  language: "python",
  prompt: "from typing import *\nfrom collections import *\nimport math",
  test: [
    "def check(candidate):",
    "    assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]",
    "    assert candidate(nums=[3, 2, 4], target=6) == [1, 2]",
    "    assert candidate(nums=[3, 3], target=6) == [0, 1]",
    "",
  ].join("\n"),
  entryPoint: "Solution().twoSum",
  referenceSolution:
    "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        d = {}\n        for i, x in enumerate(nums):\n            if target - x in d:\n                return [d[target - x], i]\n            d[x] = i\n",
  timeLimitMs: 1_500,
};

const fence = (code: string) => `Here is my solution.\n\n\`\`\`python\n${code}\`\`\`\n`;

const correct =
  "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n";

/** HumanEval style: a plain function entry point, `check(candidate)` with positional asserts. */
export const closeElements: CodeTaskInit = {
  language: "python",
  prompt: "from typing import List",
  test: [
    "METADATA = {'author': 'tests'}",
    "",
    "def check(candidate):",
    "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True",
    "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False",
    "    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True",
    "    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True",
    "",
  ].join("\n"),
  entryPoint: "has_close_elements",
};

/** APPS style: stdin → stdout. */
export const sumPairs: CodeTaskInit = {
  language: "python",
  ioTests: [
    { stdin: "2\n1 2\n3 4\n", expectedStdout: "3\n7\n" },
    { stdin: "1\n10 -10\n", expectedStdout: "0" },
    { stdin: "3\n0 0\n5 5\n1 1\n", expectedStdout: "0\n10\n2\n" },
  ],
};

/** One case: a response and the expected [format, syntax, compile, runtime, pass, pass_rate]. */
export interface Case {
  readonly name: string;
  readonly task: CodeTaskInit;
  readonly response: string;
  readonly expected: readonly [number, number, number, number, number, number];
  /** Expected `status` name of runtime / pass, and a pattern their details must match. */
  readonly runtimeStatus?: "OK" | "ERROR" | "TIMEOUT";
  readonly details?: RegExp;
}

/** The correctness cases (each runs the real harness in a real sandbox). */
export const cases: readonly Case[] = [
  {
    name: "correct (LeetCode)",
    task: twoSum,
    response: fence(correct),
    expected: [1, 1, 1, 1, 1, 1],
    details: /3\/3 tests passed/,
  },
  {
    name: "wrong answer: runtime 1, pass 0, first failing test in details",
    task: twoSum,
    response: fence(
      correct.replace("return [seen[target - x], i]", "return [seen[target - x], i] if x != 4 else [2, 1]"),
    ),
    expected: [1, 1, 1, 1, 0, 2 / 3],
    runtimeStatus: "OK",
    details:
      /2\/3 tests passed; first failing: test line 3: assert candidate\(nums=\[3, 2, 4\], target=6\) == \[1, 2\] — AssertionError/,
  },
  {
    name: "syntax error (class Solution without a colon)",
    task: twoSum,
    response: fence(correct.replace("class Solution:", "class Solution")),
    expected: [1, 0, 0, 0, 0, 0],
    runtimeStatus: "ERROR",
  },
  {
    name: "compile error (valid class, then a stray top-level return)",
    task: twoSum,
    response: fence(`${correct}return 5\n`),
    expected: [1, 1, 0, 0, 0, 0],
    runtimeStatus: "ERROR",
  },
  {
    name: "runtime error (ZeroDivisionError)",
    task: twoSum,
    response: fence(correct.replace("seen = {}", "seen = {}\n        _ = 1 / 0")),
    expected: [1, 1, 1, 0, 0, 0],
    runtimeStatus: "ERROR",
    details: /runtime error: .*ZeroDivisionError: division by zero \(solution line 4\)/,
  },
  {
    name: "timeout (an infinite loop)",
    task: twoSum,
    response: fence(correct.replace("seen = {}", "seen = {}\n        while True:\n            pass")),
    expected: [1, 1, 1, 0, 0, 0],
    runtimeStatus: "TIMEOUT",
    details:
      /timeout \(1500 ms per execution\); 0\/3 tests passed; first failing: test line 2: .* — timed out/,
  },
  {
    name: "slow but correct (quadratic, within the limit)",
    task: twoSum,
    response: fence(
      "class Solution:\n    def twoSum(self, nums, target):\n        for _ in range(200000):\n            pass\n        for i in range(len(nums)):\n            for j in range(i + 1, len(nums)):\n                if nums[i] + nums[j] == target:\n                    return [i, j]\n",
    ),
    expected: [1, 1, 1, 1, 1, 1],
  },
  {
    name: "correct but without a fence: format 0",
    task: twoSum,
    response: `Sure.\n${correct}`,
    expected: [0, 1, 1, 1, 1, 1],
  },
  {
    name: "fenced function without class Solution: format 0, NameError",
    task: twoSum,
    response: fence("def twoSum(nums, target):\n    return [0, 1]\n"),
    expected: [0, 1, 1, 0, 0, 0],
    runtimeStatus: "ERROR",
    details: /NameError: name 'Solution' is not defined/,
  },
  {
    name: "empty response",
    task: twoSum,
    response: "",
    expected: [0, 0, 0, 0, 0, 0],
    runtimeStatus: "ERROR",
  },
  {
    name: "\\r\\n line ends and tab indentation",
    task: twoSum,
    response: fence(correct.replace(/ {4}/g, "\t")).replace(/\n/g, "\r\n"),
    expected: [1, 1, 1, 1, 1, 1],
  },
  {
    name: "HumanEval style, correct",
    task: closeElements,
    response: fence(
      "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n    s = sorted(numbers)\n    return any(b - a < threshold for a, b in zip(s, s[1:]))\n",
    ),
    expected: [1, 1, 1, 1, 1, 1],
  },
  {
    name: "HumanEval style, off by one: each assert counted separately",
    task: closeElements,
    response: fence(
      "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n    s = sorted(numbers)\n    return any(b - a <= threshold / 2 for a, b in zip(s, s[1:]))\n",
    ),
    expected: [1, 1, 1, 1, 0, 0.5],
    runtimeStatus: "OK",
  },
  {
    name: "memory bomb: runtime error (out of memory)",
    task: { ...twoSum, memoryLimitMb: 64 },
    response: fence(
      correct.replace("seen = {}", "seen = {}\n        x = [bytearray(16 << 20) for _ in range(64)]"),
    ),
    expected: [1, 1, 1, 0, 0, 0],
    runtimeStatus: "ERROR",
    details: /out of memory \(64 MiB\)/,
  },
  {
    name: "stdin → stdout tests (APPS style), correct",
    task: sumPairs,
    response: fence(
      "n = int(input())\nfor _ in range(n):\n    a, b = map(int, input().split())\n    print(a + b)\n",
    ),
    expected: [1, 1, 1, 1, 1, 1],
  },
  {
    name: "stdin → stdout tests, one wrong output",
    task: sumPairs,
    response: fence(
      "import sys\nrows = sys.stdin.read().split('\\n')[1:]\nfor r in rows:\n    if r.strip():\n        a, b = map(int, r.split())\n        print(abs(a) + abs(b))\n",
    ),
    expected: [1, 1, 1, 1, 0, 2 / 3],
    runtimeStatus: "OK",
    details: /first failing: io test 2: expected "0", got "20\\n"/,
  },
];
