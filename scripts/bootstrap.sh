#!/usr/bin/env bash
# Set-up shared by `npm start` and `npm test`: installs what is missing, idempotently.
#   * system packages (Debian/Ubuntu, as root): nats-server
#   * npm packages: `npm ci` when node_modules is missing or older than package-lock.json
# Elsewhere (not root, no apt) it prints exactly what to install and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have nats-server || missing+=(nats-server)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "bootstrap: missing system packages: ${missing[*]}" >&2
    echo "  Debian/Ubuntu:  sudo apt-get install -y ${missing[*]}" >&2
    echo "  other systems:  install nats-server >= 2.9 (https://docs.nats.io) and put it on PATH" >&2
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
  npm ci --no-audit --no-fund >&2
fi
