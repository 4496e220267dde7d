#!/usr/bin/env bash
# Builds the sandbox image without any registry:
#   1. a base: debootstrap a minimal Debian (minbase + python3) and `docker import` it as
#      reward-mesh/debian-python:<suite>  (skipped when BASE_IMAGE is set and present locally);
#   2. `docker build --network=none` of sandbox-images/python/Dockerfile on it, with the harness and
#      the host's sortedcontainers package (the datasets' prompts import it),
#      tagged reward-mesh/sandbox-python:h-<first 12 hex of the harness's sha256> (and :latest).
#
#   sandbox-images/python/build.sh            # build if that tag is missing
#   sandbox-images/python/build.sh --force    # rebuild the image (not the base)
#   BASE_IMAGE=python:3.12-slim sandbox-images/python/build.sh   # another (local) base
#
# Needs: a Docker daemon at DOCKER_HOST (sandbox-images/dockerd.sh start), and for the default base
# root + debootstrap (apt-get install -y debootstrap) + a Debian mirror (taken from apt's sources).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
harness=$root/services/sandbox/harness/harness.py
sha=$(sha256sum "$harness" | cut -d' ' -f1)
tag=reward-mesh/sandbox-python:h-${sha:0:12}
force=0
[ "${1:-}" = "--force" ] && force=1
export DOCKER_BUILDKIT=0 # the classic builder: no frontend image to pull

# debian_suite, debian_base_import: shared with images/build.sh
. "$root/images/lib/debian-base.sh"
suite=$(debian_suite)
base=${BASE_IMAGE:-reward-mesh/debian-python:$suite}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

lockdir=${REWARD_MESH_DOCKER_RUN:-/run/reward-mesh}
mkdir -p "$lockdir" 2>/dev/null || lockdir=${TMPDIR:-/tmp}
exec 9>"$lockdir/image-build.lock"
flock 9

if have_image "$tag" && [ $force = 0 ]; then
  echo "build.sh: $tag is present" >&2
  exit 0
fi

t0=$SECONDS
if ! have_image "$base"; then
  if [ -n "${BASE_IMAGE:-}" ]; then
    echo "build.sh: base image $base is not present locally (no registry is used); load or build it first" >&2
    exit 1
  fi
  debian_base_import "$base" python3 ""
  echo "build.sh: imported $base in $((SECONDS - t0)) s" >&2
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$here/Dockerfile" "$harness" "$ctx/"
# The modules the datasets' prompts import beyond the standard library (LeetCodeDataset's header):
# pure-Python sortedcontainers, copied from the host's Debian package (scripts/bootstrap.sh installs
# python3-sortedcontainers) so both backends run the same version; the image installs it only when its
# base lacks it. No registry is used.
mkdir -p "$ctx/vendor"
sc=$(/usr/bin/python3 -c "import os, sortedcontainers; print(os.path.dirname(sortedcontainers.__file__))" 2>/dev/null) || {
  echo "build.sh: the host's /usr/bin/python3 lacks sortedcontainers (apt-get install -y python3-sortedcontainers)" >&2
  exit 1
}
cp -r "$sc" "$ctx/vendor/sortedcontainers"
find "$ctx/vendor" -name __pycache__ -prune -exec rm -rf {} +
docker build --network=none -q \
  --build-arg "BASE_IMAGE=$base" --build-arg "HARNESS_SHA256=$sha" \
  -t "$tag" -t reward-mesh/sandbox-python:latest "$ctx" >/dev/null
echo "build.sh: built $tag on $base in $((SECONDS - t0)) s" >&2
