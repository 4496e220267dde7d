"""Command line: ``python -m reward_mesh_learner serve [options]``.

Builds (or restores) the policy, optionally warms it up with supervised steps, serves the Learner and
Health services, prints one JSON line ``{"event": "listening", "address": "HOST:PORT", ...info}`` to
stdout once bound (with ``"healthAddress"`` when ``--health-port`` / ``LEARNER_HEALTH_PORT`` adds the
plaintext health-only port for Kubernetes probes), and stops gracefully (5 s grace) on SIGTERM / SIGINT, exiting 0. Bad arguments
exit 2 with a message on stderr, as do wrong gRPC security settings (TLS, mutual TLS, bearer token:
see `security.py`) and plaintext on a non-loopback ``--host`` without ``--insecure``.
"""

import argparse
import json
import os
import signal
import sys
import threading
from dataclasses import replace

from .errors import CheckpointError, PolicyLoadError, WarmupError
from .security import SecurityConfigError, check_bind, load_health_port, load_server_security

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reward_mesh_learner", description="The reward-mesh PyTorch learner (gRPC rewardmesh.v1.Learner).")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the Learner and Health gRPC services")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; any other address needs TLS or --insecure)")
    s.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default 0)")
    s.add_argument(
        "--health-port",
        type=int,
        default=None,
        metavar="N",
        help="also serve grpc.health.v1.Health only, in plaintext, on this port of --host, for Kubernetes gRPC probes "
        "(which cannot speak TLS); 0 picks a free one; falls back to LEARNER_HEALTH_PORT (default: none)",
    )
    s.add_argument("--model", default=None, help="builtin:tiny (default), builtin:tiny4k, builtin:small, or a local Hugging Face model directory")
    s.add_argument("--device", default="auto", help="auto (default: cuda when available), cpu, cuda, cuda:N")
    s.add_argument("--dtype", default="auto", choices=["auto", "float32", "float64", "bfloat16", "float16"], help="parameter dtype (auto: float32 for builtin models and on the CPU, bfloat16 for HF models on CUDA)")
    s.add_argument("--seed", type=int, default=0, help="initial weights of builtin models and the sampling stream (default 0)")
    s.add_argument("--resume", default=None, metavar="DIR", help="restore a checkpoint written by SaveCheckpoint (model, seed and weight decay come from it)")
    s.add_argument("--micro-batch-size", type=int, default=0, help="samples per forward/backward pass, gradients accumulated (default 0 = the whole mini-batch)")
    s.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations in the backward pass (less memory)")
    s.add_argument("--lora-rank", type=int, default=0, help="train a LoRA adapter of this rank (HF models; needs peft; default 0 = full fine-tuning)")
    s.add_argument("--lora-alpha", type=float, default=16.0, help="LoRA alpha (default 16)")
    s.add_argument("--lora-targets", default="all-linear", help="LoRA target modules: all-linear (default) or a comma list, e.g. q_proj,k_proj,v_proj,o_proj")
    s.add_argument("--weight-decay", type=float, default=None, help="AdamW/SGD weight decay (default 0; with --resume, the checkpoint's)")
    s.add_argument("--threads", type=int, default=0, help="torch CPU threads (default 0 = torch's default)")
    s.add_argument("--max-generate-batch", type=int, default=0, help="most rows sampled in one batch by Generate (default 0 = all)")
    s.add_argument("--warmup-file", default=None, metavar="F.jsonl", help='supervised warm-up examples: {"prompt"|"messages", "response"} per line')
    s.add_argument("--warmup-steps", type=int, default=0, help="warm-up optimizer steps (default 0)")
    s.add_argument("--warmup-lr", type=float, default=3e-3, help="warm-up AdamW learning rate (default 3e-3)")
    s.add_argument("--warmup-batch", type=int, default=16, help="warm-up examples per step (default 16)")
    g = s.add_argument_group("gRPC security", "each flag falls back to LEARNER_GRPC_<NAME>, then REWARD_MESH_GRPC_<NAME> (e.g. LEARNER_GRPC_TLS_CERT_FILE)")
    g.add_argument("--tls-cert-file", default=None, metavar="PEM", help="server certificate chain: serve TLS (with --tls-key-file)")
    g.add_argument("--tls-key-file", default=None, metavar="PEM", help="private key of --tls-cert-file")
    g.add_argument("--tls-client-ca-file", default=None, metavar="PEM", help="mutual TLS: require client certificates signed by these CAs")
    g.add_argument("--token-file", default=None, metavar="FILE", help="require 'authorization: Bearer <token>' on every call but health checks (or LEARNER_GRPC_TOKEN)")
    g.add_argument("--insecure", action="store_true", help="allow plaintext on a non-loopback --host (e.g. behind a mesh that encrypts)")
    return p


def check_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Range checks that argparse cannot express (exit 2 on failure)."""
    problems = []
    if not 0 <= a.port <= 65535:
        problems.append(f"--port {a.port}: expected 0..65535")
    for name in ("micro_batch_size", "lora_rank", "threads", "warmup_steps", "max_generate_batch"):
        if getattr(a, name) < 0:
            problems.append(f"--{name.replace('_', '-')} {getattr(a, name)}: must be ≥ 0")
    if a.warmup_batch < 1:
        problems.append(f"--warmup-batch {a.warmup_batch}: must be ≥ 1")
    if not a.warmup_lr > 0:
        problems.append(f"--warmup-lr {a.warmup_lr}: must be > 0")
    if a.weight_decay is not None and not a.weight_decay >= 0:
        problems.append(f"--weight-decay {a.weight_decay}: must be ≥ 0")
    if a.warmup_steps > 0 and not a.warmup_file:
        problems.append("--warmup-steps needs --warmup-file")
    if a.warmup_file and a.warmup_steps == 0 and not a.resume:
        problems.append("--warmup-file needs --warmup-steps > 0")
    if a.resume and not os.path.isdir(a.resume):
        problems.append(f"--resume {a.resume}: not a directory")
    if problems:
        p.error("; ".join(problems))


def build_learner(a: argparse.Namespace):
    """The learner the arguments describe (restored, or built and optionally warmed up)."""
    from .learner import LearnerOptions, TorchLearner
    from .policy import load_policy

    options = LearnerOptions(seed=a.seed, micro_batch_size=a.micro_batch_size, weight_decay=a.weight_decay or 0.0, max_generate_batch=a.max_generate_batch)
    if a.resume:
        learner = TorchLearner.from_checkpoint(a.resume, device=a.device, dtype=a.dtype, options=options, gradient_checkpointing=a.gradient_checkpointing)
        saved = learner.policy.spec()["model"]
        if a.model is not None and a.model != saved and os.path.abspath(a.model) != saved:
            raise PolicyLoadError(f"--model {a.model} differs from the checkpoint's model {saved}; leave --model out with --resume")
        if a.weight_decay is not None:
            learner.options = replace(learner.options, weight_decay=a.weight_decay)
            for opt in learner.optimizers.values():
                for g in opt.param_groups:
                    g["weight_decay"] = a.weight_decay
        if a.warmup_file:
            print("torch-learner: --warmup-file is ignored with --resume (the checkpoint is already trained)", file=sys.stderr)
        return learner
    policy = load_policy(
        a.model or "builtin:tiny", seed=a.seed, device=a.device, dtype=a.dtype, gradient_checkpointing=a.gradient_checkpointing,
        lora_rank=a.lora_rank, lora_alpha=a.lora_alpha, lora_targets=a.lora_targets,
    )
    if a.warmup_file:
        from .warmup import run_warmup

        summary = run_warmup(policy, a.warmup_file, steps=a.warmup_steps, lr=a.warmup_lr, batch=a.warmup_batch, seed=a.seed, micro_batch_size=a.micro_batch_size)
        options = replace(options, provenance=summary.sentence(os.path.basename(a.warmup_file)))
    return TorchLearner(policy, options)


def security_from(a: argparse.Namespace):
    """The server's security from the flags and the environment; SecurityConfigError when wrong."""
    security = load_server_security(
        os.environ,
        tls_cert_file=a.tls_cert_file,
        tls_key_file=a.tls_key_file,
        tls_client_ca_file=a.tls_client_ca_file,
        token_file=a.token_file,
        insecure=a.insecure,
    )
    check_bind(a.host, security)
    return security


def serve_until_signalled(learner, host: str, port: int, security=None, health_port=None) -> int:
    """Serves, prints the listening line, waits for SIGTERM/SIGINT, stops gracefully; returns 0."""
    from .server import serve

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    running = serve(learner, host, port, security=security, health_port=health_port)
    line = {"event": "listening", "address": running.address, "pid": os.getpid(), "security": running.security, **learner.info().as_dict()}
    if running.health_address is not None:
        line["healthAddress"] = running.health_address
    print(json.dumps(line), flush=True)
    while not stop.wait(timeout=1.0):
        pass
    print("torch-learner: stopping (grace 5 s)", file=sys.stderr, flush=True)
    running.stop(5.0)
    return 0


def main(argv=None) -> int:
    p = build_parser()
    a = p.parse_args(argv)
    check_args(p, a)
    try:
        security = security_from(a)  # before loading a model: a wrong setting fails at once
        health_port = load_health_port(a.health_port, os.environ, a.port)
    except SecurityConfigError as e:
        print(f"torch-learner: {e}", file=sys.stderr)
        return EXIT_USAGE
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    try:
        learner = build_learner(a)
    except PolicyLoadError as e:
        print(f"torch-learner: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CheckpointError as e:
        print(f"torch-learner: --resume: {e}", file=sys.stderr)
        return EXIT_USAGE
    except WarmupError as e:
        print(f"torch-learner: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return serve_until_signalled(learner, a.host, a.port, security, health_port)
    except OSError as e:
        print(f"torch-learner: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
