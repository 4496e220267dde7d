#!/usr/bin/env bash
# `npm test`: set-up (bootstrap, with the Docker sandbox), then checks and every test.
# A dockerd this run had to start is stopped again at the end (its data-root, and so the built sandbox
# image, persists); one that was already running is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
docker_was_up=0
if command -v docker >/dev/null 2>&1 && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then docker_was_up=1; fi
images_pid=
cleanup() {
  if [ -n "$images_pid" ]; then
    kill -- "-$images_pid" 2>/dev/null || true
    wait "$images_pid" 2>/dev/null || true
  fi
  if [ "$docker_was_up" = 0 ] && command -v docker >/dev/null 2>&1; then
    bash sandbox-images/dockerd.sh stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
bash scripts/bootstrap.sh --with-docker --with-torch --with-browser
# The images the Docker tests run (images/build.sh: Debian bases by debootstrap, the mesh image's npm ci;
# about 5 minutes on a fresh 2-core machine, seconds once Docker's cache has them) are built in the
# background while the checks and every other test run. The Docker tests run last (scripts/run-tests.mjs)
# and call images/build.sh themselves: its lock makes them wait for this build and then find the images.
# A failed build here is not fatal: their own call repeats it and reports the error.
if [ $# -eq 0 ] && command -v docker >/dev/null 2>&1 && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  mkdir -p runs
  echo "npm test: building the images in the background (log: runs/images-build.log)" >&2
  setsid bash images/build.sh >runs/images-build.log 2>&1 &
  images_pid=$!
fi
npm run check
node scripts/run-tests.mjs "$@"
