#!/usr/bin/env bash
# `npm test`: set-up (bootstrap, with the Docker sandbox), then checks and every test.
# A dockerd this run had to start is stopped again at the end (its data-root, and so the built sandbox
# image, persists); one that was already running is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
docker_was_up=0
if command -v docker >/dev/null 2>&1 && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then docker_was_up=1; fi
cleanup() {
  if [ "$docker_was_up" = 0 ] && command -v docker >/dev/null 2>&1; then
    bash sandbox-images/dockerd.sh stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
bash scripts/bootstrap.sh --with-docker --with-torch --with-browser
npm run check
node scripts/run-tests.mjs "$@"
