"""Supervised warm-up before serving (a user's SFT warm start): next-token training on the
completion tokens of `{"prompt": ..., "response": ...}` or `{"messages": [...], "response": ...}`
JSONL lines, so that RL starts from a model that already emits the task's format.

Each example is the prompt as Generate would tokenize it (chat template for messages) followed by the
response's tokens and end-of-sequence; the loss is the mean cross-entropy over the response tokens of
a batch (AdamW, global gradient-norm clip 1). Examples are visited in a seeded random order, epoch
after epoch. One progress line per ~10% goes to stderr.
"""

import json
import sys
from dataclasses import dataclass
from typing import List, Sequence, TextIO, Tuple

import torch

from .batching import completion_logprobs, pack
from .contract import ChatMessage
from .errors import WarmupError
from .training import clip_grad_norm


@dataclass(frozen=True)
class WarmupSummary:
    steps: int
    examples: int
    first_loss: float
    last_loss: float

    def sentence(self, path: str) -> str:
        return (
            f"Warmed up before serving with {self.steps} supervised steps on {self.examples} examples from {path} "
            f"(response cross-entropy {self.first_loss:.3f} → {self.last_loss:.3f})."
        )


def _parse_line(line: str, where: str):
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise WarmupError(f"{where}: not JSON ({e})") from e
    if not isinstance(obj, dict) or not isinstance(obj.get("response"), str):
        raise WarmupError(f'{where}: expected an object with a string "response" and a "prompt" or "messages"')
    if "messages" in obj:
        msgs = obj["messages"]
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in msgs):
            raise WarmupError(f'{where}: "messages" must be a list of {{"role": str, "content": str}}')
        return "", tuple(ChatMessage(m["role"], m["content"]) for m in msgs), obj["response"]
    if not isinstance(obj.get("prompt"), str):
        raise WarmupError(f'{where}: "prompt" must be a string (or give "messages")')
    return obj["prompt"], (), obj["response"]


def load_examples(policy, path: str) -> List[Tuple[List[int], List[int]]]:
    """(prompt ids, response ids + EOS) for every line of `path`; errors name the line."""
    tok = policy.tokenizer
    eos = getattr(tok, "eos_id", None)
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise WarmupError(f"--warmup-file {path}: {e}") from e
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"--warmup-file {path} line {n}"
        text, messages, response = _parse_line(line, where)
        prompt = tok.encode_prompt(text, messages)
        completion = tok.encode(response) + ([eos] if eos is not None else [])
        if not completion:
            raise WarmupError(f"{where}: the response is empty")
        total = len(prompt) + len(completion)
        if policy.max_context and total > policy.max_context:
            raise WarmupError(f"{where}: prompt + response is {total} tokens, longer than the model's context of {policy.max_context}")
        out.append((prompt, completion))
    if not out:
        raise WarmupError(f"--warmup-file {path} has no examples")
    return out


def _batch_loss(policy, batch_examples: Sequence, micro_batch_size: int) -> float:
    """Accumulates the gradient of the batch's mean response cross-entropy; returns its value."""
    n_tokens = sum(len(c) for _, c in batch_examples)
    size = micro_batch_size if micro_batch_size > 0 else len(batch_examples)
    total = 0.0
    for k in range(0, len(batch_examples), size):
        chunk = batch_examples[k : k + size]
        batch = pack([p for p, _ in chunk], [c for _, c in chunk], policy.pad_id, policy.device)
        with policy.training_mode():
            lp, _ = completion_logprobs(policy, batch)
        loss = -(lp * batch.valid).sum() / n_tokens
        loss.backward()
        total += float(loss)
    return total


def run_warmup(policy, path: str, *, steps: int, lr: float, batch: int, seed: int, micro_batch_size: int = 0, log: TextIO = sys.stderr) -> WarmupSummary:
    """Trains `policy` for `steps` supervised steps on the examples of `path` (see the module docstring)."""
    examples = load_examples(policy, path)
    params = policy.trainable_parameters()
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    g = torch.Generator().manual_seed(int(seed) + 1)
    order: List[int] = []
    every = max(1, steps // 10)
    first = last = float("nan")
    window: List[float] = []
    for step in range(1, steps + 1):
        picked = []
        while len(picked) < min(batch, len(examples)):
            if not order:
                order = torch.randperm(len(examples), generator=g).tolist()
            picked.append(examples[order.pop()])
        opt.zero_grad(set_to_none=True)
        loss = _batch_loss(policy, picked, micro_batch_size)
        clip_grad_norm(params, 1.0)
        opt.step()
        first = loss if step == 1 else first
        last = loss
        window.append(loss)
        if step % every == 0 or step == steps:
            print(f"warm-up: step {step}/{steps}, loss {sum(window) / len(window):.4f}", file=log, flush=True)
            window = []
    opt.zero_grad(set_to_none=True)
    policy.weights_from_source = False
    return WarmupSummary(steps, len(examples), first, last)
