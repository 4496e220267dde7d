"""Hugging Face causal LMs as policies (`--model /path/to/dir`), optionally with a LoRA adapter.

Loaded with `AutoModelForCausalLM.from_pretrained(path, dtype=..., local_files_only=True)` and
`AutoTokenizer.from_pretrained(path, local_files_only=True)`: nothing is ever downloaded. bfloat16 on
CUDA and float32 on the CPU unless `--dtype` says otherwise. LoRA (`--lora-rank R`) needs `peft`; the
KL reference is then the base model with the adapter disabled. For full fine-tuning the reference is
the model directory itself (loaded when `kl_beta > 0` first arrives), or a CPU snapshot of the weights
when a warm-up changed them. Dropout is switched off (RL fine-tuning convention, as TRL), so that
old and current logprobs agree exactly.

Needs `transformers` (and `safetensors`; `peft` for LoRA); they are imported only here, so the
built-in models work without them.
"""

import contextlib
import os
from typing import Dict, List, Optional

import torch
from torch import nn

from .errors import CheckpointError, PolicyLoadError
from .policy import DTYPES, dtype_name

INSTALL_HINT = "pip install transformers safetensors (and peft for --lora-rank)"


def transformers_available() -> bool:
    """True when `transformers` can be imported."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


def peft_available() -> bool:
    """True when `peft` can be imported."""
    try:
        import peft  # noqa: F401
    except ImportError:
        return False
    return True


def _import_transformers(path: str):
    try:
        import transformers
    except ImportError as e:
        raise PolicyLoadError(f"--model {path} is a Hugging Face model directory, which needs the `transformers` package: {INSTALL_HINT}") from e
    # No progress bars in the learner's log (transformers 5 draws one per load and per save_pretrained).
    logging = getattr(getattr(transformers, "utils", None), "logging", None)
    if logging is not None and hasattr(logging, "disable_progress_bar"):
        logging.disable_progress_bar()
    return transformers


def _resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if name not in DTYPES:
        raise PolicyLoadError(f"--dtype '{name}': expected auto, {', '.join(DTYPES)}")
    return DTYPES[name]


def _without_dropout(model: nn.Module) -> None:
    """Sets every dropout probability of `model` (modules, float attributes, config) to 0."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        for attr in ("attention_dropout", "dropout", "attn_dropout", "resid_dropout", "hidden_dropout"):
            if isinstance(getattr(m, attr, None), float):
                setattr(m, attr, 0.0)
    cfg = getattr(model, "config", None)
    if cfg is not None:
        for k, v in list(vars(cfg).items()):
            if "dropout" in k and isinstance(v, float):
                setattr(cfg, k, 0.0)


def dtype_kwarg(transformers) -> str:
    """`from_pretrained`'s dtype keyword: `dtype` from transformers 5 (`torch_dtype` is deprecated there)."""
    return "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"


def _load_model(path: str, dtype: torch.dtype, device: torch.device):
    transformers = _import_transformers(path)
    try:
        kw = {dtype_kwarg(transformers): dtype}
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **kw)
    except (OSError, ValueError, KeyError) as e:
        raise PolicyLoadError(f"--model {path}: cannot load a causal LM from it (local files only): {e}") from e
    _without_dropout(model)
    return model.to(device).eval()


def _load_tokenizer(path: str):
    transformers = _import_transformers(path)
    try:
        return transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as e:
        raise PolicyLoadError(f"--model {path}: cannot load its tokenizer (local files only): {e}") from e


class HFTokenizer:
    """A Hugging Face tokenizer behind the interface of `tokenizer.ByteTokenizer`."""

    def __init__(self, tok):
        self.tok = tok
        self.name = type(tok).__name__
        self.eos_id = tok.eos_token_id
        # Ids the tokenizer can decode. A model's vocabulary is often larger (padded embedding rows,
        # e.g. Qwen2.5: 151,936 rows for 151,665 tokens), and a sampled id beyond the tokenizer makes
        # slow (Python) tokenizers raise; fast ones skip it. Ids at or beyond this are left out of texts.
        vocab = tok.get_vocab()
        self.decodable = max(len(tok), (max(vocab.values()) + 1) if vocab else 0)

    def encode(self, text: str) -> List[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def encode_prompt(self, text: str = "", messages=()) -> List[int]:
        """Chat messages through the tokenizer's chat template (with the generation prompt) when it has
        one, else their contents joined by newlines; text as is (with the tokenizer's BOS, if any)."""
        if messages:
            if getattr(self.tok, "chat_template", None):
                msgs = [{"role": m.role, "content": m.content} for m in messages]
                rendered = self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
                return list(self.tok(rendered, add_special_tokens=False)["input_ids"])
            text = "\n".join(m.content for m in messages) + "\n"
        return list(self.tok(text, add_special_tokens=True)["input_ids"])

    def decode(self, ids) -> str:
        return self.tok.decode([i for i in ids if 0 <= i < self.decodable], skip_special_tokens=True)


def _eos_ids(tok, model) -> frozenset:
    ids = set()
    if tok.eos_token_id is not None:
        ids.add(int(tok.eos_token_id))
    gen = getattr(model, "generation_config", None)
    eos = getattr(gen, "eos_token_id", None)
    for e in eos if isinstance(eos, (list, tuple)) else [eos]:
        if e is not None:
            ids.add(int(e))
    return frozenset(ids)


def _logits_to_keep_kw(model) -> Optional[str]:
    """The name under which this transformers version takes 'compute only the last k logits'."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return name
    return None


class HFPolicy:
    """A Hugging Face causal LM (see the module docstring)."""

    kind = "hf"

    def __init__(self, model, tok, *, source: str, device, dtype, lora: Optional[Dict[str, object]], gradient_checkpointing: bool):
        self.model = model
        self.model_name = source
        self.source = source
        self.device = device
        self.dtype = dtype
        self.lora = lora
        self.gradient_checkpointing = gradient_checkpointing
        self.tokenizer = HFTokenizer(tok)
        self.tokenizer_name = self.tokenizer.name
        cfg = model.config
        out_emb = model.get_output_embeddings()
        self.vocab_size = int(out_emb.weight.shape[0]) if out_emb is not None else int(cfg.vocab_size)
        self.max_context = int(getattr(cfg, "max_position_embeddings", 0) or 0)
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
        self.eos_ids = _eos_ids(tok, model)
        arch = (getattr(cfg, "architectures", None) or [type(model).__name__])[0]
        self.architecture = arch + (f" + LoRA(r={lora['rank']}, alpha={lora['alpha']})" if lora else "")
        self._keep_kw = _logits_to_keep_kw(model)
        self.weights_from_source = True  # False once anything (warm-up, training) changed them
        self._ref_state = None  # CPU snapshot of the reference weights (full fine-tuning after a warm-up)
        self._ref_model = None
        if gradient_checkpointing:
            try:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            except TypeError:  # older transformers: reentrant checkpointing needs inputs that require grad
                model.gradient_checkpointing_enable()
                if lora and hasattr(model, "enable_input_require_grads"):
                    model.enable_input_require_grads()
            model.config.use_cache = False

    def spec(self) -> Dict[str, object]:
        return {"kind": self.kind, "model": self.model_name, "base": self.source, "dtype": dtype_name(self.dtype), "lora": self.lora}

    def describe(self) -> str:
        how = (
            f"a LoRA adapter (rank {self.lora['rank']}, alpha {self.lora['alpha']}, targets {self.lora['targets']}) on frozen base weights"
            if self.lora
            else "full fine-tuning"
        )
        return (
            f"A Hugging Face causal LM ({self.architecture}, {self.parameter_count():,} parameters, {dtype_name(self.dtype)} "
            f"on {self.device}) loaded from {self.source}, tokenizer {self.tokenizer_name}; trained with PyTorch by {how}."
        )

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def trainable_parameters(self) -> List[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def forward(self, input_ids, attention_mask, position_ids, past_key_values=None, use_cache=False, logits_to_keep=0):
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids, "use_cache": use_cache}
        if past_key_values is not None:
            kwargs["past_key_values"] = past_key_values
        if logits_to_keep and self._keep_kw:
            kwargs[self._keep_kw] = logits_to_keep
        return self.model(**kwargs)

    @contextlib.contextmanager
    def training_mode(self):
        """Train mode (needed by HF gradient checkpointing; dropout is off) for the duration."""
        if not self.gradient_checkpointing:
            yield
            return
        self.model.train()
        try:
            yield
        finally:
            self.model.eval()

    # ── the KL reference ──

    def freeze_reference(self) -> None:
        """LoRA: nothing to keep (the base model is the reference). Full fine-tuning: the source
        directory, or a CPU snapshot when the weights already differ from it (after a warm-up)."""
        if self.lora or self.weights_from_source:
            return
        self._ref_state = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def has_reference(self) -> bool:
        return True

    def _reference_model(self):
        if self._ref_model is None:
            ref = _load_model(self.source, self.dtype, self.device)
            if self._ref_state is not None:
                ref.load_state_dict(self._ref_state)
            for p in ref.parameters():
                p.requires_grad_(False)
            self._ref_model = ref.eval()
        return self._ref_model

    @torch.no_grad()
    def reference_forward(self, input_ids, attention_mask, position_ids, logits_to_keep=0):
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids, "use_cache": False}
        if logits_to_keep and self._keep_kw:
            kwargs[self._keep_kw] = logits_to_keep
        if self.lora:
            with self.model.disable_adapter():
                return self.model(**kwargs)
        return self._reference_model()(**kwargs)

    # ── checkpoints ──

    def save(self, directory: str) -> None:
        """`adapter/` (LoRA) or `model/` (full, with the tokenizer), as safetensors; `reference.pt` when
        the reference is a snapshot."""
        if self.lora:
            self.model.save_pretrained(os.path.join(directory, "adapter"), safe_serialization=True)
        else:
            self.model.save_pretrained(os.path.join(directory, "model"), safe_serialization=True)
            self.tokenizer.tok.save_pretrained(os.path.join(directory, "model"))
        if self._ref_state is not None:
            torch.save(self._ref_state, os.path.join(directory, "reference.pt"))


def _apply_lora(model, path: str, rank: int, alpha: float, targets: Optional[str]):
    try:
        import peft
    except ImportError as e:
        raise PolicyLoadError(f"--lora-rank {rank} needs the `peft` package: pip install peft") from e
    target = targets or "all-linear"
    target_modules = target if target == "all-linear" else [t.strip() for t in target.split(",") if t.strip()]
    cfg = peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=target_modules, task_type="CAUSAL_LM")
    try:
        return peft.get_peft_model(model, cfg), {"rank": rank, "alpha": alpha, "targets": target}
    except (ValueError, TypeError) as e:
        raise PolicyLoadError(f"--model {path}: cannot add a LoRA adapter (targets {target}): {e}") from e


def load_hf_policy(path: str, *, device, dtype: str = "auto", gradient_checkpointing=False, lora_rank=0, lora_alpha=16.0, lora_targets=None) -> HFPolicy:
    """A policy from a local Hugging Face model directory (see the module docstring)."""
    if not os.path.isdir(path):
        raise PolicyLoadError(
            f"--model '{path}' is neither a built-in model (builtin:tiny, builtin:tiny4k, builtin:small) nor an existing directory "
            "(Hugging Face models are loaded from local directories only; nothing is downloaded)"
        )
    source = os.path.abspath(path)
    dt = _resolve_dtype(dtype, device)
    tok = _load_tokenizer(source)
    model = _load_model(source, dt, device)
    lora = None
    if lora_rank:
        model, lora = _apply_lora(model, source, lora_rank, lora_alpha, lora_targets)
    return HFPolicy(model, tok, source=source, device=device, dtype=dt, lora=lora, gradient_checkpointing=gradient_checkpointing)


def load_hf_policy_from_checkpoint(spec: Dict[str, object], directory: str, *, device, dtype: str = "auto", gradient_checkpointing=False) -> HFPolicy:
    """Restores an HF policy saved by `HFPolicy.save` (base model from the spec for LoRA)."""
    source = str(spec["base"])
    dt = _resolve_dtype(str(spec["dtype"]) if dtype == "auto" else dtype, device)
    lora = spec.get("lora")
    if lora:
        try:
            import peft
        except ImportError as e:
            raise PolicyLoadError("this checkpoint holds a LoRA adapter, which needs the `peft` package: pip install peft") from e
        base = _load_model(source, dt, device)
        tok = _load_tokenizer(source)
        try:
            model = peft.PeftModel.from_pretrained(base, os.path.join(directory, "adapter"), is_trainable=True)
        except (OSError, ValueError) as e:
            raise CheckpointError(directory, f"cannot load the LoRA adapter from {directory}/adapter: {e}") from e
        model = model.to(device)
    else:
        model = _load_model(os.path.join(directory, "model"), dt, device)
        tok = _load_tokenizer(os.path.join(directory, "model"))
    policy = HFPolicy(model, tok, source=source, device=device, dtype=dt, lora=lora, gradient_checkpointing=gradient_checkpointing)
    policy.model_name = str(spec["model"])
    policy.weights_from_source = False
    ref_path = os.path.join(directory, "reference.pt")
    if os.path.exists(ref_path):
        policy._ref_state = torch.load(ref_path, map_location="cpu")
    return policy


__all__ = ["HFPolicy", "HFTokenizer", "dtype_kwarg", "load_hf_policy", "load_hf_policy_from_checkpoint", "peft_available", "transformers_available"]
