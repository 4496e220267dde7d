"""Batched autoregressive sampling with a key/value cache.

Every row (one completion of one prompt) is left-padded into one batch, prefilled once, then decoded a
token at a time. The next token is drawn by inverse-CDF sampling from uniforms of a CPU
`torch.Generator` (so that a seed gives the same completions on any device), from the tempered and
nucleus-truncated distribution; the returned behaviour logprob is that of the distribution actually
sampled from (tempered, truncated, renormalised). Nothing here builds an autograd graph.
"""

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Sequence, Tuple

import torch

from .policy import compute_dtype


@dataclass(frozen=True)
class RowSpec:
    """One completion to sample: its prompt ids, its token budget and the ids that end it."""

    prompt_ids: Sequence[int]
    max_new: int
    stop_ids: FrozenSet[int]


@dataclass
class RowResult:
    token_ids: List[int]
    logprobs: List[float]
    text: str
    finish_reason: str  # "stop" or "length"
    #: The stop string that ended the row ("" for end-of-sequence / a stop token / the budget);
    #: required, as `Completion.matched_stop`.
    matched_stop: str


def pick_tokens(logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Samples one token per row of `logits` [B, V] by inverse CDF at `uniforms` [B] in [0, 1).

    Returns (token ids [B], logprobs [B] float64) where the logprob is that of the tempered,
    nucleus-truncated (smallest set of tokens whose probability reaches `top_p`) and renormalised
    distribution. With `top_p` = 1 it is exactly `log_softmax(logits / temperature)`.
    """
    lp = torch.log_softmax(logits.to(compute_dtype(logits.dtype)) / temperature, dim=-1)
    sorted_lp, order = torch.sort(lp, dim=-1, descending=True, stable=True)
    p = sorted_lp.double().exp()
    keep = p > 0
    if top_p < 1.0:
        keep &= (p.cumsum(-1) - p) < top_p
    keep[:, 0] = True
    kept = p * keep
    mass = kept.sum(-1)
    cdf = kept.cumsum(-1)
    x = (uniforms.to(cdf.device) * mass).unsqueeze(-1)
    j = torch.searchsorted(cdf, x, right=True).squeeze(-1)
    j = torch.minimum(j, keep.sum(-1) - 1)
    token = order.gather(-1, j.unsqueeze(-1)).squeeze(-1)
    logprob = sorted_lp.gather(-1, j.unsqueeze(-1)).squeeze(-1).double()
    if top_p < 1.0:
        logprob = logprob - mass.log()
    return token, logprob


class _RowState:
    """Progress of one row while decoding."""

    def __init__(self, spec: RowSpec):
        self.spec = spec
        self.tokens: List[int] = []
        self.logprobs: List[float] = []
        self.finish: Optional[str] = None
        self.cut: Optional[int] = None  # text index of a stop string
        self.matched: str = ""  # that stop string


def first_stop(text: str, stops: Sequence[str]) -> Optional[Tuple[int, str]]:
    """The stop string the text is cut at and where: the earliest occurrence of any of `stops`, and of
    those starting there the shortest (the match that was complete first); None when none occurs. The
    embedded TypeScript learner (`firstStop` in trainer/src/learner/embedded.ts) applies the same rule.
    vLLM and SGLang differ when one token completes several: they take the first in `stops` order."""
    best: Optional[Tuple[int, str]] = None
    for s in stops:
        i = text.find(s)
        if i >= 0 and (best is None or (i, len(s)) < (best[0], len(best[1]))):
            best = (i, s)
    return best


def _find_stop(tokenizer, tokens: List[int], stops: Sequence[str], window: int) -> Optional[Tuple[int, str]]:
    """(index in the completion's text, stop string) of the stop string the text is cut at
    (`first_stop`), or None. A cheap check on the decoded tail first, then the full text (tokens
    may decode to partial characters)."""
    tail = tokenizer.decode(tokens[-window:])
    if not any(s in tail for s in stops):
        return None
    return first_stop(tokenizer.decode(tokens), stops)


def _advance(state: _RowState, token: int, logprob: float, tokenizer, stops, window) -> None:
    state.tokens.append(token)
    state.logprobs.append(logprob)
    if token in state.spec.stop_ids:
        state.finish = "stop"
    elif stops and (hit := _find_stop(tokenizer, state.tokens, stops, window)) is not None:
        state.finish, (state.cut, state.matched) = "stop", hit
    elif len(state.tokens) >= state.spec.max_new:
        state.finish = "length"


def _result(state: _RowState, tokenizer) -> RowResult:
    if state.cut is not None:
        text = tokenizer.decode(state.tokens)[: state.cut]
    elif state.finish == "stop":
        text = tokenizer.decode(state.tokens[:-1])
    else:
        text = tokenizer.decode(state.tokens)
    return RowResult(state.tokens, state.logprobs, text, state.finish or "length", state.matched)


@torch.no_grad()
def _sample_chunk(policy, specs: Sequence[RowSpec], temperature, top_p, stops, generator) -> List[RowResult]:
    """Samples one batch of rows (prefill, then cached decoding until every row has finished)."""
    dev, b = policy.device, len(specs)
    width = max(len(s.prompt_ids) for s in specs)
    ids = torch.full((b, width), policy.pad_id, dtype=torch.long)
    mask = torch.zeros((b, width), dtype=torch.long)
    for i, s in enumerate(specs):
        ids[i, width - len(s.prompt_ids) :] = torch.tensor(list(s.prompt_ids), dtype=torch.long)
        mask[i, width - len(s.prompt_ids) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    out = policy.forward(ids, mask, pos, use_cache=True, logits_to_keep=1)
    next_pos = pos[:, -1] + 1
    states = [_RowState(s) for s in specs]
    window = 4 * max((len(s) for s in stops), default=0) + 8
    limit = (policy.max_context - 1) if policy.max_context else None
    for _ in range(max(s.max_new for s in specs)):
        u = torch.rand(b, generator=generator, dtype=torch.float64)
        tok, lp = pick_tokens(out.logits[:, -1, :], temperature, top_p, u)
        live = [st.finish is None for st in states]
        for st, t, l, alive in zip(states, tok.tolist(), lp.tolist(), live):
            if alive:
                _advance(st, t, l, policy.tokenizer, stops, window)
        if all(st.finish is not None for st in states):
            break
        alive_t = torch.tensor(live, device=dev)
        feed = torch.where(alive_t, tok, torch.full_like(tok, policy.pad_id))
        mask = torch.cat([mask, alive_t.long().unsqueeze(-1)], dim=-1)
        step_pos = next_pos if limit is None else next_pos.clamp(max=limit)
        out = policy.forward(feed.unsqueeze(-1), mask, step_pos.unsqueeze(-1), past_key_values=out.past_key_values, use_cache=True)
        next_pos = next_pos + 1
    return [_result(st, policy.tokenizer) for st in states]


def sample_rows(
    policy,
    specs: Sequence[RowSpec],
    temperature: float,
    top_p: float,
    stops: Sequence[str],
    generator: torch.Generator,
    max_batch: int = 0,
) -> List[RowResult]:
    """Samples every row, in chunks of at most `max_batch` rows (0 = all at once), in order."""
    out: List[RowResult] = []
    step = max_batch if max_batch > 0 else max(1, len(specs))
    for k in range(0, len(specs), step):
        out.extend(_sample_chunk(policy, specs[k : k + step], temperature, top_p, tuple(stops), generator))
    return out
