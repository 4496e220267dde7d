/**
 * HumanEval-shaped tasks written for the benchmarks (a function, its canonical solution, a
 * `check(candidate)` of a few asserts): no dataset is downloaded. Used by `efficiency.bench.ts`
 * (self-vs-self noise) and `sandbox.bench.ts` (scored rollouts/s against bare `python3`).
 */
export interface Task {
  readonly name: string;
  readonly entry: string;
  readonly solution: string;
  readonly test: string;
}

export const task = (name: string, entry: string, solution: string, asserts: readonly string[]): Task => ({
  name,
  entry,
  solution,
  test: `def check(candidate):\n${asserts.map((a) => `    assert ${a}\n`).join("")}`,
});

/** HumanEval-style tasks: canonical solutions of the usual size. */
export const HUMANEVAL_STYLE: readonly Task[] = [
  task(
    "has_close_elements",
    "has_close_elements",
    "def has_close_elements(numbers, threshold):\n    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n",
    [
      "candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True",
      "candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False",
      "candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True",
      "candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True",
    ],
  ),
  task(
    "separate_paren_groups",
    "separate_paren_groups",
    "def separate_paren_groups(s):\n    out, cur, depth = [], [], 0\n    for c in s:\n        if c == '(':\n            depth += 1\n            cur.append(c)\n        elif c == ')':\n            depth -= 1\n            cur.append(c)\n            if depth == 0:\n                out.append(''.join(cur))\n                cur = []\n    return out\n",
    [
      "candidate('(()()) ((())) () ((())()())') == ['(()())', '((()))', '()', '((())()())']",
      "candidate('() (()) ((())) (((())))') == ['()', '(())', '((()))', '(((())))']",
      "candidate('( ) (( )) (( )( ))') == ['()', '(())', '(()())']",
    ],
  ),
  task("truncate_number", "truncate_number", "def truncate_number(x):\n    return x % 1.0\n", [
    "candidate(3.5) == 0.5",
    "abs(candidate(1.33) - 0.33) < 1e-6",
    "abs(candidate(123.456) - 0.456) < 1e-6",
  ]),
  task(
    "below_zero",
    "below_zero",
    "def below_zero(ops):\n    bal = 0\n    for op in ops:\n        bal += op\n        if bal < 0:\n            return True\n    return False\n",
    [
      "candidate([]) == False",
      "candidate([1, 2, -3, 1, 2, -3]) == False",
      "candidate([1, 2, -4, 5, 6]) == True",
      "candidate([1, -1, 2, -2, 5, -5, 4, -4]) == False",
      "candidate([1, -2, 2, -2, 5, -5, 4, -4]) == True",
    ],
  ),
  task(
    "mean_absolute_deviation",
    "mean_absolute_deviation",
    "def mean_absolute_deviation(xs):\n    m = sum(xs) / len(xs)\n    return sum(abs(x - m) for x in xs) / len(xs)\n",
    [
      "abs(candidate([1.0, 2.0, 3.0]) - 2.0 / 3.0) < 1e-6",
      "abs(candidate([1.0, 2.0, 3.0, 4.0]) - 1.0) < 1e-6",
      "abs(candidate([1.0, 2.0, 3.0, 4.0, 5.0]) - 6.0 / 5.0) < 1e-6",
    ],
  ),
  task(
    "intersperse",
    "intersperse",
    "def intersperse(numbers, d):\n    if not numbers:\n        return []\n    out = []\n    for n in numbers[:-1]:\n        out.append(n)\n        out.append(d)\n    out.append(numbers[-1])\n    return out\n",
    [
      "candidate([], 7) == []",
      "candidate([5, 6, 3, 2], 8) == [5, 8, 6, 8, 3, 8, 2]",
      "candidate([2, 2, 2], 2) == [2, 2, 2, 2, 2]",
    ],
  ),
  task(
    "parse_nested_parens",
    "parse_nested_parens",
    "def parse_nested_parens(s):\n    def depth(g):\n        d = m = 0\n        for c in g:\n            d += 1 if c == '(' else -1\n            m = max(m, d)\n        return m\n    return [depth(g) for g in s.split(' ') if g]\n",
    [
      "candidate('(()()) ((())) () ((())()())') == [2, 3, 1, 3]",
      "candidate('() (()) ((())) (((())))') == [1, 2, 3, 4]",
      "candidate('(()(())((())))') == [4]",
    ],
  ),
  task(
    "filter_by_substring",
    "filter_by_substring",
    "def filter_by_substring(strings, sub):\n    return [s for s in strings if sub in s]\n",
    [
      "candidate([], 'john') == []",
      "candidate(['xxx', 'asd', 'xxy', 'john doe', 'xxxAAA', 'xxx'], 'xxx') == ['xxx', 'xxxAAA', 'xxx']",
      "candidate(['grunt', 'trumpet', 'prune', 'gruesome'], 'run') == ['grunt', 'prune']",
    ],
  ),
  task(
    "sum_product",
    "sum_product",
    "def sum_product(numbers):\n    s, p = 0, 1\n    for n in numbers:\n        s += n\n        p *= n\n    return s, p\n",
    [
      "candidate([]) == (0, 1)",
      "candidate([1, 1, 1]) == (3, 1)",
      "candidate([100, 0]) == (100, 0)",
      "candidate([3, 5, 7]) == (15, 105)",
    ],
  ),
  task(
    "rolling_max",
    "rolling_max",
    "def rolling_max(numbers):\n    out, m = [], None\n    for n in numbers:\n        m = n if m is None else max(m, n)\n        out.append(m)\n    return out\n",
    [
      "candidate([]) == []",
      "candidate([1, 2, 3, 4]) == [1, 2, 3, 4]",
      "candidate([4, 3, 2, 1]) == [4, 4, 4, 4]",
      "candidate([3, 2, 3, 100, 3]) == [3, 3, 3, 100, 100]",
    ],
  ),
  task(
    "make_palindrome",
    "make_palindrome",
    "def make_palindrome(s):\n    if not s:\n        return ''\n    i = 0\n    while s[i:] != s[i:][::-1]:\n        i += 1\n    return s + s[:i][::-1]\n",
    [
      "candidate('') == ''",
      "candidate('x') == 'x'",
      "candidate('xyz') == 'xyzyx'",
      "candidate('xyx') == 'xyx'",
      "candidate('jerry') == 'jerryrrej'",
    ],
  ),
  task(
    "string_xor",
    "string_xor",
    "def string_xor(a, b):\n    return ''.join('0' if x == y else '1' for x, y in zip(a, b))\n",
    [
      "candidate('111000', '101010') == '010010'",
      "candidate('1', '1') == '0'",
      "candidate('0101', '0000') == '0101'",
    ],
  ),
  task(
    "longest",
    "longest",
    "def longest(strings):\n    if not strings:\n        return None\n    m = max(len(s) for s in strings)\n    for s in strings:\n        if len(s) == m:\n            return s\n",
    [
      "candidate([]) == None",
      "candidate(['x', 'y', 'z']) == 'x'",
      "candidate(['x', 'yyy', 'zzzz', 'www', 'kkkk', 'abc']) == 'zzzz'",
    ],
  ),
  task(
    "greatest_common_divisor",
    "greatest_common_divisor",
    "def greatest_common_divisor(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
    ["candidate(3, 7) == 1", "candidate(10, 15) == 5", "candidate(49, 14) == 7", "candidate(144, 60) == 12"],
  ),
  task(
    "all_prefixes",
    "all_prefixes",
    "def all_prefixes(s):\n    return [s[: i + 1] for i in range(len(s))]\n",
    [
      "candidate('') == []",
      "candidate('asdfgh') == ['a', 'as', 'asd', 'asdf', 'asdfg', 'asdfgh']",
      "candidate('WWW') == ['W', 'WW', 'WWW']",
    ],
  ),
  task(
    "string_sequence",
    "string_sequence",
    "def string_sequence(n):\n    return ' '.join(str(x) for x in range(n + 1))\n",
    ["candidate(0) == '0'", "candidate(3) == '0 1 2 3'", "candidate(10) == '0 1 2 3 4 5 6 7 8 9 10'"],
  ),
  task(
    "count_distinct_characters",
    "count_distinct_characters",
    "def count_distinct_characters(s):\n    return len(set(s.lower()))\n",
    [
      "candidate('') == 0",
      "candidate('abcde') == 5",
      "candidate('abcde' + 'cade' + 'CADE') == 5",
      "candidate('aaaaAAAAaaaa') == 1",
      "candidate('Jerry jERRY JeRRRY') == 5",
    ],
  ),
  task(
    "how_many_times",
    "how_many_times",
    "def how_many_times(s, sub):\n    return sum(1 for i in range(len(s) - len(sub) + 1) if s[i : i + len(sub)] == sub)\n",
    [
      "candidate('', 'x') == 0",
      "candidate('xyxyxyx', 'x') == 4",
      "candidate('cacacacac', 'cac') == 4",
      "candidate('john doe', 'john') == 1",
    ],
  ),
  task(
    "sort_numbers",
    "sort_numbers",
    "def sort_numbers(s):\n    names = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine']\n    return ' '.join(sorted((w for w in s.split(' ') if w), key=names.index))\n",
    [
      "candidate('') == ''",
      "candidate('three') == 'three'",
      "candidate('three five nine') == 'three five nine'",
      "candidate('five zero four seven nine eight') == 'zero four five seven eight nine'",
    ],
  ),
  task(
    "find_closest_elements",
    "find_closest_elements",
    "def find_closest_elements(xs):\n    best = None\n    for i, a in enumerate(xs):\n        for j, b in enumerate(xs):\n            if i != j:\n                pair = tuple(sorted((a, b)))\n                if best is None or pair[1] - pair[0] < best[1] - best[0]:\n                    best = pair\n    return best\n",
    [
      "candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2]) == (3.9, 4.0)",
      "candidate([1.0, 2.0, 5.9, 4.0, 5.0]) == (5.0, 5.9)",
      "candidate([1.1, 2.2, 3.1, 4.1, 5.1]) == (2.2, 3.1)",
    ],
  ),
  task(
    "rescale_to_unit",
    "rescale_to_unit",
    "def rescale_to_unit(xs):\n    lo, hi = min(xs), max(xs)\n    return [(x - lo) / (hi - lo) for x in xs]\n",
    [
      "candidate([2.0, 49.9]) == [0.0, 1.0]",
      "candidate([100.0, 49.9]) == [1.0, 0.0]",
      "candidate([1.0, 2.0, 3.0, 4.0, 5.0]) == [0.0, 0.25, 0.5, 0.75, 1.0]",
    ],
  ),
  task(
    "largest_divisor",
    "largest_divisor",
    "def largest_divisor(n):\n    for i in reversed(range(n)):\n        if n % i == 0:\n            return i\n",
    [
      "candidate(3) == 1",
      "candidate(7) == 1",
      "candidate(10) == 5",
      "candidate(100) == 50",
      "candidate(49) == 7",
    ],
  ),
  task(
    "factorize",
    "factorize",
    "def factorize(n):\n    out, i = [], 2\n    while i * i <= n:\n        while n % i == 0:\n            out.append(i)\n            n //= i\n        i += 1\n    if n > 1:\n        out.append(n)\n    return out\n",
    [
      "candidate(2) == [2]",
      "candidate(4) == [2, 2]",
      "candidate(8) == [2, 2, 2]",
      "candidate(3 * 19) == [3, 19]",
      "candidate(3 * 19 * 3 * 19 * 3 * 19) == [3, 3, 3, 19, 19, 19]",
    ],
  ),
  task(
    "is_prime",
    "is_prime",
    "def is_prime(n):\n    if n < 2:\n        return False\n    k = 2\n    while k * k <= n:\n        if n % k == 0:\n            return False\n        k += 1\n    return True\n",
    [
      "candidate(6) == False",
      "candidate(101) == True",
      "candidate(11) == True",
      "candidate(13441) == True",
      "candidate(61) == True",
      "candidate(4) == False",
      "candidate(1) == False",
    ],
  ),
];
