#!/usr/bin/env python3
r"""math-verify's verdict on answer pairs, one JSON line per pair (the math service's comparison test).

Usage:
    python math_verify_compare.py [--timeout SECONDS] [FILE]

Input (FILE, or stdin when FILE is absent or "-"): JSON, either a list of pairs or an object with a
"pairs" list (services/math/test/agreement-pairs.json). Each pair needs "response" (the model's
text) and "reference" (the reference answer); every other field is ignored (math-verify has no
answer type, answer format or tolerance).

Output (stdout): first one line {"type": "meta", ...} naming the versions and the configuration,
then one line per pair in input order, {"type": "result", "index": i, "status": ...}:
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
    pairs = data.get("pairs") if isinstance(data, dict) else data
    if not isinstance(pairs, list):
        die(2, f"{name} must be a JSON list of pairs or an object with a 'pairs' list")
    for i, p in enumerate(pairs):
        if not isinstance(p, dict):
            die(2, f"pair {i} of {name} is not an object")
        for field in ("response", "reference"):
            if not isinstance(p.get(field), str):
                die(2, f"pair {i} of {name} has no string '{field}'")
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description="math-verify's verdict per answer pair, as JSON lines")
    ap.add_argument("file", nargs="?", default="-", help="JSON pairs (default: stdin)")
    ap.add_argument("--timeout", type=float, default=10.0, help="wall-clock seconds per pair (default 10)")
    ap.add_argument("--gold", choices=("boxed", "bare"), default="boxed",
                    help="boxed (default): parse(\\boxed{reference}); bare: parse(reference), as TRL passes a "
                         "dataset's solution column")
    ap.add_argument("--answer", choices=("trl", "default"), default="trl",
                    help="trl (default): TRL accuracy_reward's extraction of the response; default: parse(response) "
                         "with math-verify's defaults (any LaTeX or plain expression, malformed-operator and nits "
                         "fixes on)")
    args = ap.parse_args()
    if not args.timeout > 0:
        die(2, f"--timeout must be > 0 seconds, got {args.timeout}")
    pairs = load_pairs(args.file)

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
    }) + "\n")
    out.flush()

    for i, p in enumerate(pairs):
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
        out.write(json.dumps(row) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
