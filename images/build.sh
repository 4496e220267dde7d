#!/usr/bin/env bash
# Builds reward-mesh's images with the docker CLI (classic builder) and prints a JSON summary on stdout:
#   reward-mesh/mesh:<version>     images/mesh/Dockerfile     every TypeScript part (services, trainer, CLI)
#   reward-mesh/learner:<version>  images/learner/Dockerfile  the PyTorch learner
#   reward-mesh/nats:debian        images/nats/Dockerfile     Debian's nats-server (offline stand-in)
# <version> is the root package.json's.
#
#   npm run images                         # all three; bases: public images, else offline (below)
#   npm run images -- --offline mesh       # only mesh, on the Debian base built here
#   npm run images -- --online             # public bases only (pulled when missing)
#   npm run images -- --no-cache mesh      # rebuild every layer (not the bases)
#
# Bases. Online: node:20-bookworm-slim, pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime, debian:bookworm-slim
# (MESH_BASE_IMAGE, LEARNER_BASE_IMAGE, NATS_BASE_IMAGE override). Offline (--offline, or automatically
# when a public base is neither present nor pullable): debootstrapped Debian bases imported as
#   reward-mesh/debian-node:<suite>   minbase + tini, ca-certificates, python3, python3-sortedcontainers (the bwrap
#                                     sandbox's dataset modules), bubblewrap + the host's node/npm
#   reward-mesh/debian-torch:<suite>  minbase + tini, python3-torch, python3-grpcio, python3-protobuf, python3-numpy
#   reward-mesh/debian-nats:<suite>   minbase + nats-server
# (built once; --rebuild-bases rebuilds them). Needs root + debootstrap for those, and a Docker daemon
# (sandbox-images/dockerd.sh start).
#
# The mesh build runs `npm ci` inside the build, so it uses --network=host (this machine's daemon runs
# with --bridge=none); NODE_EXTRA_CA_CERTS, when set, is handed to that npm (TLS-intercepting egress).
# The context is a copy of the git-tracked (and untracked, not ignored) files, filtered by .dockerignore.
# A lock makes concurrent runs build once; unchanged sources rebuild from Docker's layer cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib/debian-base.sh"
export DOCKER_BUILDKIT=0 # the classic builder: no frontend image to pull

mode=auto
rebuild_bases=0
no_cache=()
targets=()
for a in "$@"; do
  case $a in
    --offline) mode=offline ;;
    --online) mode=online ;;
    --rebuild-bases) rebuild_bases=1 ;;
    --no-cache) no_cache=(--no-cache) ;;
    mesh | learner | nats) targets+=("$a") ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "images/build.sh: unknown argument '$a' (mesh, learner, nats, --offline, --online, --rebuild-bases, --no-cache)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(mesh learner nats)

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  { echo "images/build.sh: no Docker daemon at ${DOCKER_HOST:-unix:///var/run/docker.sock} (sandbox-images/dockerd.sh start)" >&2; exit 1; }

version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json" | head -n1)
[ -n "$version" ] || { echo "images/build.sh: no version in package.json" >&2; exit 1; }
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
created=$(git -C "$root" log -1 --format=%cI 2>/dev/null || echo unknown)
suite=$(debian_suite)

lockdir=${REWARD_MESH_DOCKER_RUN:-/run/reward-mesh}
mkdir -p "$lockdir" 2>/dev/null || lockdir=${TMPDIR:-/tmp}
exec 9>"$lockdir/images-build.lock"
flock 9

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_image() { docker image inspect "$1" >/dev/null 2>&1; }
image_size() { docker image inspect -f '{{.Size}}' "$1"; }

# The host's node and npm, copied into the node base (node is dynamically linked only against libc,
# libstdc++ and libgcc_s, all in minbase).
node_hook() {
  local r=$1 node npm_dir
  node=$(command -v node) && node=$(readlink -f "$node")
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  [ -x "$node" ] && [ -f "$npm_dir/package.json" ] || { echo "images/build.sh: node/npm not found on this host" >&2; return 1; }
  install -m 0755 "$node" "$r/usr/local/bin/node"
  mkdir -p "$r/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$r/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  chroot "$r" /usr/local/bin/node --version >/dev/null
}

# Debian's python3-torch pulls in packages the learner never loads: test binaries, sympy / hypothesis
# (not imported by `import torch` 1.13), Mesa's GL drivers and the LLVM / z3 they need, data files. None is
# in the shared-library closure of torch, grpc or numpy (checked with ldd), so purge them (~300 MB).
torch_hook() {
  chroot "$1" dpkg --purge --force-depends libtorch-test python3-sympy python3-mpmath python3-hypothesis \
    libgl1-mesa-dri libllvm15 libz3-4 proj-data iso-codes >"$1/tmp/purge.log" 2>&1 ||
    { echo "images/build.sh: trimming the torch base failed (kept untrimmed):" >&2; tail -n 5 "$1/tmp/purge.log" >&2; }
  rm -f "$1/tmp/purge.log"
}

mesh_packages=tini,ca-certificates,python3,python3-sortedcontainers,bubblewrap

offline_base() { # <target> -> the offline base's tag (built when missing)
  local tag
  case $1 in
    # The package list is in the tag: a machine with an older base (e.g. before python3-sortedcontainers)
    # builds the new one instead of reusing it.
    mesh) tag=reward-mesh/debian-node:$suite-$(printf %s "$mesh_packages" | sha256sum | cut -c1-8) ;;
    learner) tag=reward-mesh/debian-torch:$suite ;;
    nats) tag=reward-mesh/debian-nats:$suite ;;
  esac
  if [ $rebuild_bases = 1 ] || ! have_image "$tag"; then
    case $1 in
      mesh) debian_base_import "$tag" "$mesh_packages" node_hook ;;
      learner) debian_base_import "$tag" tini,python3,python3-torch,python3-grpcio,python3-protobuf,python3-numpy torch_hook ;;
      nats) debian_base_import "$tag" nats-server "" ;;
    esac >&2
  fi
  echo "$tag"
}

# Builds the missing offline bases of every requested image at once: each is mostly a download from the
# Debian mirror (minutes on a fresh machine), so side by side they take about as long as the largest.
bases_prebuilt=0
prebuild_offline_bases() {
  [ $bases_prebuilt = 1 ] && return 0
  bases_prebuilt=1
  local pids=() t failed=0
  for t in "${targets[@]}"; do
    # Online with Docker Hub down, an image whose public base is already here keeps it.
    if [ $mode != offline ] && have_image "$(public_base "$t")"; then continue; fi
    (offline_base "$t" >/dev/null) &
    pids+=($!)
  done
  for t in "${pids[@]}"; do wait "$t" || failed=1; done
  rebuild_bases=0 # rebuilt just now, if asked
  return $failed
}

hub_unreachable=0
public_base() { # <target> -> its public base image
  case $1 in
    mesh) echo "${MESH_BASE_IMAGE:-node:20-bookworm-slim}" ;;
    learner) echo "${LEARNER_BASE_IMAGE:-pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime}" ;;
    nats) echo "${NATS_BASE_IMAGE:-debian:bookworm-slim}" ;;
  esac
}

choose_base() { # <target>: sets base (not in a subshell: hub_unreachable must stick)
  local public
  public=$(public_base "$1")
  base=$public
  on_offline_base=0
  if [ $mode = offline ]; then
    prebuild_offline_bases || return 1
    base=$(offline_base "$1") || return 1
    on_offline_base=1
    return
  fi
  have_image "$public" && return
  if [ $hub_unreachable = 0 ] && timeout 60 docker pull -q "$public" >/dev/null 2>&1; then return; fi
  if [ $mode = online ]; then echo "images/build.sh: cannot pull $public" >&2; return 1; fi
  hub_unreachable=1
  echo "images/build.sh: $public is not present and cannot be pulled: building on an offline Debian base" >&2
  prebuild_offline_bases || return 1
  base=$(offline_base "$1") || return 1
  on_offline_base=1
}

# The build context: the repository's files as git sees them (tracked + untracked, not ignored).
context() {
  local ctx=$tmp/context
  if [ ! -d "$ctx" ]; then
    mkdir -p "$ctx"
    if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
      (cd "$root" && git ls-files -co --exclude-standard -z |
        tar --null --ignore-failed-read -T - -c 2>/dev/null) | tar -x -C "$ctx"
    else
      tar -C "$root" --exclude=./node_modules --exclude=./.git -c . | tar -x -C "$ctx"
    fi
    cp "$root/.dockerignore" "$ctx/.dockerignore"
    if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ]; then
      cp "$NODE_EXTRA_CA_CERTS" "$ctx/.npm-extra-ca.pem"
    fi
  fi
  echo "$ctx"
}

summary=()
for t in "${targets[@]}"; do
  t0=$(date +%s%N)
  choose_base "$t"
  case $t in
    mesh) ref=reward-mesh/mesh:$version net=host ;;
    learner) ref=reward-mesh/learner:$version net=host ;;
    nats) ref=reward-mesh/nats:debian net=host ;;
  esac
  # The offline bases have every package: learner and nats builds on them need no network at all.
  if [ $on_offline_base = 1 ] && [ "$t" != mesh ]; then net=none; fi
  echo "images/build.sh: building $ref on $base" >&2
  if ! docker build ${no_cache[@]+"${no_cache[@]}"} --network="$net" -f "$root/images/$t/Dockerfile" \
    --build-arg "BASE_IMAGE=$base" --build-arg "VERSION=${ref##*:}" \
    --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
    -t "$ref" "$(context)" >"$tmp/$t.log" 2>&1; then
    tail -n 40 "$tmp/$t.log" >&2
    echo "images/build.sh: building $ref failed" >&2
    exit 1
  fi
  secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  summary+=("$(printf '{"image":"%s","tag":"%s","ref":"%s","base":"%s","sizeBytes":%s,"seconds":%s}' \
    "${ref%:*}" "${ref##*:}" "$ref" "$base" "$(image_size "$ref")" "$secs")")
  echo "images/build.sh: built $ref in $secs s" >&2
done

printf '[\n'
for i in "${!summary[@]}"; do
  sep=,
  [ "$i" = $((${#summary[@]} - 1)) ] && sep=
  printf '  %s%s\n' "${summary[$i]}" "$sep"
done
printf ']\n'
