#!/usr/bin/env bash
# Starts (or stops) a Docker daemon by hand, for machines without systemd (CI, containers, VMs).
#
#   sandbox-images/dockerd.sh start    # idempotent: returns at once when a daemon already answers
#   sandbox-images/dockerd.sh stop     # stops the daemon this script started (pidfile)
#   sandbox-images/dockerd.sh status
#
# The daemon listens on DOCKER_HOST (default unix:///var/run/docker.sock, where every Docker client
# looks), with no bridge and no iptables rules (sandboxes use --network none), its own exec-root and
# pidfile under REWARD_MESH_DOCKER_RUN (default /run/reward-mesh) and a persistent data-root
# REWARD_MESH_DOCKER_ROOT (default /var/lib/reward-mesh/docker), so a built image survives restarts.
# It is long-lived on purpose (see sandbox-images/README.md): tests and services share it.
set -euo pipefail

host=${DOCKER_HOST:-unix:///var/run/docker.sock}
case "$host" in
  unix://*) sock=${host#unix://} ;;
  *) echo "dockerd.sh: DOCKER_HOST=$host is not a unix socket; start that daemon yourself" >&2; exit 2 ;;
esac
run=${REWARD_MESH_DOCKER_RUN:-/run/reward-mesh}
data=${REWARD_MESH_DOCKER_ROOT:-/var/lib/reward-mesh/docker}
pidfile=$run/dockerd.pid
log=$run/dockerd.log

answers() { docker -H "unix://$sock" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

wait_ready() {
  # Poll until the API answers (no fixed sleep); give up after 60 s.
  local deadline=$((SECONDS + 60))
  until answers; do
    if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null && [ $SECONDS -gt $((deadline - 55)) ]; then
      echo "dockerd.sh: dockerd exited; last lines of $log:" >&2
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "dockerd.sh: dockerd did not answer on $sock within 60 s; see $log" >&2
      return 1
    fi
    sleep 0.1
  done
}

case "${1:-start}" in
  start)
    answers && exit 0
    if [ "$(id -u)" != 0 ]; then
      echo "dockerd.sh: no Docker daemon answers on $sock, and starting one needs root" >&2
      exit 1
    fi
    command -v dockerd >/dev/null || { echo "dockerd.sh: dockerd not found (apt-get install -y docker.io)" >&2; exit 1; }
    mkdir -p "$run" "$data" "$(dirname "$sock")"
    exec 9>"$run/dockerd.lock"
    flock 9
    answers && exit 0
    if ! { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }; then
      rm -f "$pidfile"
      echo "dockerd.sh: starting dockerd on $sock (data-root $data, log $log)" >&2
      # setsid: not in the caller's process group, so Ctrl-C on a test run does not take it down.
      setsid dockerd -H "unix://$sock" --data-root "$data" --exec-root "$run/exec" --pidfile "$pidfile" \
        --bridge=none --iptables=false --ip-masq=false --ip6tables=false \
        --log-driver=none </dev/null >"$log" 2>&1 9>&- &
    fi
    wait_ready
    ;;
  stop)
    if [ -f "$pidfile" ] && pid=$(cat "$pidfile") && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
      echo "dockerd.sh: dockerd ($pid) did not stop within 30 s" >&2
      exit 1
    fi
    echo "dockerd.sh: no dockerd started by this script is running" >&2
    ;;
  status)
    if answers; then echo "dockerd answers on $sock"; else echo "no daemon on $sock"; exit 1; fi
    ;;
  *)
    echo "usage: dockerd.sh start|stop|status" >&2
    exit 2
    ;;
esac
