"""Warm start of the harness judge (bwrap backend's warm pool; see services/sandbox/README.md).

Runs inside one fresh sandbox *before* any rollout is assigned to it: loads the compiled harness
(``harness.pyc``, next to this file) with its imports, tells the service it is ready by writing one
byte on fd 4, then blocks reading fd 4 for its hand-over line: the run's rlimits as JSON. It applies
them (soft = hard, only ever lowering) and closes fd 4, and only then does the judge read its job on
stdin, exactly as a cold ``python3 -I harness.pyc`` does. The sandbox is used for that one rollout and
discarded; end of file on fd 4 (the pool closing) ends it without running anything.
"""
import json
import os
import resource
import sys

FD = 4


def _load_harness():
    from importlib.machinery import SourcelessFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness.pyc")
    loader = SourcelessFileLoader("harness", path)
    module = module_from_spec(spec_from_loader("harness", loader))
    loader.exec_module(module)
    return module


def _read_line(fd, limit=4096):
    out = b""
    while not out.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        out += chunk
        if len(out) > limit:
            return None
    return out.decode()


def _apply(limits):
    cpu = int(limits["cpuSeconds"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if limits.get("oomScoreAdj") is not None:
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write(str(int(limits["oomScoreAdj"])))
        except OSError:
            pass
    if limits.get("addressSpaceBytes") is not None:
        n = int(limits["addressSpaceBytes"])
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
    if limits.get("processes") is not None:
        n = int(limits["processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def main():
    harness = _load_harness()
    os.write(FD, b"R")
    line = _read_line(FD)
    if line is None:  # the pool closed this sandbox before handing it over
        os._exit(0)
    try:
        _apply(json.loads(line))
    except BaseException:
        os._exit(125)  # like the cold path's `ulimit ... || exit 125`: never run without the limits
    os.close(FD)
    sys.argv = [harness.__file__]
    try:
        harness.main()
    except BaseException as e:  # a harness bug: say so instead of going silent (as harness.py does)
        try:
            harness._write_all(1, (json.dumps({"v": harness.REPORT_VERSION, "stage": "report", "harnessError": "%s: %s" % (type(e).__name__, harness._clip(e))}) + "\n").encode())
        except BaseException:
            pass
    os._exit(0)


main()
