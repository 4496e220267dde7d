"""The Hugging Face half of `npm run bench:learner`: the PyTorch learner's TrainStep (in process, the
learner core) against a plain PyTorch step on the same Hugging Face model directory, the same batch and
the same loss, timed side by side (alternating, after one untimed step of each).

The plain step is what a hand-written loop does: one forward over `prompt + completion` computing only
the completion's logits (`logits_to_keep`), log-softmax, DAPO token-mean PPO-clip with old = current
(detached), backward, gradient-norm clip 1, AdamW. The learner's step does the same work plus what it
adds: validation, packing and masks, entropy and the other metrics, the idempotency record.

Prints one JSON object: per-repeat seconds of both, medians and the ratio (learner / plain).
Run by `bench/learner.bench.ts` with PYTHONPATH=trainer/learner-torch.
"""
import argparse
import json
import statistics
import sys
import time

import torch

from reward_mesh_learner.contract import LossConfig, OptimConfig, Sample, TrainStepRequest
from reward_mesh_learner.hf import dtype_kwarg
from reward_mesh_learner.learner import LearnerOptions, TorchLearner
from reward_mesh_learner.policy import load_policy


def make_batch(n: int, prompt_len: int, length: int, vocab: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    prompts = torch.randint(0, vocab, (n, prompt_len), generator=g)
    completions = torch.randint(0, vocab, (n, length), generator=g)
    adv = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(n)])
    return prompts, completions, adv


def plain_model(path: str, lora_rank: int):
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **{dtype_kwarg(transformers): torch.float32})
    model.config.use_cache = False
    if lora_rank:
        import peft

        cfg = peft.LoraConfig(r=lora_rank, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, cfg)
    model.eval()  # no dropout, as the learner
    return model


def plain_step(model, opt, prompts, completions, adv):
    """One hand-written DAPO step (see the module docstring)."""
    ids = torch.cat([prompts, completions], dim=1)
    keep = completions.shape[1] + 1
    logits = model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits[:, :-1].float()
    lp = torch.log_softmax(logits, dim=-1).gather(-1, completions.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(lp - lp.detach())
    a = adv.unsqueeze(1)
    loss = torch.max(-a * ratio, -a * ratio.clamp(0.8, 1.28)).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)


def learner_request(prompts, completions, adv, key: str) -> TrainStepRequest:
    samples = [
        Sample(
            sample_id=f"{key}-{i}",
            prompt_token_ids=tuple(prompts[i].tolist()),
            token_ids=tuple(completions[i].tolist()),
            rollout_logprobs=tuple([-5.0] * completions.shape[1]),
            advantage=float(adv[i]),
            group_id=f"g{i // 2}",
        )
        for i in range(prompts.shape[0])
    ]
    loss = LossConfig(loss_type="dapo", eps_low=0.2, eps_high=0.28, max_completion_length=completions.shape[1])
    return TrainStepRequest(step=0, idempotency_key=key, samples=samples, loss=loss, optim=OptimConfig(lr=1e-4, max_grad_norm=1.0))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True, help="a Hugging Face model directory")
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--completion-tokens", type=int, default=128)
    p.add_argument("--lora-rank", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    learner = TorchLearner(load_policy(a.model, device="cpu", dtype="float32", lora_rank=a.lora_rank), LearnerOptions(seed=0))
    info = learner.info()
    prompts, completions, adv = make_batch(a.samples, a.prompt_tokens, a.completion_tokens, info.vocab_size, 0)
    model = plain_model(a.model, a.lora_rank)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    # One untimed step of each (allocator, BLAS threads), then alternate so that drift hits both alike.
    learner.train_step(learner_request(prompts, completions, adv, "warmup"))
    plain_step(model, opt, prompts, completions, adv)
    learner_s, plain_s = [], []
    for r in range(a.repeats):
        t0 = time.perf_counter()
        learner.train_step(learner_request(prompts, completions, adv, f"r{r}"))
        learner_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain_step(model, opt, prompts, completions, adv)
        plain_s.append(time.perf_counter() - t0)
    lm, pm = statistics.median(learner_s), statistics.median(plain_s)
    json.dump(
        {
            "model": {"architecture": info.architecture, "parameterCount": info.parameter_count, "tokenizer": info.tokenizer, "vocabSize": info.vocab_size},
            "batch": {"samples": a.samples, "promptTokens": a.prompt_tokens, "completionTokens": a.completion_tokens, "loss": "dapo"},
            "loraRank": a.lora_rank,
            "learnerSeconds": learner_s,
            "plainSeconds": plain_s,
            "learnerMedianSeconds": lm,
            "plainMedianSeconds": pm,
            "ratio": lm / pm,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
