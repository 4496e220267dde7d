#!/usr/bin/env bash
# The GPU learner check, for a machine with an NVIDIA GPU (an H200 here): builds a random ~0.5B model
# (no downloads), drives the PyTorch learner's Generate and TrainStep over gRPC in bf16, times a plain
# PyTorch reference step on the same batch, and prints JSON (tokens/s, ratio, peak memory, MFU).
# Bounded to 8 minutes. `--smoke` runs the same path on the CPU with builtin:tiny (no GPU needed).
# Needs torch with CUDA and grpcio + protobuf; transformers + tokenizers make the model a Qwen2 config.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${REWARD_MESH_PYTHON:-python3}
exec timeout 480 "$python" trainer/learner-torch/gpu_check.py "$@"
