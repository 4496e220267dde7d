# shellcheck shell=bash
# Shared by images/build.sh and sandbox-images/python/build.sh: a minimal Debian base image built
# without any registry: `debootstrap --variant=minbase` from the Debian mirror apt already uses,
# docs / man pages / locales / apt lists stripped, then `tar | docker import`.
#
#   . images/lib/debian-base.sh
#   debian_base_import <tag> <comma-separated packages> [<hook>] [<docker import --change>...]
#
# <hook>, when not empty, is a shell function called with the root directory before it is packed (to
# copy files in, e.g. the host's node). Needs root, debootstrap and a Docker daemon.

# The Debian suite: DEBIAN_SUITE, else this machine's codename, else bookworm.
debian_suite() {
  local s
  s=$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)
  echo "${DEBIAN_SUITE:-${s:-bookworm}}"
}

# The first Debian mirror apt already uses (deb822 or one-line format); DEBIAN_MIRROR overrides.
debian_mirror() {
  local m=${DEBIAN_MIRROR:-}
  if [ -z "$m" ]; then
    m=$(
      { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}'
        cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '/^deb / {print $2}'; } |
        grep -v -e security -e nodesource -e google | head -n1 || true
    )
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

debian_base_import() {
  local tag=$1 include=$2 hook=${3:-}
  shift 3 || shift $#
  command -v debootstrap >/dev/null || { echo "debian-base: debootstrap not found (apt-get install -y debootstrap)" >&2; return 1; }
  [ "$(id -u)" = 0 ] || { echo "debian-base: debootstrap needs root" >&2; return 1; }
  local suite mirror work t0=$SECONDS
  suite=$(debian_suite)
  mirror=$(debian_mirror)
  work=$(mktemp -d)
  echo "debian-base: debootstrap $suite (minbase + $include) from $mirror for $tag" >&2
  if ! debootstrap --variant=minbase --include="$include" "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    rm -rf "$work"
    return 1
  fi
  rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/* \
    "$work/root"/usr/share/doc "$work/root"/usr/share/man "$work/root"/usr/share/info "$work/root"/usr/share/locale \
    "$work/root"/var/log/*.log "$work/root"/var/cache/debconf/*-old
  if [ -n "$hook" ] && ! "$hook" "$work/root"; then
    rm -rf "$work"
    return 1
  fi
  local changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
  local c
  for c in "$@"; do changes+=(--change "$c"); done
  if ! tar -C "$work/root" -c . | docker import "${changes[@]}" - "$tag" >/dev/null; then
    rm -rf "$work"
    return 1
  fi
  rm -rf "$work"
  echo "debian-base: imported $tag in $((SECONDS - t0)) s" >&2
}
