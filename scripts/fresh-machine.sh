#!/usr/bin/env bash
# Runs the README's quick start on a fresh Debian, where nothing that was
# ever installed by hand can help: debootstrap makes a minimal bookworm root
# (--variant=minbase: the Essential and required packages, and apt), the
# committed tree goes in as a clone would have it (git archive HEAD), and
# scripts/demo.sh runs inside, then with --tests scripts/test.sh. It prints how
# long each step took and how much a first install downloads.
#
#   scripts/fresh-machine.sh [--tests] [demo args, e.g. --epochs 1]
#
# Not part of CI: it downloads a whole system and builds from nothing (see
# the README's quick start for the times). Run it as root, after changing what
# the build or the tests use; scripts/check-deps.py (in test.sh) is the check
# that CI runs. The root has no CUDA toolkit, so the build there is CPU-only.
#
# DT_FRESH_ROOT   where the root goes (default: a new directory under /var/tmp,
#                 removed at the end unless DT_FRESH_KEEP=1)
# DT_DEBIAN_MIRROR  default http://deb.debian.org/debian
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

run_tests=false
if [ "${1:-}" = "--tests" ]; then run_tests=true; shift; fi
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: run as root (debootstrap, mount namespaces)" >&2; exit 1; }

mirror="${DT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="${DT_FRESH_ROOT:-$(mktemp -d /var/tmp/disttrain-fresh.XXXXXX)}"
cleanup() {
  if [ "${DT_FRESH_KEEP:-0}" != 1 ] && [ -z "${DT_FRESH_ROOT:-}" ]; then rm -rf "$root"; fi
}
trap cleanup EXIT

stamp() { echo "fresh-machine: [$(( $(date +%s) - t0 )) s] $*"; }
t0=$(date +%s)

# The tool that makes the root is this script's own need, not the project's.
command -v debootstrap >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}
stamp "debootstrap --variant=minbase bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
security="${mirror%/debian}/debian-security"
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# debootstrap writes no /etc/hosts; every installed Debian has this one, and
# without it "localhost" does not resolve.
cat >"$root/etc/hosts" <<EOF
127.0.0.1	localhost
127.0.1.1	$(cat "$root/etc/hostname")
::1	localhost ip6-localhost ip6-loopback
EOF
stamp "root ready: $(chroot "$root" dpkg-query -W -f='.\n' | wc -l) packages, $(du -sh "$root" | cut -f1)"

mkdir -p "$root/src/disttrain"
git -C "$repo" archive HEAD | tar -x -C "$root/src/disttrain"
stamp "copied $(git -C "$repo" rev-parse --short HEAD) (committed files only) to /src/disttrain"

# Runs a command in the root as on a machine of its own: a private mount
# namespace whose / is the root (pivot_root, not chroot: a test that enters
# another process's mount namespace with nsenter lands at that namespace's
# real root, which a chroot would escape), with /proc, /sys and /dev. The
# mounts vanish with the namespace.
in_root() {
  unshare --mount --propagation private /bin/bash -c '
    set -e
    root=$1
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    cd "$root"
    mkdir -p .host-root
    pivot_root . .host-root
    umount -l /.host-root
    exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/bash -c "cd /src/disttrain && $2"
  ' in-root "$root" "$1"
}

# What a first run downloads: the sizes apt-get would fetch into this root.
in_root "apt-get update -qq"
download_mb() {
  in_root "apt-get install --no-install-recommends --print-uris -qq \$(scripts/install-deps.sh --list $1)" |
    awk '{ bytes += $3 } END { printf "%.0f MB in %d packages", bytes / 1e6, NR }'
}
stamp "downloads: main job $(download_mb ''); with --tests $(download_mb --tests)"

demo_args=""
[ $# -eq 0 ] || demo_args=$(printf '%q ' "$@")
stamp "scripts/demo.sh $demo_args"
in_root "set -o pipefail; scripts/demo.sh $demo_args 2>&1 | tee /root/demo.log" |
  while IFS= read -r line; do
    case "$line" in demo:*|*epoch*|*test_accuracy=*) stamp "$line" ;; esac
  done || { tail -40 "$root/root/demo.log"; exit 1; }
result=$(grep '^test_accuracy=' "$root/root/demo.log" | tail -1)
[ -n "$result" ] || { echo "fresh-machine: the demo printed no test_accuracy" >&2; exit 1; }
stamp "demo finished: $result"

if $run_tests; then
  stamp "scripts/test.sh"
  in_root "DT_JOBS=2 scripts/test.sh >/root/test.log 2>&1" || { tail -60 "$root/root/test.log"; exit 1; }
  grep -E "^check-deps:|tests passed|tests failed" "$root/root/test.log" | while IFS= read -r line; do stamp "$line"; done
  stamp "$(tail -1 "$root/root/test.log")"
fi
