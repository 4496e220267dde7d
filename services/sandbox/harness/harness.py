"""reward-mesh Python test harness (runs inside the sandbox, either backend).

Three kinds of process, all inside one sandbox:

* the **judge** (J, this process): reads the job from stdin, decides syntax and compilation with
  CPython's own parser and compiler and **reports them on stdout before any candidate code exists**;
  then runs the task's trusted code (the prompt, the test code with its asserts, ``check(...)``) in
  its own interpreter and decides every assert itself;
* the **candidate process** (C, ``harness.py --candidate``), a fresh interpreter exec'd for the
  ``check`` program: it runs the prompt and the candidate's solution and answers *calls* — the test
  code's ``candidate(...)`` and any other name only the solution defines is, in J, a proxy that sends
  the arguments to C and gets the return value back. Both cross as **plain data** (JSON with tags for
  tuples, sets, floats, ...; instances of the prompt's own classes as attribute bags; never pickle),
  decoded in J into J's own builtin types, so a lying ``__eq__`` cannot cross and J's tests, asserts,
  helpers, builtins and recorder are out of C's reach. C never holds the test code, the job or a key;
* **io workers** (W), forked from J per stdin -> stdout test; their stdout is compared by the service.

Integrity (see services/sandbox/README.md, "Scoring integrity"):
  * C and W never hold J's stdout (the report channel) or stdin: fresh pipes replace them before any
    candidate code runs, and J is made non-dumpable, so they cannot open them through /proc either.
  * J ignores every catchable signal (SIGINT, SIGTERM, ...), caps everything it reads from C or W
    (a message, an event buffer, stdout/stderr) and runs under its own address-space limit.
  * The nonce that authenticates the final report follows the job on stdin and is read only after
    every worker has exited, so it is never in a process that ran candidate code.
  * Expected outputs of stdin -> stdout tests are never sent into the sandbox; the service compares.

Both backends run this file as ``harness.pyc``, compiled by the sandbox's own interpreter (the image at
build time, bubblewrap when the sandbox is created): the judge and the candidate process start from
bytecode instead of compiling this source per rollout.

Protocol: stdin = b"RMH1 <n>\\n" + <n bytes of job JSON> + <nonce> + b"\\n". stdout = line 1, the
compile stage ``{"v": 2, "stage": "compile", ...}``, written before any candidate code runs; line 2,
the report ``{"v": 2, "stage": "report", "nonce": ..., ...}``.
"""

import builtins
import json
import os
import resource
import select
import signal
import sys
import time

PROTOCOL = "RMH1"
REPORT_VERSION = 2
MESSAGE_CHARS = 300
SOURCE_CHARS = 200
STDERR_TAIL = 4096
CHUNK = 65536
EVENT_CAP = 65536  # bytes of an io worker's events J keeps; more and the worker is killed
VALUE_CAP = 16 << 20  # bytes of one message from the candidate process; more and it is killed
VALUE_ITEMS = 2_000_000  # values in one message (either direction)
JUDGE_MEMORY = 256 << 20  # J's own soft address-space limit (the job may raise it)
FD_REQ, FD_RESP = 3, 4  # the candidate process's ends of its two pipes to J
CANDIDATE_MODULE = "__solution__"  # __name__ of the prompt + solution in the check program's C
WALL_GRACE_MS = 1000  # wall time past the CPU limit before a run is killed (the job may change it)


# ---------------------------------------------------------------- small helpers


def _clip(text, n=MESSAGE_CHARS):
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _error(exc):
    """A JSON-able description of an exception (type, message, line of the full program)."""
    forwarded = getattr(exc, "_rm_error", None)  # an exception of the candidate process, as J re-raised it
    if isinstance(forwarded, dict):
        return forwarded
    line = getattr(exc, "lineno", None)
    if not isinstance(line, int):
        line = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<program>":
                line = tb.tb_lineno
            tb = tb.tb_next
    if isinstance(exc, SyntaxError):
        message = exc.msg or "invalid syntax"
    else:
        try:
            message = str(exc)
        except BaseException:  # a hostile __str__
            message = "<unprintable>"
    try:
        kind = type(exc).__name__
        kind = kind if isinstance(kind, str) else "<unnamed>"
    except BaseException:
        kind = "<unnamed>"
    return {
        "type": _clip(kind, 80),
        "message": _clip(message),
        "line": line,
    }


def _write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _read_exact(fd, n):
    parts = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("stdin ended early")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _read_line(fd, limit=4096):
    out = bytearray()
    while len(out) < limit:
        b = os.read(fd, 1)
        if not b or b == b"\n":
            break
        out += b
    return out.decode("ascii", "replace")


def _harden():
    """Makes J non-dumpable: same-uid processes can then neither ptrace it nor open /proc/<J>/fd or mem."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except Exception:
        return False


_SHIELDED = []


def _shield_signals():
    """J ignores every catchable signal but SIGCHLD and SIGALRM: a candidate's kill(J, SIGINT) does nothing.

    (SIGKILL and SIGSTOP cannot be caught: J reported syntax and compilation before any candidate ran,
    so they can only end this candidate's tests — reported as such by the service.)
    """
    for s in signal.valid_signals():
        if s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGALRM):
            continue
        try:
            signal.signal(s, signal.SIG_IGN)
            _SHIELDED.append(s)
        except (OSError, ValueError, RuntimeError):
            pass


def _unshield_signals(python_defaults):
    """In a child, before candidate code: default dispositions (Python's own when it stays in Python)."""
    for s in _SHIELDED:
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    if python_defaults:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _lower_limit(which, soft, hard):
    """Sets an rlimit, never above the hard limit the sandbox already imposes."""
    _, cur_hard = resource.getrlimit(which)
    if cur_hard != resource.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _wall_grace_s(job):
    grace = job.get("wallGraceMs")
    return (int(grace) if isinstance(grace, int) and grace >= 0 else WALL_GRACE_MS) / 1000.0


def _limit_child(job):
    """rlimits of a process that will run candidate code: CPU, no core, its address space."""
    seconds = max(1, -(-int(job["timeLimitMs"]) // 1000))
    _lower_limit(resource.RLIMIT_CPU, seconds, seconds + 1)
    _lower_limit(resource.RLIMIT_CORE, 0, 0)
    mem = int(job.get("memoryLimitBytes") or 0)
    if mem > 0:
        _lower_limit(resource.RLIMIT_AS, mem, mem)
    else:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))  # drop J's own soft limit


def _reap():
    """Reaps exited children (orphans of the candidate re-parented to J when J is PID 1, as in Docker).

    Never ``kill(-1, ...)``: run outside a sandbox (as tests and developers do) that would kill every
    process of the user — as root, of the machine.
    """
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def _become_subreaper():
    """Orphans of candidate code (a double fork, ``setsid``) re-parent to J instead of leaving it: J then
    reaps them, so their CPU time is counted (see :func:`_end_descendants`) and none outlives its run."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except Exception:
        return False


def _children_cpu_ms():
    """CPU time (user + sys) of every descendant J has reaped so far, theirs included (RUSAGE_CHILDREN)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000


def _end_descendants():
    """Kills and reaps every process still below J (after a run's worker is reaped: all candidate code).

    The run's CPU time is J's RUSAGE_CHILDREN difference over the run, so work handed to a grandchild
    that escaped the worker's process group still counts — it cannot make a program look faster.
    """
    for _ in range(1 << 12):
        pids = set()
        try:
            for tid in os.listdir("/proc/self/task"):
                with open("/proc/self/task/%s/children" % tid) as f:
                    pids.update(int(p) for p in f.read().split())
        except (OSError, ValueError):
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _text_streams():
    import io as _io

    sys.stdin = _io.TextIOWrapper(_io.BufferedReader(_io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="replace")
    sys.stdout = _io.TextIOWrapper(_io.BufferedWriter(_io.FileIO(1, "w", closefd=False)), encoding="utf-8", errors="replace")
    sys.stderr = _io.TextIOWrapper(
        _io.BufferedWriter(_io.FileIO(2, "w", closefd=False)), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    sys.argv = ["solution.py"]


def _flush_streams():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


# ---------------------------------------------------------------- plain data across processes

_FACTORIES = {
    "int": int, "float": float, "str": str, "bool": bool, "bytes": bytes, "list": list,
    "dict": dict, "set": set, "tuple": tuple, "frozenset": frozenset, "complex": complex,
}  # fmt: skip


class _Codec:
    """Values <-> a JSON-able tagged form: the only thing that crosses between J and C.

    ``None``, bools, ints, floats, strs are JSON (big ints: ``{"i": hex}``, floats: ``{"f": hex}``);
    ``{"l": [id, items]}`` list, ``{"t": items}`` tuple, ``{"d": [id, [[k, v], ...]]}`` dict,
    ``{"s": [id, items]}`` set, ``{"fs": items}`` frozenset, ``{"b": hex}`` bytes, ``{"ba": [id, hex]}``
    bytearray, ``{"c": [re, im]}`` complex, ``{"r": [start, stop, step]}`` range, ``{"dq"|"od"|"ct"|"dd"}``
    deque / OrderedDict / Counter / defaultdict, ``{"fr": [n, d]}`` Fraction, ``{"dec": str}`` Decimal,
    ``{"it": items}`` an exhausted iterator (rebuilt as an iterator), ``{"o": [id, class, attrs]}`` an
    instance of one of the task prompt's own classes, ``{"ref": id}`` a value already sent (shared or
    cyclic structure). Decoding builds only these types (the prompt's classes from the decoder's own
    definitions, ``__init__`` not called); anything else is an error.
    """

    def __init__(self, classes):
        self.classes = classes  # name -> class

    # -- encoding

    def encode(self, value):
        self._ids = {}
        self._keep = []
        self._open = set()
        self._count = 0
        return self._enc(value)

    def _register(self, x):
        n = len(self._keep)
        self._ids[id(x)] = n
        self._keep.append(x)
        return n

    def _seq(self, items):
        return [self._enc(v) for v in items]

    def _pairs(self, items):
        return [[self._enc(k), self._enc(v)] for k, v in items]

    def _enc(self, x):
        self._count += 1
        if self._count > VALUE_ITEMS:
            raise ValueError("the value has more than %d parts" % VALUE_ITEMS)
        if x is None or x is True or x is False:
            return x
        t = type(x)
        if isinstance(x, int):
            v = int.__int__(x)
            return v if -(1 << 53) < v < (1 << 53) else {"i": hex(v)}
        if isinstance(x, float):
            return {"f": float.hex(float.__float__(x))}
        if isinstance(x, str):
            return str.__str__(x)
        if isinstance(x, complex):
            return {"c": [float.hex(x.real), float.hex(x.imag)]}
        if isinstance(x, bytes):
            return {"b": bytes(memoryview(x)).hex()}
        if id(x) in self._ids:
            return {"ref": self._ids[id(x)]}
        mod = getattr(t, "__module__", "")
        name = getattr(t, "__qualname__", "")
        if mod == "collections" and name in ("deque", "OrderedDict", "Counter", "defaultdict"):
            n = self._register(x)
            if name == "deque":
                return {"dq": [n, self._seq(list(x)), x.maxlen]}
            if name == "defaultdict":
                f = x.default_factory
                fname = f.__name__ if f is not None and _FACTORIES.get(getattr(f, "__name__", "")) is f else None
                return {"dd": [n, fname, self._pairs(list(dict.items(x)))]}
            return {"od" if name == "OrderedDict" else "ct": [n, self._pairs(list(dict.items(x)))]}
        if mod == "fractions" and name == "Fraction":
            return {"fr": [self._enc(x.numerator), self._enc(x.denominator)]}
        if mod == "decimal" and name == "Decimal":
            return {"dec": str(x)}
        if isinstance(x, (tuple, frozenset)):
            if id(x) in self._open:
                raise ValueError("a tuple that contains itself cannot cross")
            self._open.add(id(x))
            try:
                if isinstance(x, tuple):
                    return {"t": self._seq(list(tuple.__iter__(x)))}
                return {"fs": self._seq(list(frozenset.__iter__(x)))}
            finally:
                self._open.discard(id(x))
        if isinstance(x, list):
            n = self._register(x)
            return {"l": [n, self._seq(list(list.__iter__(x)))]}
        if isinstance(x, dict):
            n = self._register(x)
            return {"d": [n, self._pairs(list(dict.items(x)))]}
        if isinstance(x, set):
            n = self._register(x)
            return {"s": [n, self._seq(list(set.__iter__(x)))]}
        if isinstance(x, bytearray):
            n = self._register(x)
            return {"ba": [n, bytes(memoryview(x)).hex()]}
        if isinstance(x, range):
            return {"r": [x.start, x.stop, x.step]}
        cls = self.classes.get(getattr(t, "__name__", None))
        if cls is not None and (t is cls or getattr(t, "__name__", None) == cls.__name__):
            try:
                attrs = object.__getattribute__(x, "__dict__")
            except AttributeError:
                raise TypeError("an instance of %s without __dict__ cannot cross" % cls.__name__) from None
            n = self._register(x)
            return {"o": [n, cls.__name__, [[str.__str__(k), self._enc(v)] for k, v in list(dict.items(attrs)) if isinstance(k, str)]]}
        if getattr(t, "__next__", None) is not None and getattr(t, "__iter__", None) is not None:
            import itertools

            items = list(itertools.islice(x, VALUE_ITEMS + 1))
            if len(items) > VALUE_ITEMS:
                raise ValueError("an iterator of more than %d items cannot cross" % VALUE_ITEMS)
            self._keep.append(items)
            return {"it": self._seq(items)}
        raise TypeError(
            "a value of type %s cannot cross between the judge and the candidate process "
            "(only plain data: None, bool, int, float, complex, str, bytes, list, tuple, dict, set, ..., "
            "and instances of the task prompt's own classes)" % _clip(getattr(t, "__name__", "?"), 60)
        )

    # -- decoding

    def decode(self, value):
        self._refs = {}
        self._count = 0
        return self._dec(value)

    def _dec(self, v):
        self._count += 1
        if self._count > VALUE_ITEMS:
            raise ValueError("too many parts")
        if v is None or v is True or v is False:
            return v
        t = type(v)
        if t is int or t is float or t is str:
            return v
        if t is not dict or len(v) != 1:
            raise ValueError("not an encoded value")
        ((tag, body),) = v.items()
        if tag == "ref":
            return self._refs[body]
        if tag == "i":
            if type(body) is not str or len(body) > 1 << 20:
                raise ValueError("bad int")
            return int(body, 16)
        if tag == "f":
            return float.fromhex(body)
        if tag == "c":
            return complex(float.fromhex(body[0]), float.fromhex(body[1]))
        if tag == "b":
            return bytes.fromhex(body)
        if tag == "t":
            return tuple(self._dec(x) for x in self._list(body))
        if tag == "fs":
            return frozenset(self._dec(x) for x in self._list(body))
        if tag == "it":
            return iter([self._dec(x) for x in self._list(body)])
        if tag == "r":
            a, b, c = body
            if not all(type(x) is int for x in (a, b, c)):
                raise ValueError("bad range")
            return range(a, b, c)
        if tag == "fr":
            import fractions

            return fractions.Fraction(self._int(self._dec(body[0])), self._int(self._dec(body[1])))
        if tag == "dec":
            import decimal

            if type(body) is not str:
                raise ValueError("bad decimal")
            return decimal.Decimal(body)
        return self._dec_mutable(tag, body)

    def _dec_mutable(self, tag, body):
        import collections

        n = body[0]
        if type(n) is not int or n in self._refs:
            raise ValueError("bad id")
        if tag == "l":
            out = self._refs[n] = []
            out.extend(self._dec(x) for x in self._list(body[1]))
        elif tag == "s":
            out = self._refs[n] = set()
            out.update(self._dec(x) for x in self._list(body[1]))
        elif tag == "ba":
            out = self._refs[n] = bytearray.fromhex(body[1])
        elif tag == "dq":
            maxlen = body[2]
            if maxlen is not None and type(maxlen) is not int:
                raise ValueError("bad maxlen")
            out = self._refs[n] = collections.deque(maxlen=maxlen)
            out.extend(self._dec(x) for x in self._list(body[1]))
        elif tag in ("d", "od", "ct", "dd"):
            if tag == "dd":
                factory = _FACTORIES.get(body[1]) if body[1] is not None else None
                out = collections.defaultdict(factory)
                pairs = body[2]
            else:
                out = {"d": dict, "od": collections.OrderedDict, "ct": collections.Counter}[tag]()
                pairs = body[1]
            self._refs[n] = out
            for pair in self._list(pairs):
                k, val = self._list(pair)
                out[self._dec(k)] = self._dec(val)
        elif tag == "o":
            cls = self.classes.get(body[1])
            if cls is None:
                raise ValueError("%r is not one of the prompt's classes" % _clip(body[1], 60))
            out = self._refs[n] = object.__new__(cls)
            attrs = {}
            for pair in self._list(body[2]):
                k, val = self._list(pair)
                if type(k) is not str:
                    raise ValueError("bad attribute name")
                attrs[k] = self._dec(val)
            object.__getattribute__(out, "__dict__").update(attrs)
        else:
            raise ValueError("unknown tag %r" % _clip(tag, 20))
        return out

    @staticmethod
    def _list(x):
        if type(x) is not list:
            raise ValueError("not a list")
        return x

    @staticmethod
    def _int(x):
        if type(x) is not int:
            raise ValueError("not an int")
        return x


def _frame(obj):
    data = json.dumps(obj, separators=(",", ":")).encode()
    return b"%d\n" % len(data) + data


def _bound_names(stmts):
    """Names a list of top-level statements binds (defs, classes, assignments, imports)."""
    names = set()

    def targets(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)

    for s in stmts:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(s.name)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            for a in s.names:
                if a.name != "*":
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(s, ast.Assign):
            for t in s.targets:
                targets(t)
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            targets(s.target)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            targets(s.target)
            names |= _bound_names(s.body) | _bound_names(s.orelse)
        elif isinstance(s, (ast.If, ast.While)):
            names |= _bound_names(s.body) | _bound_names(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars)
            names |= _bound_names(s.body)
        elif isinstance(s, ast.Try):
            names |= _bound_names(s.body) | _bound_names(s.orelse) | _bound_names(s.finalbody)
            for h in s.handlers:
                if h.name:
                    names.add(h.name)
                names |= _bound_names(h.body)
    return names


# ---------------------------------------------------------------- the candidate process (C)


def _candidate_main():
    """``harness.py --candidate``: runs the prompt, then the solution, then answers calls. Never returns.

    fd 3 carries J's setup and calls, fd 4 the answers: ``<length>\\n<JSON>`` frames. The first frame
    (``ready``, with the CPU time so far) is written before any candidate code runs; everything after
    it is the candidate's to write, and J treats it as nothing more than the candidate's return values.
    """
    rd, wr, now, dumps, loads = os.read, os.write, time.process_time, json.dumps, json.loads
    buf = bytearray()

    def receive():
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                size = int(buf[:nl])
                while len(buf) < nl + 1 + size:
                    chunk = rd(FD_REQ, CHUNK)
                    if not chunk:
                        return None
                    buf.extend(chunk)
                msg = loads(bytes(buf[nl + 1 : nl + 1 + size]))
                del buf[: nl + 1 + size]
                return msg
            chunk = rd(FD_REQ, CHUNK)
            if not chunk:
                return None
            buf.extend(chunk)

    def send(obj):
        data = dumps(obj, separators=(",", ":")).encode()
        data = b"%d\n" % len(data) + data
        while data:
            data = data[wr(FD_RESP, data) :]

    # Stage 1 (trusted): the setup, the prompt, the CPU baseline.
    setup = receive()
    # Not "__main__" (as CorrGRPO, HumanEval and LeetCodeDataset run it): a solution's
    # ``if __name__ == "__main__":`` block (reading stdin, printing a demo) does not run here.
    g = {"__name__": CANDIDATE_MODULE, "__builtins__": builtins}
    # Split at the line where the prompt's last statement ends (decided by J from its own AST), padding
    # the solution with blank lines so every line keeps its number in "<program>". No ``ast`` here: C
    # never imports it (≈ 9 ms of CPU per rollout).
    lines = setup["source"].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    end = setup["promptEnd"]
    flags = setup["flags"]
    prompt = compile("\n".join(lines[:end]) + "\n", "<program>", "exec", flags=flags, dont_inherit=True)
    solution = compile("\n" * end + "\n".join(lines[end:]), "<program>", "exec", flags=flags, dont_inherit=True)
    try:
        exec(prompt, g)
    except BaseException as e:
        send({"ready": False, "error": _error(e)})
        os._exit(0)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    send({"ready": True, "cpuMs": (ru.ru_utime + ru.ru_stime) * 1000})
    _text_streams()
    # Stage 2: the solution. From here on candidate code runs: nothing this process says is more than
    # the candidate's say.
    codec = _Codec({})
    entry = None
    try:
        exec(solution, g)
        codec.classes = {n: g[n] for n in setup["classes"] if isinstance(g.get(n), type)}
        if setup["entry"]:
            expr = "\n" * (setup["entryLine"] - 1) + setup["entry"]
            entry = eval(compile(expr, "<program>", "eval", flags=flags, dont_inherit=True), g)
        names = {}
        for n in setup["names"]:
            if n not in g:
                continue
            v = g[n]
            if type(v).__name__ == "module":
                names[n] = {"module": getattr(v, "__name__", n)}
            elif callable(v):
                names[n] = {"call": True}
            else:
                try:
                    names[n] = {"value": codec.encode(v)}
                except Exception:
                    pass
        send({"setup": True, "names": names})
    except BaseException as e:
        send({"setup": False, "error": _error(e), "exit": isinstance(e, SystemExit), "code": getattr(e, "code", None) if isinstance(getattr(e, "code", None), int) else None})
        _flush_streams()
        os._exit(1)
    # Stage 3: answer calls until J closes the request pipe.
    while True:
        req = receive()
        if req is None:
            break
        t0 = now()
        try:
            args, kwargs = codec.decode(req["v"])
            fn = entry if req["f"] == "" else g[req["f"]]
            result = fn(*args, **kwargs)
            out = {"id": req["id"], "r": codec.encode([result, args, kwargs])}
        except BaseException as e:
            try:
                mro = [c.__name__ for c in type(e).__mro__]
            except BaseException:
                mro = []
            out = {"id": req["id"], "e": _error(e), "mro": mro}
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                out["code"] = e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else None
                out["cpuMs"] = (now() - t0) * 1000
                send(out)
                break
        out["cpuMs"] = (now() - t0) * 1000
        send(out)
    _flush_streams()
    os._exit(0)


if __name__ == "__main__" and sys.argv[1:] == ["--candidate"]:
    # The candidate process stops here: nothing below (the judge) is even defined in it.
    try:
        _candidate_main()
    finally:
        os._exit(70)

import ast  # noqa: E402 — the judge's alone; the candidate process never pays for importing it


# ---------------------------------------------------------------- the judge's side of C


class _Deadline(BaseException):
    """The check program's time is up (raised in J; not an Exception, so test code cannot swallow it)."""


class _CandidateGone(BaseException):
    """The candidate process is gone or broke the protocol; ends the check program."""

    def __init__(self, error):
        super().__init__(error["message"])
        self.error = error


class _CandidateExit(BaseException):
    """The candidate called exit() (or raised KeyboardInterrupt) during a call."""

    def __init__(self, error):
        super().__init__(error["message"])
        self.error = error


class _Candidate:
    """J's handle on C: spawns it, moves frames both ways, drains its output, enforces the limits."""

    def __init__(self, job, deadline, codec):
        self.job = job
        self.deadline = deadline
        self.codec = codec
        self.max_out = int(job["maxOutputBytes"])
        self.out = bytearray()
        self.out_bytes = 0
        self.err = bytearray()
        self.err_bytes = 0
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.killed = None  # "timeout" | "output_limit"
        self.gone = None  # why C can no longer answer (an error dict)
        self.seq = 0
        self.cpu_reported = 0.0
        self.exited = False
        self.reaped = None
        self.finishing = False
        self._spawn()

    def _spawn(self):
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        self.started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                for src, dst in ((null, 0), (out_w, 1), (err_w, 2), (req_r, FD_REQ), (resp_w, FD_RESP)):
                    os.dup2(src, dst + 100)
                for dst in (0, 1, 2, FD_REQ, FD_RESP):
                    os.dup2(dst + 100, dst)
                os.closerange(FD_RESP + 1, 1 << 20)
                _unshield_signals(False)
                _limit_child(self.job)
                os.execv(sys.executable, [sys.executable, "-I", os.path.abspath(__file__), "--candidate"])
            finally:
                os._exit(70)
        for fd in (req_r, resp_w, out_w, err_w, null):
            os.close(fd)
        os.set_blocking(req_w, False)
        self.pid = pid
        self.fds = {resp_r: "resp", out_r: "out", err_r: "err"}
        self.req_w = req_w

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def _lose(self, kind, message):
        if self.gone is None:
            self.gone = {"type": kind, "message": _clip(message), "line": None}
        if self.killed is None:
            self.killed = "protocol"  # J killed it for what it sent: a runtime error with that reason
        self.kill()

    def _take(self, fd, data):
        kind = self.fds[fd]
        if kind == "resp":
            self.inbox += data
            if len(self.inbox) > VALUE_CAP + 32:
                self._lose("ValueTooLarge", "the candidate process sent more than %d bytes at once to the judge" % VALUE_CAP)
        elif kind == "out":
            self.out_bytes += len(data)
            room = self.max_out - len(self.out)
            if room > 0:
                self.out += data[:room]
        else:
            self.err_bytes += len(data)
            self.err += data
            if len(self.err) > STDERR_TAIL:
                del self.err[: len(self.err) - STDERR_TAIL]
        # Output beyond the cap is counted and dropped, never a crash: the cap protects J's memory,
        # not the score (CorrGRPO captures a check program's output and scores its asserts).

    def _frame(self):
        """A complete frame from the inbox, or None; a malformed header loses C."""
        nl = self.inbox.find(b"\n", 0, 24)
        if nl < 0:
            if len(self.inbox) >= 24:
                self._lose("ProtocolError", "the candidate process sent a malformed message")
            return None
        head = bytes(self.inbox[:nl])
        if not head.isdigit() or int(head) > VALUE_CAP:
            self._lose("ValueTooLarge" if head.isdigit() else "ProtocolError", "the candidate process sent a message over %d bytes or malformed" % VALUE_CAP)
            return None
        size = int(head)
        if len(self.inbox) < nl + 1 + size:
            return None
        data = bytes(self.inbox[nl + 1 : nl + 1 + size])
        del self.inbox[: nl + 1 + size]
        try:
            msg = json.loads(data)
        except Exception:
            self._lose("ProtocolError", "the candidate process sent a message that is not JSON")
            return None
        if not isinstance(msg, dict):
            self._lose("ProtocolError", "the candidate process sent a message that is not an object")
            return None
        return msg

    def pump(self, want_frame):
        """Moves data until a frame arrives (``want_frame``) or everything C holds is closed."""
        while True:
            if want_frame:
                if self.gone is None:
                    msg = self._frame()
                    if msg is not None:
                        return msg
                if self.gone is not None or "resp" not in self.fds.values():
                    raise _CandidateGone(self.gone or self._exit_error())
            elif not self.fds:
                return None
            now = time.monotonic()
            if now >= self.deadline:
                if self.finishing:
                    return None
                if self.killed is None:
                    self.killed = "timeout"
                self._lose("Timeout", "the time limit was reached")
                raise _Deadline()
            writers = [self.req_w] if self.outbox and self.req_w is not None else []
            try:
                ready, writable, _ = select.select(list(self.fds), writers, [], min(self.deadline - now, 0.25))
            except InterruptedError:
                continue
            if writable:
                try:
                    n = os.write(self.req_w, self.outbox[:CHUNK])
                    del self.outbox[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    self.outbox.clear()
            for fd in ready:
                try:
                    data = os.read(fd, CHUNK)
                except OSError:
                    data = b""
                if not data:
                    os.close(fd)
                    del self.fds[fd]
                    continue
                self._take(fd, data)
            if not ready and not writable and not self.exited:
                try:
                    wpid, status, usage = os.wait4(self.pid, os.WNOHANG)
                except ChildProcessError:
                    wpid, status, usage = self.pid, 0, None
                if wpid == self.pid:  # C exited: a stray grandchild may keep a pipe open; do not wait for it
                    self.exited = True
                    self.reaped = (status, usage)
                    self.exited_at = time.monotonic()
                    self.kill()
            if self.exited and not ready and time.monotonic() - self.exited_at > 0.2:
                for fd in list(self.fds):
                    os.close(fd)
                self.fds.clear()

    def _exit_error(self):
        return {"type": "CandidateExited", "message": "the candidate process ended before the tests finished", "line": None}

    def send(self, obj):
        self.outbox += _frame(obj)

    def call(self, name, args, kwargs):
        """``candidate(*args, **kwargs)`` in C; returns J's own copy of the result."""
        if self.gone is not None:
            raise _CandidateGone(self.gone)
        payload = self.codec.encode([list(args), dict(kwargs)])  # a TypeError here is the test's problem
        self.seq += 1
        self.send({"id": self.seq, "f": name, "v": payload})
        msg = self.pump(True)
        if msg.get("id") != self.seq:
            self._lose("ProtocolError", "the candidate process answered out of turn")
            raise _CandidateGone(self.gone)
        cpu = msg.get("cpuMs")
        if type(cpu) in (int, float) and 0 <= cpu < 1e9:
            self.cpu_reported += cpu
        if "e" in msg:
            raise self._exception(msg)
        try:
            result, new_args, new_kwargs = self.codec.decode(msg.get("r"))
            for old, new in zip(args, new_args):
                _copy_back(old, new, self.codec.classes)
            for k, old in kwargs.items():
                if k in new_kwargs:
                    _copy_back(old, new_kwargs[k], self.codec.classes)
        except Exception as e:
            self._lose("ProtocolError", "the candidate process sent a value that is not plain data: %s" % _clip(e, 120))
            raise _CandidateGone(self.gone) from None
        return result

    def _exception(self, msg):
        """J's own exception for one the candidate raised: the nearest builtin class of its MRO."""
        e = msg.get("e")
        mro = msg.get("mro")
        if not isinstance(e, dict) or not isinstance(mro, list):
            self._lose("ProtocolError", "the candidate process sent a malformed error")
            return _CandidateGone(self.gone)
        info = {
            "type": _clip(e.get("type") if isinstance(e.get("type"), str) else "Exception", 80),
            "message": _clip(e.get("message") if isinstance(e.get("message"), str) else ""),
            "line": e.get("line") if type(e.get("line")) is int else None,
        }
        for name in mro:
            cls = getattr(builtins, name, None) if isinstance(name, str) else None
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                continue
            if not issubclass(cls, Exception):
                code = msg.get("code")
                info["type"] = "SystemExit" if cls is SystemExit else info["type"]
                info["message"] = "exit(%s) before the tests finished" % (code if type(code) is int else "") if cls is SystemExit else info["message"]
                return _CandidateExit(info)
            try:
                exc = cls(info["message"])
            except Exception:
                continue
            exc._rm_error = info
            return exc
        exc = Exception(info["message"])
        exc._rm_error = info
        return exc

    def finish(self):
        """Ends C (EOF on its requests), drains its output, reaps it: (status, CPU ms from wait4)."""
        if self.req_w is not None:
            try:
                if self.outbox and self.gone is None:
                    os.set_blocking(self.req_w, True)
                os.close(self.req_w)
            except OSError:
                pass
            self.req_w = None
        self.finishing = True
        self.deadline = min(self.deadline, time.monotonic() + 0.5) if self.gone is None else time.monotonic()
        self.pump(False)
        for fd in list(self.fds):
            os.close(fd)
        self.fds.clear()
        self.kill()
        if self.reaped is not None:
            status, usage = self.reaped
        else:
            try:
                _, status, usage = os.wait4(self.pid, 0)
            except ChildProcessError:
                status, usage = 0, None
        cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000 if usage is not None else 0.0
        _reap()
        return status, cpu_ms


def _copy_back(old, new, classes):
    """Arguments the candidate mutated in place: J's own objects take the new contents (top level)."""
    t = type(old)
    if t is not type(new):
        return
    if t is list or t is bytearray:
        old[:] = new
    elif t is dict or t is set:
        old.clear()
        old.update(new)
    elif classes.get(t.__name__) is t:
        d = object.__getattribute__(old, "__dict__")
        d.clear()
        d.update(object.__getattribute__(new, "__dict__"))


class _Remote:
    """In J, a name of the candidate's solution (``candidate`` itself, or a function only it defines)."""

    __slots__ = ("_rm_cand", "_rm_name")

    def __init__(self, cand, name):
        self._rm_cand = cand
        self._rm_name = name

    def __call__(self, *args, **kwargs):
        return self._rm_cand.call(self._rm_name, args, kwargs)

    def __repr__(self):
        return "<candidate %s>" % (self._rm_name or "entry point")


class _Recorder:
    """Lives in J: per-assert outcomes, decided by J's own asserts on J's own values."""

    def __init__(self, sites, cand_cpu):
        self.results = [{"outcome": "not_run", "cpuMs": 0.0, "runs": 0, "error": None} for _ in sites]
        self.running = None
        self._t0 = 0.0
        self._cpu = cand_cpu

    def begin(self, i):
        self.running = i
        self._t0 = self._cpu()

    def _end(self, i, new, exc):
        self.running = None
        r = self.results[i]
        r["runs"] += 1
        r["cpuMs"] = round(r["cpuMs"] + max(0.0, self._cpu() - self._t0), 3)
        rank = {"not_run": 0, "pass": 1, "fail": 2, "error": 3}
        if rank[new] > rank[r["outcome"]]:
            r["outcome"] = new
            if exc is not None:
                r["error"] = _error(exc)

    def ok(self, i):
        self._end(i, "pass", None)

    def fail(self, i, exc):
        self._end(i, "fail", exc)

    def error(self, i, exc):
        self._end(i, "error", exc)


# ---------------------------------------------------------------- assert rewriting (test code, in J)

_HOOK = "__reward_mesh_test__"
_CANDIDATE = "__reward_mesh_candidate__"


class _AssertRewriter(ast.NodeTransformer):
    """Wraps each ``assert`` of the test code in try/except so a failure is recorded, not raised.

    ``assert C, M`` at site i becomes::

        __reward_mesh_test__.begin(i)
        try:
            assert C, M
        except AssertionError as e:
            __reward_mesh_test__.fail(i, e)
        except Exception as e:
            __reward_mesh_test__.error(i, e)
        else:
            __reward_mesh_test__.ok(i)

    The rewritten test code runs in J: the recorder is J's, out of the candidate's reach.
    """

    def __init__(self, first_line, last_line, source):
        self.first_line = first_line
        self.last_line = last_line
        self.source = source
        self.sites = []

    def _in_test(self, node):
        return self.first_line <= node.lineno <= self.last_line

    def visit_Assert(self, node):
        if not self._in_test(node):
            return node
        i = len(self.sites)
        segment = ast.get_source_segment(self.source, node) or "assert"
        self.sites.append({"line": node.lineno, "source": _clip(" ".join(segment.split()), SOURCE_CHARS)})

        def call(name, *args):
            return ast.Expr(
                ast.Call(
                    func=ast.Attribute(value=ast.Name(id=_HOOK, ctx=ast.Load()), attr=name, ctx=ast.Load()),
                    args=[ast.Constant(i), *args],
                    keywords=[],
                )
            )

        exc = ast.Name(id="__reward_mesh_exc__", ctx=ast.Load())
        body = [
            call("begin"),
            ast.Try(
                body=[node],
                handlers=[
                    ast.ExceptHandler(
                        type=ast.Name(id="AssertionError", ctx=ast.Load()), name="__reward_mesh_exc__", body=[call("fail", exc)]
                    ),
                    ast.ExceptHandler(
                        type=ast.Name(id="Exception", ctx=ast.Load()), name="__reward_mesh_exc__", body=[call("error", exc)]
                    ),
                ],
                orelse=[call("ok")],
                finalbody=[],
            ),
        ]
        for n in body:
            ast.copy_location(n, node)
            ast.fix_missing_locations(n)
        return body


# ---------------------------------------------------------------- the check program, judged


def _check_plan(job, prog, jg):
    """Stage 1 of a judged check: J's test module, and which names of the solution J proxies."""
    solution_last = prog["layout"]["solution"][1]
    solution_stmts = [s for s in prog["rest_body"] if s.lineno <= solution_last]
    test_stmts = [s for s in prog["rest_body"] if s.lineno > solution_last]
    call_line = None
    if job["entryPoint"] and test_stmts and test_stmts[-1].lineno > prog["test_last"]:
        # check(<entry point>) -> check(__reward_mesh_candidate__): the candidate is C's entry point
        call = test_stmts[-1]
        call_line = call.lineno
        call.value.args[0] = ast.copy_location(ast.Name(id=_CANDIDATE, ctx=ast.Load()), call.value.args[0])
    rewriter = _AssertRewriter(prog["test_first"], prog["test_last"], prog["full"])
    module = rewriter.visit(ast.Module(body=test_stmts, type_ignores=[]))
    ast.fix_missing_locations(module)
    code = compile(module, "<program>", "exec", flags=prog["future_flags"], dont_inherit=True)
    entry_root = job["entryPoint"].split("(")[0].split(".")[0].strip()
    prompt_names = _bound_names(prog["prompt_body"])
    solution_names = _bound_names(solution_stmts)
    names = {
        n
        for n in solution_names - _bound_names(test_stmts)
        if not hasattr(builtins, n)
        and (n not in prompt_names or n == entry_root)
        and not n.startswith("__reward_mesh")
        # Never a dunder: a solution's ``__builtins__ = {}`` would become J's builtins (every import in
        # the test code then fails, which must not read as the task's fault) — J's namespace machinery
        # is not the candidate's to set.
        and not (n.startswith("__") and n.endswith("__"))
    }
    classes = {n: v for n, v in jg.items() if isinstance(v, type) and n in prompt_names and v.__module__ == "__main__"}
    return {
        "code": code,
        "sites": rewriter.sites,
        "names": sorted(names),
        "classes": classes,
        "call_line": call_line or (prog["test_last"] + 2),
        "source": "\n".join(prog["full"].split("\n")[:solution_last]) + "\n",
    }


# Modules that act when imported (print to J's stdout — the report channel —, open a browser, start a GUI):
# never imported in J on C's word.
_NOISY_MODULES = frozenset(("this", "antigravity", "__hello__", "__phello__", "idlelib", "tkinter", "turtle", "turtledemo", "webbrowser", "pydoc"))


def _start_candidate(job, prog, plan, cand, jg):
    """Stage 2: C runs the prompt (reports its CPU baseline), then the solution; J binds the proxies."""
    cand.send(
        {
            "source": plan["source"],
            "promptEnd": max((st.end_lineno or st.lineno for st in prog["prompt_body"]), default=0),
            "flags": prog["future_flags"],
            "entry": job["entryPoint"],
            "entryLine": plan["call_line"],
            "names": plan["names"],
            "classes": sorted(plan["classes"]),
        }
    )
    ready = cand.pump(True)  # written before any candidate code ran in C: trusted
    if ready.get("ready") is not True:
        raise RuntimeError("the candidate process could not run the prompt: %s" % (ready.get("error"),))
    baseline = ready.get("cpuMs") if type(ready.get("cpuMs")) in (int, float) else 0.0
    setup = cand.pump(True)
    if not isinstance(setup.get("setup"), bool):
        cand._lose("ProtocolError", "the candidate process broke the protocol while running the solution")
        raise _CandidateGone(cand.gone)
    if setup.get("setup") is not True:
        error = setup.get("error") if isinstance(setup.get("error"), dict) else {}
        info = {"type": _clip(error.get("type") or "Exception", 80), "message": _clip(error.get("message") or ""), "line": error.get("line") if type(error.get("line")) is int else None}
        if setup.get("exit"):
            code = setup.get("code")
            info = {"type": "SystemExit", "message": "exit(%s) before the tests finished" % (code if type(code) is int else ""), "line": info["line"]}
        raise _CandidateExit(info)
    jg[_CANDIDATE] = _Remote(cand, "")
    names = setup.get("names") if isinstance(setup.get("names"), dict) else {}
    for n in plan["names"]:
        kind = names.get(n)
        if not isinstance(kind, dict):
            continue
        if kind.get("call") is True:
            jg[n] = _Remote(cand, n)
        elif "module" in kind and isinstance(kind["module"], str):
            if kind["module"].partition(".")[0] in _NOISY_MODULES:
                continue  # C names the module (its type's name is the candidate's to fake): none that acts on import
            try:
                import importlib

                jg[n] = importlib.import_module(kind["module"])  # J's own copy of the module
            except Exception:
                pass
        elif "value" in kind:
            try:
                jg[n] = cand.codec.decode(kind["value"])
            except Exception:
                pass
    return baseline


def _lacks_module(e):
    """Whether ``e`` is a ``ModuleNotFoundError`` for a module that J's own import path truly lacks.

    Candidate code has already run (in C) when the test code fails, so the exception alone is not
    trusted: only a top-level module that is neither built in nor in the standard library, and that
    J's path finder (sys.path, which no sandboxed process can write) does not find, makes a task error.
    Anything else — a stdlib import that failed, ``cannot import name``, an ImportError of another
    kind — stays the candidate's.
    """
    if type(e) is not ModuleNotFoundError or not isinstance(e.name, str) or not e.name:
        return False
    top = e.name.partition(".")[0]
    if not top or top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        return False
    try:
        import importlib.machinery

        return importlib.machinery.PathFinder.find_spec(top) is None
    except Exception:
        return False


def _run_check(job, prog, jg):
    """Runs the check program: test code in J, the candidate's calls in C. Returns the check report."""
    plan = _check_plan(job, prog, jg)
    # CPU time is limited by RLIMIT_CPU (``_limit_child``); the wall clock only backstops it with a grace,
    # so a busy machine does not turn a correct program into a timeout.
    limit_s = int(job["timeLimitMs"]) / 1000.0 + _wall_grace_s(job)
    deadline = time.monotonic() + limit_s
    tree_cpu0 = _children_cpu_ms()
    cand = _Candidate(job, deadline, _Codec(plan["classes"]))
    recorder = _Recorder(plan["sites"], lambda: cand.cpu_reported)
    jg[_HOOK] = recorder
    uncaught = None
    task_error = None
    completed = False
    baseline = 0.0

    def alarm(_sig, _frame):
        if time.monotonic() >= deadline - 0.002:
            raise _Deadline()
        signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))

    # Stage 3: the tests, decided here.
    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        try:
            baseline = _start_candidate(job, prog, plan, cand, jg)
            exec(plan["code"], jg)
            completed = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Deadline:
        cand.killed = cand.killed or "timeout"
    except (_CandidateGone, _CandidateExit) as e:
        uncaught = e.error
    except BaseException as e:
        uncaught = _error(e)
        if getattr(e, "_rm_error", None) is None and cand.seq == 0 and _lacks_module(e):
            # The test code (J's own, before it called the candidate even once) imports a module this
            # environment lacks: the task's problem, not the candidate's.
            task_error = {"type": "TestError", "message": "the task's test code failed before calling the candidate: %s: %s" % (uncaught["type"], uncaught["message"]), "line": uncaught["line"]}
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    # Stage 4: end C and measure it.
    status_word, cpu_ms = cand.finish()
    _end_descendants()
    tree_cpu_ms = max(cpu_ms, _children_cpu_ms() - tree_cpu0)  # C and everything it started
    if cand.killed is None and time.monotonic() >= deadline and not completed:
        cand.killed = "timeout"
    run = {"killed": cand.killed, "status": status_word, "cpuMs": cpu_ms, "memoryError": (uncaught or {}).get("type") == "MemoryError"}
    abnormal = _outcome_of_status(job, run)
    results = recorder.results
    # Stage 5: classify.
    if abnormal is not None:
        status = abnormal
        completed = False
    elif not completed:
        status = "runtime_error"
        if uncaught is None:
            uncaught = {"type": "EarlyExit", "message": "the program exited before the tests finished", "line": None}
    elif any(r["outcome"] == "error" for r in results):
        status = "runtime_error"
        if any(r["outcome"] == "error" and (r["error"] or {}).get("type") == "MemoryError" for r in results):
            status = "memory_error"
    elif any(r["outcome"] in ("fail", "not_run") for r in results):
        status = "assertion_failed"  # a test the complete program never reached did not pass either
    else:
        status = "passed"
    code_ = os.WEXITSTATUS(status_word) if os.WIFEXITED(status_word) else None
    sig = os.WTERMSIG(status_word) if os.WIFSIGNALED(status_word) else None
    return {
        "status": status,
        "completed": completed,
        "tests": [
            {"line": s["line"], "source": s["source"], "outcome": r["outcome"], "runs": r["runs"], "cpuMs": r["cpuMs"], "error": r["error"]}
            for s, r in zip(plan["sites"], results)
        ],
        "running": recorder.running,
        "error": uncaught,
        "cpuMs": round(max(0.0, tree_cpu_ms - baseline), 3),
        "wallMs": round((time.monotonic() - cand.started) * 1000, 3),
        "stdout": _decode(bytes(cand.out)[: int(job["reportOutputBytes"])]),
        "stdoutBytes": cand.out_bytes,
        "stderr": _decode(bytes(cand.err)[-max(1, int(job["reportOutputBytes"])) :]),
        "exitCode": code_,
        "signal": sig,
        "taskError": task_error,
    }


def _outcome_of_status(job, run):
    """timeout / output_limit / memory_error / killed from what J measured, or None."""
    if run["killed"] in ("timeout", "output_limit"):
        return run["killed"]
    if run["killed"] == "protocol":
        return None
    status = run["status"]
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if sig == signal.SIGXCPU:
        return "timeout"
    if run.get("memoryError"):
        return "memory_error"
    if sig == signal.SIGKILL:
        # Not sent by J: the CPU hard limit (a candidate that ignored SIGXCPU) or the OOM killer.
        seconds = max(1, -(-int(job["timeLimitMs"]) // 1000))
        return "timeout" if run["cpuMs"] >= seconds * 1000 else "killed"
    return None


# ---------------------------------------------------------------- io workers (stdin -> stdout tests)


def _worker(job, stdin_fd, out_w, err_w, ev_w, code, g):
    """The forked io worker: isolate fds, apply limits, run the solution. Never returns."""
    try:
        os.setpgid(0, 0)
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, ev_w)
        os.closerange(ev_w + 1, 1 << 20)
        _unshield_signals(True)
        _limit_child(job)
        _text_streams()
    except BaseException as e:
        try:
            os.write(ev_w, (json.dumps({"e": "setup", "error": _error(e)}) + "\n").encode())
        finally:
            os._exit(70)

    def send(event):
        try:
            os.write(ev_w, (json.dumps(event) + "\n").encode())
        except OSError:
            pass

    status = 0
    try:
        exec(code, g)
        send({"e": "done"})
    except SystemExit as e:
        c = e.code
        if c is None or c is True or c is False or isinstance(c, int):
            status = int(c or 0) & 0xFF
        else:
            try:
                sys.stderr.write(str(c) + "\n")
            except BaseException:
                pass
            status = 1
        send({"e": "done"} if status == 0 else {"e": "exit", "code": status})
    except BaseException as e:
        send({"e": "exc", "error": _error(e)})
        try:
            import traceback

            traceback.print_exception(type(e), e, e.__traceback__, limit=-8)
        except BaseException:
            pass
        status = 1
    _flush_streams()
    os._exit(status)


def _execute(job, code, g, stdin_data, max_out):
    """Forks an io worker, supervises it, returns what happened (all measured by J)."""
    in_fd = os.memfd_create("stdin")  # no path a previous test could have tampered with
    _write_all(in_fd, stdin_data.encode("utf-8", "replace"))
    os.lseek(in_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ev_r, ev_w = os.pipe()
    started = time.monotonic()
    tree_cpu0 = _children_cpu_ms()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (out_r, err_r, ev_r):
                os.close(fd)
            _worker(job, in_fd, out_w, err_w, ev_w, code, g)
        finally:
            os._exit(70)
    for fd in (in_fd, out_w, err_w, ev_w):
        os.close(fd)

    deadline = started + int(job["timeLimitMs"]) / 1000.0 + _wall_grace_s(job)
    out = bytearray()
    out_bytes = 0
    err = bytearray()
    err_bytes = 0
    ev_buf = bytearray()
    open_fds = {out_r: "out", err_r: "err", ev_r: "ev"}
    killed = None  # "timeout" | "output_limit" | "event_flood"
    exited = None
    reaped = None

    def kill():
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    while open_fds:
        now = time.monotonic()
        if killed is None and now >= deadline:
            killed = "timeout"
            kill()
        wait = 0.05 if (killed is not None or exited is not None) else min(max(deadline - now, 0), 0.25)
        try:
            ready, _, _ = select.select(list(open_fds), [], [], wait)
        except InterruptedError:
            continue
        for fd in ready:
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                data = b""
            if not data:
                os.close(fd)
                del open_fds[fd]
                continue
            kind = open_fds[fd]
            if kind == "out":
                out_bytes += len(data)
                room = max_out - len(out)
                if room > 0:
                    out += data[:room]
                if out_bytes > max_out and killed is None:
                    killed = "output_limit"
                    kill()
            elif kind == "err":
                err_bytes += len(data)
                err += data
                if len(err) > STDERR_TAIL:
                    del err[: len(err) - STDERR_TAIL]
                if err_bytes > max_out and killed is None:
                    killed = "output_limit"
                    kill()
            elif len(ev_buf) + len(data) > EVENT_CAP:
                if killed is None:
                    killed = "event_flood"
                    kill()
            else:
                ev_buf += data
        if not ready:
            # W may be gone while a stray grandchild keeps a pipe open: do not wait for it.
            if exited is None:
                try:
                    wpid, wstatus, usage = os.wait4(pid, os.WNOHANG)
                except ChildProcessError:
                    wpid, wstatus, usage = pid, 0, None
                if wpid == pid:
                    exited = time.monotonic()
                    reaped = (wstatus, usage)
                    kill()
            elif time.monotonic() - exited > 0.2:
                for fd in list(open_fds):
                    os.close(fd)
                open_fds.clear()
    kill()  # stray grandchildren of W
    if reaped is None:
        try:
            _, wstatus, usage = os.wait4(pid, 0)
            reaped = (wstatus, usage)
        except ChildProcessError:
            reaped = (0, None)
    status, usage = reaped
    cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000 if usage is not None else 0.0
    _reap()
    _end_descendants()
    tree_cpu_ms = max(cpu_ms, _children_cpu_ms() - tree_cpu0)  # W and everything it started
    wall_ms = (time.monotonic() - started) * 1000
    events = []
    for raw in bytes(ev_buf).split(b"\n"):
        if not raw:
            continue
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if isinstance(ev, dict):
            events.append(ev)
    code_ = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if code_ == 70 and events and events[0].get("e") == "setup":
        # The worker failed before any candidate code ran: a harness fault, not the candidate's.
        raise RuntimeError("worker setup failed: %s" % (events[0].get("error"),))
    return {
        "stdout": bytes(out),
        "stdoutBytes": out_bytes,
        "stderr": bytes(err),
        "stderrBytes": err_bytes,
        "events": events,
        "killed": killed,
        "exitCode": code_,
        "signal": sig,
        "cpuMs": round(cpu_ms, 3),
        "treeCpuMs": round(tree_cpu_ms, 3),
        "wallMs": round(wall_ms, 3),
        "waitStatus": status,
    }


def _decode(b):
    return b.decode("utf-8", "replace")


def _run_io(job, code, g):
    results = []
    for stdin_data in job["ioStdin"]:
        run = _execute(job, code, g, stdin_data, int(job["maxOutputBytes"]))
        error = None
        for ev in run["events"]:
            if ev.get("e") == "exc" and isinstance(ev.get("error"), dict):
                error = ev["error"]
            elif ev.get("e") == "exit" and error is None:
                error = {"type": "SystemExit", "message": "exit status %s" % ev.get("code"), "line": None}
        if run["killed"] == "event_flood":
            abnormal = "runtime_error"
            error = {"type": "EventFlood", "message": "the program wrote more than %d bytes to the harness's event pipe" % EVENT_CAP, "line": None}
        else:
            memory = isinstance(error, dict) and error.get("type") == "MemoryError"
            abnormal = _outcome_of_status(job, {"killed": run["killed"], "status": run["waitStatus"], "cpuMs": run["cpuMs"], "memoryError": memory and run["exitCode"] != 0})
        if abnormal is not None:
            outcome = abnormal
        elif run["exitCode"] == 0:
            outcome = "ran"
        else:
            outcome = "runtime_error"
            if error is None:
                if run["signal"] is not None:
                    error = {"type": "Killed", "message": "killed by signal %d" % run["signal"], "line": None}
                else:
                    error = {"type": "ExitStatus", "message": "exit status %s" % run["exitCode"], "line": None}
        results.append(
            {
                "outcome": outcome,
                "stdout": _decode(run["stdout"]),
                "stdoutBytes": run["stdoutBytes"],
                "stderr": _decode(run["stderr"][-max(1, int(job["reportOutputBytes"])) :]),
                "error": error,
                "cpuMs": run["treeCpuMs"],
                "wallMs": run["wallMs"],
                "exitCode": run["exitCode"],
            }
        )
    return results


# ---------------------------------------------------------------- J: compile stage, then the runs


def _program(job):
    """Syntax check, full-program compile check and the split into trusted prompt vs the rest."""
    report = {"syntax": {"ok": False, "error": None}, "compile": {"ok": False, "error": None}}
    solution = job["solution"]
    if not solution.strip():
        report["syntax"]["error"] = {"type": "EmptyCode", "message": "no code in the response", "line": None}
        report["compile"]["error"] = {"type": "NotAttempted", "message": "syntax check failed", "line": None}
        return report, None
    try:
        ast.parse(solution, "<solution>")
        report["syntax"]["ok"] = True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        report["syntax"]["error"] = _error(e)
        report["compile"]["error"] = {"type": "NotAttempted", "message": "syntax check failed", "line": None}
        return report, None
    parts = []
    prompt = job["prompt"]
    if prompt.strip():
        parts.append(prompt)
    prompt_last = ("\n\n".join(parts)).count("\n") + 1 if parts else 0
    parts.append(solution)
    test = job["test"]
    test_first = test_last = 0
    if test.strip():
        test_first = ("\n\n".join(parts) + "\n\n").count("\n") + 1
        parts.append(test)
        test_last = ("\n\n".join(parts)).count("\n") + 1
        if job["entryPoint"]:
            parts.append("check(%s)" % job["entryPoint"])
    full = "\n\n".join(parts) + "\n"
    solution_first = prompt_last + 2 if prompt_last else 1
    layout = {
        "solution": [solution_first, solution_first + solution.count("\n")],
        "test": [test_first, test_last] if test_first else None,
    }
    report["layout"] = layout
    try:
        compile(full, "<program>", "exec", dont_inherit=True)
        tree = ast.parse(full, "<program>")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        report["compile"]["error"] = _error(e)
        return report, None
    report["compile"]["ok"] = True
    return report, {
        "full": full,
        "layout": layout,
        "prompt_last": prompt_last,
        "prompt_body": [s for s in tree.body if s.lineno <= prompt_last],
        "rest_body": [s for s in tree.body if s.lineno > prompt_last],
        "test_first": test_first,
        "test_last": test_last,
        "future_flags": 0,
    }


def _run_prompt(prog, g):
    """Runs the task's prompt (trusted imports and helpers) in J; returns an error dict or None."""
    try:
        pcode = compile(ast.Module(body=prog["prompt_body"], type_ignores=[]), "<program>", "exec", dont_inherit=True)
        import __future__ as fut

        for name in fut.all_feature_names:
            flag = getattr(fut, name).compiler_flag
            if pcode.co_flags & flag:
                prog["future_flags"] |= flag
        exec(pcode, g)
    except BaseException as e:
        return _error(e)
    return None


def _runs(job, prog, report):
    """Everything after the compile stage: the prompt in J, the check program, then the io tests."""
    g = {"__name__": "__main__", "__builtins__": builtins}
    prompt_error = _run_prompt(prog, g) if prog["prompt_body"] else None
    if prompt_error is not None:
        failure = {"type": "PromptError", "message": "the task's prompt code failed: %s: %s" % (prompt_error["type"], prompt_error["message"]), "line": prompt_error["line"]}
        # Decided by J before any candidate code ran (a field of J's own report, not an exception name a
        # candidate could raise): the task or the environment is broken, not the candidate.
        report["taskError"] = failure
        if job["test"].strip():
            report["check"] = {"status": "runtime_error", "completed": False, "tests": [], "running": None, "error": failure, "cpuMs": 0, "wallMs": 0, "stdout": "", "stdoutBytes": 0, "stderr": "", "exitCode": None, "signal": None}
        if job["ioStdin"]:
            report["io"] = [{"outcome": "runtime_error", "stdout": "", "stdoutBytes": 0, "stderr": "", "error": failure, "cpuMs": 0, "wallMs": 0, "exitCode": None} for _ in job["ioStdin"]]
        return
    io_globals = dict(g)  # io workers start from the prompt's namespace, untouched by the check's proxies
    if job["test"].strip():
        report["check"] = _run_check(job, prog, g)
        report["taskError"] = report["check"].pop("taskError", None)
    if job["ioStdin"]:
        solution_last = prog["layout"]["solution"][1]
        solution_body = [s for s in prog["rest_body"] if s.lineno <= solution_last]
        code = compile(ast.Module(body=solution_body, type_ignores=[]), "<program>", "exec", flags=prog["future_flags"], dont_inherit=True)
        report["io"] = _run_io(job, code, io_globals)


def main():
    hardened = _harden()
    _become_subreaper()
    _shield_signals()
    header = _read_line(0)
    magic, _, size = header.partition(" ")
    if magic != PROTOCOL or not size.isdigit():
        _write_all(1, (json.dumps({"v": REPORT_VERSION, "stage": "compile", "harnessError": "bad protocol header"}) + "\n").encode())
        return
    job = json.loads(_read_exact(0, int(size)))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    judge_memory = int(job.get("judgeMemoryBytes") or JUDGE_MEMORY)
    if hard == resource.RLIM_INFINITY or judge_memory < hard:
        resource.setrlimit(resource.RLIMIT_AS, (judge_memory, hard))  # soft only: children may set their own
    report, prog = _program(job)
    # Line 1: syntax and compilation, decided and written before any candidate code exists.
    stage = {"v": REPORT_VERSION, "stage": "compile", "syntax": report["syntax"], "compile": report["compile"], "layout": report.get("layout"), "harnessError": None}
    _write_all(1, (json.dumps(stage, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8", "replace"))
    final = {"v": REPORT_VERSION, "stage": "report", "hardened": hardened, "check": None, "io": None, "taskError": None, "harnessError": None}
    if prog is not None:
        try:
            _runs(job, prog, final)
        except MemoryError:
            final = {"v": REPORT_VERSION, "stage": "report", "harnessError": "MemoryError: the judge ran out of memory"}
    # Only now, with every worker gone, read the nonce that authenticates the report.
    final["nonce"] = _read_line(0)
    _write_all(1, (json.dumps(final, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8", "replace"))


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # a harness bug: say so instead of going silent
        try:
            _write_all(1, (json.dumps({"v": REPORT_VERSION, "stage": "report", "harnessError": "%s: %s" % (type(e).__name__, _clip(e))}) + "\n").encode())
        except BaseException:
            pass
    os._exit(0)
