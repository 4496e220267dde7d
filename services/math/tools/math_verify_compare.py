#!/usr/bin/env python3
r"""math-verify's verdict on answer pairs, one JSON line per pair (the math service's comparison test).

Usage:
    python math_verify_compare.py [--timeout SECONDS] [FILE ...]
    python math_verify_compare.py --bench PASSES [--timeout SECONDS] [FILE ...]

Input (the FILEs in order, or stdin when there is none or FILE is "-"): JSON, each either a list of
pairs or an object with a "pairs" list (services/math/test/agreement-pairs.json) or a "cases" list
(services/math/test/heldout/*.json). The pairs of all files are graded as one list, in order;
"index" counts across files. Each pair needs "response" (the model's text) and "reference" (the
reference answer); every other field is ignored (math-verify has no answer type, answer format or
tolerance).

Output (stdout): first one line {"type": "meta", ...} naming the versions, the configuration and
the files (with how many pairs each holds), then one line per pair in input order,
{"type": "result", "index": i, "status": ...}:
    status "ok"             "verdict": true/false, "gold" and "answer": what parse() returned (str)
    status "gold_unparsed"  parse(reference) found nothing; TRL's accuracy_reward returns None for the
                            pair (the example is skipped): no verdict
    status "timeout"        the pair took longer than --timeout seconds (wall clock): no verdict
    status "error"          math-verify raised (its own try/except logged it, or it escaped): no verdict
A timeout or crash is never reported as a verdict.

Configuration: TRL's `trl.rewards.accuracy_reward` (trl 1.16), with the reference boxed as verl's
math-verify scorer does:
    gold   = parse("\\boxed{" + reference + "}")
                                       # parse's defaults: [LatexExtractionConfig(), ExprExtractionConfig()],
                                       # fallback_mode="first_match", extraction_mode="any_match"
    answer = parse(response, extraction_config=[LatexExtractionConfig(
                 normalization_config=NormalizationConfig(units=True),
                 boxed_match_priority=0, try_extract_without_anchor=False)],
             extraction_mode="first_match")
    verdict = verify(gold, answer)     # float_rounding=6, numeric_precision=15, strict=True,
                                       # allow_set_relation_comp=False
Why the box: math-verify reads LaTeX only inside an environment ($…$, \[…\], \boxed{…}); a bare
reference such as `\frac34` or `\sqrt{2}` parses to nothing (TRL then skips the example) and
`1 - \sqrt{2}` to 1. `--gold bare` passes the reference unchanged, as TRL does with a bare column;
`--answer default` parses the response with parse()'s defaults instead of TRL's stricter extraction.
verify() is not symmetric: the reference is always `gold` (first argument), the response `target`.
math-verify's own signal.alarm timeouts are off (parsing_timeout=None, timeout_seconds=None, as TRL
runs it off the main thread): they would turn a timeout into False/[] silently. This script's
per-pair wall-clock limit (SIGALRM) replaces them and reports "timeout" instead.

Timing (--bench PASSES, used by `npm run bench:math`): no result lines; after the meta line, one
{"type": "bench", ...} line. The pairs are graded once untimed (imports, compiled regexes, first-call
costs), then PASSES times, each pass timed alone with perf_counter around parse + parse + verify of
every pair (interpreter start-up and imports excluded) and math-verify's and sympy's caches cleared
before it, so a pass does not reuse the previous pass's parses. Each pass reports its seconds, the
pairs that timed out (counted at the --timeout they waited) and comparisons/s; "median" is the median
pass's comparisons/s, and "medianWithVerdict" the same over the pairs that finished (timed-out pairs
and their waits left out); "outcomes" is the untimed pass's outcome per pair ("accept", "reject" or
the status without a verdict), for the agreement figures.

Errors: bad input (not JSON, a pair without "response"/"reference") exits 2 naming what is wrong;
math-verify missing exits 3 saying how to install it.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from importlib import metadata

BOOTSTRAP = "bash scripts/bootstrap.sh --with-torch"


class PairTimeout(BaseException):
    """Raised by the SIGALRM handler; a BaseException so that math-verify's `except Exception` keeps out."""


class Recorder(logging.Handler):
    """Collects math-verify's log records: how its swallowed errors and timeouts are seen."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def die(code: int, message: str) -> None:
    print(f"math_verify_compare: {message}", file=sys.stderr)
    sys.exit(code)


def load_pairs(source: str) -> list[dict]:
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        die(2, f"cannot read {source}: {e}")
    name = "stdin" if source == "-" else source
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        die(2, f"{name} is not JSON: {e}")
    pairs = (data.get("pairs", data.get("cases")) if isinstance(data, dict) else data)
    if not isinstance(pairs, list):
        die(2, f"{name} must be a JSON list of pairs or an object with a 'pairs' or 'cases' list")
    for i, p in enumerate(pairs):
        if not isinstance(p, dict):
            die(2, f"pair {i} of {name} is not an object")
        for field in ("response", "reference"):
            if not isinstance(p.get(field), str):
                die(2, f"pair {i} of {name} has no string '{field}'")
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description="math-verify's verdict per answer pair, as JSON lines")
    ap.add_argument("files", nargs="*", default=["-"], help="JSON pairs files, graded in order (default: stdin)")
    ap.add_argument("--timeout", type=float, default=10.0, help="wall-clock seconds per pair (default 10)")
    ap.add_argument("--gold", choices=("boxed", "bare"), default="boxed",
                    help="boxed (default): parse(\\boxed{reference}); bare: parse(reference), as TRL passes a "
                         "dataset's solution column")
    ap.add_argument("--answer", choices=("trl", "default"), default="trl",
                    help="trl (default): TRL accuracy_reward's extraction of the response; default: parse(response) "
                         "with math-verify's defaults (any LaTeX or plain expression, malformed-operator and nits "
                         "fixes on)")
    ap.add_argument("--bench", type=int, default=0, metavar="PASSES",
                    help="timing mode: one untimed pass, then PASSES timed passes; prints comparisons/s instead of "
                         "verdicts")
    args = ap.parse_args()
    if not args.timeout > 0:
        die(2, f"--timeout must be > 0 seconds, got {args.timeout}")
    if args.bench < 0:
        die(2, f"--bench must be >= 0 passes, got {args.bench}")
    if args.files.count("-") > 1:
        die(2, "stdin ('-') can be read once")
    files = [(f, load_pairs(f)) for f in args.files]
    pairs = [p for _, ps in files for p in ps]

    try:
        from latex2sympy2_extended import NormalizationConfig
        from math_verify import LatexExtractionConfig, parse, verify
    except ImportError as e:
        die(3, f"math-verify is not importable by {sys.executable} ({e}); install the project's Python "
            f"environment with `{BOOTSTRAP}` (npm test runs it)")

    recorder = Recorder()
    mv_log = logging.getLogger("math_verify")
    mv_log.setLevel(logging.DEBUG)
    mv_log.addHandler(recorder)
    mv_log.propagate = False
    # The one-time "Timeout is disabled" warning is expected (the script owns the timeout): said here.
    parse("0", parsing_timeout=None)
    verify(0, 0, timeout_seconds=None)
    recorder.records.clear()

    answer_config = [
        LatexExtractionConfig(
            normalization_config=NormalizationConfig(units=True),
            boxed_match_priority=0,
            try_extract_without_anchor=False,
        )
    ]
    fired = False

    def on_alarm(_signum, _frame):
        nonlocal fired
        fired = True
        raise PairTimeout()

    signal.signal(signal.SIGALRM, on_alarm)

    def grade(i: int, p: dict) -> dict:
        """math-verify's outcome for one pair (the row printed for it), under the per-pair time limit."""
        nonlocal fired
        recorder.records.clear()
        fired = False
        stage = "parse reference"
        started = time.perf_counter()
        row: dict = {"type": "result", "index": i}
        try:
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
            try:
                reference = p["reference"] if args.gold == "bare" else "\\boxed{" + p["reference"] + "}"
                gold = parse(reference, parsing_timeout=None)
                if gold:
                    stage = "parse response"
                    if args.answer == "trl":
                        answer = parse(p["response"], extraction_config=answer_config,
                                       extraction_mode="first_match", parsing_timeout=None)
                    else:
                        answer = parse(p["response"], parsing_timeout=None)
                    stage = "verify"
                    verdict = bool(verify(gold, answer, timeout_seconds=None))
                    stage = "str"
                    row.update(gold=str(gold), answer=str(answer))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            errors = [r for r in recorder.records if r.exc_info or r.levelno >= logging.WARNING]
            if fired:
                # A handler inside sympy swallowed the PairTimeout: still a timeout.
                row = {"type": "result", "index": i, "status": "timeout", "stage": stage}
            elif not gold:
                row.update(status="gold_unparsed")
            elif errors and not verdict:
                # math-verify caught an exception and answered False/[]: a crash, not a verdict.
                first = errors[0]
                why = repr(first.exc_info[1]) if first.exc_info else first.getMessage()
                row = {"type": "result", "index": i, "status": "error",
                       "error": f"{first.getMessage()[:120]}: {why}"[:400]}
            else:
                row.update(status="ok", verdict=verdict)
        except PairTimeout:
            row = {"type": "result", "index": i, "status": "timeout", "stage": stage}
        except Exception as e:  # noqa: BLE001 - reported, never a verdict
            row = {"type": "result", "index": i, "status": "error", "stage": stage, "error": repr(e)[:400]}
        row["ms"] = round((time.perf_counter() - started) * 1000, 1)
        return row

    answer_expr = (
        "parse(response, [LatexExtractionConfig(NormalizationConfig(units=True), boxed_match_priority=0, "
        "try_extract_without_anchor=False)], extraction_mode='first_match')"
        if args.answer == "trl" else "parse(response)"
    )
    gold_expr = "reference" if args.gold == "bare" else "'\\\\boxed{' + reference + '}'"
    versions = {n: metadata.version(n) for n in ("math-verify", "latex2sympy2_extended", "sympy")}
    out = sys.stdout
    out.write(json.dumps({
        "type": "meta",
        "versions": versions,
        "python": sys.executable,
        "config": f"gold=parse({gold_expr}); answer={answer_expr}; verify(gold, answer)",
        "timeout_s": args.timeout,
        "pairs": len(pairs),
        "files": [{"file": f, "pairs": len(ps)} for f, ps in files],
    }) + "\n")
    out.flush()

    if args.bench:
        out.write(json.dumps(bench(pairs, grade, args.bench, args.timeout)) + "\n")
        return
    for i, p in enumerate(pairs):
        out.write(json.dumps(grade(i, p)) + "\n")
        out.flush()


def clear_caches() -> None:
    """Forgets math-verify's lru caches and sympy's cache: a timed pass parses every pair afresh."""
    from math_verify import parser as mv_parser
    from sympy.core.cache import clear_cache

    for name in ("parse_latex_cached", "parse_expr_cached", "extract_latex"):
        getattr(mv_parser, name).cache_clear()
    clear_cache()


def bench(pairs: list[dict], grade, passes: int, timeout: float) -> dict:
    """One untimed pass, then `passes` timed passes over every pair (see the module doc, Timing)."""
    outcomes = []
    for i, p in enumerate(pairs):
        row = grade(i, p)
        outcomes.append(("accept" if row["verdict"] else "reject") if row["status"] == "ok" else row["status"])
    results = []
    for _ in range(passes):
        clear_caches()
        seconds = 0.0
        timed_out = 0
        timed_out_seconds = 0.0
        for i, p in enumerate(pairs):
            started = time.perf_counter()
            row = grade(i, p)
            spent = time.perf_counter() - started
            seconds += spent
            if row["status"] == "timeout":
                timed_out += 1
                timed_out_seconds += spent
        finished = len(pairs) - timed_out
        results.append({
            "seconds": round(seconds, 3),
            "timeouts": timed_out,
            "comparisonsPerSecond": round(len(pairs) / seconds, 1) if seconds > 0 else None,
            "withVerdictPerSecond": round(finished / (seconds - timed_out_seconds), 1)
            if seconds - timed_out_seconds > 0 else None,
        })
    return {
        "type": "bench",
        "pairs": len(pairs),
        "passes": results,
        "median": median([r["comparisonsPerSecond"] for r in results]),
        "medianWithVerdict": median([r["withVerdictPerSecond"] for r in results]),
        "timeout_s": timeout,
        "cachesCleared": "before each pass: math_verify.parser's lru caches and sympy.core.cache",
        "outcomes": outcomes,
    }


def median(xs: list) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


if __name__ == "__main__":
    main()
