"""A reward service in Python: `py-brevity`, served on the mesh through `reward-mesh serve --remote`.

It implements `rewardmesh.v1.RewardService` (Describe, Score, ScoreStream, and the optional ScoreBatch)
and `grpc.health.v1.Health`
with Debian's python3-grpcio and the stubs in `_gen/` (generated from `proto/` by
`scripts/generate-python.sh`, drift-checked by `npm run check:gen`). The NATS half of the contract
(durable consumers, ack/nak, dead letters, dedupe, trace headers) is the sidecar's job.

Components (domain `custom`):
  * `brevity`: 1 - min(1, code points / budget); budget 48, or the rollout's metadata `brevity.budget`.
  * `politeness`: 1 when the response contains a greeting or a thank-you, else 0.

Usage: /usr/bin/python3 (or the repository's .venv/bin/python) reward_service.py [--host 127.0.0.1] [--port 0]
Prints `listening on <host>:<port>` once it serves.
"""

import argparse
import os
import sys
from concurrent import futures

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gen"))

import grpc  # noqa: E402
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402
from rewardmesh.v1 import reward_pb2, reward_service_pb2, reward_service_pb2_grpc  # noqa: E402

NAME = "py-brevity"
VERSION = "1.0.0"
DOMAINS = ["custom"]
DEFAULT_BUDGET = 48
POLITE = ("hello", "hi ", "thanks", "thank you", "please")
# Most requests one ScoreBatch call takes (the contract's cap).
MAX_SCORE_BATCH = 1024


class BadRollout(Exception):
    """The rollout breaks the contract: `'<field>' <problem>` (INVALID_ARGUMENT)."""

    def __init__(self, field, problem):
        super().__init__(f"'{field}' {problem}")
        self.field = field
        self.problem = problem


def budget_of(rollout):
    raw = rollout.metadata.get("brevity.budget", "").strip()
    if raw == "":
        return DEFAULT_BUDGET
    if not raw.isdigit() or int(raw) < 1:
        raise BadRollout('rollout.metadata["brevity.budget"]', f"must be a positive integer, got {raw!r}")
    return int(raw)


def score(rollout):
    """The RewardResult of one rollout; raises BadRollout for bad input."""
    if rollout.id == "":
        raise BadRollout("rollout.id", "is required")
    budget = budget_of(rollout)
    length = len(rollout.response)  # code points
    text = rollout.response.lower()
    polite = 1.0 if any(p in text for p in POLITE) else 0.0
    ok = reward_pb2.COMPONENT_STATUS_OK
    return reward_pb2.RewardResult(
        rollout_id=rollout.id,
        run_id=rollout.run_id,
        service=NAME,
        service_version=VERSION,
        components=[
            reward_pb2.ComponentReward(
                name="brevity", value=1.0 - min(1.0, length / budget), status=ok,
                details=f"{length} code points, budget {budget}",
            ),
            reward_pb2.ComponentReward(name="politeness", value=polite, status=ok),
        ],
    )


class RewardService(reward_service_pb2_grpc.RewardServiceServicer):
    def Describe(self, request, context):
        return reward_service_pb2.DescribeResponse(
            name=NAME,
            version=VERSION,
            domains=DOMAINS,
            components=[
                reward_pb2.ComponentSpec(
                    name="brevity", description="1 - min(1, length / budget)", min=0.0, max=1.0
                ),
                reward_pb2.ComponentSpec(
                    name="politeness", description="1 when the response greets or thanks", min=0.0, max=1.0
                ),
            ],
        )

    def Score(self, request, context):
        try:
            return score(request.rollout)
        except BadRollout as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    def ScoreStream(self, request_iterator, context):
        # One result per request, in request order; a bad request ends the call naming it.
        for i, request in enumerate(request_iterator):
            try:
                yield score(request.rollout)
            except BadRollout as e:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"requests[{i}]: {e}")

    def ScoreBatch(self, request, context):
        # Optional (clients fall back to ScoreStream on UNIMPLEMENTED): 1 to MAX_SCORE_BATCH rollouts in one
        # unary call. A request that fails does not fail the call: its result holds only its rollout's
        # identity, and `errors` has its index, Score's code and Score's message with the field under
        # `requests[<i>]`.
        n = len(request.requests)
        if n == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "'requests' must hold at least one ScoreRequest")
        if n > MAX_SCORE_BATCH:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"'requests' must hold at most {MAX_SCORE_BATCH} ScoreRequests, got {n}: "
                          "split the batch (or use ScoreStream)")
        out = reward_service_pb2.ScoreBatchResponse()
        for i, req in enumerate(request.requests):
            try:
                out.results.append(score(req.rollout))
            except BadRollout as e:
                out.errors.append(reward_service_pb2.ScoreBatchError(
                    index=i, code=grpc.StatusCode.INVALID_ARGUMENT.value[0],
                    message=f"'requests[{i}].{e.field}' {e.problem}"))
                r = req.rollout
                out.results.append(reward_pb2.RewardResult(
                    rollout_id=r.id, run_id=r.run_id, step=r.step, group_id=r.group_id, index=r.index,
                    group_size=r.group_size, policy_version=r.policy_version,
                    service=NAME, service_version=VERSION))
        return out


class Health(health_pb2_grpc.HealthServicer):
    def Check(self, request, context):
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    reward_service_pb2_grpc.add_RewardServiceServicer_to_server(RewardService(), server)
    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    server.start()
    print(f"listening on {args.host}:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
