"""Independent re-computation of CorrGRPO's ast_similarity_reward (test oracle, not used by the service).

Written from the definition, the plain recursive way: for each node of CPython's ``ast``, its class
name, then its children (``ast.iter_child_nodes``), then ``/`` + the class name; similarity =
``difflib.SequenceMatcher(None, cand, ref, autojunk=False).ratio()`` clipped to [0, 1].
stdin: a JSON list of [candidate, reference]; stdout: a JSON list of ratios (null: a side does not parse).
"""

import ast
import difflib
import json
import sys


def tokens(node, out):
    name = node.__class__.__name__
    out.append(name)
    for child in ast.iter_child_nodes(node):
        tokens(child, out)
    out.append("/" + name)
    return out


def similarity(cand, ref):
    try:
        a = tokens(ast.parse(cand), [])
        b = tokens(ast.parse(ref), [])
    except SyntaxError:
        return None
    return max(0.0, min(1.0, difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()))


print(json.dumps([similarity(c, r) for c, r in json.load(sys.stdin)]))
