"""The PyTorch learner core (no gRPC): `info`, `generate`, `train_step`, `compute_logprobs`,
`sync_weights`, `save_checkpoint` and `TorchLearner.from_checkpoint` — the behaviour of the embedded
TypeScript learner (`trainer/src/learner/embedded.ts`) for a text policy.

Not thread-safe: the server serialises every call with one lock.
"""

import base64
import os
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence

import torch

from .batching import completion_logprobs, pack
from .checkpoint import read_manifest, write_checkpoint, write_manifest
from .contract import (
    Completion,
    GenerateRequest,
    LearnerInfo,
    PromptSpec,
    ScoredSequence,
    TrainStepRequest,
    TrainStepResult,
)
from .errors import CheckpointError, LearnerInputError
from .losses import ObjectiveConfig
from .sampling import RowSpec, sample_rows
from .training import prepare_step, run_optimizer_steps, step_metrics
from .validate import PolicyLimits, ResolvedGenerate, validate_generate_request, validate_sequences, validate_train_step

#: The name `Info` reports.
LEARNER_NAME = "torch-learner"
#: The kind `Info` reports.
LEARNER_KIND = "torch"


def hash_string(s: str, seed: int = 0) -> int:
    """FNV-1a 32-bit over UTF-16 code units, mixed with `seed` (`hashString` in prng.ts)."""
    h = (0x811C9DC5 ^ seed) & 0xFFFFFFFF
    data = s.encode("utf-16-le", errors="surrogatepass")
    for k in range(0, len(data), 2):
        h ^= data[k] | (data[k + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def fingerprint_of(req: TrainStepRequest) -> str:
    """Catches an idempotency key reused for other data (`fingerprintOf` in embedded.ts)."""
    h = 0
    for s in req.samples:
        h = hash_string(str(s.sample_id), h)
    return f"step={req.step};samples={len(req.samples)};ids={h:x}"


@dataclass(frozen=True)
class LearnerOptions:
    """Runtime settings of a learner."""

    seed: int = 0
    #: Samples per forward/backward pass (0 = the whole mini-batch).
    micro_batch_size: int = 0
    #: AdamW / SGD weight decay.
    weight_decay: float = 0.0
    #: Most rows sampled in one batch by Generate (0 = all at once).
    max_generate_batch: int = 0
    #: Train-step results remembered for idempotent retries (oldest forgotten first).
    idempotency_cache_size: int = 1024
    #: A sentence on how the weights were prepared (e.g. the warm-up), added to the description.
    provenance: str = ""


class TorchLearner:
    """A learner over a policy (`policy.BuiltinPolicy` or `hf.HFPolicy`); see the module docstring.

    The KL reference is the policy's weights at construction (after any warm-up) — or, for LoRA, the
    base model with the adapter disabled.
    """

    def __init__(self, policy, options: LearnerOptions = LearnerOptions(), *, freeze_reference: bool = True):
        self.policy = policy
        self.options = options
        self.policy_version = 0
        self.generator = torch.Generator().manual_seed(int(options.seed))
        #: idempotency key → (fingerprint, result), oldest first.
        self.idempotency: "OrderedDict[str, tuple]" = OrderedDict()
        #: optimizers by name (`adam`, `sgd`), created on first use; their state persists across steps.
        self.optimizers: Dict[str, torch.optim.Optimizer] = {}
        if freeze_reference:
            policy.freeze_reference()

    # ── Info / SyncWeights ─────────────────────────────────────────────────────────────────────

    def info(self) -> LearnerInfo:
        """What this learner is."""
        p = self.policy
        description = p.describe() + (f" {self.options.provenance}" if self.options.provenance else "")
        return LearnerInfo(
            name=LEARNER_NAME,
            kind=LEARNER_KIND,
            description=description,
            model=p.model_name,
            architecture=p.architecture,
            parameter_count=p.parameter_count(),
            tokenizer=p.tokenizer_name,
            dtype=str(p.dtype).replace("torch.", ""),
            device=str(p.device),
            vocab_size=p.vocab_size,
            max_context=p.max_context,
            policy_version=self.policy_version,
        )

    def sync_weights(self) -> int:
        """Generate samples from the live weights, so there is nothing to publish: the version."""
        return self.policy_version

    def _limits(self) -> PolicyLimits:
        return PolicyLimits(self.policy.vocab_size, self.policy.max_context, self.policy_version)

    # ── Generate ───────────────────────────────────────────────────────────────────────────────

    def _prompt_row(self, p: PromptSpec, i: int, g: ResolvedGenerate) -> RowSpec:
        """Tokenizes prompt `i` and checks it against the vocabulary and context."""
        sfx = f" (prompt '{p.prompt_id}')"
        ids = self.policy.tokenizer.encode_prompt(p.text, p.messages)
        if not ids:
            raise LearnerInputError(f"prompts[{i}].text", f"tokenizes to no tokens{sfx}")
        if max(ids) >= self.policy.vocab_size:
            # A tokenizer with more tokens than the model's embedding rows (added tokens, no resize):
            # an embedding lookup would otherwise hit a device-side assert on CUDA.
            raise LearnerInputError(
                f"prompts[{i}]", f"tokenizes to id {max(ids)}, outside the model's vocabulary [0, {self.policy.vocab_size}){sfx}"
            )
        ctx = self.policy.max_context
        if ctx and len(ids) >= ctx:
            raise LearnerInputError(
                f"prompts[{i}]",
                f"has {len(ids)} tokens but the model's context is {ctx} tokens, which leaves no room for a completion{sfx}",
            )
        stop_ids = set(self.policy.eos_ids)
        if p.stop_token is not None:
            if not 0 <= p.stop_token < self.policy.vocab_size:
                raise LearnerInputError(
                    f"prompts[{i}].stopToken", f"is {p.stop_token}, outside the vocabulary [0, {self.policy.vocab_size}){sfx}"
                )
            stop_ids.add(int(p.stop_token))
        budget = p.max_tokens or g.max_new_tokens
        if ctx:
            budget = min(budget, ctx - len(ids))
        return RowSpec(tuple(ids), budget, frozenset(stop_ids))

    def generate(self, req: GenerateRequest) -> List[Completion]:
        """`n` completions per prompt, prompt by prompt, sampled from the current weights."""
        g = validate_generate_request(req)
        rows = [self._prompt_row(p, i, g) for i, p in enumerate(req.prompts)]
        gen = self.generator if g.seed is None else torch.Generator().manual_seed(g.seed)
        specs = [r for r in rows for _ in range(req.n)]
        results = sample_rows(self.policy, specs, g.temperature, g.top_p, g.stop, gen, self.options.max_generate_batch)
        out = []
        for k, res in enumerate(results):
            p, row = req.prompts[k // req.n], rows[k // req.n]
            out.append(
                Completion(
                    prompt_id=p.prompt_id,
                    context_key=p.context_key,
                    index=k % req.n,
                    token_ids=res.token_ids,
                    text=res.text,
                    logprobs=res.logprobs,
                    policy_version=self.policy_version,
                    truncated=res.finish_reason == "length",
                    finish_reason=res.finish_reason,
                    prompt_token_ids=list(row.prompt_ids),
                    matched_stop=res.matched_stop,
                )
            )
        return out

    # ── TrainStep ──────────────────────────────────────────────────────────────────────────────

    def _replay(self, req: TrainStepRequest) -> Optional[TrainStepResult]:
        seen = self.idempotency.get(req.idempotency_key) if isinstance(req.idempotency_key, str) else None
        if seen is None:
            return None
        fp = fingerprint_of(req)
        if seen[0] != fp:
            raise LearnerInputError(
                "idempotencyKey",
                f"'{req.idempotency_key}' was already used for a different request ({seen[0]}; now {fp})",
            )
        return TrainStepResult(seen[1].policy_version, dict(seen[1].metrics), replayed=True)

    def _optimizer(self, name: str, lr: float) -> torch.optim.Optimizer:
        opt = self.optimizers.get(name)
        if opt is None:
            opt = self._new_optimizer(name)
            self.optimizers[name] = opt
        for group in opt.param_groups:
            group["lr"] = lr
        return opt

    def _new_optimizer(self, name: str) -> torch.optim.Optimizer:
        params = self.policy.trainable_parameters()
        wd = self.options.weight_decay
        if name == "sgd":
            return torch.optim.SGD(params, lr=1e-3, weight_decay=wd)
        # On CUDA the fused kernel: one launch for every parameter instead of one per tensor group.
        fused = {"fused": True} if self.policy.device.type == "cuda" else {}
        return torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd, **fused)

    def train_step(self, req: TrainStepRequest) -> TrainStepResult:
        """One policy update (or the stored result of a replayed key); `policy_version` + 1."""
        replayed = self._replay(req)
        if replayed is not None:
            return replayed
        r = validate_train_step(req, self._limits())
        if r.loss.kl_beta > 0 and not self.policy.has_reference():
            raise LearnerInputError("loss.klBeta", f"is {r.loss.kl_beta} but this learner keeps no reference policy")
        cuda = self.policy.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.policy.device)
        floor = -1 if r.max_staleness is None else self.policy_version - r.max_staleness
        kept = [s for s in req.samples if s.policy_version >= floor]
        n_dropped = len(req.samples) - len(kept)
        loss, optim = r.loss, r.optim
        prepared = prepare_step(self.policy, kept, loss, optim.mini_batches, self.options.micro_batch_size, optim.epochs)
        cfg = ObjectiveConfig(
            loss.loss_type, loss.aggregation, loss.eps_low, loss.eps_high, loss.dual_clip_c, loss.kl_beta,
            loss.max_completion_length, loss.cispo_mode,
        )
        optimizer = self._optimizer(optim.optimizer, optim.lr)
        stats = run_optimizer_steps(self.policy, prepared, cfg, optimizer, optim.max_grad_norm, optim.epochs)
        metrics = step_metrics(stats, prepared, len(kept), n_dropped, optim.lr)
        if cuda:
            metrics["peakMemoryBytes"] = float(torch.cuda.max_memory_allocated(self.policy.device))
        self.policy_version += 1
        result = TrainStepResult(self.policy_version, metrics, replayed=False)
        self.idempotency[req.idempotency_key] = (fingerprint_of(req), result)
        while len(self.idempotency) > self.options.idempotency_cache_size:
            self.idempotency.popitem(last=False)
        return TrainStepResult(result.policy_version, dict(metrics), replayed=False)

    # ── ComputeLogprobs ────────────────────────────────────────────────────────────────────────

    @torch.no_grad()
    def compute_logprobs(self, sequences: Sequence[ScoredSequence]) -> List[List[float]]:
        """Per-token logprobs of each completion under the current policy at temperature 1."""
        validate_sequences(sequences, self._limits())
        out: List[List[float]] = []
        size = self.options.micro_batch_size or max(1, len(sequences))
        for k in range(0, len(sequences), size):
            chunk = sequences[k : k + size]
            if all(len(q.token_ids) == 0 for q in chunk):
                out.extend([] for _ in chunk)
                continue
            batch = pack([q.prompt_token_ids for q in chunk], [q.token_ids for q in chunk], self.policy.pad_id, self.policy.device)
            lp, _ = completion_logprobs(self.policy, batch)
            out.extend(batch.rows(lp))
        return out

    # ── Checkpoints ────────────────────────────────────────────────────────────────────────────

    def _manifest(self) -> Dict[str, object]:
        return {
            "policy": self.policy.spec(),
            "seed": int(self.options.seed),
            "weightDecay": self.options.weight_decay,
            "provenance": self.options.provenance,
            "policyVersion": self.policy_version,
            "generatorState": base64.b64encode(bytes(self.generator.get_state().tolist())).decode("ascii"),
            "idempotency": [
                {"key": k, "fingerprint": fp, "result": {"policyVersion": res.policy_version, "metrics": res.metrics}}
                for k, (fp, res) in self.idempotency.items()
            ],
        }

    def save_checkpoint(self, path: str) -> str:
        """Writes a checkpoint directory atomically; returns its absolute path."""
        if not isinstance(path, str) or not path:
            raise LearnerInputError("path", "is empty; give a directory path on the learner's file system")

        def fill(tmp: str) -> None:
            self.policy.save(tmp)
            torch.save({k: o.state_dict() for k, o in self.optimizers.items()}, os.path.join(tmp, "optimizer.pt"))
            write_manifest(tmp, self._manifest())

        return write_checkpoint(path, fill)

    @classmethod
    def from_checkpoint(cls, path: str, *, device: str = "auto", dtype: str = "auto", options: Optional[LearnerOptions] = None, gradient_checkpointing: bool = False) -> "TorchLearner":
        """Restores a learner written by `save_checkpoint`: weights, reference, optimizer moments,
        policy version, random stream and idempotency cache. `options` give the runtime settings; the
        seed, weight decay and provenance always come from the checkpoint."""
        from .policy import load_policy_from_checkpoint

        directory = os.path.abspath(path)
        data = read_manifest(directory)
        policy = load_policy_from_checkpoint(data["policy"], directory, device=device, dtype=dtype, gradient_checkpointing=gradient_checkpointing)
        base = options or LearnerOptions()
        opts = replace(base, seed=int(data["seed"]), weight_decay=float(data.get("weightDecay", 0.0)), provenance=str(data.get("provenance", "")))
        learner = cls(policy, opts, freeze_reference=False)  # the reference comes with the weights
        learner.policy_version = int(data["policyVersion"])
        learner.generator.set_state(torch.tensor(list(base64.b64decode(data["generatorState"])), dtype=torch.uint8))
        learner.idempotency = OrderedDict(
            (e["key"], (e["fingerprint"], TrainStepResult(int(e["result"]["policyVersion"]), dict(e["result"]["metrics"]))))
            for e in data["idempotency"]
        )
        learner._restore_optimizers(directory)
        return learner

    def _restore_optimizers(self, directory: str) -> None:
        path = os.path.join(directory, "optimizer.pt")
        try:
            states = torch.load(path, map_location=self.policy.device)
            for name, state in states.items():
                opt = self._new_optimizer(name)
                opt.load_state_dict(state)
                self.optimizers[name] = opt
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            raise CheckpointError(directory, f"cannot restore the optimizer state from {path}: {e}") from e
