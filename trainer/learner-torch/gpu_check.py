"""The GPU learner check (`bash scripts/gpu-check.sh`, ≤ 8 minutes on one H200).

1. Builds a randomly initialised ~0.5B-parameter causal LM without downloading anything: from a
   `transformers` Qwen2 config (32 layers, hidden 896, a 32 000-token tokenizer built offline with
   `tokenizers`) when both are importable, else the package's own `builtin:500m` transformer.
2. Serves it with the PyTorch learner (`python3 -m reward_mesh_learner serve`, bf16 on CUDA) and drives
   Generate and TrainStep through real gRPC (the generated stubs), 64 samples × 256 completion tokens;
   then the same TrainStep on a learner in this process (no gRPC), so the wire's share is measured.
3. In the same run, a plain PyTorch reference step on the same model, batch and loss (DAPO token-mean
   PPO-clip with old = current, AdamW, grad-norm clip 1), no mesh and no learner code.
4. Prints one JSON object: tokens/s of both steps, their ratio (goal: learner ≤ 1.15× the reference's
   time; also the in-process learner's ratio and the wire's seconds per step), Generate tokens/s, peak GPU memory, and MFU (6·N·tokens FLOPs over the bf16 dense peak).

`--smoke` runs the same path on the CPU with `builtin:tiny` in float32 and a small batch, so the script
itself is tested where there is no GPU.

`--verl` (issue 25, part 6: "a 20-step verl GRPO run of a ~0.5B random-weight Qwen2 with corr_grpo from
the mesh") is a preflight only, and exits 3: it prints JSON saying why that run is not made here. verl
0.9.1's trainers (trainer.use_v1=true and the legacy RayPPOTrainer) generate only through the agent loop's
server rollouts, `RolloutReplicaRegistry` = vllm, sglang, trtllm (verl/workers/rollout/replica.py);
`actor_rollout_ref.rollout.name=hf` fails there ("Unknown rollout mode: hf"), `rollout.mode=sync` was
removed (verl/workers/config/rollout.py), and `HFRollout` is no longer wired into any trainer. So the run
needs vLLM (or SGLang / TensorRT-LLM) next to verl, Ray and FSDP on the GPU machine. The H200 check machine
has torch but neither verl nor vLLM, no network, and takes at most 64 MiB of carried files per call; a
vLLM wheel alone is several hundred MiB. The preflight reports verl's version, its registered rollout
backends, which of vllm / sglang / tensorrt_llm import, and CUDA. The part that can be checked without a
rollout engine, the mesh's corr_grpo in verl's own compute_advantage with the reward loop's
reward_extra_info, runs on the CPU in clients/python/tests/framework_verl.py (reward_mesh.verl.install).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from reward_mesh_learner import proto  # noqa: E402,F401  (puts the generated stubs on sys.path)
import grpc  # noqa: E402
from rewardmesh.v1 import learner_pb2, learner_pb2_grpc  # noqa: E402

H200_BF16_DENSE_FLOPS = 989e12


def build_model_dir(out: str, smoke: bool) -> str:
    """A model for `--model`: an HF directory (random init) or a `builtin:<size>` name."""
    if smoke:
        return "builtin:tiny"
    try:
        import transformers  # noqa: F401
        from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    except ImportError as err:
        print(f"gpu-check: transformers/tokenizers not importable ({err}); using builtin:500m", file=sys.stderr)
        return "builtin:500m"
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    # A word-level tokenizer over the 256 byte characters plus synthetic tokens: a real vocabulary size
    # (so the LM head costs what it costs) with nothing downloaded.
    byte_chars = [chr(c) for c in range(33, 127)] + [chr(c) for c in range(161, 256)]
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<unk>", " ", "\n"] + byte_chars)}
    for i in range(len(vocab), 32000):
        vocab[f"<t{i}>"] = i
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>")
    fast.save_pretrained(out)
    cfg = Qwen2Config(vocab_size=32000, hidden_size=896, intermediate_size=4864, num_hidden_layers=32,
                      num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                      tie_word_embeddings=True, eos_token_id=1, pad_token_id=0)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)
    return out


def start_server(model: str, smoke: bool):
    # Its own plaintext learner on loopback: gRPC security settings meant for a real deployment stay out.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEARNER_GRPC_", "REWARD_MESH_GRPC_"))}
    env.update(PYTHONPATH=HERE, PYTHONUNBUFFERED="1")
    args = [sys.executable, "-m", "reward_mesh_learner", "serve", "--port", "0", "--model", model,
            "--device", "cpu" if smoke else "cuda", "--dtype", "float32" if smoke else "bfloat16"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=sys.stderr, env=env, text=True)
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"gpu-check: the learner exited ({proc.wait()}) before listening")
    return proc, json.loads(line)


def make_batch(n: int, prompt_len: int, length: int, vocab: int):
    g = torch.Generator().manual_seed(1)
    prompts = torch.randint(3, vocab, (n, prompt_len), generator=g)
    completions = torch.randint(3, vocab, (n, length), generator=g)
    adv = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(n)])
    return prompts, completions, adv


def train_step_messages(prompts, completions, adv, step: int) -> list:
    """The TrainStep stream (header, then one message per sample), built before the timed call: the
    mesh's client is the TypeScript trainer, whose message building is not the learner's cost."""
    header = learner_pb2.LearnerTrainStepHeader(
        step=step, idempotency_key=f"gpu-{step}", sample_count=len(adv),
        loss=learner_pb2.LearnerLossConfig(loss_type=learner_pb2.LEARNER_LOSS_TYPE_DAPO, eps_low=0.2, eps_high=0.28,
                                           max_completion_length=completions.shape[1]),
        optim=learner_pb2.LearnerOptimConfig(lr=1e-6, max_grad_norm=1.0))

    msgs = [learner_pb2.LearnerTrainStepRequest(header=header)]
    for i in range(len(adv)):
        msgs.append(learner_pb2.LearnerTrainStepRequest(sample=learner_pb2.LearnerSample(
            sample_id=f"s{i}", group_id=f"g{i // 8}", prompt_token_ids=prompts[i].tolist(),
            token_ids=completions[i].tolist(), rollout_logprobs=[-1.0] * completions.shape[1],
            advantage=float(adv[i]), policy_version=step)))
    return msgs


def in_process_step_seconds(model: str, device: str, dtype: str, prompts, completions, adv, repeats: int, sync) -> list:
    """The same TrainStep called on a `TorchLearner` in this process (no gRPC, no server): what the
    learner's own code costs, so that `learner − in-process` is the wire's share."""
    from reward_mesh_learner.contract import LossConfig, OptimConfig, Sample, TrainStepRequest
    from reward_mesh_learner.learner import LearnerOptions, TorchLearner
    from reward_mesh_learner.policy import load_policy

    learner = TorchLearner(load_policy(model, seed=0, device=device, dtype=dtype), LearnerOptions(seed=0))
    n = completions.shape[1]
    samples = [Sample(sample_id=f"s{i}", group_id=f"g{i // 8}", prompt_token_ids=tuple(prompts[i].tolist()),
                      token_ids=tuple(completions[i].tolist()), rollout_logprobs=(-1.0,) * n, advantage=float(adv[i]))
               for i in range(len(adv))]
    loss = LossConfig(loss_type="dapo", eps_low=0.2, eps_high=0.28, max_completion_length=n)
    optim = OptimConfig(lr=1e-6, max_grad_norm=1.0)
    step = [0]

    def one():
        step[0] += 1
        learner.train_step(TrainStepRequest(step=step[0], idempotency_key=f"inproc-{step[0]}", samples=samples, loss=loss, optim=optim))

    one()  # warm-up
    out = timed(one, repeats, sync)
    del learner
    return out


def reference_step(model, opt, prompts, completions, adv):
    """One plain DAPO step: token-mean PPO-clip with old = current (detached), AdamW, clip 1."""
    ids = torch.cat([prompts, completions], dim=1)
    logits = model(ids).logits[:, prompts.shape[1] - 1 : -1].float()
    lp = torch.log_softmax(logits, dim=-1).gather(-1, completions.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(lp - lp.detach())
    a = adv.unsqueeze(1)
    loss = torch.max(-a * ratio, -a * ratio.clamp(0.8, 1.28)).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)


def load_reference(model: str, device: str, dtype):
    if model.startswith("builtin:"):
        from reward_mesh_learner.policy import load_policy
        return load_policy(model, seed=0, device=device, dtype=str(dtype).replace("torch.", "")).model
    import transformers
    from reward_mesh_learner.hf import dtype_kwarg
    kw = {dtype_kwarg(transformers): dtype}
    return transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=True, **kw).to(device)


def timed(fn, repeats: int, sync) -> list:
    out = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def verl_preflight() -> dict:
    """Why the 20-step verl GRPO run is not made on this machine (see the module's docstring)."""
    import importlib.util

    out = {"stage": "verl GRPO run: 20 steps, random ~0.5B Qwen2, algorithm.adv_estimator=corr_grpo", "ran": False}
    try:
        import verl
        from verl.workers.rollout.replica import RolloutReplicaRegistry

        out["verl"] = getattr(verl, "__version__", "unknown")
        out["rolloutBackends"] = sorted(RolloutReplicaRegistry._registry)
    except Exception as err:  # noqa: BLE001 (any import failure is the answer)
        out["verl"] = None
        out["verlImportError"] = f"{type(err).__name__}: {err}"
        out["rolloutBackends"] = []
    out["importable"] = {m: importlib.util.find_spec(m) is not None for m in ("vllm", "sglang", "tensorrt_llm", "ray")}
    out["cuda"] = torch.cuda.is_available()
    missing = [k for k, ok in (("verl", out["verl"] is not None), ("CUDA", out["cuda"]),
                              ("a rollout engine (vllm, sglang or tensorrt_llm)",
                               any(out["importable"][m] for m in ("vllm", "sglang", "tensorrt_llm")))) if not ok]
    out["missing"] = missing
    out["reason"] = (
        "verl 0.9.1 generates only through server rollouts (vllm, sglang, trtllm); rollout.name=hf and "
        "rollout.mode=sync are gone, so the run needs a rollout engine next to verl, Ray and FSDP on a GPU; "
        + (f"missing here: {', '.join(missing)}. " if missing else "all present here, but ")
        + "this script does not launch the run (it was never run: no machine with verl and vLLM was available); "
        "corr_grpo in verl's compute_advantage is tested on the CPU (clients/python/tests/framework_verl.py)")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CPU, builtin:tiny, small batch (tests the script)")
    p.add_argument("--verl", action="store_true",
                   help="only the verl GRPO run's preflight: JSON on why it is not run here; exits 3")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    if a.verl:
        print(json.dumps(verl_preflight(), indent=2))
        return 3
    if not a.smoke and not torch.cuda.is_available():
        print("gpu-check: no CUDA device (use --smoke to test the script on the CPU)", file=sys.stderr)
        return 2
    if a.smoke:
        a.samples, a.tokens, a.prompt_tokens, a.repeats = 8, 32, 8, 2
    device = "cpu" if a.smoke else "cuda"
    dtype = torch.float32 if a.smoke else torch.bfloat16
    sync = (lambda: None) if a.smoke else torch.cuda.synchronize
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        model = build_model_dir(tmp, a.smoke)
        proc, listening = start_server(model, a.smoke)
        try:
            channel = grpc.insecure_channel(listening["address"], options=[("grpc.max_receive_message_length", 256 << 20)])
            stub = learner_pb2_grpc.LearnerStub(channel)
            info = stub.Info(learner_pb2.LearnerInfoRequest())
            vocab = min(int(info.vocab_size), 256) if model.startswith("builtin:") else int(info.vocab_size)
            prompts, completions, adv = make_batch(a.samples, a.prompt_tokens, a.tokens, vocab)
            gen_req = learner_pb2.LearnerGenerateRequest(
                prompts=[learner_pb2.LearnerPrompt(prompt_id=f"p{i}", text="Write a function that adds two numbers.")
                         for i in range(8)], n=8, max_new_tokens=a.tokens, seed=1)
            stub.Generate(gen_req)  # warm-up (kernels, allocator)
            t0 = time.perf_counter()
            gen = stub.Generate(gen_req)
            gen_s = time.perf_counter() - t0
            gen_tokens = sum(len(c.token_ids) for c in gen.completions)
            stub.TrainStep(iter(train_step_messages(prompts, completions, adv, 0)))  # warm-up
            learner_s = []
            metrics = {}
            for r in range(a.repeats):
                msgs = train_step_messages(prompts, completions, adv, r + 1)
                t0 = time.perf_counter()
                res = stub.TrainStep(iter(msgs))
                learner_s.append(time.perf_counter() - t0)
                metrics = dict(res.metrics)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        inproc_s = in_process_step_seconds(model, device, "float32" if a.smoke else "bfloat16", prompts, completions, adv, a.repeats, sync)
        if not a.smoke:
            torch.cuda.empty_cache()
        ref = load_reference(model, device, dtype)
        ref.train()
        opt = torch.optim.AdamW(ref.parameters(), lr=1e-6)
        batch = (prompts.to(device), completions.to(device), adv.to(device))
        if not a.smoke:
            torch.cuda.reset_peak_memory_stats()
        reference_step(ref, opt, *batch)  # warm-up
        ref_s = timed(lambda: reference_step(ref, opt, *batch), a.repeats, sync)
        ref_peak = 0 if a.smoke else torch.cuda.max_memory_allocated()
    n_params = int(info.parameter_count)
    tokens = a.samples * (a.prompt_tokens + a.tokens)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    flops = 6 * n_params * tokens
    out = {
        "model": model if model.startswith("builtin:") else "Qwen2 config, random init (transformers)",
        "architecture": info.architecture, "parameterCount": n_params, "device": info.device, "dtype": info.dtype,
        "batch": {"samples": a.samples, "promptTokens": a.prompt_tokens, "completionTokens": a.tokens},
        "learnerTrainStepSeconds": learner_s, "referenceTrainStepSeconds": ref_s,
        "learnerTokensPerSecond": tokens / med(learner_s), "referenceTokensPerSecond": tokens / med(ref_s),
        "learnerOverReference": med(learner_s) / med(ref_s), "goal": "learnerOverReference <= 1.15",
        "learnerInProcessTrainStepSeconds": inproc_s, "learnerInProcessOverReference": med(inproc_s) / med(ref_s),
        "wireSecondsPerStep": med(learner_s) - med(inproc_s),
        "generateTokensPerSecond": gen_tokens / gen_s, "generateTokens": gen_tokens,
        "learnerPeakMemoryBytes": metrics.get("peakMemoryBytes"), "referencePeakMemoryBytes": ref_peak,
        "learnerMfu": None if a.smoke else flops / med(learner_s) / H200_BF16_DENSE_FLOPS,
        "referenceMfu": None if a.smoke else flops / med(ref_s) / H200_BF16_DENSE_FLOPS,
        "learnerMetrics": metrics,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
