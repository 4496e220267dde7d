"""One TrainStep's work, stage by stage (`embedded.ts` `trainStep` for a torch policy):

1. `prepare_step`: pack the kept samples into contiguous mini-batches of micro-batches, with masks,
   aggregation weights over each whole mini-batch, and the constants of the step — old logprobs
   (computed once, no grad, with the same packing as the training forwards), reference logprobs
   (only when `kl_beta > 0`) and the truncated rollout importance weights. When the step is a single
   optimizer step (one epoch, one mini-batch) the old logprobs are the first forward's own, detached
   (as TRL with `num_iterations == 1`; the spec §3.1): the same numbers without an extra forward pass,
   and `ratio == 1` exactly;
2. `run_optimizer_steps`: `epochs × mini_batches` optimizer steps, each accumulating the gradients of
   its micro-batches (the weights are normalised over the mini-batch, so the accumulated gradient is
   the full mini-batch gradient), then clipping the global gradient norm and stepping;
3. `step_metrics`: the camelCase metrics of `TrainStepMetrics`.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch

from .batching import PackedBatch, completion_logprobs, pack
from .contract import Sample, StepMetrics
from .losses import ObjectiveConfig, aggregation_weights, rollout_is_weight, token_objective
from .policy import compute_dtype
from .validate import ResolvedLoss


@dataclass
class MicroBatch:
    """Rows of one forward/backward pass and the step's constants for them ([B, L] grids)."""

    batch: PackedBatch
    mask: torch.Tensor  # 0/1: loss mask, truncation masking and padding
    advantage: torch.Tensor  # [B, 1]
    old: Optional[torch.Tensor]  # None: the forward's own logprobs, detached (a single optimizer step)
    ref: Optional[torch.Tensor]
    rollout: Optional[torch.Tensor]  # behaviour logprobs, when the IS correction is on
    is_cap: float
    weights: torch.Tensor  # aggregation weights (normalised over the whole mini-batch)

    def constants(self, lp: torch.Tensor):
        """(old, reference, IS weights) for the forward's logprobs `lp`. Padding cells take `lp` itself,
        so nothing there can overflow."""
        cur = lp.detach()
        valid = self.batch.valid
        old = cur if self.old is None else torch.where(valid, self.old, cur)
        ref = None if self.ref is None else torch.where(valid, self.ref, cur)
        is_w = None
        if self.rollout is not None:
            is_w = torch.where(valid, rollout_is_weight(old, self.rollout, self.is_cap), torch.ones_like(old))
        return old, ref, is_w


@dataclass
class PreparedStep:
    mini_batches: List[List[MicroBatch]]
    n_tokens: int
    n_masked_truncated: int
    advantage_mean: float


def split_contiguous(items: Sequence, parts: int) -> List[List]:
    """`parts` contiguous slices whose sizes differ by at most one (as embedded.ts)."""
    n = len(items)
    return [list(items[(b * n) // parts : ((b + 1) * n) // parts]) for b in range(parts)]


def _sample_mask(s: Sample, loss: ResolvedLoss) -> List[float]:
    if loss.mask_truncated and s.truncated:
        return [0.0] * len(s.token_ids)
    if s.loss_mask is None:
        return [1.0] * len(s.token_ids)
    return [float(m) for m in s.loss_mask]


def _micro_batch(policy, samples: Sequence[Sample], weights: torch.Tensor, loss: ResolvedLoss, dt, need_old: bool) -> MicroBatch:
    """Packs `samples` and computes their constants (old / reference logprobs), no grad."""
    batch = pack([s.prompt_token_ids for s in samples], [s.token_ids for s in samples], policy.pad_id, policy.device)
    mask = batch.grid([_sample_mask(s, loss) for s in samples], dt)
    adv = torch.tensor([[float(s.advantage)] for s in samples], dtype=dt, device=policy.device)
    old = ref = None
    with torch.no_grad(), policy.training_mode():
        if need_old:
            old = completion_logprobs(policy, batch)[0].detach()
        if loss.kl_beta > 0:
            ref = completion_logprobs(policy, batch, reference=True)[0].detach()
    rollout = batch.grid([s.rollout_logprobs for s in samples], dt) if loss.rollout_is_cap > 0 else None
    return MicroBatch(batch, mask, adv, old, ref, rollout, loss.rollout_is_cap, weights[:, weights.shape[1] - batch.width :])


def prepare_step(policy, samples: Sequence[Sample], loss: ResolvedLoss, mini_batches: int, micro_batch_size: int, epochs: int = 1) -> PreparedStep:
    """Stage 1: mini-batches of micro-batches with everything that stays fixed during the step."""
    dt = compute_dtype(policy.dtype)
    parts = min(mini_batches, len(samples))
    need_old = epochs * parts > 1
    out: List[List[MicroBatch]] = []
    for mb in split_contiguous(samples, parts):
        width = max(len(s.token_ids) for s in mb)
        grid = torch.tensor([[0.0] * (width - len(s.token_ids)) + _sample_mask(s, loss) for s in mb], dtype=dt).reshape(len(mb), width)
        weights = aggregation_weights(grid, loss.aggregation, loss.max_completion_length).to(policy.device)
        size = micro_batch_size if micro_batch_size > 0 else len(mb)
        micro = []
        for k in range(0, len(mb), size):
            micro.append(_micro_batch(policy, mb[k : k + size], weights[k : k + size], loss, dt, need_old))
        out.append(micro)
    n_tokens = sum(int(sum(_sample_mask(s, loss))) for s in samples)
    n_masked = sum(1 for s in samples if loss.mask_truncated and s.truncated)
    adv_mean = sum(float(s.advantage) for s in samples) / len(samples) if samples else 0.0
    return PreparedStep(out, n_tokens, n_masked, adv_mean)


def clip_grad_norm(params: Sequence[torch.nn.Parameter], max_norm: float) -> float:
    """Global L2 norm of the gradients (before clipping); scales them by `max_norm / (norm + 1e-6)`
    when the norm exceeds `max_norm` (as the embedded learner and `torch.nn.utils.clip_grad_norm_`).
    Norms accumulate in float64 on the CPU (as the embedded learner) and float32 on accelerators, where
    a float64 copy of every gradient costs more than the rest of the clip. One host sync: the norm."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    acc = torch.float64 if grads[0].device.type == "cpu" else torch.float32
    norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, dtype=acc) for g in grads])))
    if norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        if hasattr(torch, "_foreach_mul_"):
            torch._foreach_mul_(grads, scale)
        else:
            for g in grads:
                g.mul_(scale)
    return norm


def _evaluate(policy, micro: MicroBatch, cfg: ObjectiveConfig, stats: StepMetrics) -> None:
    """Forward + backward of one micro-batch (gradients accumulate), and its statistics."""
    with policy.training_mode():
        lp, entropy = completion_logprobs(policy, micro.batch, with_entropy=True)
        old, ref, is_w = micro.constants(lp)
        loss, terms, kl = token_objective(lp, old, micro.advantage, micro.weights, cfg, ref, is_w)
        loss.backward()
    with torch.no_grad():
        # Sums stay on the device (no host sync per micro-batch); `StepMetrics.flush` reads them once.
        active = micro.mask > 0
        zero = torch.zeros((), dtype=torch.float64, device=lp.device)

        def total(x: torch.Tensor) -> torch.Tensor:
            return torch.where(active, x.double(), zero).sum()  # padding cells may hold anything

        log_ratio = (lp.detach() - old).double()
        stats.add(
            loss_sum=loss.detach().double(),
            token_evals=active.sum().double(),
            clipped=(terms.clipped & active).sum().double(),
            clipped_low=(terms.clipped_low & active).sum().double(),
            clipped_high=(terms.clipped_high & active).sum().double(),
            dual_clipped=(terms.dual_clipped & active).sum().double(),
            kl_ref_sum=total(kl) if kl is not None else zero,
            approx_kl_sum=total(torch.expm1(log_ratio) - log_ratio),
            entropy_sum=total(entropy),
            is_weight_sum=total(is_w) if is_w is not None else active.sum().double(),
        )


def run_optimizer_steps(policy, prepared: PreparedStep, cfg: ObjectiveConfig, optimizer, max_grad_norm: float, epochs: int) -> StepMetrics:
    """Stage 2: `epochs × mini-batches` optimizer steps with gradient accumulation over micro-batches.
    A step whose gradient norm is not finite is skipped (counted in `nNonFiniteGradSteps`)."""
    stats = StepMetrics()
    params = policy.trainable_parameters()
    for _ in range(epochs):
        for mb in prepared.mini_batches:
            optimizer.zero_grad(set_to_none=True)
            for micro in mb:
                _evaluate(policy, micro, cfg, stats)
            norm = clip_grad_norm(params, max_grad_norm)
            if torch.isfinite(torch.tensor(norm)):
                optimizer.step()
            else:
                stats.non_finite_steps += 1
            optimizer.zero_grad(set_to_none=True)
            stats.evals += 1
            stats.grad_norm_sum += norm
            stats.grad_norm_max = max(stats.grad_norm_max, norm)
    stats.flush()
    return stats


def step_metrics(stats: StepMetrics, prepared: PreparedStep, n_samples: int, n_dropped: int, lr: float) -> Dict[str, float]:
    """Stage 3: the metrics of `TrainStepMetrics` (means per active token and per optimizer step)."""
    te = stats.token_evals

    def per_token(x: float) -> float:
        return x / te if te > 0 else 0.0

    return {
        "loss": stats.loss_sum / stats.evals if stats.evals else 0.0,
        "clipFraction": per_token(stats.clipped),
        "klRef": per_token(stats.kl_ref_sum),
        "approxKlOld": per_token(stats.approx_kl_sum),
        "entropy": per_token(stats.entropy_sum),
        "gradNorm": stats.grad_norm_sum / stats.evals if stats.evals else 0.0,
        "nTokens": float(prepared.n_tokens),
        "nSamples": float(n_samples),
        "nDroppedStale": float(n_dropped),
        "clipFractionLow": per_token(stats.clipped_low),
        "clipFractionHigh": per_token(stats.clipped_high),
        "dualClipFraction": per_token(stats.dual_clipped),
        "rolloutIsWeightMean": stats.is_weight_sum / te if te > 0 else 1.0,
        "gradNormMax": stats.grad_norm_max,
        "nOptimizerSteps": float(stats.evals),
        "nMaskedTruncated": float(prepared.n_masked_truncated),
        "advantageMean": prepared.advantage_mean,
        "lr": float(lr),
        "nNonFiniteGradSteps": float(stats.non_finite_steps),
    }
