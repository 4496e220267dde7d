"""Shared test helpers: learners, samples, weight probes and a logit-biased policy wrapper."""

import json
import os
import sys

import grpc
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from reward_mesh_learner.contract import (  # noqa: E402
    GenerateRequest,
    LossConfig,
    OptimConfig,
    PromptSpec,
    Sample,
    ScoredSequence,
    TrainStepRequest,
)
from reward_mesh_learner.learner import LearnerOptions, TorchLearner  # noqa: E402
from reward_mesh_learner.policy import load_policy  # noqa: E402

torch.set_num_threads(2)

#: The spec's reference vectors, read from the repository (trainer/test/fixtures).
VECTORS_PATH = os.path.join(ROOT, "..", "test", "fixtures", "advantage-vectors.json")

#: The default loss of the tests (DAPO clip-higher, a small KL).
DAPO = LossConfig("dapo", eps_low=0.2, eps_high=0.28, kl_beta=0.01, max_completion_length=16)

PROMPT = PromptSpec("p", context_key="ctx", text="Q: 1+1=")


def load_vectors():
    with open(VECTORS_PATH, encoding="utf-8") as f:
        return json.load(f)


def make_learner(seed=0, dtype="float32", **options) -> TorchLearner:
    policy = load_policy("builtin:tiny", seed=seed, device="cpu", dtype=dtype)
    return TorchLearner(policy, LearnerOptions(seed=seed, **options))


def generate(learner, n=8, seed=3, max_new_tokens=8, prompts=(PROMPT,), **kw):
    return learner.generate(GenerateRequest(prompts=list(prompts), n=n, seed=seed, max_new_tokens=max_new_tokens, **kw))


def samples_from(completions, advantage=lambda c, i: 1.0 if i % 2 == 0 else -1.0, prefix="s"):
    return [
        Sample(
            sample_id=f"{prefix}{c.prompt_id}#{c.policy_version}#{c.index}",
            token_ids=tuple(c.token_ids),
            rollout_logprobs=tuple(c.logprobs),
            advantage=advantage(c, i),
            prompt_token_ids=tuple(c.prompt_token_ids),
            policy_version=c.policy_version,
            group_id=c.prompt_id,
            context_key=c.context_key,
            truncated=c.truncated,
        )
        for i, c in enumerate(completions)
    ]


def step_request(samples, key="k", step=0, loss=DAPO, optim=None, **kw):
    return TrainStepRequest(step=step, idempotency_key=key, samples=samples, loss=loss, optim=optim or OptimConfig(lr=1e-3), **kw)


def probe(learner):
    """Logprobs of fixed sequences: equal probes = equal weights (for these tokens)."""
    seqs = [ScoredSequence("a", (256, 72, 105), (33, 10, 257)), ScoredSequence("b", (256, 81), (58, 32, 50))]
    return learner.compute_logprobs(seqs)


def weights(learner):
    return [p.detach().clone() for p in learner.policy.model.parameters()]


def same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


class BiasedPolicy:
    """Delegates to a policy, adding a constant bias to every next-token logit (to force tokens)."""

    def __init__(self, policy, bias: torch.Tensor):
        self._policy = policy
        self._bias = bias.to(policy.dtype)

    def __getattr__(self, name):
        return getattr(self._policy, name)

    def forward(self, *args, **kwargs):
        out = self._policy.forward(*args, **kwargs)
        out.logits = out.logits + self._bias
        return out


def biased_learner(boosts, seed=0, dtype="float32"):
    """A learner whose policy adds `boosts` ({token id: bias}) to the logits."""
    policy = load_policy("builtin:tiny", seed=seed, device="cpu", dtype=dtype)
    bias = torch.zeros(policy.vocab_size)
    for tok, b in boosts.items():
        bias[tok] = b
    return TorchLearner(BiasedPolicy(policy, bias), LearnerOptions(seed=seed))


OPENSSL = "/usr/bin/openssl" if os.path.exists("/usr/bin/openssl") else "openssl"


def make_pki(directory):
    """Throw-away certificates made by openssl in `directory`: a CA; a server certificate for 127.0.0.1,
    ::1 and localhost; a client certificate; another CA with its own client certificate. Returns the paths."""
    import subprocess

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args):
        subprocess.run([OPENSSL, *args], cwd=directory, check=True, capture_output=True, timeout=30)

    def ca(name):
        run("req", "-x509", *ec, "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(name, signer, extensions):
        with open(os.path.join(directory, f"{name}.ext"), "w", encoding="utf-8") as f:
            f.write(extensions + "\nbasicConstraints=CA:FALSE\n")
        run("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{signer}.crt", "-CAkey", f"{signer}.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")

    ca("ca")
    ca("other-ca")
    leaf("server", "ca", "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth")
    leaf("client", "ca", "extendedKeyUsage=clientAuth")
    leaf("other-client", "other-ca", "extendedKeyUsage=clientAuth")
    p = lambda f: os.path.join(directory, f)  # noqa: E731
    return {
        "ca": p("ca.crt"), "server_cert": p("server.crt"), "server_key": p("server.key"),
        "client_cert": p("client.crt"), "client_key": p("client.key"),
        "other_ca": p("other-ca.crt"), "other_client_cert": p("other-client.crt"), "other_client_key": p("other-client.key"),
    }


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def code_of(fn):
    """The gRPC status code of a failing call, or "ok"."""
    try:
        fn()
        return "ok"
    except grpc.RpcError as e:
        return e.code()
