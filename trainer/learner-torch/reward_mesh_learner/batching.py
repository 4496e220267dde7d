"""Packing (prompt, completion) pairs into left-padded batches and computing completion logprobs.

Layout: each row is `prompt + completion`, left-padded to the longest row, so every row ends in the
last column; position ids count the real tokens before each one. The logits that predict the
completions are then the last `L + 1` positions (L = longest completion), and a completion of length
`c` sits right-aligned in an [B, L] grid: column `L − c + t` holds its token `t`.
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch

from .policy import compute_dtype


@dataclass
class PackedBatch:
    """A left-padded batch of (prompt, completion) rows (see the module docstring)."""

    input_ids: torch.Tensor  # [B, T]
    attention_mask: torch.Tensor  # [B, T]
    position_ids: torch.Tensor  # [B, T]
    targets: torch.Tensor  # [B, L] completion ids, right-aligned, 0 on padding
    valid: torch.Tensor  # [B, L] True on completion tokens
    lengths: List[int]  # completion lengths

    @property
    def width(self) -> int:
        """L, the longest completion."""
        return self.targets.shape[1]

    def grid(self, rows: Sequence[Sequence[float]], dtype: torch.dtype, fill: float = 0.0) -> torch.Tensor:
        """Per-token values of each row (one per completion token) right-aligned into an [B, L] tensor."""
        out = torch.full(self.targets.shape, fill, dtype=dtype)
        for i, r in enumerate(rows):
            if len(r):
                out[i, self.width - len(r) :] = torch.as_tensor(list(r), dtype=dtype)
        return out.to(self.targets.device)

    def rows(self, grid: torch.Tensor) -> List[List[float]]:
        """The inverse of `grid`: each row's values as Python floats."""
        g = grid.detach().double().cpu()
        return [g[i, self.width - c :].tolist() if c else [] for i, c in enumerate(self.lengths)]


def pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int, device) -> PackedBatch:
    """Left-pads `prompt + completion` rows into a `PackedBatch` on `device`."""
    seqs = [list(p) + list(c) for p, c in zip(prompts, completions)]
    lengths = [len(c) for c in completions]
    b, t, width = len(seqs), max(len(s) for s in seqs), max(lengths)
    ids = torch.full((b, t), pad_id, dtype=torch.long)
    mask = torch.zeros((b, t), dtype=torch.long)
    targets = torch.zeros((b, width), dtype=torch.long)
    valid = torch.zeros((b, width), dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, t - len(s) :] = torch.tensor(s, dtype=torch.long)
        mask[i, t - len(s) :] = 1
        c = lengths[i]
        if c:
            targets[i, width - c :] = torch.tensor(list(completions[i]), dtype=torch.long)
            valid[i, width - c :] = True
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return PackedBatch(ids.to(device), mask.to(device), pos.to(device), targets.to(device), valid.to(device), lengths)


def logprobs_from_logits(logits: torch.Tensor, targets: torch.Tensor, with_entropy: bool) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Logprob of each target under `logits` [..., V] (float32 or wider), and the entropy (no grad)."""
    lse = torch.logsumexp(logits, dim=-1)
    lp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse
    entropy = None
    if with_entropy:
        with torch.no_grad():
            p = torch.softmax(logits.detach(), dim=-1)
            entropy = lse.detach() - (p * logits.detach()).sum(-1)
    return lp, entropy


def completion_logprobs(policy, batch: PackedBatch, with_entropy: bool = False, reference: bool = False):
    """Per-token logprobs [B, L] of the completions (under the reference model when `reference`), and
    the entropy of each next-token distribution [B, L] when `with_entropy`. Padding cells hold garbage."""
    keep = batch.width + 1
    fwd = policy.reference_forward if reference else policy.forward
    out = fwd(batch.input_ids, batch.attention_mask, batch.position_ids, logits_to_keep=keep)
    logits = out.logits[:, -keep:-1, :]
    logits = logits.to(compute_dtype(logits.dtype))
    return logprobs_from_logits(logits, batch.targets, with_entropy)
