"""The generated stubs (`_gen/`, from `proto/` by scripts/generate-python.sh; never edited).

protoc writes them with absolute imports (`from rewardmesh.v1 import rollout_pb2`), so `_gen/` goes on
`sys.path` once, here; every other module imports the stubs from this one.
"""

import os
import sys

_GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gen")
if _GEN not in sys.path:
    sys.path.append(_GEN)

import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402
from rewardmesh.v1 import (  # noqa: E402
    reward_pb2,
    reward_service_pb2,
    reward_service_pb2_grpc,
    rollout_pb2,
    trainer_pb2,
    trainer_pb2_grpc,
)

__all__ = [
    "health_pb2",
    "health_pb2_grpc",
    "reward_pb2",
    "reward_service_pb2",
    "reward_service_pb2_grpc",
    "rollout_pb2",
    "trainer_pb2",
    "trainer_pb2_grpc",
]
