"""reward-mesh from Python: clients of the reward services (`Score`, `ScoreBatch`, `ScoreStream`, `Describe`) and of
the trainer's advantage engine (`ComputeAdvantages`), a Rollout/Task builder, and adapters for TRL
(`reward_mesh.trl`), verl (`reward_mesh.verl`) and OpenRLHF (`reward_mesh.openrlhf`).

Needs only grpcio and protobuf (Debian: python3-grpcio, python3-protobuf); torch for the verl
advantage estimator.
"""

from ._proto import reward_pb2, reward_service_pb2, rollout_pb2, trainer_pb2
from .builder import (
    agent_task,
    code_task,
    custom_task,
    domain_of,
    math_task,
    rollout,
    task_from_json,
    tool_call_task,
)
from .client import MAX_BATCH, AdvantagesClient, Mesh, RewardClient, advantages_request, weighted
from .config import MAX_TIMEOUT, Component, RunConfig, run_config
from .errors import InvalidInputError, MeshError, MeshRpcError, MeshTimeoutError, MeshUnavailableError

__version__ = "0.1.0"

__all__ = [
    "MAX_BATCH",
    "MAX_TIMEOUT",
    "AdvantagesClient",
    "Component",
    "InvalidInputError",
    "Mesh",
    "MeshError",
    "MeshRpcError",
    "MeshTimeoutError",
    "MeshUnavailableError",
    "RewardClient",
    "RunConfig",
    "advantages_request",
    "agent_task",
    "code_task",
    "custom_task",
    "domain_of",
    "math_task",
    "reward_pb2",
    "reward_service_pb2",
    "rollout",
    "rollout_pb2",
    "run_config",
    "task_from_json",
    "tool_call_task",
    "trainer_pb2",
    "weighted",
]
