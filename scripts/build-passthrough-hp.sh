#!/usr/bin/env bash
# Builds libfuse 3.18's own example/passthrough_hp -- the fastest FUSE daemon
# we know of, and the one issue 25's targets name -- as the walfs-peers
# systems `passthrough-hp` (over /dev/fuse) and `passthrough-hp-uring` (over
# the kernel's FUSE-over-io_uring rings, `-o io_uring`).
#
# Debian 12 ships libfuse 3.14, which has neither passthrough_hp's io_uring
# mode nor the library under it, so this takes Debian's own fuse3 source
# package from unstable (the pool of deb.debian.org, checked against the
# SHA-256 its Sources index gives), builds libfuse statically with meson and
# links passthrough_hp against it, unchanged.  The result is
# build/bin/walfs-bench-passthrough-hp; nothing is installed system-wide but
# the two build dependencies Debian 12 has (meson, libnuma-dev).
#
# Not part of scripts/setup.sh or CI: it fetches from outside Debian 12's
# archive.  walfs-peers says, in those two systems' skip reason, to run it.
#
# usage: scripts/build-passthrough-hp.sh [--tarball PATH] [--build DIR]
#   --tarball  use this fuse3_3.18.3.orig.tar.gz (checked) instead of fetching
#   --build    the build directory (default: build/ at the repository root)
set -euo pipefail

version=3.18.3
tarball_name="fuse3_${version}.orig.tar.gz"
url="http://deb.debian.org/debian/pool/main/f/fuse3/${tarball_name}"
sha256=bcd19582c5e30f7fe45dd86a5540e998590aa01903afc7ebcbeea6c8ac5421ee

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
tarball=""
while (($#)); do
  case "$1" in
    --tarball) tarball="${2:?--tarball needs a path}"; shift 2 ;;
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-passthrough-hp: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

say() { echo "build-passthrough-hp: $*"; }
die() { echo "build-passthrough-hp: $*" >&2; exit 1; }

need=()
for p in meson ninja-build pkg-config gcc g++ liburing-dev libnuma-dev; do
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" == installed ]] || need+=("$p")
done
if ((${#need[@]})); then
  ((EUID == 0)) || die "needs the Debian packages ${need[*]} (run as root to install them)"
  say "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" </dev/null >/dev/null ||
    { apt-get update </dev/null >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" </dev/null >/dev/null; } ||
    die "apt-get could not install ${need[*]}"
fi

work="$build/passthrough-hp"
mkdir -p "$work" "$build/bin"
if [[ -z "$tarball" ]]; then
  tarball="$work/$tarball_name"
  if [[ ! -s "$tarball" ]] || ! echo "$sha256  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1; then
    say "fetching $url"
    curl -fsS --retry 2 -o "$tarball.part" "$url" ||
      die "could not fetch $url (unstable's pool keeps only its current fuse3; if it moved past $version, pass a copy with --tarball)"
    mv "$tarball.part" "$tarball"
  fi
fi
echo "$sha256  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1 ||
  die "$tarball is not Debian's $tarball_name (SHA-256 differs from $sha256)"

src="$work/fuse-$version"
rm -rf "$src"
tar -xzf "$tarball" -C "$work"
[[ -f "$src/example/passthrough_hp.cc" ]] || die "$tarball has no example/passthrough_hp.cc"

say "building libfuse $version (static) and example/passthrough_hp"
meson setup "$src/build" "$src" -Ddefault_library=static -Dexamples=true -Dutils=false \
  -Dtests=false -Dbuildtype=release >"$work/meson.log" 2>&1 || die "meson setup failed: $work/meson.log"
grep -q 'liburing linking and SQE128 support.*YES' "$work/meson.log" ||
  die "libfuse $version found no usable liburing: its io_uring mode would be missing ($work/meson.log)"
ninja -C "$src/build" example/passthrough_hp >"$work/ninja.log" 2>&1 || die "build failed: $work/ninja.log"
install -m 0755 "$src/build/example/passthrough_hp" "$build/bin/walfs-bench-passthrough-hp"
say "built $build/bin/walfs-bench-passthrough-hp (libfuse $version, io_uring mode included)"
