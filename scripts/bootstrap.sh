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
#     PyTorch learner's Debian packages python3-torch, python3-grpcio, python3-protobuf, python3-numpy,
#     libopenblas0-pthread (an optimised BLAS for torch), and
#     protobuf-compiler + protobuf-compiler-grpc + libprotobuf-dev for its generated stubs (the drift check)
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
  # Debian's interpreter, not a pyenv shim on PATH: only it sees the python3-* packages.
  py_has() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }
  py_has torch || missing+=(python3-torch)
  py_has grpc || missing+=(python3-grpcio)
  py_has google.protobuf || missing+=(python3-protobuf)
  py_has numpy || missing+=(python3-numpy)
  have protoc || missing+=(protobuf-compiler)
  have grpc_python_plugin || missing+=(protobuf-compiler-grpc)
  # protoc's well-known types (rollout.proto imports google/protobuf/struct.proto) ship in libprotobuf-dev.
  [ -f /usr/include/google/protobuf/struct.proto ] || missing+=(libprotobuf-dev)
  # Debian's torch calls the system BLAS; without OpenBLAS that is the reference BLAS, about 8-30x
  # slower on the learner's matrix products.
  dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "ok installed" ||
    missing+=(libopenblas0-pthread)
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
    echo "                  for the PyTorch learner: Python 3 with torch, grpcio, protobuf (point REWARD_MESH_PYTHON at it)" >&2
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
