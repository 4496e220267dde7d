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
        w = self.width
        return torch.tensor([[fill] * (w - len(r)) + list(r) for r in rows], dtype=dtype).reshape(len(rows), w).to(self.targets.device)

    def rows(self, grid: torch.Tensor) -> List[List[float]]:
        """The inverse of `grid`: each row's values as Python floats."""
        g = grid.detach().double().cpu()
        return [g[i, self.width - c :].tolist() if c else [] for i, c in enumerate(self.lengths)]


def pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int, device) -> PackedBatch:
    """Left-pads `prompt + completion` rows into a `PackedBatch` on `device`."""
    seqs = [list(p) + list(c) for p, c in zip(prompts, completions)]
    lengths = [len(c) for c in completions]
    b, t, width = len(seqs), max(len(s) for s in seqs), max(lengths)
    # One tensor per grid from Python lists (a per-row copy costs ~10x more host time at 64 × 320).
    ids = torch.tensor([[pad_id] * (t - len(s)) + s for s in seqs], dtype=torch.long).reshape(b, t)
    mask = torch.tensor([[0] * (t - len(s)) + [1] * len(s) for s in seqs], dtype=torch.long).reshape(b, t)
    targets = torch.tensor([[0] * (width - c) + list(x) for c, x in zip(lengths, completions)], dtype=torch.long).reshape(b, width)
    valid = torch.tensor([[False] * (width - c) + [True] * c for c in lengths], dtype=torch.bool).reshape(b, width)
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
