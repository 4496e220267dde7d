#!/usr/bin/env bash
# The project's Python environment: .venv/ in the repository root (git-ignored), exactly
# python/requirements.lock. Used by the PyTorch learner, the Python client tests and the benches
# (REWARD_MESH_PYTHON points them at another interpreter instead). Run by
# `bash scripts/bootstrap.sh --with-torch`; on its own: `bash scripts/python-env.sh`.
#
#   * up to date (the stamp .venv/.reward-mesh-stamp holds the sha256 of the lock files, the torch spec and the venv's
#     Python version, and the venv's python runs): prints so and exits at once
#   * otherwise, under a lock (.venv.lock: concurrent runs wait for each other):
#       1. a venv whose python no longer runs (or has no pip) is removed; a missing one is created with
#          $REWARD_MESH_BASE_PYTHON (default python3, >= 3.11)
#       2. the stamp is removed first, so an interrupted install is redone by the next run
#       3. torch first, on its own: the lock's exact pin, torch==X+cpu (the local label keeps pip from taking
#          PyPI's plain torch==X, a multi-GB CUDA build), or $REWARD_MESH_TORCH_SPEC instead (e.g.
#          torch==2.13.0 on macOS, whose CPU build has no label); already installed, or from the wheel cache,
#          else fetched into it with pip's configured indexes plus $REWARD_MESH_TORCH_PIP_ARGS (e.g.
#          `--index-url URL` of PyTorch's CPU wheels)
#       4. the rest of the lock with --no-deps, from the wheel cache (pip fetches what it lacks first)
#       5. distributions the lock does not name are uninstalled (a changed lock leaves none behind)
#       6. `pip check`; then python/requirements-nodeps.txt if present, with --no-deps (packages whose
#          declared dependencies conflict with the lock, e.g. openrlhf; `pip check` would reject them)
#       7. the stamp, last
#   * the wheel cache: $REWARD_MESH_WHEEL_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/reward-mesh/wheels,
#     outside the repository, so a fresh clone on the same machine installs without the network
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
py="$venv/bin/python"
lock="$root/python/requirements.lock"
nodeps="$root/python/requirements-nodeps.txt"
stamp="$venv/.reward-mesh-stamp"
base_python=${REWARD_MESH_BASE_PYTHON:-python3}
cache=${REWARD_MESH_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reward-mesh/wheels}
read -r -a torch_pip_args <<<"${REWARD_MESH_TORCH_PIP_ARGS:-}"
torch_pin=${REWARD_MESH_TORCH_SPEC:-$(grep -E '^torch==' "$lock" 2>/dev/null || true)}

log() { echo "python-env: $*" >&2; }
die() { echo "python-env: error: $*" >&2; exit 1; }

[ -f "$lock" ] || die "$lock is missing (it is committed: restore it)"

# What the stamp must say: the lock files' sha256 and the venv interpreter's version.
wanted_stamp() {
  local v
  v=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || return 1
  { cat "$lock"; [ -f "$nodeps" ] && cat "$nodeps"; echo "python $v"; echo "$torch_pin"; } | sha256sum | cut -d' ' -f1
}
up_to_date() {
  local want
  [ -f "$stamp" ] && want=$(wanted_stamp) && [ "$(cat "$stamp")" = "$want" ]
}

if up_to_date; then
  log "$venv is up to date ($("$py" --version 2>&1), python/requirements.lock)"
  exit 0
fi

command -v flock >/dev/null 2>&1 || die "flock (util-linux) is missing"
exec 9>"$root/.venv.lock"
if ! flock -n 9; then
  log "another install of $venv is running; waiting for it"
  flock 9
fi
if up_to_date; then
  log "$venv is up to date (installed by a concurrent run)"
  exit 0
fi
started=$SECONDS

# 1. A venv that is there but broken is recreated.
if [ -e "$venv" ] && ! { "$py" -c pass && "$py" -m pip --version; } >/dev/null 2>&1; then
  log "$venv is broken (its python or pip does not run): recreating it"
  rm -rf "$venv"
fi
if [ ! -e "$venv" ]; then
  command -v "$base_python" >/dev/null 2>&1 ||
    die "no '$base_python' to create the venv with: install Python >= 3.11 or set REWARD_MESH_BASE_PYTHON to one"
  "$base_python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "$base_python is Python $("$base_python" -c 'import platform; print(platform.python_version())'); the lock needs >= 3.11 (set REWARD_MESH_BASE_PYTHON)"
  log "creating $venv with $("$base_python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$base_python" -m venv "$venv" ||
    die "'$base_python -m venv' failed (Debian/Ubuntu's own python3: apt-get install -y python3-venv)"
fi

# 2. An interrupted install is redone: the stamp goes first.
rm -f "$stamp"
mkdir -p "$cache" || die "cannot create the wheel cache $cache (set REWARD_MESH_WHEEL_CACHE)"
pip=("$py" -m pip --disable-pip-version-check --no-input)
# pip's configured find-links (pip.conf) stay on: --no-index drops only the indexes.
offline=(--no-index --find-links "$cache")

# 3. torch first (when the lock pins it: python/requirements.lock does).
if [ -n "$torch_pin" ] && ! "${pip[@]}" install -q "${offline[@]}" --no-deps "$torch_pin" 2>/dev/null; then
  log "fetching $torch_pin into $cache"
  "${pip[@]}" wheel -q --no-deps -w "$cache" "${torch_pip_args[@]}" "$torch_pin" || die "$(
    cat <<EOF
could not fetch $torch_pin with pip's configured indexes${torch_pip_args[*]:+ and '${torch_pip_args[*]}'}.
  Pass PyTorch's CPU wheel index (its install selector names it; PyPI has only the CUDA build):
    REWARD_MESH_TORCH_PIP_ARGS='--index-url <URL>' bash scripts/bootstrap.sh --with-torch
  or install it into the venv yourself, then rerun:
    $py -m pip install --no-deps '$torch_pin' --index-url <URL>
  (where the CPU build has no +cpu label, e.g. macOS: REWARD_MESH_TORCH_SPEC=torch==VERSION)
EOF
  )"
  "${pip[@]}" install -q "${offline[@]}" --no-deps "$torch_pin" || die "installing $torch_pin from $cache failed"
fi

# 4. The rest of the lock, --no-deps, from the cache; what the cache lacks is fetched (sdists built) first.
# Already installed pins are skipped, so a changed lock reinstalls only what changed.
rest=$(mktemp)
trap 'rm -f "$rest"' EXIT
grep -vE '^torch==' "$lock" >"$rest" || true
if grep -qE '^[A-Za-z0-9]' "$rest" && ! "${pip[@]}" install -q "${offline[@]}" --no-deps -r "$rest" 2>/dev/null; then
  log "fetching what $cache lacks of python/requirements.lock (a few minutes the first time on a machine)"
  "${pip[@]}" wheel -q --no-deps -w "$cache" -r "$rest" ||
    die "could not fetch python/requirements.lock's packages with pip's configured indexes (see pip's message above)"
  log "installing python/requirements.lock into $venv"
  "${pip[@]}" install -q "${offline[@]}" --no-deps -r "$rest" ||
    die "installing python/requirements.lock from $cache failed; a damaged cache can be removed: rm -r '$cache'"
fi

# 5. Nothing the lock (and requirements-nodeps.txt) does not name stays installed.
extra=$("$py" - "$lock" "$nodeps" <<'PY'
import os, re, sys
from importlib.metadata import distributions
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
keep = {"pip"}
for f in sys.argv[1:]:
    if os.path.exists(f):
        for line in open(f):
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==", line)
            if m:
                keep.add(norm(m.group(1)))
print(" ".join(sorted({norm(d.metadata["Name"]) for d in distributions()} - keep)))
PY
)
if [ -n "$extra" ]; then
  log "uninstalling what the lock does not name: $extra"
  # shellcheck disable=SC2086
  "${pip[@]}" uninstall -q -y $extra
fi

# 6. The set is consistent; then the --no-deps extras.
"${pip[@]}" check >&2 || die "pip check failed in $venv (python/requirements.lock is inconsistent)"
if [ -f "$nodeps" ]; then
  log "installing python/requirements-nodeps.txt with --no-deps"
  "${pip[@]}" install -q --no-deps -r "$nodeps" || die "installing python/requirements-nodeps.txt failed"
fi

# 7. The stamp, last.
wanted_stamp >"$stamp"
log "$venv is ready ($("$py" --version 2>&1)${torch_pin:+, torch $("$py" -c 'import torch; print(torch.__version__)')}, $((SECONDS - started)) s)"
