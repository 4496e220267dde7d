"""A real reward service, in this process, for what the mesh's services do not do on demand: take their
time (`delay`), or break the contract (`result` rewrites each result before it is sent). A gRPC server on
a free port with the package's stubs; `with ScriptedService(...) as s:` serves at `s.address`. Like a
service written against the contract before ScoreBatch, it does not implement ScoreBatch (the generated
servicer answers UNIMPLEMENTED); `calls` lists the methods it was called with."""

import threading
import time
from concurrent import futures

import grpc

from reward_mesh._proto import reward_pb2, reward_service_pb2, reward_service_pb2_grpc

OK = reward_pb2.COMPONENT_STATUS_OK


class ScriptedService(reward_service_pb2_grpc.RewardServiceServicer):
    """`probe`: domain `custom`, components `a` and `b` in [0, 1]; `a` = 1 when the response contains
    "yes", `b` = its code points / 100 capped at 1. `delay`: seconds slept per ScoreStream call."""

    def __init__(self, *, delay=0.0, result=None, workers=32):
        self.delay = delay
        self.result = result
        self.calls = []
        self._server = self._make_server(workers)
        reward_service_pb2_grpc.add_RewardServiceServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"

    def _make_server(self, workers):
        return grpc.server(futures.ThreadPoolExecutor(max_workers=workers))

    def Describe(self, request, context):
        self.calls.append("Describe")
        return reward_service_pb2.DescribeResponse(name="probe", version="1", domains=["custom"], components=[
            reward_pb2.ComponentSpec(name="a", min=0.0, max=1.0),
            reward_pb2.ComponentSpec(name="b", min=0.0, max=1.0),
        ])

    def _score(self, rollout):
        res = reward_pb2.RewardResult(rollout_id=rollout.id, run_id=rollout.run_id, service="probe", components=[
            reward_pb2.ComponentReward(name="a", value=1.0 if "yes" in rollout.response else 0.0, status=OK),
            reward_pb2.ComponentReward(name="b", value=min(1.0, len(rollout.response) / 100), status=OK),
        ])
        return self.result(rollout, res) if self.result else res

    def Score(self, request, context):
        self.calls.append("Score")
        return self._score(request.rollout)

    def ScoreStream(self, request_iterator, context):
        self.calls.append("ScoreStream")
        requests = list(request_iterator)
        time.sleep(self.delay)
        for r in requests:
            yield self._score(r.rollout)

    def __enter__(self):
        self._server.start()
        return self

    def __exit__(self, *exc):
        self._server.stop(None)


class BatchService(ScriptedService):
    """ScriptedService with ScoreBatch, as a current service has it. `delay`: seconds each ScoreBatch
    (and ScoreStream) call takes, spent watching for the client's cancellation (`cancelled` counts the
    calls that saw it); `unimplemented`: ScoreBatch records its call, then answers UNIMPLEMENTED, as a
    service behind the same address that lacks it; `fail`: a ScoreBatch call with a rollout whose response
    contains "fail" (every call, with `fail`) fails as a whole (INTERNAL) after `fail_after` seconds; `details`: bytes of `details` per result (long
    results); `max_message`: the server's message limit both ways (default gRPC's); `busy`: ScoreBatch
    answers RESOURCE_EXHAUSTED "busy" (an overloaded server). `scored` counts how often each rollout id
    was scored (ScoreBatch and ScoreStream); `max_in_flight` is the most ScoreBatch/ScoreStream calls
    that were being handled at once."""

    def __init__(self, *, name="probe", delay=0.0, unimplemented=False, fail=False, fail_after=0.0, details=0,
                 max_message=None, busy=False, workers=32):
        self.name = name
        self.busy = busy
        self.scored = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail = fail
        self.fail_after = fail_after
        self.unimplemented = unimplemented
        self.details = details
        self.cancelled = 0
        self.batch_sizes = []
        self._lock = threading.Lock()
        options = [] if max_message is None else [("grpc.max_send_message_length", max_message),
                                                   ("grpc.max_receive_message_length", max_message)]
        self._options = options
        super().__init__(delay=delay, workers=workers)

    def _make_server(self, workers):
        return grpc.server(futures.ThreadPoolExecutor(max_workers=workers), options=self._options)

    def _wait(self, context):
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._wait_delay(context)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _wait_delay(self, context):
        end = time.monotonic() + self.delay
        while time.monotonic() < end:
            if not context.is_active():
                with self._lock:
                    self.cancelled += 1
                return False
            time.sleep(0.01)
        return True

    def _score(self, rollout):
        res = super()._score(rollout)
        with self._lock:
            self.scored[rollout.id] = self.scored.get(rollout.id, 0) + 1
        res.service = self.name
        if self.details:
            res.components[0].details = "d" * self.details
        return res

    def Describe(self, request, context):
        res = super().Describe(request, context)
        res.name = self.name
        return res

    def ScoreStream(self, request_iterator, context):
        self.calls.append("ScoreStream")
        requests = list(request_iterator)
        if not self._wait(context):
            return
        for r in requests:
            yield self._score(r.rollout)

    def ScoreBatch(self, request, context):
        with self._lock:
            self.calls.append("ScoreBatch")
            self.batch_sizes.append(len(request.requests))
        if self.unimplemented:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        if self.busy:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy")
        if self.fail or any("fail" in r.rollout.response for r in request.requests):
            time.sleep(self.fail_after)
            context.abort(grpc.StatusCode.INTERNAL, "failed on purpose")
        if not self._wait(context):
            context.abort(grpc.StatusCode.CANCELLED, "cancelled")
        return reward_service_pb2.ScoreBatchResponse(results=[self._score(r.rollout) for r in request.requests])
