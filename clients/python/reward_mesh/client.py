"""gRPC clients: one reward service (`RewardClient`), a set of them scored together (`Mesh`), and the
trainer's advantage engine (`AdvantagesClient`, `Trainer.ComputeAdvantages`).

Every call has a deadline (the client's `timeout`, or the call's); failures raise MeshRpcError
subclasses naming the service, its address and the method.
"""

import copy
import math
import numbers
import os
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures

import grpc
import grpc.experimental
from google.protobuf import json_format

from ._proto import reward_pb2, reward_service_pb2, reward_service_pb2_grpc, rollout_pb2, trainer_pb2, trainer_pb2_grpc
from .builder import domain_of
from .config import MAX_TIMEOUT, from_env
from .errors import InvalidInputError, MeshError, MeshTimeoutError, rpc_error, status_error

DEFAULT_TIMEOUT = 60.0
# The mesh accepts rollouts up to 16 MiB (the bus's limit); results are small.
_MAX_BYTES = 17 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", _MAX_BYTES),
    ("grpc.max_receive_message_length", _MAX_BYTES),
]

OK = reward_pb2.COMPONENT_STATUS_OK
NOT_APPLICABLE = reward_pb2.COMPONENT_STATUS_NOT_APPLICABLE
# The most requests one ScoreBatch call takes (reward_service.proto); bigger batches are split.
MAX_BATCH = 1024
# The most bytes of serialized rollouts one ScoreBatch request carries (reward_service.proto): half of
# what a service accepts in one message (8 MiB - 64 KiB, plus 16 bytes of envelope), so that the request
# fits and its response, whose results may carry long `details`, is unlikely to exceed it. A batch is
# cut at MAX_BATCH requests or at this many bytes, whichever comes first; a rollout bigger than this goes
# alone. A call whose request the service still refuses as too big (RESOURCE_EXHAUSTED "Received message
# larger than max") is split in halves and retried, a single rollout over ScoreStream, which names its
# size; a call whose response was too big (already scored) is redone once over ScoreStream, one result a
# message; any other RESOURCE_EXHAUSTED (a busy server, a proxy) is raised, not retried.
MAX_BATCH_BYTES = (8 * 1024 * 1024 - 64 * 1024) // 2
# How long a client that saw ScoreBatch answered UNIMPLEMENTED uses ScoreStream before it tries
# ScoreBatch again (the service may have been upgraded behind the same address).
SCORE_BATCH_RETRY_AFTER = 60.0
# How long past a call's deadline the client waits for its threads before it gives up on them: the
# deadline is enforced by gRPC on every RPC; this only bounds a wait that should never be reached.
_WAIT_MARGIN = 10.0

_ROLLOUT = rollout_pb2.Rollout
_POOL = None
_POOL_LOCK = threading.Lock()


def _pool():
    """The threads that run the ScoreBatch calls a batch does not run in the caller's thread (one per
    service but one): kept between batches (a thread per call costs more CPU)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="reward-mesh-rpc")
        return _POOL


def _reset_pool_in_child():
    # A forked child has none of the parent's threads: the parent's executor would queue work that no
    # thread runs (it counts the parent's idle workers), hanging the child's first batch.
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_in_child)


def _varint(n):
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _frames(rollouts):
    """Each rollout's `ScoreBatchRequest.requests` entry as (prefix, serialized rollout): both fields are
    field 1, length-delimited."""
    out = []
    for r in rollouts:
        b = r.SerializeToString()
        n = len(b)
        head = b"\n" + _varint(n)  # ScoreRequest.rollout: field 1, wire type 2
        out.append((b"\n" + _varint(len(head) + n) + head, b))  # ScoreBatchRequest.requests: field 1, wire type 2
    return out


def _join(frames):
    out = []
    for prefix, b in frames:
        out.append(prefix)
        out.append(b)
    return b"".join(out)


def score_batch_request_bytes(rollouts):
    """The wire bytes of `ScoreBatchRequest{requests: [ScoreRequest{rollout: r} for r in rollouts]}`,
    framed from each rollout's own serialization: the same bytes protobuf writes, without copying every
    rollout into a request message first (the copy and the request's serialization cost more than the
    Rollouts' serialization on the TRL hot path)."""
    return _join(_frames(rollouts))


def _split(frames, max_count=None, max_bytes=None):
    """(lo, hi) ranges of `frames`, in order: at most `max_count` requests and `max_bytes` bytes each (a
    frame bigger than `max_bytes` alone)."""
    max_count = MAX_BATCH if max_count is None else max_count
    max_bytes = MAX_BATCH_BYTES if max_bytes is None else max_bytes
    out = []
    lo, size = 0, 0
    for i, (prefix, b) in enumerate(frames):
        n = len(prefix) + len(b)
        if i > lo and (i - lo >= max_count or size + n > max_bytes):
            out.append((lo, i))
            lo, size = i, 0
        size += n
    out.append((lo, len(frames)))
    return out


def _check_rollouts(rollouts, name="rollouts"):
    for i, r in enumerate(rollouts):
        if type(r) is not _ROLLOUT:
            raise InvalidInputError(f"'{name}[{i}]' must be a rewardmesh.v1.Rollout (reward_mesh.rollout(...)), "
                                    f"got {type(r).__module__}.{type(r).__qualname__}")


def _is_seconds(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value <= MAX_TIMEOUT


def _deadline(timeout, default):
    """The call's timeout, or the client's when the call gives none (0 is a timeout, not "none")."""
    if timeout is None:
        return default
    if not _is_seconds(timeout):
        raise InvalidInputError(f"'timeout' must be a number of seconds up to {MAX_TIMEOUT:g} (0 or less: expired), got {timeout!r}")
    return float(timeout)


def _client_timeout(timeout):
    """A client's default `timeout`: seconds above 0 (every call has a deadline), at most MAX_TIMEOUT."""
    if not _is_seconds(timeout) or timeout <= 0:
        raise InvalidInputError(f"the client's 'timeout' must be a number of seconds above 0 and up to {MAX_TIMEOUT:g}, got {timeout!r}")
    return float(timeout)


def _time_left(target, method, seconds):
    """`seconds` for an RPC's timeout; a deadline already passed (0 or less) raises MeshTimeoutError before
    the call starts, as grpc-js does. grpcio given timeout=0 usually fails the call too, but not always: its
    single-threaded unary-stream path can get the answer before the expired deadline's timer fires."""
    if seconds <= 0:
        raise MeshTimeoutError(target, method, grpc.StatusCode.DEADLINE_EXCEEDED,
                               "deadline exceeded before the call started")
    return seconds


def _channel(address, credentials, options=()):
    if not isinstance(address, str) or ":" not in address:
        raise InvalidInputError(f"the address must be host:port, got {address!r}")
    if credentials is None:
        return grpc.insecure_channel(address, options=_CHANNEL_OPTIONS + list(options))
    return grpc.secure_channel(address, credentials, options=_CHANNEL_OPTIONS + list(options))


_SIZE = re.compile(r"larger than max \((\d+) vs\.? (\d+)\)")


def _too_big(details, request_bytes):
    """Which message a RESOURCE_EXHAUSTED ScoreBatch answer says was over a size limit: "request" (refused
    unscored), "response" (scored, its answer refused), or None (not about size: a busy server, a quota).

    The texts of grpcio (gRPC core) and grpc-js: "Received message larger than max (N vs. M)" is written by
    whichever side refused to receive, so the size N says which message it was: the request's own size
    (the server's receive limit) or not (this client's receive limit, the response). "Sent message larger
    than max (N vs. M)" is the server refusing to send the response (or this client refusing to send a
    request of N bytes), and grpc-js's "Response message is larger than max" the same for a response.
    grpc-go's "grpc: received message larger than max" / "grpc: trying to send message larger than max"
    read the same way (case is ignored)."""
    details = details.lower()
    if "response message is larger than max" in details:
        return "response"
    m = _SIZE.search(details)
    if m is None:
        if "attempted to send message with a size larger than" in details:
            return "request"
        return None
    if not any(w in details for w in ("received message", "sent message", "send message")):
        return None
    # grpc-js's "Sent" size counts the 5-byte frame header too.
    return "request" if int(m.group(1)) in (request_bytes, request_bytes + 5) else "response"


class _Cancelled(Exception):
    """A part of a batch cancelled before its RPC started."""


class _Part:
    """One part of a batch — rollouts[lo:hi] — scored over ScoreBatch (or ScoreStream) in a pool thread
    or in the caller's thread. Its RPCs are kept, so `cancel()` cancels them on the server too (a
    running pool task cannot be cancelled: its RPC can)."""

    def __init__(self, client, rollouts, frames, lo, hi, deadline, stream):
        self.client = client
        self.rollouts = rollouts
        self.frames = frames
        self.lo, self.hi = lo, hi
        self.deadline = deadline
        self.stream = stream
        self.future = None  # the pool's future; None for the part run in the caller's thread
        self.outcome = None  # (True, results) or (False, exception), once run in the caller's thread
        self._lock = threading.Lock()
        self._rpc = None
        self._cancelled = False

    def _remaining(self, method):
        return _time_left(self.client.target, method, self.deadline - time.monotonic())

    def _begin(self, start):
        with self._lock:
            if self._cancelled:
                raise _Cancelled()
            self._rpc = start()
            return self._rpc

    def cancel(self):
        with self._lock:
            self._cancelled = True
            rpc = self._rpc
        if rpc is not None:
            rpc.cancel()
        if self.future is not None:
            self.future.cancel()

    def run(self):
        if self.stream:
            return self._stream(self.lo, self.hi)
        return self._batch(self.lo, self.hi)

    def run_inline(self):
        if self.outcome is None:
            try:
                self.outcome = (True, self.run())
            except Exception as e:  # noqa: BLE001 — raised by results(); KeyboardInterrupt goes up now
                self.outcome = (False, e)

    def results(self, timeout):
        """This part's results; raises its error. `timeout` bounds the wait for a pool thread."""
        if self.future is None:
            self.run_inline()
            ok, value = self.outcome
            if not ok:
                raise value
            return value
        return self.future.result(timeout=timeout)

    def _batch(self, lo, hi):
        c = self.client
        req = _join(self.frames[lo:hi])
        call = self._begin(lambda: c._score_batch_call(req, timeout=self._remaining("ScoreBatch")))
        try:
            res = next(call, None)
            if res is None or next(call, None) is not None:
                raise MeshError(f"{c.target}: ScoreBatch answered {'no' if res is None else 'more than one'} response")
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.UNIMPLEMENTED:
                c._lacks_score_batch()
                return self._stream(lo, hi)
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                over = _too_big(e.details() or "", len(req))
                if over == "request":
                    # Refused before it was scored (the service's, or this client's, message limit):
                    # halves, down to one rollout, which goes over ScoreStream (whose error names its size).
                    if hi - lo > 1:
                        mid = (lo + hi) // 2
                        return self._batch(lo, mid) + self._batch(mid, hi)
                    return self._stream(lo, hi)
                if over == "response":
                    # Already scored, but the answer is over a limit (long details): once over ScoreStream,
                    # one result a message, which cannot be over it again for the same reason.
                    return self._stream(lo, hi)
                # Anything else (a busy server, a proxy's quota) is not retried: more calls add load.
            raise rpc_error(c.target, "ScoreBatch", e) from None
        c.has_score_batch = True
        got = list(res.results)
        if len(got) != hi - lo:
            raise MeshError(f"{c.target}: ScoreBatch returned {len(got)} results for {hi - lo} rollouts")
        for e in res.errors:
            if e.index >= len(got):
                raise MeshError(f"{c.target}: ScoreBatch error for request {e.index} of {len(got)}")
            got[e.index] = status_error(c.target, "ScoreBatch", e.code,
                                        f"{e.message} (rollout {self.rollouts[lo + e.index].id!r})")
        return got

    def _stream(self, lo, hi):
        c = self.client
        requests = [reward_service_pb2.ScoreRequest(rollout=r) for r in self.rollouts[lo:hi]]
        call = self._begin(lambda: c._stub.ScoreStream(iter(requests), timeout=self._remaining("ScoreStream")))
        return c._call("ScoreStream", lambda: list(call))


class _Started:
    """A batch of one service in flight: its parts, in order."""

    def __init__(self, client, rollouts, parts, deadline):
        self.client = client
        self.rollouts = rollouts
        self.parts = parts
        self.deadline = deadline

    def cancel(self):
        for p in self.parts:
            p.cancel()


def _collect(started):
    """The results of `_start`ed batches (a list), each in order, parts joined. The part run in the
    caller's thread runs first (the others are already in flight on the pool), then the pool's are
    waited for; the first failure, wherever it happens, is raised at once and cancels every other part
    (their RPCs too, so the services stop scoring them)."""
    parts = [p for s in started for p in s.parts]
    inline = [p for p in parts if p.future is None and p.outcome is None]
    pending = [p.future for p in parts if p.future is not None]
    failed = []

    def on_done(f):
        # In a pool thread: a failed part stops the one running in the caller's thread.
        if not f.cancelled() and f.exception() is not None:
            failed.append(f)
            for p in inline:
                p.cancel()

    ok = False
    try:
        if inline:
            for f in pending:
                f.add_done_callback(on_done)
        for p in inline:
            p.run_inline()
        if failed:
            raise failed[0].exception()
        for p in parts:
            if p.outcome is not None and not p.outcome[0]:
                raise p.outcome[1]
        if pending:
            limit = max(s.deadline for s in started) + _WAIT_MARGIN - time.monotonic()
            done, not_done = wait_futures(pending, timeout=max(0.0, limit), return_when=FIRST_EXCEPTION)
            for f in done:
                if not f.cancelled() and f.exception() is not None:
                    raise f.exception()
            if not_done:
                s = next(s for s in started for p in s.parts if p.future in not_done)
                raise MeshTimeoutError(s.client.target, "ScoreBatch", grpc.StatusCode.DEADLINE_EXCEEDED,
                                       f"no answer {_WAIT_MARGIN:g} s past the deadline")
        out = [[r for p in s.parts for r in p.results(0)] for s in started]
        ok = True
        return out
    finally:
        if not ok:
            for s in started:
                s.cancel()


class RewardClient:
    """A client of one `rewardmesh.v1.RewardService`.

        with RewardClient("127.0.0.1:50061") as c:
            print(c.describe().components)
            result = c.score(rollout(custom_task(), "hello"))
            results = c.score_batch([rollout(custom_task(), "hi"), rollout(custom_task(), "hey")])

    Batches go over `ScoreBatch` (one unary call per 1024 rollouts or MAX_BATCH_BYTES of them, the calls
    in parallel); a service that answers it UNIMPLEMENTED (one written against an older contract) is
    scored over `ScoreStream` for the next SCORE_BATCH_RETRY_AFTER (60) seconds, then ScoreBatch is
    tried again.
    """

    def __init__(self, address, *, timeout=DEFAULT_TIMEOUT, credentials=None, name=None):
        self.address = address
        self.timeout = _client_timeout(timeout)
        self._name = name
        # SingleThreadedUnaryStream: a unary-stream call runs in the calling thread (as a blocking unary
        # call does) yet can be cancelled from another; RewardService has no unary-stream method of its own.
        self._channel = _channel(address, credentials, [(grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)])
        self._stub = reward_service_pb2_grpc.RewardServiceStub(self._channel)
        # ScoreBatch with the request already serialized (score_batch_request_bytes), called as a
        # unary-stream method (the same bytes on the wire: one request, one response): a blocking unary call
        # cannot be cancelled, and `.future()` costs a channel thread and about 8 µs of client CPU per
        # rollout on the TRL path (a thread handoff per call).
        self._score_batch_call = self._channel.unary_stream(
            "/rewardmesh.v1.RewardService/ScoreBatch", request_serializer=None,
            response_deserializer=reward_service_pb2.ScoreBatchResponse.FromString)
        self._info = None
        # Whether the service has ScoreBatch: None until a call says, False once it answered UNIMPLEMENTED
        # (for SCORE_BATCH_RETRY_AFTER seconds from `_lacked_at`).
        self.has_score_batch = None
        self._lacked_at = 0.0

    @property
    def target(self):
        return f"reward service {self._name!r} at {self.address}" if self._name else f"reward service at {self.address}"

    def _call(self, method, fn):
        try:
            return fn()
        except grpc.RpcError as e:
            raise rpc_error(self.target, method, e) from None

    def _lacks_score_batch(self):
        self._lacked_at = time.monotonic()
        self.has_score_batch = False

    def _streams_only(self):
        return self.has_score_batch is False and time.monotonic() - self._lacked_at < SCORE_BATCH_RETRY_AFTER

    def describe(self, timeout=None):
        """The service's DescribeResponse (name, version, domains, components); cached after the first call."""
        if self._info is None:
            seconds = _time_left(self.target, "Describe", _deadline(timeout, self.timeout))
            self._info = self._call("Describe", lambda: self._stub.Describe(
                reward_service_pb2.DescribeRequest(), timeout=seconds))
            self._name = self._name or self._info.name
        return self._info

    def score(self, rollout, timeout=None):
        """The RewardResult of one rollout (`Score`)."""
        if type(rollout) is not _ROLLOUT:
            _check_rollouts([rollout], "rollout")
        seconds = _time_left(self.target, "Score", _deadline(timeout, self.timeout))
        return self._call("Score", lambda: self._stub.Score(
            reward_service_pb2.ScoreRequest(rollout=rollout), timeout=seconds))

    def score_stream(self, rollouts, timeout=None):
        """The RewardResults of `rollouts`, in order, over one `ScoreStream` call (the deadline covers the
        whole stream)."""
        rollouts = list(rollouts)
        if not rollouts:
            return []
        _check_rollouts(rollouts)
        requests = [reward_service_pb2.ScoreRequest(rollout=r) for r in rollouts]
        seconds = _time_left(self.target, "ScoreStream", _deadline(timeout, self.timeout))
        results = self._call("ScoreStream", lambda: list(self._stub.ScoreStream(iter(requests), timeout=seconds)))
        if len(results) != len(rollouts):
            raise MeshError(f"{self.target}: ScoreStream returned {len(results)} results for {len(rollouts)} rollouts")
        for i, (r, res) in enumerate(zip(rollouts, results)):
            if res.rollout_id != r.id:
                raise MeshError(f"{self.target}: ScoreStream result {i} is for rollout {res.rollout_id!r}, expected {r.id!r}")
        return results

    def score_batch(self, rollouts, timeout=None, *, return_errors=False):
        """The RewardResults of `rollouts`, in order, over `ScoreBatch` (one call per 1024 rollouts or
        MAX_BATCH_BYTES of them, the calls in parallel; the deadline covers the whole batch). A rollout the
        service refuses (or fails on) raises its MeshRpcError (`ScoreBatch failed: INVALID_ARGUMENT:
        'requests[<i>].rollout.<field>' ... (rollout '<id>')`), unless `return_errors`: then its entry is
        that MeshRpcError and the others are results. A service without ScoreBatch (UNIMPLEMENTED) is
        scored over `ScoreStream`, where the first refused rollout fails the call (raised, whatever
        `return_errors`). The first failed call cancels the others (on the service too)."""
        rollouts = list(rollouts)
        if not rollouts:
            return []
        _check_rollouts(rollouts)
        out = self._finish(self._start(rollouts, timeout, inline=True))
        if not return_errors:
            for r in out:
                if isinstance(r, MeshError):
                    raise r
        return out

    def _start(self, rollouts, timeout=None, inline=False):
        """Starts scoring `rollouts` (a list of Rollouts): ScoreBatch calls of at most MAX_BATCH rollouts
        and MAX_BATCH_BYTES, on the pool's threads (the last one, with `inline`, in the caller's thread
        when `_collect` runs it, before it waits for the others); for a service known to lack ScoreBatch
        one ScoreStream call. When the service is not yet known to have ScoreBatch and there are several
        calls, the first is sent (and answered) before the others, so that an older service is not asked
        — and a mixed set behind one address does not score — the batch twice. Nothing is shared between
        calls, so calls from several threads run concurrently."""
        deadline = time.monotonic() + _deadline(timeout, self.timeout)
        n = len(rollouts)
        if self._streams_only():
            parts = [_Part(self, rollouts, None, 0, n, deadline, stream=True)]
        else:
            frames = _frames(rollouts)
            ranges = _split(frames)
            parts = []
            if len(ranges) > 1 and self.has_score_batch is not True:
                probe = _Part(self, rollouts, frames, *ranges[0], deadline, stream=False)
                probe.run_inline()
                if not probe.outcome[0]:
                    raise probe.outcome[1]
                parts.append(probe)
                if self.has_score_batch is False:
                    ranges = [(ranges[1][0], n)]
                else:
                    ranges = ranges[1:]
            stream = self._streams_only()
            parts += [_Part(self, rollouts, frames, lo, hi, deadline, stream=stream) for lo, hi in ranges]
        try:
            for p in parts[:-1] if inline else parts:
                if p.outcome is None:
                    p.future = _pool().submit(p.run)
        except BaseException:
            for p in parts:
                p.cancel()
            raise
        return _Started(self, rollouts, parts, deadline)

    def _finish(self, started):
        """The results of a `_start`ed call, in order; an entry the service refused is its MeshRpcError
        (ScoreBatch only)."""
        return self._check(started, _collect([started])[0])

    def _check(self, started, results):
        rollouts = started.rollouts
        method = "ScoreBatch" if self.has_score_batch else "ScoreStream"
        if len(results) != len(rollouts):
            raise MeshError(f"{self.target}: {method} returned {len(results)} results for {len(rollouts)} rollouts")
        for i, (r, res) in enumerate(zip(rollouts, results)):
            if not isinstance(res, MeshError) and res.rollout_id != r.id:
                raise MeshError(f"{self.target}: {method} result {i} is for rollout {res.rollout_id!r}, expected {r.id!r}")
        return results

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_domain_keys(service_domains, clients):
    """Refuses a `services:` entry for a service the mesh does not have (a typo would otherwise be
    silently ignored, and the service would keep scoring its Describe's domains)."""
    for name in service_domains:
        if name not in clients:
            raise InvalidInputError(f"'services.{name}': the mesh has no service {name!r} "
                                    f"(it has {', '.join(sorted(clients))})")


_KNOWN_STATUSES = {OK, NOT_APPLICABLE, reward_pb2.COMPONENT_STATUS_ERROR, reward_pb2.COMPONENT_STATUS_TIMEOUT}
_MINIMUM_STATUSES = {reward_pb2.COMPONENT_STATUS_ERROR, reward_pb2.COMPONENT_STATUS_TIMEOUT}


def _fill_row(row, service, res, keys, ranges, i):
    """Checks one service's result against its Describe as the trainer does (trainer/src/run/
    validation.ts checkComponents): every component once, a known status, a finite value within
    [min, max], the minimum for ERROR/TIMEOUT; raises MeshError naming the service, component and rollout.
    Then sets its components in `row` (`keys`: component -> "<service>/<component>"; None where not
    applicable). `ranges`: {component: (min, max)} of the service's Describe."""
    names = []
    for c in res.components:
        name = c.name
        v = c.value
        st = c.status
        r = ranges.get(name)
        # `lo <= v <= hi` is False for NaN; the precise message comes from _result_error.
        if r is None or st not in _KNOWN_STATUSES or not r[0] <= v <= r[1] or (st in _MINIMUM_STATUSES and v != r[0]):
            _result_error(service, res, ranges, i)
        row[keys[name]] = None if st == NOT_APPLICABLE else c
        names.append(name)
    if len(names) != len(ranges) or len(set(names)) != len(names):
        _result_error(service, res, ranges, i)


def _result_error(service, res, ranges, i):
    """Raises the MeshError for a result that _fill_row refused, naming what is wrong."""
    where = f"service {service!r}, rollout {res.rollout_id!r} (rollouts[{i}])"
    seen = set()
    for c in res.components:
        if c.name not in ranges:
            raise MeshError(f"{where}: component {c.name!r} is not in its Describe ({', '.join(ranges)})")
        if c.name in seen:
            raise MeshError(f"{where}: component {c.name!r} appears twice")
        seen.add(c.name)
        lo, hi = ranges[c.name]
        if c.status not in _KNOWN_STATUSES:
            raise MeshError(f"{where}: component {c.name!r} has unknown status {c.status}")
        if not math.isfinite(c.value):
            raise MeshError(f"{where}: component {c.name!r} = {c.value} is not finite")
        if c.value < lo or c.value > hi:
            raise MeshError(f"{where}: component {c.name!r} = {c.value} is outside [{lo}, {hi}]")
        if c.status in _MINIMUM_STATUSES and c.value != lo:
            raise MeshError(f"{where}: component {c.name!r} = {c.value} with status "
                            f"{reward_pb2.ComponentStatus.Name(c.status)}; the minimum is {lo}")
    for name in ranges:
        if name not in seen:
            raise MeshError(f"{where}: component {name!r} is missing from the result")
    raise MeshError(f"{where}: the result does not match its Describe")


class Mesh:
    """Several reward services scored together: every rollout goes to each service that scores its
    domain (one `ScoreBatch` call per service per batch of up to 1024, the services in parallel;
    `ScoreStream` for a service without ScoreBatch); a component of a service that does not score the
    rollout's domain is not applicable, as in the trainer.

        mesh = Mesh({"length": "127.0.0.1:50061", "math": "127.0.0.1:50062"})
        rows = mesh.score([rollout(...), ...])   # [{"math/correct": ComponentReward | None, ...}, ...]

    `service_domains` adds or replaces the domains a service scores (the run's `services:` key);
    otherwise each service's Describe says.
    """

    def __init__(self, services, *, timeout=DEFAULT_TIMEOUT, service_domains=None, credentials=None):
        if isinstance(services, (list, tuple)):
            services = {f"#{i}": a for i, a in enumerate(services)}
        if not isinstance(services, dict) or not services:
            raise InvalidInputError("'services' must be a non-empty {name: host:port} dict or list of addresses")
        self.timeout = _client_timeout(timeout)
        self.clients = {}
        opened = []
        try:
            for key, address in services.items():
                c = RewardClient(address, timeout=timeout, credentials=credentials, name=None if key.startswith("#") else key)
                opened.append(c)
                info = c.describe()
                if not key.startswith("#") and info.name != key:
                    raise MeshError(f"the service at {address} is {info.name!r}, not {key!r}")
                if info.name in self.clients:
                    raise MeshError(f"two addresses serve {info.name!r}")
                self.clients[info.name] = c
            overrides = service_domains or {}
            _check_domain_keys(overrides, self.clients)
        except BaseException:
            for c in opened:  # no channel outlives a Mesh that was not built
                c.close()
            raise
        self.domains = {n: set(overrides.get(n, c.describe().domains)) for n, c in self.clients.items()}
        self._keys = {n: {s.name: f"{n}/{s.name}" for s in c.describe().components} for n, c in self.clients.items()}
        self._ranges = {n: {s.name: (s.min, s.max) for s in c.describe().components} for n, c in self.clients.items()}
        self.components = [k for keys in self._keys.values() for k in keys.values()]

    @classmethod
    def from_env(cls, environ=None, **kwargs):
        """The mesh named by `REWARD_MESH_SERVICES` (`name=host:port,...`), with `REWARD_MESH_TIMEOUT`."""
        s = from_env(environ)
        if "services" not in s:
            raise InvalidInputError("REWARD_MESH_SERVICES is not set: name=host:port,... (e.g. math=127.0.0.1:50067)")
        return cls(s["services"], timeout=s.get("timeout", DEFAULT_TIMEOUT), **kwargs)

    def with_domains(self, service_domains):
        """This mesh (the same connections) with the domains of some services replaced, as a run's
        `services:` key does."""
        _check_domain_keys(service_domains, self.clients)
        m = copy.copy(self)
        m.domains = {n: set(service_domains.get(n, d)) for n, d in self.domains.items()}
        return m

    def check_components(self, names):
        """Raises naming the first of `names` (`service/component`) that no service of the mesh emits."""
        known = set(self.components)
        for n in names:
            if n not in known:
                service = n.split("/", 1)[0]
                where = (f"{service} emits {', '.join(c for c in self.components if c.startswith(service + '/'))}"
                         if service in self.clients else f"the mesh has {', '.join(sorted(self.clients)) or 'no services'}")
                raise InvalidInputError(f"component {n!r} is not in the mesh ({where})")

    def score(self, rollouts, timeout=None):
        """Per rollout, `{"<service>/<component>": ComponentReward, or None where not applicable}`, over
        every component of the mesh. `rollouts`: a list or any iterable of Rollouts. A rollout a service
        refuses raises its MeshRpcError (naming the service, the field and the rollout's id)."""
        sent = list(rollouts)
        _check_rollouts(sent)
        picked = {name: [] for name in self.clients}  # service -> the indices of its rollouts
        for i, r in enumerate(sent):
            domain = domain_of(r.task)
            for name in self.clients:
                if domain in self.domains[name]:
                    picked[name].append(i)
        started = {}
        done = False
        busy = [name for name, idx in picked.items() if idx]
        try:
            for name in busy:
                # The last service's (last) call runs in this thread, once every other call is in flight:
                # one thread handoff fewer per batch.
                started[name] = self.clients[name]._start([sent[i] for i in picked[name]],
                                                          timeout if timeout is not None else self.timeout,
                                                          inline=name == busy[-1])
            # Every call is in flight at once: the batch takes as long as the slowest service.
            results = _collect(list(started.values()))
            collected = {name: self.clients[name]._check(call, res)
                         for (name, call), res in zip(started.items(), results)}
            done = True
        finally:
            if not done:
                for call in started.values():
                    call.cancel()
        rows = [dict.fromkeys(self.components) for _ in sent]
        for name, results in collected.items():
            keys = self._keys[name]
            ranges = self._ranges[name]
            for i, res in zip(picked[name], results):
                if isinstance(res, MeshError):
                    raise res
                _fill_row(rows[i], name, res, keys, ranges, i)
        return rows

    def close(self):
        for c in self.clients.values():
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def weighted(row, components, weights):
    """The weighted total of one scored row (`Mesh.score`); not-applicable components count as 0, as in
    the trainer."""
    total = 0.0
    for name, w in zip(components, weights):
        c = row.get(name)
        if c is not None:
            total += w * c.value
    return total


def _rollout_input(g, i, r):
    where = f"groups[{g}].rollouts[{i}]"
    out = trainer_pb2.AdvantageRolloutInput()
    if isinstance(r, dict):
        out.rollout_id = str(r.get("rollout_id", ""))
        values = r.get("values")
        if r.get("length") is not None:
            out.length = float(r["length"])
        na = list(r.get("not_applicable", []))
    else:
        values, na = r, []
    if not isinstance(values, (list, tuple)):
        raise InvalidInputError(f"'{where}' must be a list of component values (None = not applicable) or a dict with 'values'")
    flags = []
    for k, v in enumerate(values):
        missing = v is None
        if not missing and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise InvalidInputError(f"'{where}.values[{k}]' must be a number or None, got {v!r}")
        flags.append(missing or (k < len(na) and bool(na[k])))
        out.values.append(0.0 if missing else float(v))
    if any(flags):
        out.not_applicable.extend(flags)
    return out


def _component_ref(msg, value, where):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInputError(f"'{where}' must be a component name or index, got {value!r}")
    if isinstance(value, str):
        msg.component_name = value
    else:
        msg.component_index = value


def advantages_request(groups, *, estimator="grpo_covariance_coefficient", components=(), weights=(),
                       options=None, sgrpo=None, dynamic_sampling=None, diagnostics=False):
    """A ComputeAdvantagesRequest. `groups`: a list of groups; a group is a list of rollouts (or
    `{"group_id", "rollouts"}`); a rollout is its K component values, None where not applicable (or
    `{"values", "not_applicable"?, "rollout_id"?, "length"?}`). `options`: the estimator's options
    (`{"std_mode": "population"}` or camelCase); `sgrpo`: `{"p", "variant"?, "epsilon"?,
    "success_threshold"?, "component"?}` (run-config spelling accepted); `dynamic_sampling`: True or
    `{"component"?}`."""
    req = trainer_pb2.ComputeAdvantagesRequest(estimator=estimator, diagnostics=bool(diagnostics))
    req.components.extend(components)
    req.weights.extend(float(w) for w in weights)
    if options:
        try:
            json_format.ParseDict(options, req.options)
        except json_format.ParseError as e:
            raise InvalidInputError(f"'options' is not AdvantageEstimatorOptions: {e}") from None
    for g, group in enumerate(groups):
        gi = req.groups.add()
        rollouts = group
        if isinstance(group, dict):
            gi.group_id = str(group.get("group_id", ""))
            rollouts = group.get("rollouts", [])
        for i, r in enumerate(rollouts):
            gi.rollouts.append(_rollout_input(g, i, r))
    if sgrpo:
        s = req.sgrpo
        s.p = float(sgrpo["p"])
        if sgrpo.get("variant") is not None:
            s.variant = sgrpo["variant"]
        if sgrpo.get("epsilon") is not None:
            s.epsilon = float(sgrpo["epsilon"])
        threshold = sgrpo.get("success_threshold", sgrpo.get("successThreshold"))
        if threshold is not None:
            s.success_threshold = float(threshold)
        _component_ref(s, sgrpo.get("component"), "sgrpo.component")
    if dynamic_sampling is not None and dynamic_sampling is not False:
        req.dynamic_sampling.SetInParent()
        if isinstance(dynamic_sampling, dict):
            _component_ref(req.dynamic_sampling, dynamic_sampling.get("component"), "dynamic_sampling.component")
    return req


class AdvantagesClient:
    """A client of the trainer's advantage engine (`rewardmesh.v1.Trainer/ComputeAdvantages`): the same
    estimators, options and numbers as `reward-mesh advantages`.

        with AdvantagesClient("127.0.0.1:50070") as a:
            res = a.compute([[[1, 0], [0, 1], [1, 1]]], estimator="corr_grpo", weights=[1, 0.5])
            res.groups[0].advantages
    """

    def __init__(self, address, *, timeout=DEFAULT_TIMEOUT, credentials=None):
        self.address = address
        self.timeout = _client_timeout(timeout)
        self._channel = _channel(address, credentials)
        self._stub = trainer_pb2_grpc.TrainerStub(self._channel)

    @classmethod
    def from_env(cls, environ=None, **kwargs):
        """The trainer at `REWARD_MESH_TRAINER` (host:port), with `REWARD_MESH_TIMEOUT`."""
        s = from_env(environ)
        if "trainer" not in s:
            raise InvalidInputError("REWARD_MESH_TRAINER is not set: host:port of the trainer (reward-mesh advantages serve)")
        return cls(s["trainer"], timeout=s.get("timeout", DEFAULT_TIMEOUT), **kwargs)

    def compute(self, groups, *, timeout=None, **kwargs):
        """The ComputeAdvantagesResponse for `groups` (see `advantages_request` for the arguments), or a
        ready ComputeAdvantagesRequest."""
        req = groups if isinstance(groups, trainer_pb2.ComputeAdvantagesRequest) else advantages_request(groups, **kwargs)
        target = f"trainer at {self.address}"
        seconds = _time_left(target, "ComputeAdvantages", _deadline(timeout, self.timeout))
        try:
            return self._stub.ComputeAdvantages(req, timeout=seconds)
        except grpc.RpcError as e:
            raise rpc_error(target, "ComputeAdvantages", e) from None

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
