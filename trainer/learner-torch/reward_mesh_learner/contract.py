"""The request and result types of the learner core (plain dataclasses, independent of protobuf).

They mirror the TypeScript contract (`trainer/src/learner/types.ts`) for text policies; `wire.py`
converts them to and from the `rewardmesh.v1` messages. Names of loss types, aggregations, CISPO
modes and optimizers are the TypeScript strings (`grpo`, `token-mean`, `two-sided`, `adam`, ...).
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

#: Loss families, named as TRL's `loss_type`.
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "cispo", "bnpo")
#: Loss aggregation modes, named as verl's `loss_agg_mode`.
LOSS_AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
#: CISPO clip semantics: verl (`two-sided`) or TRL (`upper-cap`).
CISPO_MODES = ("two-sided", "upper-cap")
#: Optimizers: AdamW (default) or plain SGD.
OPTIMIZERS = ("adam", "sgd")


def aggregation_for(loss_type: str) -> str:
    """The aggregation each loss type uses by default (`aggregationFor` in types.ts)."""
    if loss_type == "grpo":
        return "seq-mean-token-mean"
    if loss_type == "dr_grpo":
        return "seq-mean-token-sum-norm"
    return "token-mean"


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: `text` or chat `messages` (messages win). `vocabulary` is for fragment policies
    and is refused by this text policy."""

    prompt_id: str
    context_key: str = ""
    text: str = ""
    messages: Sequence[ChatMessage] = ()
    #: Most new tokens (0 = the request's `max_new_tokens`).
    max_tokens: int = 0
    #: An extra token id that ends a completion, like end-of-sequence.
    stop_token: Optional[int] = None
    vocabulary: Sequence[str] = ()
    separator: Optional[str] = None
    #: Fragment policies' continuation of a sequence; refused by this text policy (it continues a
    #: conversation through `text`).
    prefix_token_ids: Sequence[int] = ()


@dataclass(frozen=True)
class GenerateRequest:
    prompts: Sequence[PromptSpec]
    n: int
    temperature: Optional[float] = None
    seed: Optional[int] = None
    top_p: Optional[float] = None
    max_new_tokens: Optional[int] = None
    stop: Sequence[str] = ()


@dataclass
class Completion:
    prompt_id: str
    context_key: str
    index: int
    token_ids: List[int]
    text: str
    logprobs: List[float]
    policy_version: int
    truncated: bool
    #: `stop` (end-of-sequence, the prompt's stop token or a stop string) or `length`.
    finish_reason: str
    prompt_token_ids: List[int]
    #: The stop string (one of the request's `stop`, as given) that ended the completion — `text` is
    #: cut before it — or "" (end-of-sequence, the prompt's stop token, the budget). Several in the
    #: text: the earliest occurrence, of those starting there the shortest (`sampling.first_stop`).
    #: Required (no default): every completion says, so that none reaches the wire unset.
    matched_stop: str


@dataclass(frozen=True)
class Sample:
    """One completion to learn from, with its precomputed advantage."""

    sample_id: str
    token_ids: Sequence[int]
    rollout_logprobs: Sequence[float]
    advantage: float
    prompt_token_ids: Sequence[int]
    policy_version: int = 0
    group_id: str = ""
    context_key: str = ""
    #: 0 (fragment policies only) or this policy's vocabulary size.
    vocabulary_size: int = 0
    #: 0/1 per token; None = every token counts.
    loss_mask: Optional[Sequence[int]] = None
    truncated: bool = False


@dataclass(frozen=True)
class LossConfig:
    loss_type: str
    eps_low: float
    eps_high: float
    kl_beta: float = 0.0
    max_completion_length: float = 0
    dual_clip_c: float = 0.0
    mask_truncated: bool = False
    cispo_mode: Optional[str] = None
    aggregation: Optional[str] = None
    rollout_is_cap: float = 0.0


@dataclass(frozen=True)
class OptimConfig:
    lr: float
    max_grad_norm: Optional[float] = None
    epochs: Optional[int] = None
    mini_batches: Optional[int] = None
    optimizer: Optional[str] = None


@dataclass(frozen=True)
class TrainStepRequest:
    step: int
    idempotency_key: str
    samples: Sequence[Sample]
    loss: LossConfig
    optim: OptimConfig
    max_staleness: Optional[int] = None


@dataclass
class TrainStepResult:
    policy_version: int
    metrics: Dict[str, float]
    replayed: bool = False


@dataclass(frozen=True)
class ScoredSequence:
    """A completion to score with `compute_logprobs`."""

    sequence_id: str
    prompt_token_ids: Sequence[int]
    token_ids: Sequence[int]
    context_key: str = ""
    vocabulary_size: int = 0


@dataclass(frozen=True)
class LearnerInfo:
    name: str
    kind: str
    description: str
    model: str
    architecture: str
    parameter_count: int
    tokenizer: str
    dtype: str
    device: str
    vocab_size: int
    max_context: int
    policy_version: int

    def as_dict(self) -> Dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class StepMetrics:
    """Running sums of one train step (means are taken per active token and per optimizer step)."""

    loss_sum: float = 0.0
    grad_norm_sum: float = 0.0
    grad_norm_max: float = 0.0
    evals: int = 0
    token_evals: int = 0
    clipped: int = 0
    clipped_low: int = 0
    clipped_high: int = 0
    dual_clipped: int = 0
    kl_ref_sum: float = 0.0
    approx_kl_sum: float = 0.0
    entropy_sum: float = 0.0
    is_weight_sum: float = 0.0
    non_finite_steps: int = 0
    #: Device-side sums not yet read (`add`), by field name; `flush` adds them to the fields above.
    pending: Dict[str, object] = field(default_factory=dict)

    def add(self, **sums) -> None:
        """Adds 0-d tensors (no host sync) to the pending sums."""
        for k, v in sums.items():
            self.pending[k] = v if k not in self.pending else self.pending[k] + v

    def flush(self) -> None:
        """Reads the pending sums in one host transfer and adds them to the fields."""
        if not self.pending:
            return
        import torch  # contract.py stays importable without torch

        names = list(self.pending)
        values = torch.stack([self.pending[k] for k in names]).cpu().tolist()
        for k, v in zip(names, values):
            setattr(self, k, getattr(self, k) + (int(round(v)) if isinstance(getattr(self, k), int) else v))
        self.pending = {}
