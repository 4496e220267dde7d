"""TRL adapter: one reward function per mesh component, for `GRPOTrainer(reward_funcs=..., reward_weights=...)`.

TRL calls each reward function as `f(prompts=..., completions=..., **kwargs)` with the batch's prompts
and completions (strings, or conversational lists of `{"role", "content"}` messages) and every other
dataset column as a keyword list (plus `completion_ids`, `trainer_state`, ...); it wants one float per
completion, or None where the function does not apply (TRL then ignores it in the weighted sum).

The functions of one `reward_funcs(...)` call share a per-batch cache: the first one scores the batch
(one `ScoreBatch` call per service, the services in parallel), the others read the cache, so K components
do not score the batch K times. The task of a row comes from its `task` column (a `rewardmesh.v1.Task`
as proto JSON, dict or text), or from `task_builder(prompt, row)`; without either, a `custom` task
carrying the prompt.

    from reward_mesh import Mesh
    from reward_mesh.trl import reward_funcs_from_run_config
    funcs, weights = reward_funcs_from_run_config("run.json", Mesh({"math": "127.0.0.1:50062"}))
    trainer = GRPOTrainer(model=..., reward_funcs=funcs, args=GRPOConfig(reward_weights=weights, ...))
"""

import hashlib
import json
import threading

from .builder import Rollout, content_text, custom_task, next_id, task_from_json
from .client import Mesh
from .config import run_config
from .errors import InvalidInputError

_RESERVED = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}


def _call(call, where):
    """`(name, arguments dict)` of one OpenAI-style tool call (`{"type": "function", "function": {"name",
    "arguments"}}`, or `{"name", "arguments"}`); arguments given as JSON text are decoded."""
    f = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        raise InvalidInputError(f"'{where}' must be {{'function': {{'name', 'arguments'}}}}, got {call!r}")
    args = f.get("arguments", f.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            pass  # left as text: the tool-call service scores a malformed call
    return f["name"], args


def _message_text(m, i, json_calls):
    """One assistant message as the model wrote it: its reasoning (`reasoning_content` / `thinking`, as
    `<think>...</think>` unless the content has it), its content, and its `tool_calls` as the ToolRL /
    Qwen layout the tool-call service reads: one `<tool_call>` block, one `{"name", "parameters"}` JSON
    line per call (or, for a task of format "json", collected into `json_calls`)."""
    text = content_text(m.get("content"))
    reasoning = m.get("reasoning_content", m.get("thinking"))
    if isinstance(reasoning, str) and reasoning and "<think>" not in text:
        text = f"<think>{reasoning}</think>\n{text}" if text else f"<think>{reasoning}</think>"
    calls = [_call(c, f"completion[{i}].tool_calls[{k}]") for k, c in enumerate(m.get("tool_calls") or [])]
    if not calls:
        return text
    if json_calls is not None:
        json_calls.extend({"name": n, "arguments": a} for n, a in calls)
        return text
    block = "<tool_call>\n" + "\n".join(json.dumps({"name": n, "parameters": a}) for n, a in calls) + "\n</tool_call>"
    return f"{text}\n{block}" if text else block


def completion_text(completion, task=None):
    """The response text of a TRL completion: a string, or a conversational completion's assistant
    messages (content, and tool calls rendered as `<tool_call>` blocks; `tool` messages, the tools'
    answers, are not the model's and are left out), joined by newlines. For a tool-call task of format
    "json" (BFCL) the response is the JSON list of the calls."""
    if isinstance(completion, str):
        return completion
    json_calls = [] if task is not None and task.WhichOneof("kind") == "tool_call" and task.tool_call.format == "json" else None
    if isinstance(completion, (list, tuple)):
        msgs = [m for m in completion if isinstance(m, dict)]
        if len(msgs) != len(completion):
            raise InvalidInputError("a conversational completion must be a list of {'role', 'content'} messages")
        assistant = [m for m in msgs if m.get("role", "assistant") == "assistant"] or msgs
        text = "\n".join(_message_text(m, i, json_calls) for i, m in enumerate(assistant))
    elif isinstance(completion, dict) and ("content" in completion or "tool_calls" in completion):
        text = _message_text(completion, 0, json_calls)
    else:
        raise InvalidInputError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")
    return json.dumps(json_calls) if json_calls else text


def _row(kwargs, i, keys=None):
    items = kwargs.items() if keys is None else ((k, kwargs[k]) for k in keys if k in kwargs)
    return {k: v[i] for k, v in items if k not in _RESERVED and isinstance(v, (list, tuple)) and i < len(v)}


_LAST = object()  # the key of the last (raw task, Task) in _default_task's `parsed`


def _default_task(prompt, row, parsed=None):
    if row.get("task") is not None:
        raw = row["task"]
        # The completions of one prompt repeat their row's task: parse each distinct one once per batch.
        # The row before usually has the same one (one == on the parsed values, cheaper than a key).
        last = None if parsed is None else parsed.get(_LAST)
        if last is not None and (last[0] is raw or last[0] == raw):
            t = last[1]
        else:
            key = raw if isinstance(raw, str) else repr(raw)
            t = None if parsed is None else parsed.get(key)
            if t is None:
                t = task_from_json(raw, name="task")
            if parsed is not None:
                parsed[key] = t
                parsed[_LAST] = (raw, t)
        if not t.prompt and not t.messages and prompt is not None:
            t = _with_prompt(t, prompt)
        return t
    return _prompt_task(prompt)


def _with_prompt(t, prompt):
    t2 = type(t)()
    t2.CopyFrom(t)
    p = _prompt_task(prompt)
    t2.prompt = p.prompt
    t2.messages.extend(p.messages)
    return t2


def _prompt_task(prompt):
    return custom_task(prompt=prompt if isinstance(prompt, (str, list)) else None)


def _key(prompts, completions, kwargs):
    """What identifies a batch: the prompts' and completions' content, and the other columns by identity
    (GRPOTrainer hands every reward function of a step the same column lists; BatchScorer keeps them
    alive while cached, so an id is not reused) or, for scalars, by value."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((prompts, completions)).encode("utf-8", "surrogatepass"))
    columns = []
    for k in sorted(kwargs):
        if k in ("trainer_state", "log_extra", "log_metric"):
            continue
        v = kwargs[k]
        columns.append((k, ("id", id(v)) if isinstance(v, (list, tuple, dict)) else ("value", repr(v))))
    return h.digest(), tuple(columns)


class BatchScorer:
    """Scores a TRL batch once for all the component functions built on it (a one-batch cache)."""

    def __init__(self, mesh, task_builder=None, metadata=None):
        self.mesh = mesh
        self.task_builder = task_builder
        self.metadata = dict(metadata or {})
        self._lock = threading.Lock()
        self._key = None
        self._rows = None
        self._alive = None
        self.batches_scored = 0

    def rollouts(self, prompts, completions, kwargs):
        """The Rollouts of one TRL batch: completions of the same prompt form a group, in batch order."""
        return list(self.iter_rollouts(prompts, completions, kwargs))

    def iter_rollouts(self, prompts, completions, kwargs):
        """The Rollouts of one TRL batch, one at a time (so the mesh scores while the rest is built)."""
        if prompts is not None and len(prompts) != len(completions):
            raise InvalidInputError(f"'prompts' has {len(prompts)} entries, 'completions' {len(completions)}")
        ids = kwargs.get("completion_ids")
        # Completions of one prompt form a group: its size is known before the first is built.
        sizes, positions = {}, {}
        keys = [p if isinstance(p, str) else repr(p) for p in prompts] if prompts is not None else None
        if keys is not None:
            for k in keys:
                sizes[k] = sizes.get(k, 0) + 1
        parsed = {}
        # The default task reads two columns (looked up once here); a task_builder gets the whole row.
        columns = {k: v for k, v in kwargs.items() if k in ("task", "metadata") and k not in _RESERVED
                   and isinstance(v, (list, tuple))}
        for i, completion in enumerate(completions):
            prompt = prompts[i] if prompts is not None else None
            row = (_row(kwargs, i) if self.task_builder is not None
                   else {k: v[i] for k, v in columns.items() if i < len(v)})
            try:
                task = (_default_task(prompt, row, parsed) if self.task_builder is None
                        else task_from_json(self.task_builder(prompt, row), name="task"))
            except InvalidInputError as e:
                raise InvalidInputError(f"row {i}: {e}") from None
            k = keys[i] if keys is not None else repr(None)
            group, pos = positions.setdefault(k, [len(positions), 0])
            positions[k][1] += 1
            meta = self.metadata
            if isinstance(row.get("metadata"), dict):
                meta = {**meta, **row["metadata"]}
            size = sizes.get(k, 1)
            if pos >= size:
                raise InvalidInputError(f"'index' must be < 'group_size' (got index {pos}, group_size {size})")
            # Built directly (every value is already of its type): builder.rollout's checks cost a µs per
            # rollout on TRL's hot path.
            yield Rollout(id=next_id(), run_id="python", group_id=f"g{group}", index=pos, group_size=size,
                          response=completion_text(completion, task), task=task,
                          metadata={str(a): str(b) for a, b in meta.items()} if meta else None,
                          response_tokens=len(ids[i]) if ids is not None and i < len(ids) else 0)

    def score(self, prompts, completions, kwargs):
        """The scored rows of this batch (`Mesh.score`), from the cache when the batch is the last one."""
        key = _key(prompts, completions, kwargs)
        with self._lock:
            if key != self._key:
                self._rows = self.mesh.score(self.iter_rollouts(prompts, completions, kwargs))
                self._key = key
                self._alive = list(kwargs.values())  # the ids in the key stay theirs while cached
                self.batches_scored += 1
            return self._rows


def component_function(scorer, name):
    """The TRL reward function of one component (`<service>/<component>`) on `scorer`."""
    def reward(prompts=None, completions=None, **kwargs):
        if completions is None:
            raise InvalidInputError(f"{name}: TRL passes 'completions'; none given")
        rows = scorer.score(prompts, completions, kwargs)
        return [None if row[name] is None else row[name].value for row in rows]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = f"reward-mesh component {name} (None where not applicable)."
    reward.scorer = scorer
    return reward


def reward_funcs(mesh, components=None, *, task_builder=None, metadata=None):
    """One TRL reward function per component (`<service>/<component>`; default: every component of the
    mesh), sharing one per-batch scorer. `task_builder(prompt, row) -> Task | dict` builds a row's task
    from its dataset columns; `metadata` is added to every rollout's metadata."""
    names = list(components) if components is not None else list(mesh.components)
    mesh.check_components(names)
    scorer = BatchScorer(mesh, task_builder, metadata)
    return [component_function(scorer, n) for n in names]


def reward_funcs_from_run_config(config, mesh=None, *, task_builder=None, metadata=None, timeout=60.0, services=None):
    """`(reward_funcs, reward_weights)` for GRPOTrainer / GRPOConfig from a run configuration's
    components and weights (a run file, a resolved-config.json, or a dict); its `services:` key sets the
    domains services score. Give a Mesh, or `services` ({name: host:port}) to build one."""
    cfg = run_config(config)
    if mesh is None:
        if services is None:
            raise InvalidInputError("give 'mesh' or 'services' ({name: host:port})")
        mesh = Mesh(services, timeout=timeout, service_domains=cfg.service_domains)
    elif cfg.service_domains:
        mesh = mesh.with_domains(cfg.service_domains)
    return reward_funcs(mesh, cfg.names, task_builder=task_builder, metadata=metadata), cfg.weights
