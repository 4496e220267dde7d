"""verl adapter: a custom reward function (`compute_score`, and `compute_score_batch` for verl's batch
reward manager) and advantage estimators (`corr_grpo`, `s_grpo`, `reward_mesh`) that call the trainer's
`ComputeAdvantages`.

Settings, in order: `configure(...)`; the reward function's keyword arguments (verl's
`custom_reward_function.reward_kwargs`: `services`, `run_config`, `trainer`, `timeout`); the environment
(`REWARD_MESH_SERVICES=name=host:port,...`, `REWARD_MESH_RUN_CONFIG`, `REWARD_MESH_TRAINER`,
`REWARD_MESH_TIMEOUT`).

The task of a sample: `extra_info["task"]` (a `rewardmesh.v1.Task` as proto JSON), a ground truth that
is itself such a dict, or else a math task whose reference answer is `ground_truth` (verl's math
datasets), with `extra_info["question"]` (or `"prompt"`) as prompt.

Advantages: verl hands an estimator only `token_level_rewards`, `response_mask`, `index` (the group
uid) and `config`, not the components; so `compute_score` records each sample's component values in this
process, and the estimator takes the last `batch size` records, checks that their weighted totals are the
batch's rewards (else it raises: reward computed in another process, a KL penalty in the reward, ...)
and sends the groups to `ComputeAdvantages`. So called through verl's registry alone, the estimators need the
reward computed in the process that computes the advantages. verl 0.9.1's trainers score in
RewardLoopWorker Ray actors; the components come back to the driver as reward_extra_info, and `install()`
(or importing `reward_mesh.verl_install`) replaces verl's `compute_advantage` in the driver with one that
reads them from the batch for the mesh's estimators (`compute_driver_advantages`). Importing this module (e.g. `VERL_USE_EXTERNAL_MODULES=
reward_mesh.verl`) registers the estimators when verl is importable; `register()` does it explicitly.
"""

import contextvars
import importlib
import inspect
import math
import os
import sys
import types
import threading
import warnings
from collections import deque

from .builder import math_task, rollout, task_from_json
from .client import AdvantagesClient, Mesh, advantages_request, weighted
from .config import from_env, parse_services, run_config
from .errors import InvalidInputError, MeshError

_lock = threading.RLock()
_settings = {}
_meshes = {}
_trainers = {}
# (component names, weighted score, values with None where not applicable, Scored), in scoring order.
_ledger = deque(maxlen=1 << 20)


def configure(*, services=None, run_config=None, trainer=None, timeout=None):
    """Sets the mesh (`services`: {name: host:port} or `name=host:port,...`), the run configuration (its
    components, weights, estimator, S-GRPO, dynamic sampling), the trainer address (ComputeAdvantages)
    and the timeout (seconds) for this process; unset arguments keep their value."""
    with _lock:
        for k, v in (("services", services), ("run_config", run_config), ("trainer", trainer), ("timeout", timeout)):
            if v is not None:
                _settings[k] = v


def reset():
    """Forgets the configuration, the recorded scores and the open connections."""
    with _lock:
        _settings.clear()
        _ledger.clear()
        _configs.clear()
        for m in _meshes.values():
            m.close()
        for t in _trainers.values():
            t.close()
        _meshes.clear()
        _trainers.clear()


def _resolve(kwargs):
    s = dict(from_env())
    s.update({k: v for k, v in kwargs.items() if k in ("services", "run_config", "trainer", "timeout") and v is not None})
    s.update(_settings)
    return s


_configs = {}


def _run_config(source):
    """The RunConfig of `source`; a file is read once per path and modification time (compute_score runs
    once per sample)."""
    if not isinstance(source, (str, os.PathLike)):
        return run_config(source)
    path = os.fspath(source)
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except OSError:
        return run_config(path)  # raises naming the file
    with _lock:
        cfg = _configs.get(key)
        if cfg is None:
            cfg = _configs[key] = run_config(path)
    return cfg


class Scored:
    """The settings a sample was scored with (from configure, the reward function's keyword arguments or
    the environment), recorded with it so the estimator uses the same weights, estimator, options,
    S-GRPO, dynamic sampling, trainer and timeout, however they were given."""

    __slots__ = ("settings", "config", "weights")

    def __init__(self, settings, config, weights):
        self.settings = settings
        self.config = config
        self.weights = tuple(weights)

    def __eq__(self, other):
        return (isinstance(other, Scored) and self.weights == other.weights and self.config == other.config
                and self.settings == other.settings)

    __hash__ = None


def _mesh_and_config(kwargs, scored=False):
    s = _resolve(kwargs)
    if "services" not in s:
        raise InvalidInputError("reward_mesh.verl: no services: set REWARD_MESH_SERVICES=name=host:port,... "
                                "(or custom_reward_function.reward_kwargs.services, or configure(services=...))")
    cfg = _run_config(s["run_config"]) if "run_config" in s else None
    services = parse_services(s["services"])
    key = (tuple(sorted(services.items())), repr(cfg.service_domains if cfg else None))
    with _lock:
        mesh = _meshes.get(key)
        if mesh is None:
            mesh = Mesh(services, timeout=float(s.get("timeout", 60.0)), service_domains=cfg.service_domains if cfg else None)
            _meshes[key] = mesh
    names = cfg.names if cfg else list(mesh.components)
    weights = cfg.weights if cfg else [1.0] * len(names)
    mesh.check_components(names)
    if scored:
        return mesh, Scored(s, cfg, weights), names, weights
    return mesh, cfg, names, weights


def _task(ground_truth, extra_info, i=None):
    where = "" if i is None else f"[{i}]"
    info = extra_info if isinstance(extra_info, dict) else {}
    if hasattr(ground_truth, "tolist"):  # verl's non-tensor batch holds numpy arrays
        ground_truth = ground_truth.tolist()
    if info.get("task") is not None:
        return task_from_json(info["task"], name=f"extra_info{where}['task']")
    if isinstance(ground_truth, dict):
        return task_from_json(ground_truth, name=f"ground_truth{where}")
    if ground_truth is None or (isinstance(ground_truth, (list, tuple)) and len(ground_truth) == 0):
        raise InvalidInputError(f"ground_truth{where} is empty and extra_info{where} has no 'task'")
    answers = list(ground_truth) if isinstance(ground_truth, (list, tuple)) else [ground_truth]
    prompt = info.get("question") or info.get("prompt")
    return math_task(answers, prompt=prompt if isinstance(prompt, (str, list)) else None)


def _result(row, names, weights, scored=None):
    values = [None if row[n] is None else row[n].value for n in names]
    score = weighted(row, names, weights)
    out = {"score": score}
    for n, v in zip(names, values):
        out[n] = math.nan if v is None else v
    return out, (tuple(names), score, values, scored)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's custom reward function: `{"score": weighted total, "<service>/<component>": value, ...}`
    (NaN where a component does not apply: verl needs the same keys for every sample)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    """verl's batch reward manager's function (called with keyword arguments, numpy arrays from its
    non-tensor batch; `data_sources` may be None): one result dict per sample, the batch scored with one
    `ScoreBatch` call per service (`Mesh.score`)."""
    n = len(solution_strs)
    if len(ground_truths) != n or (data_sources is not None and len(data_sources) != n):
        raise InvalidInputError(f"solution_strs and ground_truths (and data_sources) differ in length ({n}, {len(ground_truths)})")
    extra_infos = list(extra_infos) if extra_infos is not None else [None] * n
    mesh, scored, names, weights = _mesh_and_config(kwargs, scored=True)
    rollouts = []
    for i in range(n):
        info = extra_infos[i] if isinstance(extra_infos[i], dict) else {}
        meta = info.get("metadata") if isinstance(info.get("metadata"), dict) else None
        rollouts.append(rollout(_task(ground_truths[i], info, i if n > 1 else None), solution_strs[i], metadata=meta))
    rows = mesh.score(rollouts)
    out = []
    with _lock:
        for row in rows:
            res, record = _result(row, names, weights, scored)
            _ledger.append(record)
            out.append(res)
    return out


def _take(n):
    with _lock:
        if len(_ledger) < n:
            raise MeshError(f"reward_mesh.verl: the batch has {n} samples but this process scored {len(_ledger)} since the "
                            "last advantage computation: verl computed the reward in another process. The estimator "
                            "needs reward_mesh.verl.compute_score (or compute_score_batch) called in the process that "
                            "computes the advantages, with algorithm.use_kl_in_reward=False. verl 0.9.1's trainers "
                            "(trainer.use_v1=true and the legacy one) score only in RewardLoopWorker Ray actors, never "
                            "in the driver: there install reward_mesh.verl (VERL_USE_EXTERNAL_MODULES="
                            "reward_mesh.verl_install), so verl's compute_advantage reads the components from the "
                            "batch's reward_extra_info; see docs/frameworks/verl.md")
        records = list(_ledger)[-n:]
        _ledger.clear()
    return records


def _trainer(settings):
    if "trainer" not in settings:
        raise InvalidInputError("reward_mesh.verl: no trainer: set REWARD_MESH_TRAINER=host:port (the trainer serving "
                                "ComputeAdvantages), or configure(trainer=...)")
    addr = settings["trainer"]
    with _lock:
        t = _trainers.get(addr)
        if t is None:
            t = _trainers[addr] = AdvantagesClient(addr, timeout=float(settings.get("timeout", 60.0)))
    return t


def _canonical(estimator):
    return "grpo_covariance_coefficient" if estimator in ("corr_grpo", "corrgrpo") else estimator


ESTIMATORS = {
    # name in verl's config -> (estimator, whether S-GRPO must be configured)
    "reward_mesh": (None, False),
    "corr_grpo": ("grpo_covariance_coefficient", False),
    "s_grpo": ("grpo", True),
}


def estimator_fn(name):
    """The verl advantage estimator registered as `name` (one of ESTIMATORS):
    `fn(token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo, config, **kwargs)
    -> (advantages, returns)`, both `[batch, response_length]` tensors (the advantage on every response
    token, 0 on padding; returns = advantages, as verl's GRPO)."""
    if name not in ESTIMATORS:
        raise InvalidInputError(f"unknown reward-mesh estimator {name!r} (known: {', '.join(ESTIMATORS)})")
    fixed, needs_sgrpo = ESTIMATORS[name]

    def compute_advantage(token_level_rewards, response_mask, index=None, epsilon=1e-6,
                          norm_adv_by_std_in_grpo=True, config=None, **kwargs):
        import torch

        if index is None:
            raise InvalidInputError(f"{name}: verl passes the group uids as 'index'; none given")
        n = token_level_rewards.shape[0]
        if len(index) != n:
            raise InvalidInputError(f"{name}: 'index' has {len(index)} entries for {n} samples")
        records = _take(n)
        # The settings the batch was scored with (reward_kwargs included), not this call's environment.
        scored = records[0][3]
        if any(r[3] != scored for r in records):
            raise MeshError(f"{name}: the batch's samples were scored with different settings (reward_kwargs or "
                            "configure() changed within the batch)")
        cfg = scored.config
        if needs_sgrpo and (cfg is None or cfg.sgrpo is None):
            raise InvalidInputError(f"{name}: S-GRPO needs 'sgrpo: {{p: ...}}' in the run configuration (REWARD_MESH_RUN_CONFIG)")
        estimator = fixed or (cfg.estimator if cfg else "grpo_covariance_coefficient")
        same = cfg is not None and _canonical(cfg.estimator) == _canonical(estimator)
        rewards = (token_level_rewards * response_mask).sum(dim=-1).tolist()
        for i, ((_, score, _, _), r) in enumerate(zip(records, rewards)):
            if abs(score - r) > 1e-4 * max(1.0, abs(score)):
                raise MeshError(f"{name}: sample {i}'s reward is {r} but reward_mesh.verl scored {score} for it: the "
                                "recorded scores are not this batch's (a KL penalty in the reward, a reward manager that "
                                "reorders samples, or a reward computed elsewhere)")
        advantages = _advantages(name, compute_advantage, records[0][0], [r[2] for r in records], index, scored,
                                 estimator, same, token_level_rewards, response_mask)
        return advantages, advantages

    compute_advantage.__name__ = f"compute_{name}_outcome_advantage"
    compute_advantage.last_response = None
    compute_advantage.last_request = None
    return compute_advantage


def _advantages(name, fn, names, values, index, scored, estimator, same, token_level_rewards, response_mask):
    """ComputeAdvantages for `values` (one row per sample, None: not applicable), one group per uid in
    first-seen order; the advantage on every response token (0 on padding), on the rewards' device and
    dtype. Records the request and response on `fn` (last_request / last_response)."""
    import torch

    cfg = scored.config
    n = len(values)
    members = {}
    for i, uid in enumerate(index):
        members.setdefault(uid, []).append(i)
    groups = [{"group_id": str(uid), "rollouts": [values[i] for i in idx]} for uid, idx in members.items()]
    req = advantages_request(
        groups,
        estimator=estimator,
        components=list(names),
        weights=scored.weights,
        options=cfg.estimator_options if same else None,
        sgrpo=cfg.sgrpo if cfg else None,
        dynamic_sampling=cfg.dynamic_sampling if cfg else None,
    )
    fn.last_request = req
    res = _trainer(scored.settings).compute(req)
    if len(res.groups) != len(members):
        raise MeshError(f"{name}: the trainer returned {len(res.groups)} groups for {len(members)} uid groups")
    scores = torch.zeros(n, dtype=torch.float64)
    for g, idx in zip(res.groups, members.values()):
        if len(g.advantages) != len(idx) and g.kept:
            raise MeshError(f"{name}: the trainer returned {len(g.advantages)} advantages for group "
                            f"{g.group_id!r} of {len(idx)} samples")
        if g.kept:
            scores[idx] = torch.tensor(list(g.advantages), dtype=torch.float64)
    # On the rewards' device (CUDA in verl's driver when the batch lives there).
    advantages = scores.to(device=token_level_rewards.device, dtype=token_level_rewards.dtype).unsqueeze(-1) * response_mask.to(token_level_rewards.dtype)
    fn.last_response = res
    return advantages


def register(register_adv_est=None, names=tuple(ESTIMATORS), *, skip_taken=False):
    """Registers the estimators in verl's registry (`verl.trainer.ppo.core_algos.register_adv_est`, or the
    given decorator factory), so `algorithm.adv_estimator=corr_grpo` selects one. `names`: the estimators
    to register, or {name in verl: one of ESTIMATORS} to register them under other names (e.g. when a verl
    fork already has a `corr_grpo`). A name verl already gives another function raises verl's ValueError,
    or is skipped with a warning when `skip_taken`. Returns {name: fn}."""
    if register_adv_est is None:
        from verl.trainer.ppo.core_algos import register_adv_est
    pairs = names.items() if isinstance(names, dict) else ((n, n) for n in names)
    out = {}
    for as_name, kind in pairs:
        fn = _registered.setdefault(kind, estimator_fn(kind))
        try:
            out[as_name] = register_adv_est(as_name)(fn)
            _names_in_verl[as_name] = kind
        except ValueError as e:
            if not skip_taken:
                raise
            warnings.warn(f"reward_mesh.verl: not registering {as_name!r}: {e} (register(names={{'mesh_{as_name}': "
                          f"{kind!r}}}) registers it under another name)", stacklevel=2)
    return out


_registered = {}
_names_in_verl = {}  # name in verl's config -> one of ESTIMATORS (register(names=...) may rename)

# ---------------------------------------------------------------------------------------------------
# The driver: verl 0.9.1's trainers score in RewardLoopWorker actors; the components come back to the
# driver as reward_extra_info. install() makes verl's compute_advantage read them from there.

_DRIVER_ARGS = ("data", "adv_estimator", "gamma", "lam", "num_repeat", "norm_adv_by_std_in_grpo", "config")
_V1_ARGS = ("self", "batch", "metrics")
DRIVER_MODULES = ("verl.trainer.ppo.ray_trainer", "verl.trainer.ppo.v1.utils")
# The v1 trainer's per-sample reward_extra_info, read from TransferQueue for the call in progress.
_pending = contextvars.ContextVar("reward_mesh_verl_reward_extra_info", default=None)
#: the last ComputeAdvantages request and response of the installed compute_advantage
driver = types.SimpleNamespace(last_request=None, last_response=None, installed=())


def _mesh_kind(adv_estimator):
    name = getattr(adv_estimator, "value", adv_estimator)
    if not isinstance(name, str):
        return None, name
    return _names_in_verl.get(name) or (name if name in ESTIMATORS else None), name


def _float(v, key, i):
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidInputError(f"reward_mesh.verl: reward_extra_info[{key!r}] of sample {i} is {v!r}, not a number") from None
    return None if math.isnan(f) else f


def compute_driver_advantages(data, adv_estimator="corr_grpo", config=None, reward_extra_info=None):
    """The mesh estimator `adv_estimator` (corr_grpo, s_grpo, reward_mesh, or a name given to register())
    on a verl `DataProto` in the driver: the component values from the reward loop's `reward_extra_info`
    (each `<service>/<component>` key in `data.non_tensor_batch`, where verl's legacy trainer puts them, or
    `reward_extra_info`: one dict per sample, what the v1 trainer keeps in TransferQueue), the groups from
    `non_tensor_batch["uid"]`, the components, weights, estimator options and trainer from this process's
    settings (configure() / the environment: REWARD_MESH_RUN_CONFIG, REWARD_MESH_TRAINER). Writes
    `advantages` and `returns` (the advantage on every response token, 0 on padding), as verl's GRPO."""
    kind, name = _mesh_kind(adv_estimator)
    if kind is None:
        raise InvalidInputError(f"reward_mesh.verl: {name!r} is not a reward-mesh estimator (known: {', '.join(sorted(set(ESTIMATORS) | set(_names_in_verl)))})")
    fixed, needs_sgrpo = ESTIMATORS[kind]
    if config is not None and config.get("use_kl_in_reward", False):
        raise InvalidInputError(f"{name}: algorithm.use_kl_in_reward=True: a KL penalty in the reward cannot be part of the "
                                "components' advantages; set algorithm.use_kl_in_reward=False (use the actor's KL loss)")
    nt = data.non_tensor_batch
    n = len(data)
    if "uid" not in nt:
        raise InvalidInputError(f"{name}: the batch has no non_tensor_batch['uid'] (the group ids)")
    if "response_mask" not in data.batch.keys():
        from verl.trainer.ppo.ray_trainer import compute_response_mask

        data.batch["response_mask"] = compute_response_mask(data)
    rows = reward_extra_info if reward_extra_info is not None else _pending.get()
    if rows is not None and len(rows) != n:
        raise InvalidInputError(f"{name}: reward_extra_info has {len(rows)} entries for {n} samples")
    s = _resolve({})
    cfg = _run_config(s["run_config"]) if "run_config" in s else None
    if cfg is not None:
        names, weights = list(cfg.names), list(cfg.weights)
    else:  # as compute_score without a run configuration: every "<service>/<component>" key, weight 1
        keys = data.meta_info.get("reward_extra_keys") or (list(rows[0]) if rows else [])
        names = [k for k in keys if isinstance(k, str) and "/" in k]
        if not names:
            raise InvalidInputError(f"{name}: no run configuration in the driver (REWARD_MESH_RUN_CONFIG or "
                                    "reward_mesh.verl.configure(run_config=...)) and no '<service>/<component>' key in "
                                    "the batch's reward_extra_keys: is reward_mesh.verl.compute_score the reward function?")
        weights = [1.0] * len(names)
    columns = []
    for key in names:
        if key in nt:
            col = list(nt[key])
        elif rows is not None and all(isinstance(r, dict) and key in r for r in rows):
            col = [r[key] for r in rows]
        else:
            have = sorted(k for k in (list(nt) + (list(rows[0]) if rows and isinstance(rows[0], dict) else []))
                          if isinstance(k, str) and "/" in k)
            raise InvalidInputError(f"{name}: component {key!r} (of the run configuration) is not in the batch's "
                                    f"reward_extra_info (it has {', '.join(have) or 'no <service>/<component> key'}): the "
                                    "reward function must be reward_mesh.verl.compute_score with the same run "
                                    "configuration as the driver")
        if len(col) != n:
            raise InvalidInputError(f"{name}: reward_extra_info[{key!r}] has {len(col)} values for {n} samples")
        columns.append(col)
    values = [[_float(columns[j][i], names[j], i) for j in range(len(names))] for i in range(n)]
    # The scores the workers put in the batch must be the weighted totals of these components (else the
    # driver's run configuration is not the workers', or the reward is not compute_score's).
    scores_t = data.batch["token_level_scores"] if "token_level_scores" in data.batch.keys() else data.batch["token_level_rewards"]
    mask = data.batch["response_mask"]
    totals = (scores_t * mask).sum(dim=-1).tolist()
    for i, (row, r) in enumerate(zip(values, totals)):
        score = sum(w * v for w, v in zip(weights, row) if v is not None)
        if abs(score - r) > 1e-4 * max(1.0, abs(score)):
            raise MeshError(f"{name}: sample {i}'s reward is {r} but its components weigh {score} with the driver's run "
                            f"configuration ({', '.join(f'{k}={w}' for k, w in zip(names, weights))}): the reward workers "
                            "and the driver must use the same run configuration and compute_score's 'score'")
    if needs_sgrpo and (cfg is None or cfg.sgrpo is None):
        raise InvalidInputError(f"{name}: S-GRPO needs 'sgrpo: {{p: ...}}' in the run configuration (REWARD_MESH_RUN_CONFIG)")
    estimator = fixed or (cfg.estimator if cfg else "grpo_covariance_coefficient")
    same = cfg is not None and _canonical(cfg.estimator) == _canonical(estimator)
    rewards = data.batch["token_level_rewards"] if "token_level_rewards" in data.batch.keys() else scores_t
    advantages = _advantages(name, driver, names, values, list(nt["uid"]), Scored(s, cfg, weights), estimator, same,
                             rewards, mask)
    data.batch["advantages"] = advantages
    data.batch["returns"] = advantages
    return data


def _check_signature(fn, expected, where):
    try:
        params = tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = None
    if params != expected:
        import verl

        raise MeshError(f"reward_mesh.verl.install: {where} has parameters {params}, not {expected} (verl 0.9.1's); "
                        f"this verl ({getattr(verl, '__version__', '?')}) is not supported: see docs/frameworks/verl.md")


def _driver_wrapper(original):
    def compute_advantage(data, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1, norm_adv_by_std_in_grpo=True,
                          config=None):
        if _mesh_kind(adv_estimator)[0] is None:
            return original(data, adv_estimator, gamma=gamma, lam=lam, num_repeat=num_repeat,
                            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, config=config)
        with _lock:
            _ledger.clear()  # records of an in-process scoring are not needed here
        return compute_driver_advantages(data, adv_estimator, config=config)

    compute_advantage.__reward_mesh_original__ = original
    compute_advantage.__doc__ = (original.__doc__ or "") + "\n(reward_mesh.verl.install: the mesh's estimators read the components from reward_extra_info.)"
    compute_advantage.__wrapped__ = original
    return compute_advantage


def _v1_wrapper(original):
    def _compute_advantage(self, batch, metrics):
        if _mesh_kind(self.config.algorithm.adv_estimator)[0] is None:
            return original(self, batch, metrics)
        import transfer_queue as tq

        got = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
        rows = []
        for key, value in zip(batch.keys, list(got["extra_fields"])):
            fields = getattr(value, "data", value)
            info = fields.get("reward_extra_info") if isinstance(fields, dict) else None
            if not isinstance(info, dict) or not info:
                raise MeshError(f"reward_mesh.verl: sample {key!r} has no reward_extra_info in TransferQueue's extra_fields: "
                                "the reward loop did not score it (reward_mesh.verl.compute_score as the reward function?)")
            rows.append(info)
        token = _pending.set(rows)
        try:
            return original(self, batch, metrics)
        finally:
            _pending.reset(token)

    _compute_advantage.__reward_mesh_original__ = original
    _compute_advantage.__wrapped__ = original
    return _compute_advantage


def install(modules=()):
    """Makes the mesh's estimators work in a verl 0.9.1 run's driver (the process running the trainer's fit
    loop: verl's TaskRunner Ray actor; `VERL_USE_EXTERNAL_MODULES=reward_mesh.verl_install` calls this
    there). Replaces `compute_advantage` in verl.trainer.ppo.ray_trainer (the legacy trainer's fit loop
    calls it as a module global), verl.trainer.ppo.v1.utils (the v1 trainer's) and `modules` (other
    modules that imported it by name, e.g. "verl.experimental.separation.ray_trainer") with one that, for
    a reward-mesh estimator, reads the components from the batch's reward_extra_info
    (compute_driver_advantages) and calls verl's own compute_advantage for every other estimator; wraps the
    v1 trainer's `PPOTrainer._compute_advantage` so it also fetches each sample's reward_extra_info from
    TransferQueue. Registers the estimators too. Idempotent. Returns the patched names."""
    import verl.trainer.ppo.ray_trainer as rt

    with _lock:
        register(skip_taken=True)
        original = getattr(rt.compute_advantage, "__reward_mesh_original__", rt.compute_advantage)
        _check_signature(original, _DRIVER_ARGS, "verl.trainer.ppo.ray_trainer.compute_advantage")
        wrapper = rt.compute_advantage if hasattr(rt.compute_advantage, "__reward_mesh_original__") else _driver_wrapper(original)
        done = []
        for modname in (*DRIVER_MODULES, *modules):
            try:
                mod = sys.modules.get(modname) or importlib.import_module(modname)
            except ImportError as e:
                if modname in modules:
                    raise InvalidInputError(f"reward_mesh.verl.install: cannot import {modname}: {e}") from e
                continue  # the v1 trainer needs transfer_queue
            current = getattr(mod, "compute_advantage", None)
            if current is wrapper:
                done.append(f"{modname}.compute_advantage")
                continue
            if current is not original:
                raise MeshError(f"reward_mesh.verl.install: {modname}.compute_advantage is {current!r}, not verl's "
                                "verl.trainer.ppo.ray_trainer.compute_advantage (replaced by something else?)")
            mod.compute_advantage = wrapper
            done.append(f"{modname}.compute_advantage")
        try:
            from verl.trainer.ppo.v1.trainer_base import PPOTrainer
        except ImportError:
            PPOTrainer = None
        if PPOTrainer is not None:
            current = PPOTrainer.__dict__["_compute_advantage"]
            if not hasattr(current, "__reward_mesh_original__"):
                _check_signature(current, _V1_ARGS, "verl.trainer.ppo.v1.trainer_base.PPOTrainer._compute_advantage")
                PPOTrainer._compute_advantage = _v1_wrapper(current)
            done.append("verl.trainer.ppo.v1.trainer_base.PPOTrainer._compute_advantage")
        driver.installed = tuple(done)
    return list(done)


def uninstall():
    """Puts verl's functions back (what install() replaced)."""
    with _lock:
        for modname in (*DRIVER_MODULES, *[m.rsplit(".", 1)[0] for m in driver.installed]):
            mod = sys.modules.get(modname)
            fn = getattr(mod, "compute_advantage", None) if mod else None
            if hasattr(fn, "__reward_mesh_original__"):
                mod.compute_advantage = fn.__reward_mesh_original__
        base = sys.modules.get("verl.trainer.ppo.v1.trainer_base")
        if base is not None:
            fn = base.PPOTrainer.__dict__["_compute_advantage"]
            if hasattr(fn, "__reward_mesh_original__"):
                base.PPOTrainer._compute_advantage = fn.__reward_mesh_original__
        driver.installed = ()

try:  # loaded by verl (VERL_USE_EXTERNAL_MODULES=reward_mesh.verl, or as the reward function's module)
    import verl.trainer.ppo.core_algos  # noqa: F401
except ImportError:
    pass
else:
    register(skip_taken=True)
