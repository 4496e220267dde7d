/**
 * Scoring integrity, for every backend (shared by `bwrap.test.ts` and `sandbox.docker.test.ts`):
 * candidate code that tries to change its own verdict — patch the test recorder, lie with `__eq__`,
 * forge harness events, signal or flood the harness, shadow builtins, read the tests — and the
 * common test formats (HumanEval, MBPP, LeetCodeDataset) still passing with correct solutions.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type PythonProgram, runPythonTests, type Sandbox, type TestReport } from "../src/index.js";

/**
 * Modules the datasets' prompts import (LeetCodeDataset's standard header, which CorrGRPO's reward
 * prepends; HumanEval / MBPP use a subset): each must import in every backend's interpreter.
 */
export const DATASET_MODULES = [
  "sortedcontainers",
  "heapq",
  "bisect",
  "functools",
  "collections",
  "itertools",
  "math",
  "string",
  "operator",
  "random",
  "datetime",
  "typing",
  "re",
  "copy",
  "statistics",
  "fractions",
  "decimal",
  "array",
] as const;

/** The header as the prompts write it. */
const DATASET_HEADER = [
  ...DATASET_MODULES.filter((m) => m !== "sortedcontainers").map((m) => `import ${m}`),
  "from typing import *",
  "from functools import *",
  "from collections import *",
  "from itertools import *",
  "from heapq import *",
  "from bisect import *",
  "from string import *",
  "from operator import *",
  "from math import *",
  "from sortedcontainers import SortedList, SortedDict, SortedSet",
  "inf = float('inf')",
].join("\n");

/** HumanEval style; every attack below returns wrong values (or none), so a pass can only be forged. */
const addTask: PythonProgram = {
  prompt: 'import math\n\n\ndef add(a, b):\n    """Return a + b."""\n',
  solution: "",
  test: [
    "def check(candidate):",
    "    assert candidate(1, 2) == 3",
    "    assert candidate(2, 2) == 4",
    "    assert math.isclose(candidate(0.5, 0.25), 0.75)",
    "    assert abs(candidate(10, -3) - 7) < 1e-9",
    "    for i in range(3):",
    "        assert candidate(i, i) == 2 * i + 0.5  # never true: the test's own marker RM-SECRET-7c1e",
    "",
  ].join("\n"),
  entryPoint: "add",
  ioTests: [],
  timeLimitMs: 3_000,
  memoryLimitMb: 256,
};

const WRONG = "def add(a, b):\n    return 0\n";

/** Each forgery: a solution whose honest answer is wrong, plus code that tries to make it pass anyway. */
export const forgeries: ReadonlyArray<{ readonly name: string; readonly solution: string }> = [
  {
    name: "(a) patch the test recorder through sys._getframe().f_globals",
    solution: `import sys
def _patch(g):
    for k, v in list(g.items()):
        if "reward_mesh" in k or hasattr(v, "fail"):
            try:
                v.fail = v.ok
                v.error = v.ok
            except Exception:
                pass
_patch(sys._getframe().f_globals)
def add(a, b):
    f = sys._getframe()
    while f is not None:
        _patch(f.f_globals)
        f = f.f_back
    return 0
`,
  },
  {
    name: "(a) patch every recorder-like object found by the garbage collector",
    solution: `import gc
for o in gc.get_objects():
    for name in ("fail", "error"):
        if hasattr(type(o), name) and hasattr(type(o), "ok"):
            try:
                setattr(type(o), name, type(o).ok)
            except Exception:
                pass
${WRONG}`,
  },
  {
    name: "(b) return an object whose __eq__ is always True (and __ne__, __hash__, __abs__, __lt__ lie too)",
    solution: `class Liar:
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __hash__(self): return 0
    def __bool__(self): return True
    def __sub__(self, o): return Liar()
    def __abs__(self): return 0
    def __lt__(self, o): return True
    def __float__(self): return 3.0
    def __reduce__(self): return (print, ("pickled",))
def add(a, b):
    return Liar()
`,
  },
  {
    name: "(b) return int / float / str / list subclasses with lying comparisons",
    solution: `class I(int):
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __sub__(self, o): return 0
    __hash__ = int.__hash__
class F(float):
    def __eq__(self, o): return True
    def __sub__(self, o): return 0.0
    __hash__ = float.__hash__
class L(list):
    def __eq__(self, o): return True
n = 0
def add(a, b):
    global n
    n += 1
    return [I(0), F(0.0), L([0]), I(-1)][n % 4]
`,
  },
  {
    name: "(c) write fake ok/done events and answers to every inherited fd, then exit",
    solution: `import os, json
for fd in range(3, 64):
    for i in range(12):
        for msg in ({"e": "ok", "i": i, "cpuMs": 0}, {"e": "done"}, {"id": i, "r": True}, {"setup": True, "names": {}}):
            data = json.dumps(msg).encode()
            try:
                os.write(fd, data + b"\\n")
                os.write(fd, b"%d\\n" % len(data) + data)
            except OSError:
                pass
os._exit(0)
`,
  },
  {
    name: "(c) forge events from inside the call, then os._exit(0) after printing",
    solution: `import os, json
def add(a, b):
    for fd in range(3, 64):
        try:
            os.write(fd, b'{"e":"ok","i":0}\\n{"e":"done"}\\n')
        except OSError:
            pass
    print("3")
    import sys
    sys.stdout.flush()
    os._exit(0)
`,
  },
  {
    name: "(d) SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, SIGSEGV to the harness and every process",
    solution: `import os, signal
def _hit():
    pids = [os.getppid()] + [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGSEGV, signal.SIGPIPE, signal.SIGXCPU):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
_hit()
def add(a, b):
    _hit()
    return 0
`,
  },
  {
    name: "(d) SIGKILL and SIGSTOP to the harness",
    solution: `import os, signal
for sig in (signal.SIGSTOP, signal.SIGKILL):
    for pid in [os.getppid()] + [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
${WRONG}`,
  },
  {
    name: "(e) flood every inherited fd (the old event pipe) with hundreds of MB",
    solution: `import os
chunk = b"9" * (1 << 20)
for fd in range(3, 64):
    try:
        for _ in range(300):
            os.write(fd, chunk)
    except OSError:
        pass
${WRONG}`,
  },
  {
    name: "monkeypatch builtins and the test's modules; shadow abs, isinstance and math",
    solution: `import builtins, math
builtins.abs = lambda x: 0
builtins.AssertionError = type("AssertionError", (Exception,), {})
math.isclose = lambda *a, **k: True
def abs(x): return 0
def isinstance(*a): return True
class _M:
    isclose = staticmethod(lambda *a, **k: True)
math = _M()
${WRONG}`,
  },
  {
    name: "raise SystemExit(0) during a call",
    solution: "def add(a, b):\n    raise SystemExit(0)\n",
  },
  {
    name: "exit(0) at import time",
    solution: "import sys\nsys.exit(0)\n",
  },
  {
    name: "exceptions with a lying __str__ and class",
    solution: `class Passed(AssertionError):
    def __str__(self): return "ok"
    def __repr__(self): return "ok"
class Sneaky(Exception):
    @property
    def __class__(self): return StopIteration
    def __str__(self): return "passed"
n = 0
def add(a, b):
    global n
    n += 1
    raise (Passed if n % 2 else Sneaky)()
`,
  },
  {
    name: "read the test code (memory, /proc, files, inherited fds) and answer from it",
    solution: `import gc, os, sys
def _search():
    marker = "RM-SECRET-" + "7c1e"
    for o in gc.get_objects():
        if isinstance(o, str) and marker in o:
            return True
    paths = []
    for n in os.listdir("/proc"):
        if n.isdigit() or n == "self":
            paths += ["/proc/%s/%s" % (n, f) for f in ("cmdline", "environ", "mem", "fd/0", "fd/1", "fd/3")]
    for root in ("/tmp", "/opt"):
        for d, _, files in os.walk(root):
            paths += [os.path.join(d, f) for f in files]
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            try:
                if marker.encode() in os.read(fd, 1 << 22):
                    return True
            finally:
                os.close(fd)
        except OSError:
            pass
    for fd in range(0, 64):
        try:
            blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)
            try:
                if marker.encode() in os.read(fd, 1 << 20):
                    return True
            finally:
                os.set_blocking(fd, blocking)
        except OSError:
            pass
    return False
FOUND = _search()
def add(a, b):
    return a + b + (0.5 if a == b else 0) if FOUND else 0
`,
  },
  {
    name: "time the judge between calls and probe answers",
    solution: `import time
last = [time.monotonic(), 0]
guesses = [3, 4, 0.75, 7, 0.5, 2.5, 4.5]
def add(a, b):
    now = time.monotonic()
    gap = now - last[0]
    last[0] = now
    last[1] += 1
    return guesses[last[1] % len(guesses)] if gap > 10 else 0
`,
  },
];

/** Correct solutions of the common formats: each must still pass every test, judged. */
export const formats: ReadonlyArray<{
  readonly name: string;
  readonly program: PythonProgram;
  readonly asserts: number;
}> = [
  {
    name: "HumanEval/32 shape: a prompt helper (poly) applied to the candidate's output, 100 random cases",
    asserts: 1,
    program: {
      prompt:
        'import math\n\n\ndef poly(xs: list, x: float):\n    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\ndef find_zero(xs: list):\n    """ xs are coefficients of a polynomial; find x such that poly(x) = 0. """\n',
      solution:
        "def find_zero(xs: list):\n    begin, end = -1., 1.\n    while poly(xs, begin) * poly(xs, end) > 0:\n        begin *= 2.0\n        end *= 2.0\n    while end - begin > 1e-10:\n        center = (begin + end) / 2.0\n        if poly(xs, center) * poly(xs, begin) > 0:\n            begin = center\n        else:\n            end = center\n    return begin\n",
      test: "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    import math\n    import random\n    rng = random.Random(42)\n    import copy\n    for _ in range(100):\n        ncoeff = 2 * rng.randint(1, 4)\n        coeffs = []\n        for _ in range(ncoeff):\n            coeff = rng.randint(-10, 10)\n            if coeff == 0:\n                coeff = 1\n            coeffs.append(coeff)\n        solution = candidate(copy.deepcopy(coeffs))\n        assert math.fabs(poly(coeffs, solution)) < 1e-4\n\n",
      entryPoint: "find_zero",
      ioTests: [],
      timeLimitMs: 5_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "HumanEval/38 shape: encode helper in the prompt, `is True`, floats and nested data",
    asserts: 4,
    program: {
      prompt:
        'from typing import List, Tuple\n\n\ndef encode_cyclic(s: str):\n    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]\n    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]\n    return "".join(groups)\n\n\ndef decode_cyclic(s: str):\n    """ takes as input string encoded with encode_cyclic function. Returns decoded string. """\n',
      solution: "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n",
      test: "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    from random import Random\n    import string\n    rng = Random(7)\n    for _ in range(50):\n        s = ''.join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(10, 20)))\n        assert candidate(encode_cyclic(s)) == s\n    assert candidate('') == ''\n    assert (candidate('abc') == 'abc') is False\n    assert isinstance(candidate('bca'), str)\n",
      entryPoint: "decode_cyclic",
      ioTests: [],
      timeLimitMs: 5_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "MBPP (as imported: the function bound inside check, setup import), returning tuples and sets",
    asserts: 3,
    program: {
      prompt: "",
      solution:
        "import math\ndef similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))\ndef circle_area(r):\n    return math.pi * r * r\n",
      test: "import math\n\ndef check(candidate):\n    similar_elements = candidate\n    assert set(similar_elements((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))\n    assert similar_elements((1, 2, 3, 4), (5, 4, 3, 7)) == (3, 4)\n    assert math.isclose(circle_area(2), 12.566370614359172, rel_tol=1e-9)\n",
      entryPoint: "similar_elements",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "MBPP top-level asserts (no entry point) calling the solution's functions by name",
    asserts: 3,
    program: {
      prompt: "",
      solution: "def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiou')\n",
      test: "assert count_vowels('banana') == 3\nassert count_vowels('xyz') == 0\nassert list(map(count_vowels, ['AEIOU'])) == [5]\n",
      entryPoint: "",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "LeetCodeDataset: instances of the prompt's ListNode cross both ways (rebuilt from the judge's class)",
    asserts: 3,
    program: {
      prompt:
        "from typing import *\n\nclass ListNode:\n    def __init__(self, val=0, next=None):\n        self.val = val\n        self.next = next\n\ndef list_node(values):\n    head = ListNode(0)\n    p = head\n    for v in values:\n        p.next = ListNode(v)\n        p = p.next\n    return head.next\n\ndef is_same_list(p1, p2):\n    while p1 and p2:\n        if p1.val != p2.val:\n            return False\n        p1, p2 = p1.next, p2.next\n    return p1 is None and p2 is None\n",
      solution:
        "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n        prev = None\n        while head:\n            head.next, prev, head = prev, head, head.next\n        return prev\n    def rotate(self, nums: List[int], k: int) -> None:\n        k %= len(nums)\n        nums[:] = nums[-k:] + nums[:-k]\n",
      test: "def check(candidate):\n    assert is_same_list(candidate(head = list_node([1,2,3,4,5])), list_node([5,4,3,2,1]))\n    assert is_same_list(candidate(head = list_node([])), list_node([]))\n    assert candidate(list_node([7])).val == 7\n",
      entryPoint: "Solution().reverseList",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "LeetCodeDataset in-place method: the judge's argument takes the candidate's mutation",
    asserts: 2,
    program: {
      prompt: "from typing import *",
      solution:
        "class Solution:\n    def rotate(self, nums: List[int], k: int) -> None:\n        k %= len(nums)\n        nums[:] = nums[-k:] + nums[:-k]\n",
      test: "def check(candidate):\n    nums = [1, 2, 3, 4, 5]\n    assert candidate(nums, 2) is None\n    assert nums == [4, 5, 1, 2, 3]\n",
      entryPoint: "Solution().rotate",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "every supported plain-data type round-trips exactly (and a generator arrives as an iterator)",
    asserts: 4,
    program: {
      prompt:
        "from collections import deque, Counter, OrderedDict, defaultdict\nfrom fractions import Fraction\nfrom decimal import Decimal",
      solution:
        "def f(shared=[1]):\n    cyc = [0]\n    cyc.append(cyc)\n    return (1, -2.5, float('inf'), {1, 2}, frozenset([3]), {'a': [1, (2, 3)], (1, 'k'): None}, b'x', bytearray(b'y'), 10 ** 30, 1 + 2j, deque([1], maxlen=3), Counter('aab'), OrderedDict(a=1), defaultdict(list, b=[2]), Fraction(1, 3), Decimal('0.1'), range(3), True, [shared, shared], cyc)\n\ndef g(n):\n    return (i * i for i in range(n))\n",
      test: "def check(candidate):\n    r = candidate()\n    assert r[:-2] == (1, -2.5, float('inf'), {1, 2}, frozenset([3]), {'a': [1, (2, 3)], (1, 'k'): None}, b'x', bytearray(b'y'), 10 ** 30, 1 + 2j, deque([1], maxlen=3), Counter('aab'), OrderedDict(a=1), defaultdict(list, b=[2]), Fraction(1, 3), Decimal('0.1'), range(3), True)\n    assert r[-2][0] is r[-2][1] and r[-1][1] is r[-1] and type(r[10]) is deque and r[10].maxlen == 3\n    assert list(g(3)) == [0, 1, 4]\n    assert g(3) != [0, 1, 4]\n",
      entryPoint: "f",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
  {
    name: "a candidate exception the test expects (ValueError) is raised in the judge as the same type",
    asserts: 2,
    program: {
      prompt: "",
      solution:
        "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return {'x': [x, (x, 1.5)], 'big': 10 ** 40}\n",
      test: "def check(candidate):\n    try:\n        candidate(-1)\n        ok = False\n    except ValueError:\n        ok = True\n    assert ok\n    assert candidate(2) == {'x': [2, (2, 1.5)], 'big': 10 ** 40}\n",
      entryPoint: "f",
      ioTests: [],
      timeLimitMs: 3_000,
      memoryLimitMb: 256,
    },
  },
];

/** The invariants of a forgery's report: nothing passed, and syntax/compile (decided first) stand. */
function assertNotForged(r: TestReport, name: string): void {
  const why = `${name}: ${r.status} — ${r.summary}`;
  assert.notEqual(r.status, "passed", why);
  assert.equal(r.passed, 0, why);
  assert.equal(r.syntax.ok, true, why);
  assert.equal(r.compile.ok, true, why);
  assert.notEqual(r.status, "worker_error", why);
}

/** Registers the suite for one backend; `open` creates the sandbox under test. */
export function defineVerdictSuite(name: string, open: () => Promise<Sandbox | undefined>): void {
  describe(`${name} sandbox: scoring integrity`, () => {
    let sandbox: Sandbox | undefined;
    before(async () => {
      sandbox = await open();
    });
    after(async () => {
      await sandbox?.close();
    });
    const sb = (t: { skip: (m: string) => void }) => {
      if (!sandbox) t.skip("no sandbox");
      return sandbox!;
    };

    it("the plain wrong answer fails and the right one passes (so the attacks below can fail)", async (t) => {
      const wrong = await runPythonTests(sb(t), { ...addTask, solution: WRONG });
      assertNotForged(wrong, "wrong");
      assert.equal(wrong.status, "assertion_failed", wrong.summary);
      const right = await runPythonTests(sb(t), {
        ...addTask,
        solution: "def add(a, b):\n    return a + b\n",
      });
      assert.equal(right.passed, 4, right.summary); // the loop's site can never pass
      assert.equal(right.total, 5);
      const cheat = await runPythonTests(sb(t), {
        ...addTask,
        solution: "def add(a, b):\n    return a + b + (0.5 if a == b else 0)\n",
      });
      assert.equal(cheat.status, "assertion_failed", cheat.summary);
      assert.equal(cheat.passed, 4, "what a candidate that read the tests would score");
    });

    for (const f of forgeries) {
      it(`forgery: ${f.name}`, async (t) => {
        const r = await runPythonTests(sb(t), { ...addTask, solution: f.solution });
        assertNotForged(r, f.name);
      });
    }

    it("flooding the harness is a clear failure of that candidate, naming the cause", async (t) => {
      const flood = await runPythonTests(sb(t), {
        ...addTask,
        solution: forgeries.find((f) => f.name.startsWith("(e)"))!.solution,
      });
      assert.equal(flood.status, "runtime_error", flood.summary);
      assert.match(flood.summary, /ProtocolError|ValueTooLarge/);
      // An io worker flooding its event pipe: killed at the cap, EventFlood.
      const io = await runPythonTests(sb(t), {
        ...addTask,
        test: "",
        entryPoint: "",
        solution:
          'import os\nfor fd in range(3, 64):\n    try:\n        while True:\n            os.write(fd, b\'{"e":"done"}\\n\' * 4096)\n    except OSError:\n        pass\nprint(3)\n',
        ioTests: [{ stdin: "1 2\n", expectedStdout: "3\n" }],
      });
      assert.equal(io.status, "runtime_error", io.summary);
      assert.equal(io.passed, 0);
      assert.equal(io.syntax.ok, true);
      assert.match(io.summary, /EventFlood/);
    });

    it("SIGINT to the harness changes nothing: a correct solution still passes with syntax and compile", async (t) => {
      const r = await runPythonTests(sb(t), {
        ...addTask,
        solution: `import os, signal\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n    os.kill(os.getppid(), s)\ndef add(a, b):\n    os.kill(os.getppid(), signal.SIGINT)\n    return a + b\n`,
      });
      assert.equal(r.syntax.ok, true, r.summary);
      assert.equal(r.compile.ok, true, r.summary);
      assert.equal(r.passed, 4, r.summary);
    });

    it("has the datasets' import header: sortedcontainers and every module LeetCodeDataset / CorrGRPO prompts import", async (t) => {
      const r = await runPythonTests(sb(t), {
        ...addTask,
        prompt: `${DATASET_HEADER}\n\ndef add(a, b):\n    pass\n`,
        solution: "def add(a, b):\n    return a + b\n",
        test: `def check(candidate):\n${DATASET_MODULES.map((m) => `    assert ${JSON.stringify(m)} in __import__("sys").modules\n`).join("")}    assert SortedList([3, 1, 2])[0] == 1\n    assert candidate(1, 2) == 3\n`,
      });
      assert.equal(r.taskError, undefined, r.summary);
      assert.equal(r.status, "passed", r.summary);
      assert.equal(r.passed, DATASET_MODULES.length + 2);
    });

    it("a prompt that fails (a module missing) is a task error, decided before any candidate code; a candidate's own PromptError is not", async (t) => {
      const broken = await runPythonTests(sb(t), {
        ...addTask,
        prompt: "from no_such_module_rm import Thing\n\ndef add(a, b):\n    pass\n",
        solution: "def add(a, b):\n    return a + b\n",
      });
      assert.equal(broken.taskError?.type, "PromptError", broken.summary);
      assert.match(broken.taskError!.message, /ModuleNotFoundError: No module named 'no_such_module_rm'/);
      assert.match(broken.summary, /^task error \(not the candidate's\): PromptError/);
      const forged = await runPythonTests(sb(t), {
        ...addTask,
        solution:
          "class PromptError(Exception):\n    pass\ndef add(a, b):\n    raise PromptError('the task is broken, honest')\n",
      });
      assert.equal(forged.taskError, undefined, forged.summary);
      assert.equal(forged.status, "runtime_error");
    });

    it("test code that imports a missing module before calling the candidate is a task error; the candidate's own ImportError is not", async (t) => {
      const broken = await runPythonTests(sb(t), {
        ...addTask,
        solution: "def add(a, b):\n    return a + b\n",
        test: `import no_such_module_rm\n${addTask.test}`,
      });
      assert.equal(broken.taskError?.type, "TestError", broken.summary);
      assert.match(broken.taskError!.message, /No module named 'no_such_module_rm'/);
      for (const solution of [
        "import no_such_module_rm\ndef add(a, b):\n    return a + b\n",
        "def add(a, b):\n    import no_such_module_rm\n    return a + b\n",
      ]) {
        const own = await runPythonTests(sb(t), { ...addTask, solution });
        assert.equal(own.taskError, undefined, own.summary);
        assert.notEqual(own.status, "passed");
      }
    });

    it("a candidate cannot turn its failure into a task error (its __builtins__, a stdlib module it hides, an ImportError it raises)", async (t) => {
      for (const [solution, testCode] of [
        // J's builtins would be {} and every import in the test code would fail.
        ["__builtins__ = {}\ndef add(a, b):\n    return 0\n", `import math\n${addTask.test}`],
        [
          "__builtins__ = {'x': 1}\n__file__ = 'x'\ndef add(a, b):\n    return 0\n",
          `from math import isclose\n${addTask.test}`,
        ],
        // Hiding a module in C (its own sys.modules / sys.path) changes nothing in J.
        [
          "import sys\nsys.modules['math'] = None\nsys.path[:] = []\ndef add(a, b):\n    return 0\n",
          `import math\n${addTask.test}`,
        ],
        // Its own ModuleNotFoundError, raised from a call, is its own.
        ["def add(a, b):\n    raise ModuleNotFoundError('No module named x', name='x')\n", addTask.test],
      ] as const) {
        const r = await runPythonTests(sb(t), { ...addTask, solution, test: testCode });
        assert.equal(r.taskError, undefined, `${solution}: ${r.summary}`);
        assert.notEqual(r.status, "passed", r.summary);
        assert.equal(r.passed, 0, r.summary);
      }
    });

    it("CPU time handed to an escaped grandchild (double fork + setsid) still counts: a program cannot look faster", async (t) => {
      const work = "def _work(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n";
      const hidden = `import os\n${work}def add(a, b):\n    r, w = os.pipe()\n    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n            _work(2_000_000)\n            os.write(w, str(a + b).encode())\n            os._exit(0)\n        os._exit(0)\n    os.wait()\n    os.close(w)\n    return int(os.read(r, 100).decode())\n`;
      const honest = `${work}def add(a, b):\n    _work(2_000_000)\n    return a + b\n`;
      const test = "def check(candidate):\n    assert candidate(1, 2) == 3\n";
      const io = "\na, b = map(int, input().split())\nprint(add(a, b))\n";
      const ioTests = [{ stdin: "1 2\n", expectedStdout: "3\n" }];
      const check = async (solution: string) => runPythonTests(sb(t), { ...addTask, solution, test });
      const stdio = async (solution: string) =>
        runPythonTests(sb(t), { ...addTask, solution: solution + io, test: "", entryPoint: "", ioTests });
      for (const run of [check, stdio]) {
        const h = await run(honest);
        const x = await run(hidden);
        assert.equal(h.status, "passed", h.summary);
        assert.equal(x.status, "passed", x.summary);
        assert.ok(x.cpuMs! >= 0.5 * h.cpuMs!, `hidden ${x.cpuMs} ms vs honest ${h.cpuMs} ms`);
      }
    });

    it("a module the solution names is never imported in the judge when importing it acts (this: prints to the report channel)", async (t) => {
      const r = await runPythonTests(sb(t), {
        ...addTask,
        solution: "class module:\n    __name__ = 'this'\nzen = module()\ndef add(a, b):\n    return a + b\n",
        test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
      });
      assert.equal(r.status, "passed", r.summary);
    });

    it("runs the candidate outside __main__: a correct solution with a stdin-reading main block passes", async (t) => {
      const r = await runPythonTests(sb(t), {
        ...addTask,
        solution:
          "import sys\ndef add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    a, b = map(int, sys.stdin.read().split())\n    print(add(a, b))\n",
      });
      assert.equal(r.passed, 4, r.summary);
      assert.equal(r.ranToCompletion, true, r.summary);
    });

    it("details name the exception that ended the run, not an earlier failing assert", async (t) => {
      const r = await runPythonTests(sb(t), {
        ...addTask,
        solution: "def add(a, b):\n    if a == 1:\n        return 0\n    return None + a\n",
      });
      assert.equal(r.status, "runtime_error", r.summary);
      assert.match(r.summary, /^runtime error: TypeError: unsupported operand/, r.summary);
    });

    it("the limit is CPU time with a wall grace past it: waiting (a busy machine) is not a timeout, spinning is", async (t) => {
      // 1.4 s of wall time but almost no CPU: passes under a 1 s CPU limit (CorrGRPO: 5 s CPU + 1 s grace).
      // The wall clock starts before the interpreter does (1.46–1.56 s measured under load against the
      // default 1 s grace's 2 s; a container start adds more); a 6 s grace keeps the wait well past the CPU
      // limit and far from the wall's.
      const waits = await runPythonTests(sb(t), {
        ...addTask,
        timeLimitMs: 1_000,
        wallGraceMs: 6_000,
        solution: "import time\ntime.sleep(1.4)\ndef add(a, b):\n    return a + b\n",
      });
      assert.equal(waits.passed, 4, waits.summary);
      assert.ok(waits.cpuMs! < 1_000, `the wait used ${waits.cpuMs} ms of CPU: under the limit it outlasted`);
      const spins = await runPythonTests(sb(t), {
        ...addTask,
        timeLimitMs: 1_000,
        solution: "def add(a, b):\n    while True:\n        pass\n",
      });
      assert.equal(spins.status, "timeout", spins.summary);
    });

    it("more output than the cap is captured and truncated, not a crash (the cap protects memory)", async (t) => {
      const r = await runPythonTests(
        sb(t),
        {
          ...addTask,
          solution:
            "import sys\nsys.stdout.write('x' * (3 << 20))\ndef add(a, b):\n    print('y' * 100000)\n    return a + b\n",
        },
        { maxOutputBytes: 1 << 20 },
      );
      assert.equal(r.passed, 4, r.summary);
      assert.equal(r.status, "assertion_failed", r.summary); // the never-true loop assert only
    });

    for (const f of formats) {
      it(`format: ${f.name}`, async (t) => {
        const r = await runPythonTests(sb(t), f.program);
        assert.equal(r.status, "passed", r.summary);
        assert.equal(r.passed, f.asserts, r.summary);
        assert.ok((r.cpuMs ?? 0) > 0);
      });
    }
  });
}
