"""Conversions between the `rewardmesh.v1` protobuf messages and the learner's dataclasses
(`trainer/src/learner/wire.ts` for Python). Unset `optional` fields become None; an empty
`loss_mask` means "every token counts"; enum values become the TypeScript names.
"""

from typing import List, Optional

from .contract import (
    ChatMessage,
    Completion,
    GenerateRequest,
    LearnerInfo,
    LossConfig,
    OptimConfig,
    PromptSpec,
    Sample,
    ScoredSequence,
    TrainStepRequest,
    TrainStepResult,
)
from .errors import LearnerInputError
from .proto import learner_pb2

_LOSS_TYPES = {1: "grpo", 2: "dr_grpo", 3: "dapo", 4: "cispo", 5: "bnpo"}
_AGGREGATIONS = {1: "token-mean", 2: "seq-mean-token-mean", 3: "seq-mean-token-sum", 4: "seq-mean-token-sum-norm"}
_CISPO_MODES = {1: "two-sided", 2: "upper-cap"}
_OPTIMIZERS = {1: "adam", 2: "sgd"}


def _opt(msg, name: str):
    return getattr(msg, name) if msg.HasField(name) else None


def _enum(value: int, names: dict, field: str, enum_type) -> Optional[str]:
    """0 (UNSPECIFIED) → None (the default); a known value → its name; anything else is an error."""
    if value == 0:
        return None
    if value not in names:
        raise LearnerInputError(field, f"is {value}; expected one of {', '.join(enum_type.keys())}")
    return names[value]


def decode_generate_request(req) -> GenerateRequest:
    prompts = [
        PromptSpec(
            prompt_id=p.prompt_id,
            context_key=p.context_key,
            text=p.text,
            messages=tuple(ChatMessage(m.role, m.content) for m in p.messages),
            max_tokens=p.max_tokens,
            stop_token=_opt(p, "stop_token"),
            vocabulary=tuple(p.vocabulary),
            separator=_opt(p, "separator"),
            prefix_token_ids=tuple(p.prefix_token_ids),
        )
        for p in req.prompts
    ]
    return GenerateRequest(
        prompts=prompts,
        n=req.n,
        temperature=_opt(req, "temperature"),
        seed=_opt(req, "seed"),
        top_p=_opt(req, "top_p"),
        max_new_tokens=_opt(req, "max_new_tokens"),
        stop=tuple(req.stop),
    )


def encode_completions(completions: List[Completion]):
    return learner_pb2.LearnerGenerateResponse(
        completions=[
            learner_pb2.LearnerCompletion(
                prompt_id=c.prompt_id,
                context_key=c.context_key,
                index=c.index,
                token_ids=c.token_ids,
                text=c.text,
                logprobs=c.logprobs,
                policy_version=c.policy_version,
                truncated=c.truncated,
                finish_reason=c.finish_reason,
                prompt_token_ids=c.prompt_token_ids,
                # Always set ("" included): unset says "a learner that predates matched_stop".
                matched_stop=c.matched_stop,
            )
            for c in completions
        ]
    )


def decode_loss(header) -> LossConfig:
    if not header.HasField("loss"):
        raise LearnerInputError("loss", "is missing from the header")
    loss = header.loss
    if loss.loss_type not in _LOSS_TYPES:
        shown = "UNSPECIFIED" if loss.loss_type == 0 else str(loss.loss_type)
        raise LearnerInputError("loss.lossType", f"is {shown}; expected one of {', '.join(_LOSS_TYPES.values())}")
    return LossConfig(
        loss_type=_LOSS_TYPES[loss.loss_type],
        eps_low=loss.eps_low,
        eps_high=loss.eps_high,
        kl_beta=loss.kl_beta,
        max_completion_length=loss.max_completion_length,
        dual_clip_c=loss.dual_clip_c,
        mask_truncated=loss.mask_truncated,
        cispo_mode=_enum(loss.cispo_mode, _CISPO_MODES, "loss.cispoMode", learner_pb2.LearnerCispoMode),
        aggregation=_enum(loss.aggregation, _AGGREGATIONS, "loss.aggregation", learner_pb2.LearnerLossAggregation),
        rollout_is_cap=loss.rollout_is_cap,
    )


def decode_optim(header) -> OptimConfig:
    if not header.HasField("optim"):
        raise LearnerInputError("optim", "is missing from the header")
    o = header.optim
    return OptimConfig(
        lr=o.lr,
        max_grad_norm=_opt(o, "max_grad_norm"),
        epochs=_opt(o, "epochs"),
        mini_batches=_opt(o, "mini_batches"),
        optimizer=_enum(o.optimizer, _OPTIMIZERS, "optim.optimizer", learner_pb2.LearnerOptimizer),
    )


def decode_sample(s) -> Sample:
    return Sample(
        sample_id=s.sample_id,
        group_id=s.group_id,
        context_key=s.context_key,
        vocabulary_size=s.vocabulary_size,
        prompt_token_ids=tuple(s.prompt_token_ids),
        token_ids=tuple(s.token_ids),
        rollout_logprobs=tuple(s.rollout_logprobs),
        loss_mask=tuple(s.loss_mask) if len(s.loss_mask) > 0 else None,
        advantage=s.advantage,
        policy_version=s.policy_version,
        truncated=s.truncated,
    )


def decode_train_step(header, samples: List[Sample]) -> TrainStepRequest:
    return TrainStepRequest(
        step=header.step,
        idempotency_key=header.idempotency_key,
        samples=samples,
        loss=decode_loss(header),
        optim=decode_optim(header),
        max_staleness=_opt(header, "max_staleness"),
    )


def encode_train_step_result(res: TrainStepResult):
    return learner_pb2.LearnerTrainStepResponse(
        policy_version=res.policy_version, metrics={k: float(v) for k, v in res.metrics.items()}, replayed=res.replayed
    )


def decode_sequences(req) -> List[ScoredSequence]:
    return [
        ScoredSequence(
            sequence_id=q.sequence_id,
            context_key=q.context_key,
            vocabulary_size=q.vocabulary_size,
            prompt_token_ids=tuple(q.prompt_token_ids),
            token_ids=tuple(q.token_ids),
        )
        for q in req.sequences
    ]


def encode_info(info: LearnerInfo):
    return learner_pb2.LearnerInfoResponse(
        name=info.name,
        policy_version=info.policy_version,
        kind=info.kind,
        description=info.description,
        model=info.model,
        architecture=info.architecture,
        parameter_count=info.parameter_count,
        tokenizer=info.tokenizer,
        dtype=info.dtype,
        device=info.device,
        vocab_size=info.vocab_size,
        max_context=info.max_context,
    )
