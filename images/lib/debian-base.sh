# shellcheck shell=bash
# Shared by images/build.sh and sandbox-images/python/build.sh: a minimal Debian base image built
# without any registry: `debootstrap --variant=minbase` from the Debian mirror apt already uses (or
# DEBIAN_MIRROR),
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

# The mirror to debootstrap <suite> from: DEBIAN_MIRROR when set, else the first URI this machine's apt
# sources (deb822 `*.sources` stanzas and one-line `deb [options] URI suite components` entries) use for
# exactly that suite — so neither a `<suite>-security`/`-updates` entry nor a third-party repository (its
# own suite name) is taken. There is no built-in default: a machine without such a source must name its
# mirror in DEBIAN_MIRROR (see images/README.md). DEBIAN_BASE_APT_DIR (default /etc/apt) is for tests.
debian_mirror() {
  local suite=$1 m=${DEBIAN_MIRROR:-} apt=${DEBIAN_BASE_APT_DIR:-/etc/apt}
  if [ -z "$m" ]; then
    m=$(
      {
        for f in "$apt"/sources.list.d/*.sources; do
          [ -f "$f" ] || continue
          # A stanza ends at a blank line; print its first URI when its Types has deb and Suites has $suite.
          awk -v suite="$suite" '
            function flush() { if (deb && hit && !off && uri != "") print uri; deb = 0; hit = 0; off = 0; uri = "" }
            /^[[:space:]]*$/ { flush(); next }
            /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            /^URIs:/ { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
            /^Enabled:[[:space:]]*no/ { off = 1 }
            END { flush() }' "$f"
        done
        for f in "$apt"/sources.list "$apt"/sources.list.d/*.list; do
          [ -f "$f" ] || continue
          awk -v suite="$suite" '
            $1 == "deb" {
              i = 2
              if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
              if ($(i + 1) == suite) print $i
            }' "$f"
        done
      } | head -n1
    )
  fi
  if [ -z "$m" ]; then
    echo "debian-base: no Debian mirror for suite '$suite': this machine's apt sources ($apt/sources.list, $apt/sources.list.d/) have no 'deb' entry for it; set DEBIAN_MIRROR to your Debian mirror's URL (the one whose dists/$suite/ holds the suite)" >&2
    return 1
  fi
  echo "$m"
}

debian_base_import() {
  local tag=$1 include=$2 hook=${3:-}
  shift 3 || shift $#
  command -v debootstrap >/dev/null || { echo "debian-base: debootstrap not found (apt-get install -y debootstrap)" >&2; return 1; }
  [ "$(id -u)" = 0 ] || { echo "debian-base: debootstrap needs root" >&2; return 1; }
  local suite mirror work t0=$SECONDS
  suite=$(debian_suite)
  mirror=$(debian_mirror "$suite") || return 1
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
