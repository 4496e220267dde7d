"""The built-in policy model: a small decoder-only transformer (GPT-2 style) over the byte tokenizer.

Pre-LayerNorm blocks with causal multi-head self-attention and a GELU MLP, learned positional
embeddings, tied input/output embeddings, a key/value cache for sampling, an attention (padding) mask
and explicit position ids so that left-padded batches of different prompt lengths work, and optional
gradient checkpointing. Initialised deterministically from a seed (N(0, 0.02²), residual projections
scaled by 1/√(2·layers), as GPT-2). It is a real transformer, randomly initialised: not a pretrained LLM.
"""

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .errors import PolicyLoadError
from .tokenizer import BYTE_VOCAB_SIZE


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of a `TinyCausalLM`."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    context: int
    mlp_ratio: int = 4


#: The built-in sizes, by the name used in `--model builtin:<name>`.
BUILTIN_SIZES = {
    "tiny": ModelConfig(vocab_size=BYTE_VOCAB_SIZE, d_model=64, n_layers=2, n_heads=4, context=512),
    # tiny's sizes with room for a multi-turn agent episode's prompts (tool schemas, tool responses).
    "tiny4k": ModelConfig(vocab_size=BYTE_VOCAB_SIZE, d_model=64, n_layers=2, n_heads=4, context=4096),
    "small": ModelConfig(vocab_size=BYTE_VOCAB_SIZE, d_model=256, n_layers=4, n_heads=8, context=1024),
    # ~0.51B parameters: a GPU-sized model for throughput checks (random weights, byte vocabulary).
    "500m": ModelConfig(vocab_size=BYTE_VOCAB_SIZE, d_model=1536, n_layers=18, n_heads=24, context=2048),
}

#: A layer's key/value cache: (keys, values), each [batch, heads, positions, head_dim].
KV = Tuple[torch.Tensor, torch.Tensor]


def builtin_config(name: str) -> ModelConfig:
    """The config of `builtin:<name>`; an unknown name is an error listing the known ones."""
    size = name.split(":", 1)[1] if name.startswith("builtin:") else name
    if size not in BUILTIN_SIZES:
        known = ", ".join(f"builtin:{k}" for k in BUILTIN_SIZES)
        raise PolicyLoadError(f"--model '{name}': unknown built-in size '{size}'; known: {known}")
    return BUILTIN_SIZES[size]


@dataclass
class CausalLMOutput:
    """What a forward pass returns (the attribute names of Hugging Face outputs)."""

    logits: torch.Tensor
    past_key_values: Optional[List[KV]] = None


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a key/value cache."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads != 0:
            raise PolicyLoadError(f"d_model {cfg.d_model} is not a multiple of heads {cfg.n_heads}")
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, past: Optional[KV]) -> Tuple[torch.Tensor, KV]:
        """`x` [B, T, d]; `allowed` [B, 1, T, S] (True where query t may attend to key s, S = past + T)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        # A finite minimum (not -inf) keeps fully masked rows (padding queries) free of NaN.
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d)), (k, v)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.fc2 = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, past: Optional[KV]) -> Tuple[torch.Tensor, KV]:
        a, kv = self.attn(self.ln1(x), allowed, past)
        x = x + a
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x, kv


class TinyCausalLM(nn.Module):
    """A small GPT-style causal LM (see the module docstring)."""

    def __init__(self, cfg: ModelConfig, seed: int = 0):
        super().__init__()
        self.config = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.context, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.gradient_checkpointing = False
        self.reset_parameters(seed)

    @property
    def architecture(self) -> str:
        c = self.config
        return f"TinyCausalLM(layers={c.n_layers}, d_model={c.d_model}, heads={c.n_heads}, context={c.context})"

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        """Deterministic GPT-2 initialisation from `seed` (drawn in float32 on the CPU, then cast)."""
        g = torch.Generator().manual_seed(int(seed))
        resid_std = 0.02 / math.sqrt(2 * self.config.n_layers)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif ".ln" in name or name.startswith("ln_"):
                p.fill_(1.0)
            else:
                std = resid_std if name.endswith(("attn.proj.weight", "fc2.weight")) else 0.02
                p.copy_(torch.empty(p.shape, dtype=torch.float32).normal_(0.0, std, generator=g))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.Tensor] = None,
        past_key_values: Optional[List[KV]] = None,
        use_cache: bool = False,
        logits_to_keep: int = 0,
    ) -> CausalLMOutput:
        """Logits of the next token at each position of `input_ids` [B, T].

        `attention_mask` [B, past + T]: 1 for real tokens, 0 for padding (default all 1).
        `position_ids` [B, T] (default: the count of real tokens before each one). With `use_cache`, the
        returned `past_key_values` extend the given ones. `logits_to_keep` > 0 keeps only the last positions.
        """
        b, t = input_ids.shape
        past_len = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        if attention_mask is None:
            attention_mask = torch.ones(b, past_len + t, dtype=torch.long, device=input_ids.device)
        if position_ids is None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -t:]
        if int(position_ids.max()) >= self.config.context:
            raise ValueError(f"position {int(position_ids.max())} is beyond the context of {self.config.context}")
        x = self.tok_emb(input_ids) + self.pos_emb(position_ids)
        allowed = self._allowed(attention_mask.bool(), t, past_len)
        new_past: List[KV] = []
        for i, block in enumerate(self.blocks):
            past = None if past_key_values is None else past_key_values[i]
            if self.gradient_checkpointing and torch.is_grad_enabled() and not use_cache and past is None:
                x = checkpoint(lambda h, blk=block: blk(h, allowed, None)[0], x, use_reentrant=False)
            else:
                x, kv = block(x, allowed, past)
                new_past.append(kv)
        x = self.ln_f(x)
        if logits_to_keep > 0:
            x = x[:, -logits_to_keep:]
        logits = x @ self.tok_emb.weight.t()
        return CausalLMOutput(logits=logits, past_key_values=new_past if use_cache else None)

    @staticmethod
    def _allowed(key_valid: torch.Tensor, t: int, past_len: int) -> torch.Tensor:
        """[B, 1, T, S]: query i (absolute position past_len + i) may see key j ≤ past_len + i that is real."""
        s = key_valid.shape[1]
        q_pos = torch.arange(past_len, past_len + t, device=key_valid.device)[:, None]
        k_pos = torch.arange(s, device=key_valid.device)[None, :]
        causal = k_pos <= q_pos
        return causal[None, None, :, :] & key_valid[:, None, None, :]


def build_builtin(name: str, seed: int) -> TinyCausalLM:
    """`builtin:<size>` initialised from `seed`, float32 on the CPU."""
    return TinyCausalLM(builtin_config(name), seed=seed)

