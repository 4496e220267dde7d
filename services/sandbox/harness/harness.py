"""reward-mesh Python test harness (runs inside the sandbox, either backend).

The harness process (H) never executes candidate code. It reads a job from stdin, checks the
solution's syntax and the full program's compilation with CPython's own parser and compiler,
rewrites every ``assert`` of the test code so that one failure does not hide the others, and then
forks a worker (W) per execution: one for the ``check`` program, one per stdin -> stdout test. W
executes the candidate; H enforces the time limits, caps the output, measures W's CPU time with
``wait4`` and writes one JSON report line to its stdout.

Integrity (see services/sandbox/README.md):
  * W never holds H's stdout (the report channel) or stdin: both are replaced before any candidate
    code runs, and H is made non-dumpable, so W cannot open them through /proc either.
  * The nonce that authenticates the report follows the job on stdin and is read only after every
    worker has exited, so it is never in a process that ran candidate code.
  * Expected outputs of stdin -> stdout tests are never sent into the sandbox; the service compares.

Protocol: stdin = b"RMH1 <n>\\n" + <n bytes of job JSON> + <nonce> + b"\\n".
"""

import ast
import json
import os
import resource
import select
import signal
import sys
import time

PROTOCOL = "RMH1"
REPORT_VERSION = 1
MESSAGE_CHARS = 300
SOURCE_CHARS = 200
STDERR_TAIL = 4096
CHUNK = 65536


# ---------------------------------------------------------------- small helpers


def _clip(text, n=MESSAGE_CHARS):
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _error(exc):
    """A JSON-able description of an exception (type, message, line of the full program)."""
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
    return {
        "type": type(exc).__name__,
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
    """Makes H non-dumpable: same-uid processes can then neither ptrace it nor open /proc/<H>/fd."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except Exception:
        return False


# ---------------------------------------------------------------- assert rewriting

_HOOK = "__reward_mesh_test__"


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


# ---------------------------------------------------------------- worker side (runs candidate code)


def _lower_limit(which, soft, hard):
    """Sets an rlimit, never above the hard limit the sandbox already imposes."""
    _, cur_hard = resource.getrlimit(which)
    if cur_hard != resource.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))



class _Recorder:
    """Lives in W: streams per-assert events to H over a pipe."""

    def __init__(self, fd):
        self._fd = fd
        self._t0 = {}
        self._clock = time.process_time
        self._dumps = json.dumps
        self._write = os.write

    def _send(self, event):
        try:
            self._write(self._fd, (self._dumps(event) + "\n").encode())
        except OSError:
            pass

    def begin(self, i):
        self._t0[i] = self._clock()
        self._send({"e": "begin", "i": i})

    def _cpu(self, i):
        return round((self._clock() - self._t0.pop(i, self._clock())) * 1000, 3)

    def ok(self, i):
        self._send({"e": "ok", "i": i, "cpuMs": self._cpu(i)})

    def fail(self, i, exc):
        self._send({"e": "fail", "i": i, "cpuMs": self._cpu(i), "error": _error(exc)})

    def error(self, i, exc):
        self._send({"e": "error", "i": i, "cpuMs": self._cpu(i), "error": _error(exc)})


def _worker(job, stdin_fd, out_w, err_w, ev_w, code, g, io_mode):
    """The forked worker: isolate fds, apply limits, run the program. Never returns."""
    try:
        os.setpgid(0, 0)
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, ev_w)
        os.closerange(ev_w + 1, 1 << 20)
        seconds = max(1, -(-int(job["timeLimitMs"]) // 1000))
        _lower_limit(resource.RLIMIT_CPU, seconds, seconds + 1)
        _lower_limit(resource.RLIMIT_CORE, 0, 0)
        mem = int(job.get("memoryLimitBytes") or 0)
        if mem > 0:
            _lower_limit(resource.RLIMIT_AS, mem, mem)
        import io as _io

        sys.stdin = _io.TextIOWrapper(_io.BufferedReader(_io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="replace")
        sys.stdout = _io.TextIOWrapper(_io.BufferedWriter(_io.FileIO(1, "w", closefd=False)), encoding="utf-8", errors="replace")
        sys.stderr = _io.TextIOWrapper(
            _io.BufferedWriter(_io.FileIO(2, "w", closefd=False)), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        sys.argv = ["solution.py"]
    except BaseException as e:
        try:
            os.write(ev_w, (json.dumps({"e": "setup", "error": _error(e)}) + "\n").encode())
        finally:
            os._exit(70)

    recorder = _Recorder(ev_w)
    status = 0
    try:
        if not io_mode:
            g[_HOOK] = recorder
        exec(code, g)
        recorder._send({"e": "done"})
    except SystemExit as e:
        c = e.code
        if io_mode:
            if c is None or c is True or c is False or isinstance(c, int):
                status = int(c or 0) & 0xFF
            else:
                try:
                    sys.stderr.write(str(c) + "\n")
                except BaseException:
                    pass
                status = 1
            if status == 0:
                recorder._send({"e": "done"})
            else:
                recorder._send({"e": "exit", "code": status})
        else:
            recorder._send({"e": "exit", "code": c if isinstance(c, int) else (0 if c is None else 1)})
            status = 1
    except BaseException as e:
        recorder._send({"e": "exc", "error": _error(e)})
        try:
            import traceback

            traceback.print_exception(type(e), e, e.__traceback__, limit=-8)
        except BaseException:
            pass
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


# ---------------------------------------------------------------- supervisor side


def _execute(job, code, g, io_mode, stdin_data, max_out):
    """Forks W, supervises it, returns what happened (all measured by H)."""
    if stdin_data is None:
        in_fd = os.open(os.devnull, os.O_RDONLY)
    else:
        in_fd = os.memfd_create("stdin")  # no path a previous test could have tampered with
        _write_all(in_fd, stdin_data.encode("utf-8", "replace"))
        os.lseek(in_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ev_r, ev_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (out_r, err_r, ev_r):
                os.close(fd)
            _worker(job, in_fd, out_w, err_w, ev_w, code, g, io_mode)
        finally:
            os._exit(70)
    for fd in (in_fd, out_w, err_w, ev_w):
        os.close(fd)

    limit_s = int(job["timeLimitMs"]) / 1000.0
    deadline = started + limit_s
    out = bytearray()
    out_bytes = 0
    err = bytearray()
    err_bytes = 0
    ev_buf = bytearray()
    open_fds = {out_r: "out", err_r: "err", ev_r: "ev"}
    killed = None  # "timeout" | "output_limit"
    exited = None

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
            else:
                ev_buf += data
        if not ready:
            # W may be gone while a stray grandchild keeps a pipe open: do not wait for it.
            if exited is None:
                try:
                    wpid, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    wpid = pid
                if wpid == pid:
                    exited = time.monotonic()
                    kill()
            elif time.monotonic() - exited > 0.2:
                for fd in list(open_fds):
                    os.close(fd)
                open_fds.clear()
    kill()  # stray grandchildren of W
    try:
        _, status, usage = os.wait4(pid, 0)
        cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
    except ChildProcessError:
        status, cpu_ms = 0, 0.0
    # As PID 1 (Docker) orphans of the candidate are re-parented to H: reap them.
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
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
    if killed is None and sig == signal.SIGXCPU:
        killed = "timeout"
    if killed is None and sig == signal.SIGKILL:
        # Not sent by H: the CPU hard limit (a candidate that ignored SIGXCPU) or the OOM killer.
        seconds = max(1, -(-int(job["timeLimitMs"]) // 1000))
        killed = "timeout" if cpu_ms >= seconds * 1000 else "killed"
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
        "wallMs": round(wall_ms, 3),
    }


def _outcome_of(run):
    """Classifies one W execution: passed-through / timeout / memory_error / output_limit / ..."""
    if run["killed"] == "timeout":
        return "timeout"
    if run["killed"] == "output_limit":
        return "output_limit"
    for ev in run["events"]:
        if ev.get("e") == "exc" and isinstance(ev.get("error"), dict) and ev["error"].get("type") == "MemoryError":
            return "memory_error"
    if run["killed"] == "killed":
        return "killed"  # SIGKILL that H did not send: the service decides OOM vs other from the sandbox
    return None


def _decode(b):
    return b.decode("utf-8", "replace")


def _run_check(job, full, g, test_first, test_last, future_flags, rest_body):
    rewriter = _AssertRewriter(test_first, test_last, full)
    module = ast.Module(body=rest_body, type_ignores=[])
    module = rewriter.visit(module)
    ast.fix_missing_locations(module)
    code = compile(module, "<program>", "exec", flags=future_flags, dont_inherit=True)
    sites = rewriter.sites
    run = _execute(job, code, g, False, None, int(job["maxOutputBytes"]))
    results = [{"outcome": "not_run", "cpuMs": 0.0, "runs": 0, "error": None} for _ in sites]
    done = False
    uncaught = None
    exit_code = None
    running = None
    for ev in run["events"]:
        kind = ev.get("e")
        i = ev.get("i")
        if kind in ("begin", "ok", "fail", "error"):
            if not isinstance(i, int) or not 0 <= i < len(sites):
                continue
            if kind == "begin":
                running = i
                continue
            running = None
            r = results[i]
            r["runs"] += 1
            cpu = ev.get("cpuMs")
            if isinstance(cpu, (int, float)):
                r["cpuMs"] = round(r["cpuMs"] + float(cpu), 3)
            rank = {"not_run": 0, "pass": 1, "fail": 2, "error": 3}
            new = {"ok": "pass", "fail": "fail", "error": "error"}[kind]
            if rank[new] > rank[r["outcome"]]:
                r["outcome"] = new
                if kind != "ok" and isinstance(ev.get("error"), dict):
                    r["error"] = ev["error"]
        elif kind == "done":
            done = True
        elif kind == "exc" and isinstance(ev.get("error"), dict):
            uncaught = ev["error"]
        elif kind == "exit":
            exit_code = ev.get("code")
    abnormal = _outcome_of(run)
    completed = done and abnormal is None and run["exitCode"] == 0
    if abnormal is not None:
        status = abnormal
    elif not completed:
        status = "runtime_error"
        if uncaught is None:
            if exit_code is not None:
                uncaught = {"type": "SystemExit", "message": "exit(%s) before the tests finished" % exit_code, "line": None}
            elif run["signal"] is not None:
                uncaught = {"type": "Killed", "message": "killed by signal %d" % run["signal"], "line": None}
            else:
                uncaught = {"type": "EarlyExit", "message": "the program exited before the tests finished", "line": None}
    elif any(r["outcome"] == "error" for r in results):
        status = "runtime_error"
        if any(r["outcome"] == "error" and (r["error"] or {}).get("type") == "MemoryError" for r in results):
            status = "memory_error"
    elif any(r["outcome"] in ("fail", "not_run") for r in results):
        # A test the complete program never reached did not pass either.
        status = "assertion_failed"
    else:
        status = "passed"
    tests = []
    for site, r in zip(sites, results):
        tests.append(
            {
                "line": site["line"],
                "source": site["source"],
                "outcome": r["outcome"],
                "runs": r["runs"],
                "cpuMs": r["cpuMs"],
                "error": r["error"],
            }
        )
    return {
        "status": status,
        "completed": completed,
        "tests": tests,
        "running": running,
        "error": uncaught,
        "cpuMs": run["cpuMs"],
        "wallMs": run["wallMs"],
        "stdout": _decode(run["stdout"][: int(job["reportOutputBytes"])]),
        "stdoutBytes": run["stdoutBytes"],
        "stderr": _decode(run["stderr"][-max(1, int(job["reportOutputBytes"])) :]),
        "exitCode": run["exitCode"],
        "signal": run["signal"],
    }


def _run_io(job, code, g):
    results = []
    for stdin_data in job["ioStdin"]:
        run = _execute(job, code, g, True, stdin_data, int(job["maxOutputBytes"]))
        abnormal = _outcome_of(run)
        error = None
        for ev in run["events"]:
            if ev.get("e") == "exc" and isinstance(ev.get("error"), dict):
                error = ev["error"]
            elif ev.get("e") == "exit" and error is None:
                error = {"type": "SystemExit", "message": "exit status %s" % ev.get("code"), "line": None}
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
                "cpuMs": run["cpuMs"],
                "wallMs": run["wallMs"],
                "exitCode": run["exitCode"],
            }
        )
    return results


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
    report["layout"] = {
        "solution": [solution_first, solution_first + solution.count("\n")],
        "test": [test_first, test_last] if test_first else None,
    }
    try:
        compile(full, "<program>", "exec", dont_inherit=True)
        tree = ast.parse(full, "<program>")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        report["compile"]["error"] = _error(e)
        return report, None
    report["compile"]["ok"] = True
    prompt_body = [s for s in tree.body if s.lineno <= prompt_last]
    rest_body = [s for s in tree.body if s.lineno > prompt_last]
    return report, {
        "full": full,
        "prompt_body": prompt_body,
        "rest_body": rest_body,
        "test_first": test_first,
        "test_last": test_last,
    }


def main():
    hardened = _harden()
    header = _read_line(0)
    magic, _, size = header.partition(" ")
    if magic != PROTOCOL or not size.isdigit():
        _write_all(1, (json.dumps({"v": REPORT_VERSION, "harnessError": "bad protocol header"}) + "\n").encode())
        return
    job = json.loads(_read_exact(0, int(size)))
    report, prog = _program(job)
    report.update({"v": REPORT_VERSION, "hardened": hardened, "check": None, "io": None, "harnessError": None})
    if prog is not None:
        g = {"__name__": "__main__", "__builtins__": __builtins__}
        future_flags = 0
        prompt_error = None
        if prog["prompt_body"]:
            # The task's prompt (imports, helpers) is trusted code: H runs it once, and every W inherits it.
            try:
                pcode = compile(ast.Module(body=prog["prompt_body"], type_ignores=[]), "<program>", "exec", dont_inherit=True)
                import __future__ as fut

                for name in fut.all_feature_names:
                    flag = getattr(fut, name).compiler_flag
                    if pcode.co_flags & flag:
                        future_flags |= flag
                exec(pcode, g)
            except BaseException as e:
                prompt_error = _error(e)
        if prompt_error is not None:
            failure = {"type": "PromptError", "message": "the task's prompt code failed: %s: %s" % (prompt_error["type"], prompt_error["message"]), "line": prompt_error["line"]}
            if job["test"].strip():
                report["check"] = {"status": "runtime_error", "completed": False, "tests": [], "running": None, "error": failure, "cpuMs": 0, "wallMs": 0, "stdout": "", "stdoutBytes": 0, "stderr": "", "exitCode": None, "signal": None}
            if job["ioStdin"]:
                report["io"] = [{"outcome": "runtime_error", "stdout": "", "stdoutBytes": 0, "stderr": "", "error": failure, "cpuMs": 0, "wallMs": 0, "exitCode": None} for _ in job["ioStdin"]]
        else:
            if job["test"].strip():
                report["check"] = _run_check(job, prog["full"], g, prog["test_first"], prog["test_last"], future_flags, prog["rest_body"])
            if job["ioStdin"]:
                solution_body = [s for s in prog["rest_body"] if not prog["test_first"] or s.lineno < prog["test_first"]]
                code = compile(ast.Module(body=solution_body, type_ignores=[]), "<program>", "exec", flags=future_flags, dont_inherit=True)
                report["io"] = _run_io(job, code, g)
    # Only now, with every worker gone, read the nonce that authenticates the report.
    report["nonce"] = _read_line(0)
    _write_all(1, (json.dumps(report, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8", "replace"))


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # a harness bug: say so instead of going silent
        try:
            _write_all(1, (json.dumps({"v": REPORT_VERSION, "harnessError": "%s: %s" % (type(e).__name__, _clip(e))}) + "\n").encode())
        except BaseException:
            pass
    os._exit(0)
