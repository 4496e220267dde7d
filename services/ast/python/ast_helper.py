"""reward-mesh ast parser helper: a long-lived CPython process that parses, never executes.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout, in order.

  request  {"id": n, "candidate": str | null, "reference": str | null, "maxTokens": int, "maxPairs": int}
  answer   {"id": n, "candidate": Parsed | null, "reference": Parsed | null,
            "ratio": float | null, "matched": int | null, "pairs": int | null, "tooLarge": bool}
  Parsed   {"ok": bool, "tokens": int, "error": str | null}

The node sequence is CorrGRPO's (its released code reward's ``ast_similarity_reward``): CPython's
``ast.parse`` of the code, then, in pre-order, each node's class name, its children
(``ast.iter_child_nodes``, so ``Load``/``Store`` contexts and operator nodes are tokens, while
identifiers and literal values are not), then ``/`` + the class name. The similarity is
``difflib.SequenceMatcher(None, cand, ref, autojunk=False).ratio()`` clipped to [0, 1] — the same
library call, so the value is the released reward's to the last bit.

Untrusted code only ever reaches ``ast.parse`` (no ``compile`` to bytecode, no ``exec``). The walk is
iterative, so a deep tree cannot overflow the C stack here; the process runs under an address-space
limit (``argv[1]`` MiB) and the service kills and restarts it when one request runs too long.
"""

import ast
import difflib
import json
import resource
import sys


def _limit_memory(mib):
    limit = mib * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def node_sequence(tree):
    """Pre-order class names with closing ``/Name`` tokens (iterative: no recursion limit)."""
    out = []
    stack = [(tree, False)]
    while stack:
        node, closing = stack.pop()
        name = type(node).__name__
        if closing:
            out.append("/" + name)
            continue
        out.append(name)
        stack.append((node, True))
        children = list(ast.iter_child_nodes(node))
        for child in reversed(children):
            stack.append((child, False))
    return out


def _describe(exc):
    if isinstance(exc, SyntaxError):
        where = "line %s" % exc.lineno if exc.lineno else "unknown line"
        if exc.offset:
            where += ", column %s" % exc.offset
        return "%s at %s: %s" % (type(exc).__name__, where, exc.msg or "invalid syntax")
    if isinstance(exc, RecursionError):
        return "RecursionError: too deeply nested to parse"
    if isinstance(exc, MemoryError):
        return "MemoryError: the parser ran out of memory"
    return "%s: %s" % (type(exc).__name__, str(exc)[:200])


def parse(code):
    """(answer, tokens): CPython's verdict on ``code`` and its node sequence (None when it fails)."""
    if code is None:
        return None, None
    try:
        tree = ast.parse(code)
        tokens = node_sequence(tree)
        del tree
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return {"ok": False, "tokens": 0, "error": _describe(e)}, None
    return {"ok": True, "tokens": len(tokens), "error": None}, tokens


def equal_pairs(a, b):
    """Pairs (i, j) with a[i] == b[j]: bounds SequenceMatcher's work (its worst case is quadratic)."""
    counts = {}
    for t in b:
        counts[t] = counts.get(t, 0) + 1
    return sum(counts.get(t, 0) for t in a)


def answer(req):
    cand, cand_tokens = parse(req.get("candidate"))
    ref, ref_tokens = parse(req.get("reference"))
    out = {"id": req.get("id"), "candidate": cand, "reference": ref, "ratio": None, "matched": None, "pairs": None, "tooLarge": False}
    if cand_tokens is None or ref_tokens is None:
        return out
    max_tokens = int(req.get("maxTokens") or 50000)
    if len(cand_tokens) > max_tokens or len(ref_tokens) > max_tokens:
        out["tooLarge"] = True
        return out
    pairs = equal_pairs(cand_tokens, ref_tokens)
    out["pairs"] = pairs
    if pairs > int(req.get("maxPairs") or 4000000):
        out["tooLarge"] = True
        return out
    matcher = difflib.SequenceMatcher(None, cand_tokens, ref_tokens, autojunk=False)
    out["ratio"] = min(1.0, max(0.0, matcher.ratio()))
    out["matched"] = sum(block.size for block in matcher.get_matching_blocks())
    return out


def main():
    if len(sys.argv) > 1:
        _limit_memory(int(sys.argv[1]))
    stdin, stdout = sys.stdin.buffer, sys.stdout
    stdout.write(json.dumps({"ready": True, "python": sys.version.split()[0]}) + "\n")
    stdout.flush()
    for line in stdin:
        try:
            req = json.loads(line)
            out = answer(req)
        except MemoryError:
            out = {"id": None, "error": "MemoryError: the parser ran out of memory"}
        try:
            text = json.dumps(out)
        except (ValueError, TypeError) as e:
            text = json.dumps({"id": None, "error": "%s" % type(e).__name__})
        stdout.write(text + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
