"""Checkpoint directories, written atomically.

Layout (`DIR/`):

- `learner.json` — format tag and version, the policy spec (model, dtype, LoRA settings), the seed,
  the policy version, the learner's random-generator state, the weight decay and the idempotency
  cache (key → fingerprint and stored result);
- `optimizer.pt` — the optimizer state dicts by name (`adam`, `sgd`; those that were used);
- built-in models: `model.pt` (state dict) and `reference.pt` (the frozen KL reference);
- Hugging Face models: `model/` (`save_pretrained`, safetensors, with the tokenizer) for full
  fine-tuning, or `adapter/` (the LoRA adapter, safetensors) on top of the base model named in the spec.

Everything is first written to a sibling temporary directory, which is then renamed into place; an
existing checkpoint at the same path is replaced (anything else there is refused).
"""

import itertools
import json
import os
import shutil
from typing import Callable, Dict

from .errors import CheckpointError

#: The `format` tag of `learner.json`.
CHECKPOINT_FORMAT = "reward-mesh.torch-learner"
#: The layout version this code reads and writes.
CHECKPOINT_VERSION = 1
#: The manifest's file name.
MANIFEST = "learner.json"

_counter = itertools.count(1)


def write_checkpoint(path: str, fill: Callable[[str], None]) -> str:
    """Creates the checkpoint directory `path` atomically: `fill(tmp_dir)` writes its files into a
    temporary sibling, which then replaces `path`. Returns the absolute path."""
    if not isinstance(path, str) or not path:
        raise CheckpointError(str(path), "the checkpoint path must be a non-empty string")
    target = os.path.abspath(path)
    if os.path.exists(target) and not _replaceable(target):
        raise CheckpointError(target, f"{target} exists and is not a torch-learner checkpoint; refusing to replace it")
    n = next(_counter)
    tmp = f"{target}.tmp-{os.getpid()}-{n}"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.makedirs(tmp)
        fill(tmp)
        if os.path.exists(target):
            old = f"{target}.old-{os.getpid()}-{n}"
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)
    except CheckpointError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(target, f"cannot write the checkpoint {target}: {e}") from e
    return target


def _replaceable(target: str) -> bool:
    return os.path.isdir(target) and (not os.listdir(target) or os.path.isfile(os.path.join(target, MANIFEST)))


def write_manifest(directory: str, data: Dict[str, object]) -> None:
    """Writes `learner.json` (with the format tag and version) into `directory`."""
    body = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **data}
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(body, f, allow_nan=True)


def read_manifest(directory: str) -> Dict[str, object]:
    """Reads and checks `learner.json` of the checkpoint at `directory`."""
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError as e:
        raise CheckpointError(directory, f"{directory} is not a torch-learner checkpoint (no {MANIFEST})") from e
    except (OSError, ValueError) as e:
        raise CheckpointError(directory, f"cannot read {path}: {e}") from e
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt != CHECKPOINT_FORMAT:
        raise CheckpointError(directory, f"{path} is not a torch-learner manifest (format {fmt!r})")
    if data.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(directory, f"{path} has layout version {data.get('version')}; this learner reads {CHECKPOINT_VERSION}")
    return data
