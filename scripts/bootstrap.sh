#!/usr/bin/env bash
# Set-up shared by `npm start` and `npm test`: installs what is missing, idempotently.
#   * system packages (Debian/Ubuntu, as root): nats-server, bubblewrap (the code sandbox),
#     python3-sortedcontainers (imported by LeetCodeDataset's prompts in the sandbox), and for the
#     Docker sandbox docker.io + debootstrap (skip those with REWARD_MESH_DOCKER=0)
#   * npm packages: `npm ci` when node_modules is missing or older than package-lock.json
#   * with --with-docker (what `npm test` passes): the Docker sandbox — a dockerd started by hand when none
#     answers (sandbox-images/dockerd.sh: no bridge, no iptables, persistent data-root) and the sandbox
#     image built offline when its tag is missing (sandbox-images/python/build.sh) — see
#     sandbox-images/README.md. `npm start` does not need it (the demo's sandbox is bubblewrap).
#   * with --with-torch (what `npm test` passes; `reward-mesh demo --learner torch` asks for it): the
#     project's Python environment, .venv/ (scripts/python-env.sh: python/requirements.lock — torch CPU,
#     grpcio, protobuf, transformers, peft, TRL, verl… — cached; the PyTorch learner, the Python client,
#     its tests and the benches run it; skipped when REWARD_MESH_PYTHON names another interpreter), and
#     Debian's protobuf-compiler + protobuf-compiler-grpc + libprotobuf-dev for the generated Python stubs
#     (the drift check), python3-venv where the base python3 lacks it, and for Debian's /usr/bin/python3:
#     python3-torch for services/reward-model/model/build.py only (the committed ONNX test model's
#     byte-for-byte drift check needs torch 1.13's TorchScript ONNX exporter), python3-grpcio +
#     python3-protobuf for the Python reward-service example as docs/reward-services.md runs it; the
#     learner and the Python client use neither
#   * with --with-browser (what `npm test` passes): Debian's `chromium`, the headless browser the live
#     page's test drives through playwright-core (which downloads no browser of its own)
# Elsewhere (not root, no apt) it prints exactly what to install and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
with_docker=0
with_torch=0
with_browser=0
for arg in "$@"; do
  case "$arg" in
    --with-docker) with_docker=1 ;;
    --with-torch) with_torch=1 ;;
    --with-browser) with_browser=1 ;;
    *) echo "bootstrap: unknown argument '$arg' (known: --with-docker, --with-torch, --with-browser)" >&2; exit 2 ;;
  esac
done

missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have nats-server || missing+=(nats-server)
have bwrap || missing+=(bubblewrap)
# The bubblewrap sandbox runs the host's /usr/bin/python3: it needs the modules the datasets' prompts
# import (LeetCodeDataset's header: sortedcontainers besides the standard library). The Docker sandbox
# image copies the same package from here (sandbox-images/python/build.sh).
/usr/bin/python3 -c "import sortedcontainers" >/dev/null 2>&1 || missing+=(python3-sortedcontainers)
docker_wanted=${REWARD_MESH_DOCKER:-1}
if [ "$docker_wanted" != 0 ] && [ "$(id -u)" = "0" ]; then
  have dockerd || missing+=(docker.io)
  have debootstrap || missing+=(debootstrap)
fi

if [ "$with_torch" = 1 ]; then
  # The reward model's build script (services/reward-model/model/build.py) runs Debian's interpreter with
  # Debian's torch (1.13): its ONNX export is what the committed model files are compared against.
  # Found, not imported (importing torch takes seconds).
  debian_has() {
    [ -x /usr/bin/python3 ] &&
      /usr/bin/python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('$1') is None)" >/dev/null 2>&1
  }
  debian_has torch || missing+=(python3-torch)
  # examples/python-reward-service as docs/reward-services.md's remote walkthrough runs it (/usr/bin/python3).
  debian_has grpc || missing+=(python3-grpcio)
  debian_has google.protobuf || missing+=(python3-protobuf)
  # Debian's own python3 creates venvs only with python3-venv (ensurepip).
  if [ "$(command -v "${REWARD_MESH_BASE_PYTHON:-python3}" 2>/dev/null)" = /usr/bin/python3 ] &&
    ! /usr/bin/python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=(python3-venv)
  fi
  have protoc || missing+=(protobuf-compiler)
  have grpc_python_plugin || missing+=(protobuf-compiler-grpc)
  # protoc's well-known types (rollout.proto imports google/protobuf/struct.proto) ship in libprotobuf-dev.
  [ -f /usr/include/google/protobuf/struct.proto ] || missing+=(libprotobuf-dev)
fi

if [ "$with_browser" = 1 ]; then
  have chromium || missing+=(chromium)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "bootstrap: missing system packages: ${missing[*]}" >&2
    echo "  Debian/Ubuntu:  sudo apt-get install -y ${missing[*]}" >&2
    echo "  other systems:  install nats-server >= 2.9 (https://docs.nats.io) and bubblewrap (bwrap), and put them on PATH;" >&2
    echo "                  for the PyTorch learner: Python >= 3.11 with venv (scripts/python-env.sh builds .venv from" >&2
    echo "                  python/requirements.lock), or an interpreter with those packages in REWARD_MESH_PYTHON" >&2
    echo "                  for the live page's browser test: Chromium (point REWARD_MESH_CHROMIUM at it)" >&2
    exit 1
  fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "bootstrap: Node.js >= 20.6 is required (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "bootstrap: installing npm packages (npm ci)" >&2
  # onnxruntime-node's install script must not fetch its CUDA libraries from NuGet (unreachable in CI).
  # npm >= 11 does not run it (package.json's allowScripts denies it); an older npm ignores that field
  # and runs every install script, and this variable, the first thing the script reads, makes it skip.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2
fi

# The project's Python environment (.venv/, from python/requirements.lock): instant when up to date.
if [ "$with_torch" = 1 ]; then
  if [ -n "${REWARD_MESH_PYTHON:-}" ] && [ "$REWARD_MESH_PYTHON" != "$PWD/.venv/bin/python" ]; then
    echo "bootstrap: REWARD_MESH_PYTHON=$REWARD_MESH_PYTHON: not building .venv (scripts/python-env.sh)" >&2
  else
    bash scripts/python-env.sh
  fi
fi

# The Docker sandbox: a daemon (started by hand when none answers) and the image of the current harness.
# Not fatal: services choose bwrap when Docker is unusable (SANDBOX_BACKEND=auto), and the Docker tests
# say exactly what is missing.
if [ "$with_docker" = 1 ] && [ "$docker_wanted" != 0 ] && command -v docker >/dev/null 2>&1; then
  if bash sandbox-images/dockerd.sh start; then
    bash sandbox-images/python/build.sh ||
      echo "bootstrap: warning: the sandbox image could not be built (sandbox-images/python/build.sh)" >&2
  else
    echo "bootstrap: warning: no Docker daemon; the sandbox will use bubblewrap" >&2
  fi
fi
