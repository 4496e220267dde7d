"""The parts of a reward-mesh run configuration an adapter needs: the weighted components, the estimator
(with its options), S-GRPO and DAPO dynamic sampling, and which domains each service scores.

Reads the trainer's run file (`run.yaml`/`run.json`, keys as in trainer/schema/run-config.schema.json;
YAML needs PyYAML) or the resolved configuration a run records (`runs/<id>/resolved-config.json`), or the
same as a dict. The only module of this package that reads environment variables (`from_env`).
"""

import json
import math
import os
from dataclasses import dataclass, field

from .errors import InvalidInputError

# The longest timeout taken, in seconds (about 3 years): grpcio fails a call at once past ~1e10 s, and
# waiting on futures overflows past ~9.2e9 s.
MAX_TIMEOUT = 1e8

# The trainer's component presets (trainer/src/run/config.ts COMPONENT_PRESETS); a test compares the two.
COMPONENT_PRESETS = {
    "corrgrpo-code": [
        ("code-exec", "pass", 0.6),
        ("ast", "similarity", 0.3),
        ("code-exec", "runtime", 0.25),
        ("efficiency", "efficiency", 0.2),
        ("code-exec", "format", 0.05),
        ("code-exec", "syntax", 0.05),
        ("code-exec", "compile", 0.05),
    ],
    "rlla-tool": [
        ("tool-call", "format", 1.0),
        ("tool-call", "function_name", 1.0),
        ("tool-call", "parameter_name", 1.0),
        ("tool-call", "parameter_value", 1.0),
    ],
    "agentdojo": [("agentdojo", "utility", 1.0), ("agentdojo", "security", 1.0)],
    "overlong": [("length", "overlong", 1.0)],
}


@dataclass(frozen=True)
class Component:
    service: str
    component: str
    weight: float

    @property
    def name(self):
        """`<service>/<component>`, the mesh's name for it."""
        return f"{self.service}/{self.component}"


@dataclass(frozen=True)
class RunConfig:
    components: tuple
    estimator: str = "grpo_covariance_coefficient"
    estimator_options: dict = field(default_factory=dict)
    # {"p", "component"?, "successThreshold"?, "variant"?} or None.
    sgrpo: dict = None
    # {"component"?} (`{}`: on, the weighted total) or None (off).
    dynamic_sampling: dict = None
    # service -> domains (the run's `services:` key, or `serviceDomains` of a resolved configuration).
    service_domains: dict = field(default_factory=dict)

    @property
    def names(self):
        return [c.name for c in self.components]

    @property
    def weights(self):
        return [c.weight for c in self.components]


def _components(raw):
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or len(raw) == 0:
        raise InvalidInputError("'components' must be a preset name or a non-empty list")
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            if item not in COMPONENT_PRESETS:
                raise InvalidInputError(f"'components[{i}]' is not a preset: {item!r} (presets: {', '.join(COMPONENT_PRESETS)})")
            out.extend(Component(*c) for c in COMPONENT_PRESETS[item])
            continue
        if not isinstance(item, dict):
            raise InvalidInputError(f"'components[{i}]' must be a preset name or {{service, component, weight}}")
        for key in ("service", "component"):
            if not isinstance(item.get(key), str) or item[key] == "":
                raise InvalidInputError(f"'components[{i}].{key}' must be a non-empty string")
        w = item.get("weight", 1)
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            raise InvalidInputError(f"'components[{i}].weight' must be a number, got {w!r}")
        out.append(Component(item["service"], item["component"], float(w)))
    seen = set()
    for c in out:
        if c.name in seen:
            raise InvalidInputError(f"'components' names {c.name} twice")
        seen.add(c.name)
    return tuple(out)


def run_config(source):
    """A RunConfig from a dict, a RunConfig, or the path of a run file / resolved-config.json."""
    if isinstance(source, RunConfig):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InvalidInputError(f"cannot read the run configuration {path!r}: {e.strerror}") from None
        if path.endswith((".yaml", ".yml")):
            try:
                import yaml
            except ImportError:
                raise InvalidInputError(f"{path!r} is YAML: install PyYAML, or pass the run's resolved-config.json") from None
            source = yaml.safe_load(text)
        else:
            try:
                source = json.loads(text)
            except json.JSONDecodeError as e:
                raise InvalidInputError(f"{path!r} is not valid JSON: {e}") from None
    if not isinstance(source, dict):
        raise InvalidInputError("a run configuration must be a mapping (or the path of one)")
    if "components" not in source:
        raise InvalidInputError("'components' is required in the run configuration")
    est = source.get("estimator", "grpo_covariance_coefficient")
    name, options = (est, {}) if isinstance(est, str) else (est.get("name", "grpo_covariance_coefficient"), est.get("options") or {})
    sgrpo = source.get("sgrpo") or None
    if sgrpo is not None and (not isinstance(sgrpo, dict) or "p" not in sgrpo):
        raise InvalidInputError("'sgrpo' must be {p, component?, successThreshold?, variant?}, null or false")
    # As the trainer (trainer/src/run/config.ts): true and any object (`{}` included) turn it on.
    ds = source.get("dynamicSampling")
    if ds is not None and not isinstance(ds, (bool, dict)):
        raise InvalidInputError(f"'dynamicSampling' must be true, false or {{component}}, got {ds!r}")
    ds = {} if ds is True else (ds if isinstance(ds, dict) else None)
    domains = source.get("serviceDomains") or source.get("services") or {}
    if not isinstance(domains, dict) or not all(isinstance(v, (list, tuple)) for v in domains.values()):
        raise InvalidInputError("'services' must map a service name to the list of domains it scores")
    return RunConfig(
        components=_components(source["components"]),
        estimator=name,
        estimator_options=dict(options),
        sgrpo=dict(sgrpo) if sgrpo else None,
        dynamic_sampling=dict(ds) if ds is not None else None,
        service_domains={k: list(v) for k, v in domains.items()},
    )


def parse_services(value, name="services"):
    """`{"length": "127.0.0.1:50061"}`, or the text `length=127.0.0.1:50061,math=127.0.0.1:50062`."""
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str) or value.strip() == "":
        raise InvalidInputError(f"'{name}' must be name=host:port pairs, comma-separated")
    out = {}
    for part in value.split(","):
        n, sep, addr = part.strip().partition("=")
        if sep == "" or n == "" or addr == "":
            raise InvalidInputError(f"'{name}': {part.strip()!r} is not name=host:port")
        out[n] = addr
    return out


def from_env(environ=None):
    """The adapters' settings from the environment, for frameworks that load a module by path (verl):
    `REWARD_MESH_SERVICES` (name=host:port,...), `REWARD_MESH_RUN_CONFIG` (a run file),
    `REWARD_MESH_TRAINER` (host:port of Trainer.ComputeAdvantages), `REWARD_MESH_TIMEOUT` (seconds)."""
    env = os.environ if environ is None else environ
    out = {}
    if env.get("REWARD_MESH_SERVICES"):
        out["services"] = parse_services(env["REWARD_MESH_SERVICES"], "REWARD_MESH_SERVICES")
    if env.get("REWARD_MESH_RUN_CONFIG"):
        out["run_config"] = env["REWARD_MESH_RUN_CONFIG"]
    if env.get("REWARD_MESH_TRAINER"):
        out["trainer"] = env["REWARD_MESH_TRAINER"]
    if env.get("REWARD_MESH_TIMEOUT"):
        try:
            out["timeout"] = float(env["REWARD_MESH_TIMEOUT"])
        except ValueError:
            out["timeout"] = math.nan
        if not math.isfinite(out["timeout"]) or not 0 < out["timeout"] <= MAX_TIMEOUT:
            raise InvalidInputError(f"'REWARD_MESH_TIMEOUT' must be seconds above 0 and up to {MAX_TIMEOUT:g}, got {env['REWARD_MESH_TIMEOUT']!r}")
    return out
