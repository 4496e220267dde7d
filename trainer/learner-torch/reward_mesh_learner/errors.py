"""Errors raised by the learner.

`LearnerInputError` is a request that violates the contract: the server maps it to gRPC
INVALID_ARGUMENT with the details `'<field>' <problem>`, which the TypeScript client parses back into a
`LearnerInputError` with the same field (`trainer/src/learner/wire.ts`, `learnerErrorFromGrpc`).
"""

import math


class LearnerInputError(ValueError):
    """A bad request. `field` is the JSON-style camelCase path (`samples[3].tokenIds[2]`)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"'{field}' {problem}")
        self.field = field
        self.problem = problem


class CheckpointError(RuntimeError):
    """A checkpoint could not be written or read (maps to gRPC INTERNAL)."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


class PolicyLoadError(RuntimeError):
    """The model could not be built or loaded (bad `--model`, a missing package, a corrupt directory)."""


class WarmupError(ValueError):
    """A bad warm-up file (the CLI exits 2 with this message)."""


def js_number(x) -> str:
    """Formats a number as JavaScript's `String(x)` does (`1`, `1.5`, `NaN`, `Infinity`), so error
    messages read the same whichever learner produced them."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        if x.is_integer() and abs(x) < 1e21:
            return str(int(x))
        return repr(x)
    return str(x)


def describe(v) -> str:
    """A short description of a value for an error message (as validate.ts `describe`)."""
    if isinstance(v, str):
        return f"'{v[:40]}…'" if len(v) > 40 else f"'{v}'"
    if v is None:
        return "missing"
    if isinstance(v, (int, float)):
        return js_number(v)
    return f"a {type(v).__name__}"
