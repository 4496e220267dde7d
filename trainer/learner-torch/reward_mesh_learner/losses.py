"""Per-token policy-gradient losses, the k3 KL, truncated importance weights and the loss aggregation
modes, in torch — the semantics of `trainer/src/learner/loss.ts` and `objective.ts` exactly
(`trainer/README.md`, "Loss types").

Conventions: `ratio = exp(clamp(logp − old, ±20))` (verl), with zero gradient where the log-ratio is
clamped; a loss is minimised; `old`, `ref`, the advantage, the rollout importance weight and CISPO's
weight ŵ are constants (no gradient). Tensors are [B, L] (sequences × completion tokens) and the
advantage broadcasts as [B, 1].
"""

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

#: verl clamps `logp − old` to ±20 before `exp`, so a ratio never overflows.
LOG_RATIO_CLAMP = 20.0


def importance_ratio(logp: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """`exp(clamp(logp − old, ±20))`; the gradient is 0 where the clamp binds (strictly)."""
    return torch.exp(torch.clamp(logp - old, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))


@dataclass
class TokenTerms:
    """Per-token policy-gradient term and which clip bound (boolean masks)."""

    loss: torch.Tensor
    clipped: torch.Tensor
    clipped_low: torch.Tensor
    clipped_high: torch.Tensor
    dual_clipped: torch.Tensor


def ppo_clip_token_loss(
    ratio: torch.Tensor,
    advantage: torch.Tensor,
    eps_low: float,
    eps_high: float,
    dual_clip_c: float = 0.0,
) -> TokenTerms:
    """PPO clip-higher: `ℓ = max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high))`, then for `A < 0` and
    `c > 0` `ℓ = min(ℓ, −c·A)`. The gradient flows only through the unclipped branch; ties go to it
    (`torch.where(l2 > l1, l2, l1)`, not `torch.maximum`, whose gradient splits at ties)."""
    a = advantage
    l1 = -a * ratio
    l2 = -a * torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high).detach()
    clipped = l2 > l1
    loss = torch.where(clipped, l2, l1)
    if dual_clip_c > 0:
        l3 = (-a * dual_clip_c).expand_as(loss)
        dual = (a < 0) & (l3 < loss)
        loss = torch.where(dual, l3, loss)
    else:
        dual = torch.zeros_like(clipped)
    low = clipped & (ratio < 1) & ~dual
    high = clipped & ~(ratio < 1) & ~dual
    return TokenTerms(loss=loss, clipped=clipped | dual, clipped_low=low, clipped_high=high, dual_clipped=dual)


def cispo_weight(ratio: torch.Tensor, eps_low: float, eps_high: float, mode: str = "two-sided") -> torch.Tensor:
    """CISPO's clipped importance weight ŵ: `clamp(r, 1 − ε_low, 1 + ε_high)` (`two-sided`, verl) or
    `min(r, ε_high)` (`upper-cap`, TRL: ε_high an absolute cap)."""
    if mode == "upper-cap":
        return torch.clamp(ratio, max=eps_high)
    return torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)


def cispo_token_loss(
    logp: torch.Tensor,
    old: torch.Tensor,
    advantage: torch.Tensor,
    eps_low: float,
    eps_high: float,
    mode: str = "two-sided",
) -> TokenTerms:
    """CISPO (MiniMax-M1): `ℓ = −sg(ŵ)·A·logp`, ŵ from the detached ratio (see `cispo_weight`)."""
    ratio = importance_ratio(logp.detach(), old)
    w = cispo_weight(ratio, eps_low, eps_high, mode)
    loss = -w * advantage * logp
    clipped = w != ratio
    high = clipped & (w < ratio)
    return TokenTerms(
        loss=loss,
        clipped=clipped,
        clipped_low=clipped & ~high,
        clipped_high=high,
        dual_clipped=torch.zeros_like(clipped),
    )


def k3_kl(logp: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π_θ ‖ π_ref): `exp(ref − logp) − (ref − logp) − 1` (≥ 0)."""
    d = ref - logp
    return torch.exp(d) - d - 1.0


def rollout_is_weight(old: torch.Tensor, rollout: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance weight against the behaviour policy: `min(exp(min(old − rollout, 20)), cap)`."""
    return torch.clamp(torch.exp(torch.clamp(old - rollout, max=LOG_RATIO_CLAMP)), max=cap).detach()


def aggregation_weights(mask: torch.Tensor, mode: str, max_completion_length: float = 0) -> torch.Tensor:
    """Per-token weights `w` with `aggregated loss = Σ w·ℓ`, from the 0/1 `mask` [B, L] of the B
    sequences of one (mini-)batch (`aggregationWeights` in loss.ts). B counts fully masked sequences:

    - `token-mean`: `m / max(1, Σ m)`
    - `seq-mean-token-mean`: `m / (B · max(1, Σ_t m_i))`
    - `seq-mean-token-sum`: `m / B`
    - `seq-mean-token-sum-norm`: `m / (B · L_max)`
    """
    b = mask.shape[0]
    if mode == "token-mean":
        return mask / max(1.0, float(mask.sum()))
    if mode == "seq-mean-token-mean":
        return mask / (b * torch.clamp(mask.sum(dim=1, keepdim=True), min=1.0))
    if mode == "seq-mean-token-sum":
        return mask / b
    if mode == "seq-mean-token-sum-norm":
        if not max_completion_length > 0:
            raise ValueError("seq-mean-token-sum-norm needs max_completion_length > 0")
        return mask / (b * float(max_completion_length))
    raise ValueError(f"unknown aggregation '{mode}'")


def aggregate_loss(
    per_token_loss: Sequence[Sequence[float]],
    mode: str,
    max_completion_length: float = 0,
    masks: Optional[Sequence[Sequence[float]]] = None,
    dtype: torch.dtype = torch.float64,
) -> float:
    """Aggregates ragged per-token losses of B sequences by `mode` (`aggregateLoss` in loss.ts)."""
    if len(per_token_loss) == 0:
        return 0.0
    width = max(len(x) for x in per_token_loss)
    loss = torch.zeros(len(per_token_loss), width, dtype=dtype)
    mask = torch.zeros_like(loss)
    for i, row in enumerate(per_token_loss):
        loss[i, : len(row)] = torch.tensor(row, dtype=dtype)
        mask[i, : len(row)] = torch.tensor(masks[i] if masks is not None else [1.0] * len(row), dtype=dtype)
    return float((aggregation_weights(mask, mode, max_completion_length) * loss).sum())


@dataclass(frozen=True)
class ObjectiveConfig:
    """The resolved loss settings of a step."""

    loss_type: str
    aggregation: str
    eps_low: float
    eps_high: float
    dual_clip_c: float
    kl_beta: float
    max_completion_length: float
    cispo_mode: str


def policy_gradient_terms(
    logp: torch.Tensor, old: torch.Tensor, advantage: torch.Tensor, cfg: ObjectiveConfig
) -> TokenTerms:
    """The per-token policy-gradient term of `cfg.loss_type` (CISPO or PPO clip-higher)."""
    if cfg.loss_type == "cispo":
        return cispo_token_loss(logp, old, advantage, cfg.eps_low, cfg.eps_high, cfg.cispo_mode)
    ratio = importance_ratio(logp, old)
    return ppo_clip_token_loss(ratio, advantage, cfg.eps_low, cfg.eps_high, cfg.dual_clip_c)


def token_objective(
    logp: torch.Tensor,
    old: torch.Tensor,
    advantage: torch.Tensor,
    weights: torch.Tensor,
    cfg: ObjectiveConfig,
    ref: Optional[torch.Tensor] = None,
    is_weights: Optional[torch.Tensor] = None,
):
    """`Σ w·(s·pg + β·k3)` over [B, L] tokens, and the per-token pieces (for metrics).

    `weights` are the aggregation weights (mask included, zero on padding); `is_weights` the rollout
    importance weights s (None = 1); `ref` the reference logprobs (None = no KL term).
    Returns (loss, terms, kl) with `kl` None without a reference.
    """
    terms = policy_gradient_terms(logp, old, advantage, cfg)
    pg = terms.loss if is_weights is None else is_weights * terms.loss
    kl = None
    per_token = pg
    if ref is not None:
        kl = k3_kl(logp, ref)
        if cfg.kl_beta != 0:
            per_token = pg + cfg.kl_beta * kl
    return (weights * per_token).sum(), terms, kl
