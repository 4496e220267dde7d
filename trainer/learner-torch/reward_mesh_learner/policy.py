"""Policies: a model, its tokenizer and how to run, train, save and restore them.

`BuiltinPolicy` wraps the built-in `TinyCausalLM` and the byte tokenizer; `hf.HFPolicy` a Hugging Face
causal LM (optionally with a LoRA adapter). Both offer the same interface, which is all the learner
uses: `forward`, `reference_forward`, `trainable_parameters`, `training_mode`, `save` / `load_state`,
plus descriptive attributes for `Info`.
"""

import contextlib
import copy
import os
from typing import Dict, List, Optional

import torch
from torch import nn

from .errors import CheckpointError, PolicyLoadError
from .model import TinyCausalLM, build_builtin
from .tokenizer import ByteTokenizer

#: Names accepted by `--dtype`.
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def dtype_name(dtype: torch.dtype) -> str:
    """`torch.float32` → `float32`."""
    return str(dtype).replace("torch.", "")


def resolve_device(name: str) -> torch.device:
    """`auto` (CUDA when available, else CPU), `cpu`, `cuda` or `cuda:N`."""
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PolicyLoadError(f"--device {name}: CUDA is not available to this torch ({torch.__version__})")
        return torch.device("cuda:0" if name == "cuda" else name)
    if name == "cpu":
        return torch.device("cpu")
    raise PolicyLoadError(f"--device '{name}': expected auto, cpu, cuda or cuda:N")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype logprobs are computed in: float32 for half-precision models, else the model's."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


class BuiltinPolicy:
    """`builtin:<size>`: a randomly initialised `TinyCausalLM` over the byte tokenizer.

    The KL reference is a frozen copy of the weights at `freeze_reference()` (the learner calls it once
    the warm-up, if any, is done), kept on the same device.
    """

    kind = "builtin"

    def __init__(self, model_name: str, seed: int, device: torch.device, dtype: torch.dtype, gradient_checkpointing=False):
        self.model_name = model_name
        self.device = device
        self.dtype = dtype
        self.tokenizer = ByteTokenizer()
        self.model: TinyCausalLM = build_builtin(model_name, seed).to(device=device, dtype=dtype)
        self.model.gradient_checkpointing = gradient_checkpointing
        self.model.eval()
        self.reference: Optional[TinyCausalLM] = None
        self.vocab_size = self.model.config.vocab_size
        self.max_context = self.model.config.context
        self.pad_id = self.tokenizer.pad_id
        self.eos_ids = self.tokenizer.eos_ids
        self.architecture = self.model.architecture
        self.tokenizer_name = self.tokenizer.name

    def spec(self) -> Dict[str, object]:
        """What a checkpoint needs to rebuild this policy."""
        return {"kind": self.kind, "model": self.model_name, "dtype": dtype_name(self.dtype)}

    def describe(self) -> str:
        c = self.model.config
        return (
            f"A small randomly initialised transformer ({self.architecture}, {self.parameter_count():,} parameters, "
            f"pre-LayerNorm, learned positions, tied embeddings) over a byte-level tokenizer, trained with PyTorch "
            f"({dtype_name(self.dtype)} on {self.device}); a real autoregressive model with a {c.context}-token "
            "context, but not a pretrained LLM."
        )

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def trainable_parameters(self) -> List[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def forward(self, input_ids, attention_mask, position_ids, past_key_values=None, use_cache=False, logits_to_keep=0):
        return self.model(
            input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
            logits_to_keep=logits_to_keep,
        )

    def freeze_reference(self) -> None:
        """Snapshots the current weights as the frozen KL reference."""
        ref = copy.deepcopy(self.model)
        ref.gradient_checkpointing = False
        for p in ref.parameters():
            p.requires_grad_(False)
        self.reference = ref.eval()

    def has_reference(self) -> bool:
        return self.reference is not None

    @torch.no_grad()
    def reference_forward(self, input_ids, attention_mask, position_ids, logits_to_keep=0):
        if self.reference is None:
            raise RuntimeError("this policy keeps no reference model")
        return self.reference(
            input_ids, attention_mask=attention_mask, position_ids=position_ids, logits_to_keep=logits_to_keep
        )

    @contextlib.contextmanager
    def training_mode(self):
        """Train-mode forward passes (the built-in model has no dropout: a no-op kept for symmetry)."""
        yield

    def save(self, directory: str) -> None:
        """`model.pt` (and `reference.pt`) state dicts into `directory`."""
        torch.save(self.model.state_dict(), os.path.join(directory, "model.pt"))
        if self.reference is not None:
            torch.save(self.reference.state_dict(), os.path.join(directory, "reference.pt"))

    def load_state(self, directory: str) -> None:
        """Restores the weights (and the reference) written by `save`."""
        path = os.path.join(directory, "model.pt")
        try:
            self.model.load_state_dict(torch.load(path, map_location=self.device))
            ref_path = os.path.join(directory, "reference.pt")
            if os.path.exists(ref_path):
                self.freeze_reference()
                self.reference.load_state_dict(torch.load(ref_path, map_location=self.device))
        except (OSError, RuntimeError) as e:
            raise CheckpointError(directory, f"cannot restore the model from {directory}: {e}") from e


def load_policy(
    model: str,
    *,
    seed: int = 0,
    device: str = "auto",
    dtype: str = "auto",
    gradient_checkpointing: bool = False,
    lora_rank: int = 0,
    lora_alpha: float = 16.0,
    lora_targets: Optional[str] = None,
):
    """Builds the policy named by `--model`: `builtin:<size>` or a Hugging Face model directory."""
    dev = resolve_device(device)
    if model.startswith("builtin:"):
        if lora_rank:
            raise PolicyLoadError("--lora-rank applies to Hugging Face models only, not to --model builtin:*")
        dt = torch.float32 if dtype == "auto" else _dtype(dtype)
        return BuiltinPolicy(model, seed, dev, dt, gradient_checkpointing)
    from .hf import load_hf_policy

    return load_hf_policy(
        model,
        device=dev,
        dtype=dtype,
        gradient_checkpointing=gradient_checkpointing,
        lora_rank=lora_rank,
        lora_alpha=lora_alpha,
        lora_targets=lora_targets,
    )


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise PolicyLoadError(f"--dtype '{name}': expected auto, {', '.join(DTYPES)}")
    return DTYPES[name]


def load_policy_from_checkpoint(spec: Dict[str, object], directory: str, *, device: str = "auto", dtype: str = "auto", gradient_checkpointing: bool = False):
    """Rebuilds the policy described by a checkpoint's `policy` spec and loads its weights from
    `directory`. `dtype` `auto` keeps the checkpoint's dtype."""
    dev = resolve_device(device)
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "builtin":
        dt = _dtype(str(spec["dtype"]) if dtype == "auto" else dtype)
        policy = BuiltinPolicy(str(spec["model"]), 0, dev, dt, gradient_checkpointing)
        policy.load_state(directory)
        return policy
    if kind == "hf":
        from .hf import load_hf_policy_from_checkpoint

        return load_hf_policy_from_checkpoint(spec, directory, device=dev, dtype=dtype, gradient_checkpointing=gradient_checkpointing)
    raise CheckpointError(directory, f"unknown policy kind {kind!r} in {directory}/learner.json")
