"""A real reward service, in this process, for what the mesh's services do not do on demand: take their
time (`delay`), or break the contract (`result` rewrites each result before it is sent). A gRPC server on
a free port with the package's stubs; `with ScriptedService(...) as s:` serves at `s.address`. Like a
service written against the contract before ScoreBatch, it does not implement ScoreBatch (the generated
servicer answers UNIMPLEMENTED); `calls` lists the methods it was called with."""

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
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
        reward_service_pb2_grpc.add_RewardServiceServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"

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
