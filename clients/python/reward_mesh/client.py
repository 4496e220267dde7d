"""gRPC clients: one reward service (`RewardClient`), a set of them scored together (`Mesh`), and the
trainer's advantage engine (`AdvantagesClient`, `Trainer.ComputeAdvantages`).

Every call has a deadline (the client's `timeout`, or the call's); failures raise MeshRpcError
subclasses naming the service, its address and the method.
"""

import copy
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.protobuf import json_format

from ._proto import reward_pb2, reward_service_pb2, reward_service_pb2_grpc, trainer_pb2, trainer_pb2_grpc
from .builder import domain_of
from .config import from_env
from .errors import InvalidInputError, MeshError, rpc_error, status_error

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


_POOL = None
_POOL_LOCK = threading.Lock()


def _pool():
    """The threads that run the blocking ScoreBatch calls a batch does not run in the caller's thread
    (one per service but one): kept between batches. grpcio's `.future()` would start a channel thread
    per call instead, and costs more CPU per call."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="reward-mesh-rpc")
        return _POOL


class _Inline:
    """A blocking call run in the caller's thread when its result is asked for (the last call of a batch)."""

    def __init__(self, fn, *args, **kwargs):
        self._call = (fn, args, kwargs)

    def result(self):
        fn, args, kwargs = self._call
        return fn(*args, **kwargs)

    def cancel(self):
        return False


def _varint(n):
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def score_batch_request_bytes(rollouts):
    """The wire bytes of `ScoreBatchRequest{requests: [ScoreRequest{rollout: r} for r in rollouts]}`,
    framed from each rollout's own serialization: the same bytes protobuf writes (both fields are field 1,
    length-delimited), without copying every rollout into a request message first (the copy and the
    request's serialization cost more than the Rollouts' serialization on the TRL hot path)."""
    out = []
    for r in rollouts:
        b = r.SerializeToString()
        n = len(b)
        head = b"\n" + _varint(n)  # ScoreRequest.rollout: field 1, wire type 2
        out.append(b"\n" + _varint(len(head) + n))  # ScoreBatchRequest.requests: field 1, wire type 2
        out.append(head)
        out.append(b)
    return b"".join(out)


def _deadline(timeout, default):
    """The call's timeout, or the client's when the call gives none (0 is a timeout, not "none")."""
    return default if timeout is None else timeout


def _channel(address, credentials):
    if not isinstance(address, str) or ":" not in address:
        raise InvalidInputError(f"the address must be host:port, got {address!r}")
    if credentials is None:
        return grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
    return grpc.secure_channel(address, credentials, options=_CHANNEL_OPTIONS)


class RewardClient:
    """A client of one `rewardmesh.v1.RewardService`.

        with RewardClient("127.0.0.1:50061") as c:
            print(c.describe().components)
            result = c.score(rollout(custom_task(), "hello"))
            results = c.score_batch([rollout(custom_task(), "hi"), rollout(custom_task(), "hey")])

    Batches go over `ScoreBatch` (one unary call per 1024 rollouts); a service that answers it
    UNIMPLEMENTED (one written against an older contract) is scored over `ScoreStream` from then on.
    """

    def __init__(self, address, *, timeout=DEFAULT_TIMEOUT, credentials=None, name=None):
        self.address = address
        self.timeout = timeout
        self._name = name
        self._channel = _channel(address, credentials)
        self._stub = reward_service_pb2_grpc.RewardServiceStub(self._channel)
        # ScoreBatch with the request already serialized (score_batch_request_bytes).
        self._score_batch_bytes = self._channel.unary_unary(
            "/rewardmesh.v1.RewardService/ScoreBatch", request_serializer=None,
            response_deserializer=reward_service_pb2.ScoreBatchResponse.FromString)
        self._info = None
        # Whether the service has ScoreBatch: None until a call says, False once it answered UNIMPLEMENTED.
        self.has_score_batch = None

    @property
    def target(self):
        return f"reward service {self._name!r} at {self.address}" if self._name else f"reward service at {self.address}"

    def _call(self, method, fn):
        try:
            return fn()
        except grpc.RpcError as e:
            raise rpc_error(self.target, method, e) from None

    def describe(self, timeout=None):
        """The service's DescribeResponse (name, version, domains, components); cached after the first call."""
        if self._info is None:
            self._info = self._call("Describe", lambda: self._stub.Describe(
                reward_service_pb2.DescribeRequest(), timeout=_deadline(timeout, self.timeout)))
            self._name = self._name or self._info.name
        return self._info

    def score(self, rollout, timeout=None):
        """The RewardResult of one rollout (`Score`)."""
        return self._call("Score", lambda: self._stub.Score(
            reward_service_pb2.ScoreRequest(rollout=rollout), timeout=_deadline(timeout, self.timeout)))

    def score_stream(self, rollouts, timeout=None):
        """The RewardResults of `rollouts`, in order, over one `ScoreStream` call (the deadline covers the
        whole stream)."""
        rollouts = list(rollouts)
        if not rollouts:
            return []
        requests = [reward_service_pb2.ScoreRequest(rollout=r) for r in rollouts]
        results = self._call("ScoreStream", lambda: list(self._stub.ScoreStream(iter(requests), timeout=_deadline(timeout, self.timeout))))
        if len(results) != len(rollouts):
            raise MeshError(f"{self.target}: ScoreStream returned {len(results)} results for {len(rollouts)} rollouts")
        for i, (r, res) in enumerate(zip(rollouts, results)):
            if res.rollout_id != r.id:
                raise MeshError(f"{self.target}: ScoreStream result {i} is for rollout {res.rollout_id!r}, expected {r.id!r}")
        return results

    def score_batch(self, rollouts, timeout=None, *, return_errors=False):
        """The RewardResults of `rollouts`, in order, over `ScoreBatch` (one call per 1024 rollouts, the
        calls in parallel; the deadline covers each). A rollout the service refuses (or fails on) raises its
        MeshRpcError (`ScoreBatch failed: INVALID_ARGUMENT: 'requests[<i>].rollout.<field>' ... (rollout
        '<id>')`), unless `return_errors`: then its entry is that MeshRpcError and the others are results.
        A service without ScoreBatch (UNIMPLEMENTED) is scored over `ScoreStream`, where the first refused
        rollout fails the call (raised, whatever `return_errors`)."""
        rollouts = list(rollouts)
        if not rollouts:
            return []
        out = self._finish(self._start(rollouts, timeout, inline=True))
        if not return_errors:
            for r in out:
                if isinstance(r, MeshError):
                    raise r
        return out

    def _start(self, rollouts, timeout=None, inline=False):
        """Starts scoring `rollouts` (a list): blocking ScoreBatch calls, one per MAX_BATCH, on the pool's
        threads (the last one, with `inline`, in the caller's thread when `_finish` asks for it), or for a
        service known to lack ScoreBatch a ScoreStream call; `_finish` collects. Nothing is shared between
        calls, so calls from several threads run concurrently."""
        t = _deadline(timeout, self.timeout)
        if self.has_score_batch is False:
            requests = [reward_service_pb2.ScoreRequest(rollout=r) for r in rollouts]
            return ("ScoreStream", rollouts, t, self._call("ScoreStream", lambda: self._stub.ScoreStream(iter(requests), timeout=t)))
        calls = []
        starts = range(0, len(rollouts), MAX_BATCH)
        for s in starts:
            req = score_batch_request_bytes(rollouts[s:s + MAX_BATCH])
            if inline and s == starts[-1]:
                calls.append(_Inline(self._score_batch_bytes, req, timeout=t))
            else:
                calls.append(_pool().submit(self._score_batch_bytes, req, timeout=t))
        return ("ScoreBatch", rollouts, t, calls)

    @staticmethod
    def _cancel(started):
        method, _, _, calls = started
        for c in calls if method == "ScoreBatch" else [calls]:
            c.cancel()

    def _finish(self, started):
        """The results of a `_start`ed call, in order; an entry the service refused is its MeshRpcError
        (ScoreBatch only). Falls back to ScoreStream when the service answers ScoreBatch UNIMPLEMENTED."""
        method, rollouts, t, calls = started
        if method == "ScoreStream":
            results = self._call("ScoreStream", lambda: list(calls))
        else:
            results = []
            try:
                for c in calls:
                    res = c.result()
                    base = len(results)
                    got = list(res.results)
                    for e in res.errors:
                        if e.index >= len(got):
                            raise MeshError(f"{self.target}: ScoreBatch error for request {e.index} of {len(got)}")
                        got[e.index] = status_error(self.target, "ScoreBatch", e.code,
                                                    f"{e.message} (rollout {rollouts[base + e.index].id!r})")
                    results.extend(got)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                    self._cancel(started)
                    raise rpc_error(self.target, "ScoreBatch", e) from None
                self._cancel(started)
                self.has_score_batch = False
                method = "ScoreStream"
                requests = [reward_service_pb2.ScoreRequest(rollout=r) for r in rollouts]
                results = self._call("ScoreStream", lambda: list(self._stub.ScoreStream(iter(requests), timeout=t)))
            else:
                self.has_score_batch = True
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
        self.timeout = timeout
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
                # The last service's (last) call runs in this thread: one thread handoff fewer per batch.
                started[name] = self.clients[name]._start([sent[i] for i in picked[name]],
                                                          timeout if timeout is not None else self.timeout,
                                                          inline=name == busy[-1])
            # Every call is in flight: collecting them one after the other takes as long as the slowest.
            collected = {name: self.clients[name]._finish(call) for name, call in started.items()}
            done = True
        finally:
            if not done:
                for name, call in started.items():
                    self.clients[name]._cancel(call)
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
        self.timeout = timeout
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
        try:
            return self._stub.ComputeAdvantages(req, timeout=_deadline(timeout, self.timeout))
        except grpc.RpcError as e:
            raise rpc_error(f"trainer at {self.address}", "ComputeAdvantages", e) from None

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
