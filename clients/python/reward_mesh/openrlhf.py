"""OpenRLHF adapter: the remote reward model's request and response (`--reward.remote_url`), a client of the
mesh's endpoint that answers them (`reward-mesh gateway`), and `reward_func` for OpenRLHF's other
remote-RM form, a Python file (`--reward.remote_url reward.py` with `reward_func(queries, prompts, labels)`).

OpenRLHF POSTs `{"query": [prompt + response, ...], "prompts": [...], "labels": [...]}` (labels from
`--data.label_key`) and reads `rewards` (one float per query), plus `scores` and `extra_logs` when present.
"""

import json
import math
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from .builder import math_task, rollout, task_from_json
from .errors import InvalidInputError, MeshError


def _strings(name, value, n=None):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"'{name}' must be a list of strings")
    if n is not None and len(value) != n:
        raise InvalidInputError(f"'{name}' has {len(value)} entries, 'query' {n}")
    return value


@dataclass
class RemoteRMRequest:
    """What OpenRLHF sends: `query` (prompt + response, templated), `prompts`, `labels` (may be None)."""

    query: list
    prompts: list = None
    labels: list = None

    def to_json(self):
        out = {"query": _strings("query", self.query)}
        if self.prompts is not None:
            out["prompts"] = _strings("prompts", self.prompts, len(self.query))
        if self.labels is not None:
            if len(self.labels) != len(self.query):
                raise InvalidInputError(f"'labels' has {len(self.labels)} entries, 'query' {len(self.query)}")
            out["labels"] = list(self.labels)
        return out

    @classmethod
    def from_json(cls, obj):
        if not isinstance(obj, dict) or "query" not in obj:
            raise InvalidInputError("a remote-RM request is an object with 'query' (and 'prompts', 'labels')")
        r = cls(obj["query"], obj.get("prompts"), obj.get("labels"))
        r.to_json()  # validates
        return r


@dataclass
class RemoteRMResponse:
    """What OpenRLHF reads: `rewards` (the weighted totals), `scores` (what dynamic filtering reads; the
    rewards when not given), `extra_logs` (`<service>/<component>` -> one value per query, 0.0 where it
    does not apply, and `<service>/<component>/applicable` -> 1.0 or 0.0)."""

    rewards: list
    scores: list = None
    extra_logs: dict = field(default_factory=dict)

    def to_json(self):
        return {"rewards": list(self.rewards), "scores": list(self.scores if self.scores is not None else self.rewards),
                "extra_logs": {k: list(v) for k, v in self.extra_logs.items()}}

    @classmethod
    def from_json(cls, obj):
        if not isinstance(obj, dict) or not isinstance(obj.get("rewards"), list):
            raise MeshError(f"not a remote-RM response (no 'rewards' list): {json.dumps(obj)[:200]}")
        return cls(obj["rewards"], obj.get("scores"), obj.get("extra_logs") or {})


def post(url, request, timeout=60.0):
    """POSTs a RemoteRMRequest (or its JSON dict) to `url` as OpenRLHF does; the RemoteRMResponse.
    An HTTP error raises MeshError with the server's message."""
    body = (request.to_json() if isinstance(request, RemoteRMRequest) else RemoteRMRequest.from_json(request).to_json())
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return RemoteRMResponse.from_json(json.loads(res.read()))
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")
        try:
            body = json.loads(detail)
            detail = body.get("error") or body.get("message") or detail
        except (ValueError, AttributeError):
            pass
        raise MeshError(f"remote RM at {url}: HTTP {e.code}: {detail}") from None
    except urllib.error.URLError as e:
        raise MeshError(f"remote RM at {url}: {e.reason}") from None


# Pad tokens of common tokenizers (Qwen `<|endoftext|>`, Llama 3 `<|end_of_text|>` and
# `<|finetune_right_pad_id|>`, T5/Gemma-style `<pad>`, BERT-style `[PAD]`, Llama 2/Mistral `</s>`): OpenRLHF
# decodes the padded batch with the special tokens kept, so a query can start (left padding) or end (right
# padding, EOS) with runs of them. `<|im_end|>` and `<|eot_id|>` are not here: they end turns inside the
# text, never pad it. The same list and rule as `reward-mesh gateway` (cli/src/gateway/openrlhf.ts).
DEFAULT_PAD_TOKENS = ("<|endoftext|>", "<|end_of_text|>", "<|finetune_right_pad_id|>", "<pad>", "[PAD]", "</s>")


def _strip_leading(text, tokens):
    again = True
    while again:
        again = False
        for tok in tokens:
            if tok and text.startswith(tok):
                text = text[len(tok):]
                again = True
    return text


def _strip_trailing(text, tokens):
    again = True
    while again:
        again = False
        for tok in tokens:
            if tok and text.endswith(tok):
                text = text[:-len(tok)]
                again = True
    return text


def response_text(query, prompt, i=0, pad_tokens=DEFAULT_PAD_TOKENS):
    """The response part of an OpenRLHF query (prompt + response), as leniently as OpenRLHF's own
    `examples/python/math_reward_func.py` (`query[len(prompt):]` when the prompt is there, else the whole
    query) and as `reward-mesh gateway` reads it; never an error:

    1. runs of `pad_tokens` are stripped from both ends of the query and from the start of the prompt;
    2. if the prompt occurs in the query, the response is what follows its first occurrence;
    3. otherwise (a prompt changed by `decode(encode(prompt))`, truncated, or none sent) the whole
       stripped query is the response."""
    q = _strip_trailing(_strip_leading(query, pad_tokens), pad_tokens)
    p = _strip_leading(prompt or "", pad_tokens)
    if p == "":
        return q
    at = q.find(p)
    return q if at < 0 else q[at + len(p):]


def task_of_label(label, prompt=None, where="labels"):
    """The task of a sample from its label: a `rewardmesh.v1.Task` as proto JSON (an object, as the gateway
    reads it, or here also its JSON text), or else a reference answer (a math task)."""
    if isinstance(label, dict):
        return task_from_json(label, name=where)
    if isinstance(label, str) and label.lstrip().startswith("{"):
        return task_from_json(label, name=where)
    if label is None or label == "":
        raise InvalidInputError(f"'{where}' is empty: give a reference answer or a Task as proto JSON")
    return math_task([label], prompt=prompt)


def applicable_key(key):
    """The `extra_logs` key saying whether `key`'s component (`<service>/<component>`) applied to each
    query: 1.0, or 0.0 where it did not (its value is then 0.0). The gateway writes the same key."""
    return f"{key}/applicable"


def score_component_of(names, score_component=None):
    """What `scores` holds, as the gateway's `--score-component`: a component `<service>/<component>` (its
    value, 0.0 where it does not apply) or `"total"` (the weighted total, as `rewards`); default the first
    component. OpenRLHF's dynamic filtering keeps groups whose mean score lies in
    `--algo.dynamic_filtering_range` (default (0, 1), with `--algo.dynamic_filtering_enable`)."""
    key = score_component if score_component is not None else (names[0] if names else "total")
    if key != "total" and key not in names:
        raise InvalidInputError(f"score component '{key}' is not one of the components ({', '.join(names)}) or 'total'")
    return key


def reward_func(queries, prompts, labels, score_component=None, **kwargs):
    """OpenRLHF's custom remote reward function (`--reward.remote_url path/to/this_or_a_wrapper.py`): scores
    over the mesh configured for `reward_mesh.verl` (REWARD_MESH_SERVICES, REWARD_MESH_RUN_CONFIG, or
    `configure`) and returns what `reward-mesh gateway` answers for the same request, as torch tensors
    when torch is there (float32, as OpenRLHF makes them of the gateway's answer), else lists of floats:

    * `rewards`: the weighted total per query (a component that does not apply counts 0);
    * `scores`: `score_component`'s value per query (default the first component, 0.0 where it does not
      apply; `"total"`: the weighted total), as the gateway's `--score-component`;
    * `extra_logs`: for every component, `"<service>/<component>"` (its value, 0.0 where it does not
      apply) and `"<service>/<component>/applicable"` (1.0 or 0.0), in every call, so OpenRLHF's per-key
      batch means are of float tensors with the same keys and never NaN.

    A service answering a non-finite value raises MeshError naming the component and the query (the
    gateway answers 502)."""
    from . import verl  # shares the mesh settings and connections

    n = len(queries)
    labels = list(labels) if labels is not None else [None] * n
    mesh, _, names, weights = verl._mesh_and_config(kwargs)
    score_key = score_component_of(names, score_component)
    if prompts is not None and len(prompts) != n:
        raise InvalidInputError(f"'prompts' has {len(prompts)} entries, 'queries' {n}")
    if len(labels) != n:
        raise InvalidInputError(f"'labels' has {len(labels)} entries, 'queries' {n}")
    rollouts = [rollout(task_of_label(labels[i], prompts[i] if prompts else None, f"labels[{i}]"),
                        response_text(queries[i], prompts[i] if prompts else "", i), run_id="openrlhf")
                for i in range(n)]
    rows = mesh.score(rollouts)
    rewards = [0.0] * n
    extra = {}
    for name, w in zip(names, weights):
        values, applies = [0.0] * n, [0.0] * n
        for i, row in enumerate(rows):
            c = row.get(name)
            if c is None:  # not applicable (or not answered)
                continue
            v = float(c.value)
            # JSON has no NaN or Infinity, and a NaN would make OpenRLHF's logged batch mean NaN.
            if not math.isfinite(v):
                raise MeshError(f"service '{name.split('/')[0]}' answered {v} for '{name.split('/', 1)[-1]}' "
                                f"of queries[{i}]: not a finite number")
            values[i], applies[i] = v, 1.0
            rewards[i] += float(w) * v
        extra[name], extra[applicable_key(name)] = values, applies
    for i, r in enumerate(rewards):
        if not math.isfinite(r):
            raise MeshError(f"the weighted total of queries[{i}] is {r}: the components' values times their "
                            "weights overflow")
    scores = list(rewards) if score_key == "total" else list(extra[score_key])
    res = RemoteRMResponse(rewards, scores, extra)
    try:
        import torch
    except ImportError:
        return res.to_json()
    return {"rewards": torch.tensor(res.rewards), "scores": torch.tensor(res.scores),
            "extra_logs": {k: torch.tensor(v) for k, v in res.extra_logs.items()}}
