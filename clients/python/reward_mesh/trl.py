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

`MeshGRPOTrainer` (TRL needed then only): GRPOTrainer with the mesh trainer's advantages (CorrGRPO, S-GRPO).
"""

import hashlib
import json
import threading

from .builder import Rollout, content_text, custom_task, next_id, task_from_json
from .client import AdvantagesClient, Mesh, advantages_request
from .config import run_config
from .errors import InvalidInputError, MeshError

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


# --- CorrGRPO / S-GRPO advantages inside TRL -------------------------------------------------------------
#
# GRPOTrainer computes its advantages inline in `_generate_and_score_completions` from the rewards matrix
# `_calculate_rewards` returns (one column per reward function, gathered over the processes); there is no
# public hook. The subclass below overrides those two private methods, as TRL's own `_compute_loss` invites
# ("to support subclasses" it accepts any `inputs["advantages"]`): it keeps the matrix, lets TRL finish,
# then replaces `advantages` with the trainer's ComputeAdvantages answer for this process's rows.

_TRL_HOOKS = ("_calculate_rewards", "_generate_and_score_completions")
_trainer_classes = {}


def _trl_version():
    try:
        import trl

        return getattr(trl, "__version__", "unknown")
    except ImportError:
        return "not installed"


def mesh_grpo_trainer_class(base=None):
    """The `MeshGRPOTrainer` subclass of `base` (default `trl.GRPOTrainer`): GRPOTrainer with the mesh
    trainer's advantages (CorrGRPO, S-GRPO, any estimator of `reward-mesh advantages`). Raises MeshError
    naming the TRL version when `base` lacks the private methods it overrides (written against TRL 1.16)."""
    if base is None:
        from trl import GRPOTrainer as base
    cls = _trainer_classes.get(base)
    if cls is not None:
        return cls
    missing = [m for m in _TRL_HOOKS if not callable(getattr(base, m, None))]
    if missing:
        raise MeshError(f"reward_mesh.trl.MeshGRPOTrainer: {base.__module__}.{base.__qualname__} (TRL {_trl_version()}) "
                        f"has no {', '.join(missing)}: the subclass overrides these private methods of TRL 1.16's "
                        "GRPOTrainer; this TRL computes advantages elsewhere (use the reward functions alone)")

    class MeshGRPOTrainer(base):
        """GRPOTrainer whose advantages are the mesh trainer's `ComputeAdvantages` answer (CorrGRPO by
        default) for each group of `num_generations` completions, the components being the reward
        functions' columns (their names, `args.reward_weights`). `advantages_client`: an
        AdvantagesClient or "host:port" (default REWARD_MESH_TRAINER); `run_config`: the run
        configuration giving the estimator, its options, `sgrpo` and `dynamicSampling` (its components must
        be the reward functions, in order, with the same weights); `estimator`: overrides it. A group
        the trainer drops (dynamic sampling) gets advantage 0. Logs `mesh/advantages/mean`,
        `mesh/advantages/std`, `mesh/advantages/abs_mean` and `mesh/groups_kept`, and puts the mesh's
        advantages in TRL's completions table; TRL's own `reward`, `reward_std` and
        `frac_reward_zero_std` stay as TRL computes them (they describe the rewards, not the advantages)."""

        def __init__(self, *args, advantages_client=None, run_config=None, estimator=None, **kwargs):
            cfg = _run_config_of(run_config)
            if isinstance(advantages_client, AdvantagesClient):
                client = advantages_client
            elif advantages_client is not None:
                client = AdvantagesClient(advantages_client)
            else:
                client = AdvantagesClient.from_env()
            super().__init__(*args, **kwargs)
            self.mesh_advantages = client
            self.mesh_estimator = estimator or (cfg.estimator if cfg else "grpo_covariance_coefficient")
            self.mesh_run_config = cfg
            self.mesh_last_request = self.mesh_last_response = None
            self._mesh_rewards = None
            names, weights = list(self.reward_func_names), self._mesh_weights()
            if cfg is not None and (list(cfg.names) != names or [float(w) for w in cfg.weights] != weights):
                raise InvalidInputError(f"MeshGRPOTrainer: the run configuration's components {list(cfg.names)} with "
                                        f"weights {list(cfg.weights)} are not the reward functions {names} with "
                                        f"reward_weights {weights} (reward_funcs_from_run_config gives both)")

        def _mesh_weights(self):
            # GRPOConfig.reward_weights as given (TRL keeps a float32 copy), else TRL's (all 1).
            given = getattr(self.args, "reward_weights", None)
            if given is not None and len(given) == len(self.reward_func_names):
                return [float(w) for w in given]
            return [float(w) for w in self.reward_weights.tolist()]

        def _calculate_rewards(self, *args, **kwargs):
            rewards = super()._calculate_rewards(*args, **kwargs)
            if getattr(rewards, "dim", lambda: 0)() != 2 or rewards.shape[1] != len(self.reward_func_names):
                raise MeshError(f"MeshGRPOTrainer: TRL {_trl_version()}'s _calculate_rewards returned "
                                f"{getattr(rewards, 'shape', type(rewards).__name__)}, not the (completions, "
                                f"{len(self.reward_func_names)} reward functions) matrix of TRL 1.16")
            self._mesh_rewards = rewards
            return rewards

        def _generate_and_score_completions(self, *args, **kwargs):
            self._mesh_rewards = None
            out = super()._generate_and_score_completions(*args, **kwargs)
            rewards, self._mesh_rewards = self._mesh_rewards, None
            if rewards is None or not isinstance(out, dict) or "advantages" not in out:
                raise MeshError(f"MeshGRPOTrainer: TRL {_trl_version()}'s _generate_and_score_completions did not call "
                                "_calculate_rewards or returned no 'advantages': not TRL 1.16's GRPOTrainer layout")
            mode = "train" if self.model.training else "eval"
            self._mesh_replace_advantages(out, rewards, mode)
            return out

        def _mesh_replace_advantages(self, out, rewards, mode):
            import torch

            size = self.num_generations if mode == "train" else getattr(self, "num_generations_eval", None) or self.num_generations
            total, k = rewards.shape
            if total % size:
                raise MeshError(f"MeshGRPOTrainer: {total} completions are not groups of {size} generations")
            values = rewards.detach().to("cpu", torch.float64).view(-1, size, k).tolist()
            step = self.state.global_step
            groups = [{"group_id": f"{mode}-{step}-{g}",
                       "rollouts": [[None if v != v else v for v in row] for row in group]}
                      for g, group in enumerate(values)]
            cfg = self.mesh_run_config
            same = cfg is not None and _canonical(cfg.estimator) == _canonical(self.mesh_estimator)
            req = advantages_request(
                groups, estimator=self.mesh_estimator, components=list(self.reward_func_names),
                weights=self._mesh_weights(),
                options=cfg.estimator_options if same else None,
                sgrpo=cfg.sgrpo if cfg else None, dynamic_sampling=cfg.dynamic_sampling if cfg else None)
            self.mesh_last_request = req
            res = self.mesh_advantages.compute(req)
            self.mesh_last_response = res
            if len(res.groups) != len(groups):
                raise MeshError(f"MeshGRPOTrainer: the trainer returned {len(res.groups)} groups for {len(groups)}")
            adv = torch.zeros(total, dtype=torch.float64)
            for g, group in enumerate(res.groups):
                if not group.kept:
                    continue
                if len(group.advantages) != size:
                    raise MeshError(f"MeshGRPOTrainer: the trainer returned {len(group.advantages)} advantages for "
                                    f"group {group.group_id!r} of {size}")
                adv[g * size:(g + 1) * size] = torch.tensor(list(group.advantages), dtype=torch.float64)
            local = out["advantages"]
            n = local.shape[0]
            p = self.accelerator.process_index
            out["advantages"] = adv[p * n:(p + 1) * n].to(device=local.device, dtype=local.dtype)
            # TRL's completions table holds the advantages of the whole batch (every process), last appended.
            logged = self._logs.get("advantages") if isinstance(getattr(self, "_logs", None), dict) else None
            if logged is not None and len(logged) >= total:
                for _ in range(total):
                    logged.pop()
                logged.extend(adv.tolist())
            m = self._metrics[mode]
            m["mesh/advantages/mean"].append(float(adv.mean()))
            m["mesh/advantages/std"].append(float(adv.std()) if total > 1 else 0.0)
            m["mesh/advantages/abs_mean"].append(float(adv.abs().mean()))
            m["mesh/groups_kept"].append(sum(1 for g in res.groups if g.kept) / len(res.groups))

    MeshGRPOTrainer.__qualname__ = MeshGRPOTrainer.__name__
    _trainer_classes[base] = MeshGRPOTrainer
    return MeshGRPOTrainer


def _canonical(estimator):
    return "grpo_covariance_coefficient" if estimator in ("corr_grpo", "corrgrpo") else estimator


def _run_config_of(source):
    return None if source is None else run_config(source)


def __getattr__(name):
    # `from reward_mesh.trl import MeshGRPOTrainer` builds the subclass of trl.GRPOTrainer (TRL needed then only).
    if name == "MeshGRPOTrainer":
        return mesh_grpo_trainer_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
