"""In-process half of `npm run bench:learner`: the PyTorch learner's TrainStep and Generate called
directly (no gRPC), on the batch `bench/learner.bench.ts` wrote, so the two halves time the same work.

Prints one JSON object: per-repeat TrainStep seconds and Generate tokens/s.
Run by the TypeScript bench with the repository's .venv/bin/python (or REWARD_MESH_PYTHON) and
PYTHONPATH=trainer/learner-torch.
"""
import argparse
import json
import sys
import time

import torch

from reward_mesh_learner.contract import GenerateRequest, LossConfig, OptimConfig, PromptSpec, Sample, TrainStepRequest
from reward_mesh_learner.learner import LearnerOptions, TorchLearner
from reward_mesh_learner.policy import load_policy


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", required=True, help="JSON written by learner.bench.ts")
    p.add_argument("--model", default="builtin:tiny")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--key-prefix", default="inproc")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    with open(a.batch, encoding="utf-8") as f:
        batch = json.load(f)
    learner = TorchLearner(load_policy(a.model, seed=a.seed, device="cpu", dtype=a.dtype), LearnerOptions(seed=a.seed))
    samples = [
        Sample(sample_id=s["sampleId"], prompt_token_ids=s["promptTokenIds"], token_ids=s["tokenIds"],
               rollout_logprobs=s["rolloutLogprobs"], advantage=s["advantage"], group_id=s["groupId"])
        for s in batch["samples"]
    ]
    loss = LossConfig(loss_type="dapo", eps_low=0.2, eps_high=0.28, max_completion_length=batch["tokens"])
    optim = OptimConfig(lr=1e-4)
    train_s = []
    # One untimed step first (allocator, BLAS threads), as the gRPC half does.
    learner.train_step(TrainStepRequest(step=0, idempotency_key=f"{a.key_prefix}-warmup", samples=samples, loss=loss, optim=optim))
    for r in range(a.repeats):
        req = TrainStepRequest(step=r, idempotency_key=f"{a.key_prefix}-{r}", samples=samples, loss=loss, optim=optim)
        t0 = time.perf_counter()
        learner.train_step(req)
        train_s.append(time.perf_counter() - t0)
    gen = batch["generate"]
    prompts = [PromptSpec(prompt_id=f"g{i}", context_key="bench", text=t) for i, t in enumerate(gen["prompts"])]
    gen_tps = []
    for r in range(a.repeats):
        t0 = time.perf_counter()
        out = learner.generate(GenerateRequest(prompts=prompts, n=gen["n"], max_new_tokens=gen["maxNewTokens"], seed=r))
        dt = time.perf_counter() - t0
        gen_tps.append(sum(len(c.token_ids) for c in out) / dt)
    json.dump({"trainStepSeconds": train_s, "generateTokensPerSecond": gen_tps}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
