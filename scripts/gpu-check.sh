#!/usr/bin/env bash
# The GPU learner check, for a machine with an NVIDIA GPU (an H200 here): builds a random ~0.5B model
# (no downloads), drives the PyTorch learner's Generate and TrainStep over gRPC in bf16, times a plain
# PyTorch reference step on the same batch, and prints JSON (tokens/s, ratio, peak memory, MFU).
# Bounded to 8 minutes. `--smoke` runs the same path on the CPU with builtin:tiny (no GPU needed).
# Needs torch with CUDA and grpcio + protobuf; transformers + tokenizers make the model a Qwen2 config.
# `--verl`: only a preflight for issue 25's "20-step verl GRPO run with corr_grpo", exit 3 and JSON saying
# why it is not run: verl 0.9.1 rolls out only through vLLM / SGLang / TensorRT-LLM servers (no HF rollout
# any more), and the GPU check machine has neither verl nor vLLM (no network; a vLLM wheel is far over the
# 64 MiB a call may carry). corr_grpo in verl's compute_advantage is tested on the CPU instead
# (clients/python/tests/framework_verl.py). Details: trainer/learner-torch/gpu_check.py's docstring.
set -euo pipefail
cd "$(dirname "$0")/.."
# The interpreter: REWARD_MESH_PYTHON, else the repository's .venv (bash scripts/bootstrap.sh --with-torch;
# its torch is the CPU build, so on a GPU node point REWARD_MESH_PYTHON at a CUDA torch with the same lock).
python=${REWARD_MESH_PYTHON:-.venv/bin/python}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "gpu-check: no Python interpreter at $python: run \`bash scripts/bootstrap.sh --with-torch\` or set REWARD_MESH_PYTHON" >&2
  exit 1
fi
exec timeout 480 "$python" trainer/learner-torch/gpu_check.py "$@"
