"""Validation of learner requests, with the field paths and wording of `trainer/src/learner/validate.ts`.

Every problem is a `LearnerInputError` whose field is the camelCase JSON-style path
(`samples[3].tokenIds[2]`) and whose message names the sample or prompt id. Checks against the
learner's state (vocabulary, context, policy version) take them as arguments. Nothing here changes
any state, so a refused request changes nothing.
"""

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .contract import (
    CISPO_MODES,
    LOSS_AGGREGATIONS,
    LOSS_TYPES,
    OPTIMIZERS,
    GenerateRequest,
    LossConfig,
    OptimConfig,
    Sample,
    ScoredSequence,
    TrainStepRequest,
    aggregation_for,
)
from .errors import LearnerInputError, describe, js_number

#: Largest `n` of a generate request.
MAX_COMPLETIONS_PER_PROMPT = 4096
#: Largest `max_tokens` / `max_new_tokens`.
MAX_GENERATE_TOKENS = 32768
#: Largest `epochs` and `mini_batches`.
MAX_INNER_STEPS = 1000
#: Longest idempotency key.
MAX_KEY_LENGTH = 512
#: Default `max_new_tokens`.
DEFAULT_MAX_NEW_TOKENS = 64
#: Largest safe integer of JavaScript (bounds of integer fields).
MAX_SAFE_INTEGER = 2**53 - 1


def fail(field: str, problem: str):
    raise LearnerInputError(field, problem)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_string(v, field: str, suffix: str = "", allow_empty: bool = False) -> str:
    if not isinstance(v, str):
        fail(field, f"is {describe(v)}, not a string{suffix}")
    if not allow_empty and len(v) == 0:
        fail(field, f"is empty{suffix}")
    return v


def check_int(v, field: str, lo: int, hi: int, suffix: str = "") -> int:
    ok = _is_number(v) and not (isinstance(v, float) and not v.is_integer()) and lo <= v <= hi
    if not ok:
        fail(field, f"is {describe(v)}, not an integer in [{lo}, {hi}]{suffix}")
    return int(v)


def check_number(v, field: str, ok, what: str, suffix: str = "") -> float:
    if not _is_number(v) or (isinstance(v, float) and math.isnan(v)):
        fail(field, f"is {describe(v)}, not a number{suffix}")
    if not ok(v):
        fail(field, f"is {js_number(v)}; it must be {what}{suffix}")
    return float(v)


def check_enum(v, field: str, allowed: Sequence[str]) -> str:
    if not isinstance(v, str) or v not in allowed:
        fail(field, f"is {describe(v)}; expected one of {', '.join(allowed)}")
    return v


def _finite(x) -> bool:
    return math.isfinite(x)


@dataclass(frozen=True)
class ResolvedGenerate:
    """A generate request's settings with every default filled in."""

    temperature: float
    top_p: float
    max_new_tokens: int
    seed: Optional[int]
    stop: Sequence[str]


def validate_generate_request(req: GenerateRequest) -> ResolvedGenerate:
    """Stateless checks of a generate request (prompt lengths are checked once tokenized)."""
    check_int(req.n, "n", 1, MAX_COMPLETIONS_PER_PROMPT)
    temperature = 1.0
    if req.temperature is not None:
        temperature = check_number(req.temperature, "temperature", lambda x: x > 0 and _finite(x), "finite and > 0")
    top_p = 1.0
    if req.top_p is not None:
        top_p = check_number(req.top_p, "topP", lambda x: 0 < x <= 1, "in (0, 1]")
    max_new = DEFAULT_MAX_NEW_TOKENS
    if req.max_new_tokens is not None:
        max_new = check_int(req.max_new_tokens, "maxNewTokens", 1, MAX_GENERATE_TOKENS)
    seed = None if req.seed is None else check_int(req.seed, "seed", 0, 0xFFFFFFFF)
    for k, s in enumerate(req.stop):
        check_string(s, f"stop[{k}]")
    for i, p in enumerate(req.prompts):
        f = f"prompts[{i}]"
        pid = check_string(p.prompt_id, f"{f}.promptId")
        sfx = f" (prompt '{pid}')"
        check_string(p.context_key, f"{f}.contextKey", sfx, allow_empty=True)
        if len(p.vocabulary) > 0:
            fail(
                f"{f}.vocabulary",
                f"has {len(p.vocabulary)} fragments, but this learner is a text policy: "
                f"send the prompt as text or messages{sfx}",
            )
        if len(p.prefix_token_ids) > 0:
            fail(
                f"{f}.prefixTokenIds",
                f"has {len(p.prefix_token_ids)} tokens, but this learner is a text policy: continue a "
                f"conversation by sending all of it as text{sfx}",
            )
        if len(p.messages) == 0 and not p.text:
            fail(f"{f}.text", f"is empty and the prompt has no messages; a text policy needs text or messages{sfx}")
        for k, m in enumerate(p.messages):
            check_string(m.role, f"{f}.messages[{k}].role", sfx)
            check_string(m.content, f"{f}.messages[{k}].content", sfx, allow_empty=True)
        if p.max_tokens:
            check_int(p.max_tokens, f"{f}.maxTokens", 1, MAX_GENERATE_TOKENS, sfx)
    return ResolvedGenerate(temperature, top_p, max_new, seed, tuple(req.stop))


@dataclass(frozen=True)
class ResolvedLoss:
    """A loss configuration with every default filled in."""

    loss_type: str
    aggregation: str
    eps_low: float
    eps_high: float
    dual_clip_c: float
    kl_beta: float
    max_completion_length: float
    mask_truncated: bool
    cispo_mode: str
    rollout_is_cap: float


def resolve_loss_config(loss: Optional[LossConfig], field: str = "loss") -> ResolvedLoss:
    """Checks a loss configuration and fills in its defaults (`resolveLossConfig`)."""
    if loss is None:
        fail(field, "is missing from the header")
    loss_type = check_enum(loss.loss_type, f"{field}.lossType", LOSS_TYPES)
    aggregation = (
        aggregation_for(loss_type)
        if loss.aggregation is None
        else check_enum(loss.aggregation, f"{field}.aggregation", LOSS_AGGREGATIONS)
    )
    cispo_mode = (
        "two-sided" if loss.cispo_mode is None else check_enum(loss.cispo_mode, f"{field}.cispoMode", CISPO_MODES)
    )
    eps_low = check_number(loss.eps_low, f"{field}.epsLow", lambda x: 0 <= x < 1, "in [0, 1)")
    eps_high = check_number(loss.eps_high, f"{field}.epsHigh", lambda x: x >= 0 and _finite(x), "finite and ≥ 0")
    if loss_type == "cispo" and cispo_mode == "upper-cap" and eps_high < 1:
        fail(
            f"{field}.epsHigh",
            f"is {js_number(eps_high)}; with cispoMode 'upper-cap' it is an absolute ratio cap and must be ≥ 1 "
            "(TRL recommends 5)",
        )
    dual = 0.0
    if loss.dual_clip_c:
        dual = check_number(
            loss.dual_clip_c, f"{field}.dualClipC", lambda x: x > 1 and _finite(x), "0 (off) or finite and > 1"
        )
    kl_beta = check_number(loss.kl_beta, f"{field}.klBeta", lambda x: x >= 0 and _finite(x), "finite and ≥ 0")
    lmax = check_number(
        loss.max_completion_length, f"{field}.maxCompletionLength", lambda x: x >= 0 and _finite(x), "finite and ≥ 0"
    )
    if aggregation == "seq-mean-token-sum-norm":
        lmax = check_int(lmax, f"{field}.maxCompletionLength", 1, MAX_SAFE_INTEGER, f" (the {aggregation} normaliser)")
    cap = check_number(
        loss.rollout_is_cap, f"{field}.rolloutIsCap", lambda x: x >= 0 and _finite(x), "0 (off) or finite and > 0"
    )
    return ResolvedLoss(
        loss_type, aggregation, eps_low, eps_high, dual, kl_beta, lmax, bool(loss.mask_truncated), cispo_mode, cap
    )


@dataclass(frozen=True)
class ResolvedOptim:
    """An optimizer configuration with every default filled in."""

    lr: float
    max_grad_norm: float
    epochs: int
    mini_batches: int
    optimizer: str


def resolve_optim_config(optim: Optional[OptimConfig], field: str = "optim") -> ResolvedOptim:
    """Checks an optimizer configuration and fills in its defaults (`resolveOptimConfig`)."""
    if optim is None:
        fail(field, "is missing from the header")
    lr = check_number(optim.lr, f"{field}.lr", lambda x: x > 0 and _finite(x), "finite and > 0")
    mgn = 1.0
    if optim.max_grad_norm is not None:
        mgn = check_number(optim.max_grad_norm, f"{field}.maxGradNorm", lambda x: x > 0, "> 0 (Infinity = no clipping)")
    epochs = 1 if optim.epochs is None else check_int(optim.epochs, f"{field}.epochs", 1, MAX_INNER_STEPS)
    mbs = 1 if optim.mini_batches is None else check_int(optim.mini_batches, f"{field}.miniBatches", 1, MAX_INNER_STEPS)
    name = "adam" if optim.optimizer is None else check_enum(optim.optimizer, f"{field}.optimizer", OPTIMIZERS)
    return ResolvedOptim(lr, mgn, epochs, mbs, name)


@dataclass(frozen=True)
class PolicyLimits:
    """What validation needs to know about the policy."""

    vocab_size: int
    max_context: int
    policy_version: int = 0


def check_token_ids(ids, field: str, vocab: int, suffix: str, allow_empty: bool = False, what: str = "") -> None:
    """Every id an integer in [0, vocab); non-empty unless `allow_empty`."""
    if len(ids) == 0 and not allow_empty:
        fail(field, f"is empty{what}{suffix}")
    for t, a in enumerate(ids):
        if not _is_number(a) or isinstance(a, float) or not 0 <= a < vocab:
            fail(f"{field}[{t}]", f"is {describe(a)}, outside the vocabulary [0, {vocab}){suffix}")


def _check_vocabulary_size(v, field: str, vocab: int, suffix: str) -> None:
    if v not in (0, vocab):
        fail(field, f"is {describe(v)}, but this text policy's vocabulary has {vocab} tokens (send 0 or {vocab}){suffix}")


def _check_length(prompt_len: int, n: int, field: str, limits: PolicyLimits, suffix: str) -> None:
    if limits.max_context and prompt_len + n > limits.max_context:
        fail(
            field,
            f"has {prompt_len} prompt + {n} completion tokens = {prompt_len + n}, longer than the model's "
            f"context of {limits.max_context}{suffix}",
        )


def check_sample(s: Sample, i: int, limits: PolicyLimits) -> str:
    """Checks one sample (order and wording of `checkSample`); returns its id."""
    f = f"samples[{i}]"
    sid = check_string(s.sample_id, f"{f}.sampleId")
    sfx = f" (sample '{sid}')"
    check_string(s.group_id, f"{f}.groupId", sfx, allow_empty=True)
    check_string(s.context_key, f"{f}.contextKey", sfx, allow_empty=True)
    _check_vocabulary_size(s.vocabulary_size, f"{f}.vocabularySize", limits.vocab_size, sfx)
    need = "; a text policy needs the prompt's token ids (Completion.promptTokenIds)"
    check_token_ids(s.prompt_token_ids, f"{f}.promptTokenIds", limits.vocab_size, sfx, what=need)
    check_token_ids(s.token_ids, f"{f}.tokenIds", limits.vocab_size, sfx)
    n = len(s.token_ids)
    _check_length(len(s.prompt_token_ids), n, f, limits, sfx)
    lps = s.rollout_logprobs
    if len(lps) != n:
        fail(f"{f}.rolloutLogprobs", f"has {len(lps)} entries but tokenIds has {n}{sfx}")
    for t, x in enumerate(lps):
        if not _is_number(x) or not math.isfinite(x) or x > 1e-6:
            fail(f"{f}.rolloutLogprobs[{t}]", f"is {describe(x)}; a logprob must be finite and ≤ 0{sfx}")
    if s.loss_mask is not None:
        m = s.loss_mask
        if len(m) != n:
            fail(f"{f}.lossMask", f"has {len(m)} entries but tokenIds has {n}{sfx}")
        for t, x in enumerate(m):
            if x not in (0, 1) or isinstance(x, bool):
                fail(f"{f}.lossMask[{t}]", f"is {describe(x)}, not 0 or 1{sfx}")
    if not _is_number(s.advantage) or not math.isfinite(s.advantage):
        fail(f"{f}.advantage", f"is {describe(s.advantage)}, not a finite number{sfx}")
    pv = check_int(s.policy_version, f"{f}.policyVersion", 0, MAX_SAFE_INTEGER, sfx)
    if pv > limits.policy_version:
        fail(f"{f}.policyVersion", f"is {pv}, ahead of the learner's policy version {limits.policy_version}{sfx}")
    if not isinstance(s.truncated, bool):
        fail(f"{f}.truncated", f"is {describe(s.truncated)}, not a boolean{sfx}")
    return sid


@dataclass(frozen=True)
class ResolvedTrainStep:
    loss: ResolvedLoss
    optim: ResolvedOptim
    max_staleness: Optional[int]


def validate_train_step(req: TrainStepRequest, limits: PolicyLimits) -> ResolvedTrainStep:
    """Checks a train-step request against the policy and resolves its configuration."""
    check_int(req.step, "step", 0, MAX_SAFE_INTEGER)
    key = check_string(req.idempotency_key, "idempotencyKey")
    if len(key) > MAX_KEY_LENGTH:
        fail("idempotencyKey", f"has {len(key)} characters; at most {MAX_KEY_LENGTH}")
    loss = resolve_loss_config(req.loss)
    optim = resolve_optim_config(req.optim)
    stale = None if req.max_staleness is None else check_int(req.max_staleness, "maxStaleness", 0, MAX_SAFE_INTEGER)
    if len(req.samples) == 0:
        fail("samples", "is empty")
    ids = {}
    for i, s in enumerate(req.samples):
        sid = check_sample(s, i, limits)
        if sid in ids:
            fail(f"samples[{i}].sampleId", f"'{sid}' repeats samples[{ids[sid]}].sampleId")
        ids[sid] = i
    return ResolvedTrainStep(loss, optim, stale)


def validate_sequences(seqs: Sequence[ScoredSequence], limits: PolicyLimits) -> None:
    """Checks the sequences of a ComputeLogprobs request (empty completions are allowed)."""
    for i, q in enumerate(seqs):
        f = f"sequences[{i}]"
        sid = check_string(q.sequence_id, f"{f}.sequenceId", allow_empty=True)
        sfx = f" (sequence '{sid}')" if sid else ""
        _check_vocabulary_size(q.vocabulary_size, f"{f}.vocabularySize", limits.vocab_size, sfx)
        need = "; a text policy needs the prompt's token ids"
        check_token_ids(q.prompt_token_ids, f"{f}.promptTokenIds", limits.vocab_size, sfx, what=need)
        check_token_ids(q.token_ids, f"{f}.tokenIds", limits.vocab_size, sfx, allow_empty=True)
        _check_length(len(q.prompt_token_ids), len(q.token_ids), f, limits, sfx)
