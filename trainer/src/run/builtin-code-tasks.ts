/**
 * Built-in `code` task set: LeetCodeDataset-style problems (`class Solution`, `check(candidate)` asserts,
 * a reference solution). The policy writes the method body line by line from a vocabulary of correct,
 * wrong and slow lines; the response is that body under the class and signature, in a python fence. Scored for real by `code-exec` (format, syntax, compile, runtime, pass, pass_rate), `ast`
 * (similarity to the reference) and `efficiency` (CPU time against the reference) in the sandbox.
 * @module
 */
import type { FragmentTaskDefinition } from "./tasks.js";

const STOP = "<eos>";

interface CodeSpec {
  readonly id: string;
  readonly prompt: string;
  readonly signature: string;
  readonly method: string;
  readonly reference: readonly string[];
  /** Other body lines: wrong answers, slow-but-correct pieces, junk. */
  readonly others: readonly string[];
  readonly test: string;
}

const CLASS = "class Solution:\n";

const CODE_SPECS: readonly CodeSpec[] = [
  {
    id: "code-sum-list",
    prompt: "Return the sum of the integers in nums.",
    signature: "    def total(self, nums: List[int]) -> int:\n",
    method: "total",
    reference: ["        return sum(nums)\n"],
    others: [
      "        s = 0\n",
      "        for x in nums:\n",
      "            s += x\n",
      "        return s\n",
      "        return max(nums)\n",
      "        return len(nums)\n",
    ],
    test: "def check(candidate):\n    assert candidate(nums=[1, 2, 3]) == 6\n    assert candidate(nums=[]) == 0\n    assert candidate(nums=[-5, 5, 10]) == 10\n    assert candidate(nums=list(range(1000))) == 499500\n",
  },
  {
    id: "code-reverse-string",
    prompt: "Return s reversed.",
    signature: "    def reverse(self, s: str) -> str:\n",
    method: "reverse",
    reference: ["        return s[::-1]\n"],
    others: [
      "        return s\n",
      "        return s.upper()\n",
      '        return "".join(reversed(s))\n',
      "        return sorted(s)\n",
    ],
    test: 'def check(candidate):\n    assert candidate(s="abc") == "cba"\n    assert candidate(s="") == ""\n    assert candidate(s="racecar") == "racecar"\n    assert candidate(s="ab") == "ba"\n',
  },
  {
    id: "code-count-vowels",
    prompt: "Return how many characters of s are lowercase vowels (a, e, i, o, u).",
    signature: "    def vowels(self, s: str) -> int:\n",
    method: "vowels",
    reference: ['        return sum(1 for c in s if c in "aeiou")\n'],
    others: [
      "        return len(s)\n",
      '        return s.count("a")\n',
      "        n = 0\n",
      "        for c in s:\n",
      '            n += c in "aeiou"\n',
      "        return n\n",
    ],
    test: 'def check(candidate):\n    assert candidate(s="hello") == 2\n    assert candidate(s="") == 0\n    assert candidate(s="xyz") == 0\n    assert candidate(s="aeiou") == 5\n',
  },
];

function codeTask(c: CodeSpec): FragmentTaskDefinition {
  const vocabulary = [STOP, ...c.reference, ...c.others];
  return {
    id: c.id,
    set: "code",
    task: {
      id: c.id,
      prompt: c.prompt,
      kind: {
        case: "code",
        value: {
          language: "python",
          prompt: "from typing import *",
          test: c.test,
          entryPoint: `Solution().${c.method}`,
          referenceSolution: CLASS + c.signature + c.reference.join(""),
          timeLimitMs: 5_000,
        },
      },
    },
    vocabulary,
    stopToken: 0,
    maxTokens: 4,
    render: (f) => `\`\`\`python\n${CLASS}${c.signature}${f.filter((x) => x !== STOP).join("")}\`\`\``,
  };
}

/** The `code` set. */
export const CODE_TASKS: readonly FragmentTaskDefinition[] = CODE_SPECS.map(codeTask);
