"""The gRPC server: `rewardmesh.v1.Learner` over a `TorchLearner`, plus `grpc.health.v1.Health`.

Every learner call is serialised by one lock (a TrainStep stream is read in full before the lock is
taken). Bad input → INVALID_ARGUMENT with `'<field>' <problem>` (the TypeScript client parses the
field back); a checkpoint failure → INTERNAL with its message; anything unexpected → INTERNAL with a
short message, the traceback going to stderr. The TrainStep stream protocol and its wording are those
of `trainer/src/learner/server.ts`.
"""

import re
import sys
import threading
import traceback
from concurrent import futures
from typing import Callable, Optional

import grpc

from . import wire
from .errors import CheckpointError, LearnerInputError
from .proto import LEARNER_SERVICE_NAME, health_pb2, health_pb2_grpc, learner_pb2, learner_pb2_grpc
from .security import BearerTokenInterceptor, ServerSecurity, check_bind, server_credentials

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def trace_id_of(context) -> Optional[str]:
    """The trace id of the call's W3C `traceparent` metadata, or None (absent, malformed, all zeros)."""
    try:
        metadata = context.invocation_metadata() or ()
    except Exception:  # noqa: BLE001 — a context without metadata (direct calls in tests)
        return None
    for key, value in metadata:
        if key == "traceparent":
            m = _TRACEPARENT.match(value.strip().lower() if isinstance(value, str) else "")
            if m and m.group(1) != "0" * 32:
                return m.group(1)
    return None

#: Largest message sent or received (a Generate response holds every completion).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def read_train_step_stream(request_iterator):
    """The header and decoded samples of a TrainStep stream; a malformed stream is a LearnerInputError."""
    header = None
    samples = []
    for msg in request_iterator:
        kind = msg.WhichOneof("kind")
        if kind == "header":
            if header is not None:
                raise LearnerInputError("header", "was sent twice; send it once, first")
            header = msg.header
        elif kind == "sample":
            if header is None:
                raise LearnerInputError("header", "must be the first message of the stream")
            if len(samples) >= header.sample_count:
                raise LearnerInputError("samples", f"has more than header.sampleCount = {header.sample_count} samples")
            samples.append(wire.decode_sample(msg.sample))
        else:
            raise LearnerInputError(f"messages[{len(samples) + (1 if header is not None else 0)}]", "is empty")
    if header is None:
        raise LearnerInputError("header", "is missing (the stream was empty)")
    if len(samples) != header.sample_count:
        raise LearnerInputError(
            "samples", f"has {len(samples)} samples but header.sampleCount is {header.sample_count} (stream cut short?)"
        )
    return header, samples


class LearnerServicer(learner_pb2_grpc.LearnerServicer):
    """The Learner service over one learner; calls are serialised by `lock`."""

    def __init__(self, learner, lock: Optional[threading.Lock] = None):
        self.learner = learner
        self.lock = lock or threading.Lock()
        self.last_trace_id = {}

    def _run(self, method: str, context, fn: Callable):
        # W3C trace context from the trainer (gRPC metadata). There is no OpenTelemetry SDK for Python in
        # Debian, so the learner records it rather than exporting spans: the trace id goes into its log
        # lines (a failure names the trace of the step that hit it) and `last_trace_id[method]`.
        trace_id = trace_id_of(context)
        if trace_id:
            self.last_trace_id[method] = trace_id
        try:
            with self.lock:
                return fn()
        except LearnerInputError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except CheckpointError as e:
            context.abort(grpc.StatusCode.INTERNAL, str(e))
        except Exception as e:  # noqa: BLE001 — anything else is an INTERNAL error, logged
            where = f" (trace {trace_id})" if trace_id else ""
            print(f"torch-learner: {method} failed{where}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            context.abort(grpc.StatusCode.INTERNAL, f"{method} failed: {type(e).__name__}: {str(e)[:300]}")

    def Info(self, request, context):
        return self._run("Info", context, lambda: wire.encode_info(self.learner.info()))

    def Generate(self, request, context):
        def call():
            return wire.encode_completions(self.learner.generate(wire.decode_generate_request(request)))

        return self._run("Generate", context, call)

    def TrainStep(self, request_iterator, context):
        try:
            header, samples = read_train_step_stream(request_iterator)
            req = wire.decode_train_step(header, samples)
        except LearnerInputError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return self._run("TrainStep", context, lambda: wire.encode_train_step_result(self.learner.train_step(req)))

    def SyncWeights(self, request, context):
        return self._run(
            "SyncWeights", context, lambda: learner_pb2.LearnerSyncWeightsResponse(policy_version=self.learner.sync_weights())
        )

    def SaveCheckpoint(self, request, context):
        return self._run(
            "SaveCheckpoint", context, lambda: learner_pb2.LearnerSaveCheckpointResponse(path=self.learner.save_checkpoint(request.path))
        )

    def ComputeLogprobs(self, request, context):
        def call():
            rows = self.learner.compute_logprobs(wire.decode_sequences(request))
            return learner_pb2.LearnerComputeLogprobsResponse(
                sequences=[
                    learner_pb2.LearnerSequenceLogprobs(sequence_id=q.sequence_id, logprobs=lp)
                    for q, lp in zip(request.sequences, rows)
                ]
            )

        return self._run("ComputeLogprobs", context, call)


class HealthServicer(health_pb2_grpc.HealthServicer):
    """`grpc.health.v1.Health` for "" and the learner service: SERVING until `shutdown()`."""

    SERVICES = ("", LEARNER_SERVICE_NAME)

    def __init__(self):
        self._status = _SERVING
        self._changed = threading.Condition()

    def shutdown(self) -> None:
        with self._changed:
            self._status = _NOT_SERVING
            self._changed.notify_all()

    def Check(self, request, context):
        if request.service not in self.SERVICES:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service '{request.service}'")
        return health_pb2.HealthCheckResponse(status=self._status)

    def List(self, request, context):
        return health_pb2.HealthListResponse(
            statuses={s: health_pb2.HealthCheckResponse(status=self._status) for s in self.SERVICES}
        )

    def Watch(self, request, context):
        """Streams the current status, then each change, until the call ends or the server stops."""
        if request.service not in self.SERVICES:
            yield health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
            return
        last = None
        while context.is_active():
            with self._changed:
                status = self._status
                if status == last:
                    self._changed.wait(timeout=1.0)
                    continue
            last = status
            yield health_pb2.HealthCheckResponse(status=status)
            if status == _NOT_SERVING:
                return


def _target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class RunningServer:
    """A started server: `address` (`host:port`), `port`, and `stop(grace)`; with a health-only port,
    `health_port` and `health_address` too (else None)."""

    def __init__(
        self,
        server: grpc.Server,
        health: HealthServicer,
        host: str,
        port: int,
        security: str = "plaintext (loopback only)",
        health_server: Optional[grpc.Server] = None,
        health_port: Optional[int] = None,
    ):
        self.server = server
        self.health = health
        self.port = port
        #: The transport, for logs: "TLS", "mutual TLS, bearer token", ...
        self.security = security
        self.address = _target(host, port)
        self.health_server = health_server
        self.health_port = health_port
        self.health_address = _target(host, health_port) if health_port is not None else None

    def stop(self, grace: float = 5.0) -> None:
        """Marks NOT_SERVING (on both ports), lets calls finish for up to `grace` seconds, then stops."""
        self.health.shutdown()
        done = [self.server.stop(grace)]
        if self.health_server is not None:
            done.append(self.health_server.stop(grace))
        for d in done:
            d.wait()


def _start_health_only(health: HealthServicer, host: str, port: int) -> "tuple[grpc.Server, int]":
    """A second server on `host:port` with only `grpc.health.v1.Health` — the main server's servicer, so
    the same status — in plaintext whatever the host: Kubernetes' gRPC probes cannot speak TLS, and this
    port carries nothing but serving status (the Learner service is UNIMPLEMENTED there)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="learner-health"),
        options=[("grpc.max_receive_message_length", 64 * 1024)],
    )
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    target = _target(host, port)
    try:
        bound = server.add_insecure_port(target)
    except RuntimeError as e:
        raise OSError(f"cannot bind the health port {target}: {e}") from e
    if bound == 0:
        raise OSError(f"cannot bind the health port {target}")
    server.start()
    return server, bound


def serve(
    learner,
    host: str = "127.0.0.1",
    port: int = 0,
    max_workers: int = 8,
    security: Optional[ServerSecurity] = None,
    health_port: Optional[int] = None,
) -> RunningServer:
    """Starts the Learner and Health services on `host:port` (0 = a free port).

    `security` (default: plaintext, loopback only) gives TLS, mutual TLS and the bearer token; plaintext on a
    non-loopback host without `security.insecure` raises `SecurityConfigError` before anything binds.
    `health_port` (0 = a free port; None = none) adds a plaintext port on `host` serving only Health, with
    the same status (for Kubernetes' gRPC probes); it stops with the server.
    """
    security = security or ServerSecurity()
    check_bind(host, security)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="learner-grpc"),
        interceptors=[BearerTokenInterceptor(security.token)] if security.token else None,
        options=[
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    learner_pb2_grpc.add_LearnerServicer_to_server(LearnerServicer(learner), server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    target = _target(host, port)
    try:
        bound = server.add_secure_port(target, server_credentials(security)) if security.tls else server.add_insecure_port(target)
    except RuntimeError as e:
        raise OSError(f"cannot bind {target}: {e}") from e
    if bound == 0:
        raise OSError(f"cannot bind {target}")
    health_server, bound_health = (None, None)
    if health_port is not None:
        health_server, bound_health = _start_health_only(health, host, health_port)
    server.start()
    return RunningServer(server, health, host, bound, security.describe(), health_server, bound_health)
