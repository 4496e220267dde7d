#!/usr/bin/env bash
# Generates the Python protobuf + gRPC stubs of the learner contract into
# trainer/learner-torch/reward_mesh_learner/_gen, and those of the reward-service contract into
# examples/python-reward-service/_gen, and those of the client contracts (reward service, trainer /
# ComputeAdvantages, agent environment, health) into clients/python/reward_mesh/_gen (all committed;
# `npm run check:gen` checks for drift).
# Needs Debian's protobuf-compiler (protoc 3.21), protobuf-compiler-grpc (grpc_python_plugin) and
# libprotobuf-dev (the well-known types);
# scripts/bootstrap.sh installs them. Usage: generate-python.sh [OUT_DIR [REWARD_OUT_DIR [CLIENT_OUT_DIR]]]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-trainer/learner-torch/reward_mesh_learner/_gen}
reward_out=${2:-examples/python-reward-service/_gen}
client_out=${3:-clients/python/reward_mesh/_gen}
for tool in protoc grpc_python_plugin; do
  command -v "$tool" >/dev/null || { echo "generate-python: '$tool' is missing: apt-get install -y protobuf-compiler protobuf-compiler-grpc" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"
plugin="--plugin=protoc-gen-grpc_python=$(command -v grpc_python_plugin)"
# The learner contract keeps its proto paths (imports are `from rewardmesh.v1 import ...`).
# google/protobuf/*.proto (well-known types) come from libprotobuf-dev.
wkt=/usr/include
[ -f "$wkt/google/protobuf/struct.proto" ] || { echo "generate-python: $wkt/google/protobuf/struct.proto is missing: apt-get install -y libprotobuf-dev" >&2; exit 1; }
protoc -I proto -I "$wkt" --python_out="$out" "$plugin" --grpc_python_out="$out" \
  proto/rewardmesh/v1/learner.proto proto/rewardmesh/v1/rollout.proto
# Health is generated at top level (module `health_pb2`), so that no `grpc` package shadows grpcio;
# the service keeps its full name grpc.health.v1.Health.
protoc -I proto/grpc/health/v1 --python_out="$out" "$plugin" --grpc_python_out="$out" health.proto
rm -f "$out/rewardmesh/v1/rollout_pb2_grpc.py"
# The reward-service contract, for reward services written in Python (served on the mesh through
# `reward-mesh serve --remote`); same layout (`from rewardmesh.v1 import reward_service_pb2`).
rm -rf "$reward_out"
mkdir -p "$reward_out"
protoc -I proto -I "$wkt" --python_out="$reward_out" "$plugin" --grpc_python_out="$reward_out" \
  proto/rewardmesh/v1/reward_service.proto proto/rewardmesh/v1/reward.proto proto/rewardmesh/v1/rollout.proto
protoc -I proto/grpc/health/v1 --python_out="$reward_out" "$plugin" --grpc_python_out="$reward_out" health.proto
rm -f "$reward_out/rewardmesh/v1/rollout_pb2_grpc.py" "$reward_out/rewardmesh/v1/reward_pb2_grpc.py"
# The Python client package (clients/python): every contract a client calls, same layout
# (`from rewardmesh.v1 import trainer_pb2`). Messages-only files keep no empty *_pb2_grpc.py.
rm -rf "$client_out"
mkdir -p "$client_out"
protoc -I proto -I "$wkt" --python_out="$client_out" "$plugin" --grpc_python_out="$client_out" \
  proto/rewardmesh/v1/reward_service.proto proto/rewardmesh/v1/reward.proto proto/rewardmesh/v1/rollout.proto \
  proto/rewardmesh/v1/trainer.proto proto/rewardmesh/v1/agent_environment.proto
protoc -I proto/grpc/health/v1 --python_out="$client_out" "$plugin" --grpc_python_out="$client_out" health.proto
rm -f "$client_out/rewardmesh/v1/rollout_pb2_grpc.py" "$client_out/rewardmesh/v1/reward_pb2_grpc.py"
