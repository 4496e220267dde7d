"""Errors of the client: every message names what went wrong and where."""

import grpc


class MeshError(Exception):
    """Base class of every error this package raises."""


class InvalidInputError(MeshError, ValueError):
    """An argument is not what the mesh accepts; the message names it (`'rollouts[3].task' ...`)."""


class MeshRpcError(MeshError):
    """A call to a mesh service failed.

    Attributes: `target` (what was called, e.g. `reward service 'length' at 127.0.0.1:50061`),
    `method` (`Score`, `ScoreBatch`, `ScoreStream`, ...), `code` (a `grpc.StatusCode`), `details` (the server's message).
    """

    def __init__(self, target, method, code, details):
        self.target = target
        self.method = method
        self.code = code
        self.details = details
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        super().__init__(f"{target}: {method} failed: {name}: {details}")


class MeshTimeoutError(MeshRpcError, TimeoutError):
    """The call ran past its deadline (DEADLINE_EXCEEDED)."""


class MeshUnavailableError(MeshRpcError, ConnectionError):
    """The service could not be reached (UNAVAILABLE): is it running at that address?"""


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def status_error(target, method, code, details):
    """The MeshRpcError subclass for a status `code` (a grpc.StatusCode, or its number as a
    `ScoreBatchError` carries it) of `method` on `target`."""
    if not isinstance(code, grpc.StatusCode):
        code = _CODES.get(code, grpc.StatusCode.UNKNOWN)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return MeshTimeoutError(target, method, code, details or "deadline exceeded")
    if code == grpc.StatusCode.UNAVAILABLE:
        return MeshUnavailableError(target, method, code, details or "unavailable")
    return MeshRpcError(target, method, code, details)


def rpc_error(target, method, err):
    """The MeshRpcError subclass for a grpc.RpcError raised by `method` on `target`."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = err.details() if hasattr(err, "details") else str(err)
    return status_error(target, method, code, details)
