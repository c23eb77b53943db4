#!/usr/bin/env bash
# Installs every Debian 12 package walfs needs to build, test and benchmark.
#
# Idempotent: when all packages are already installed it only checks and
# returns (no apt-get update), so scripts/test.sh and scripts/main.sh can call
# it on every run.  Runs as root (or through sudo when available) with no
# standard input.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
  libfuse3-dev fuse3 liburing-dev
  libboost-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libisal-dev libblkid-dev uuid-dev libxxhash-dev
  fio python3 xfsprogs e2fsprogs fuse2fs gnuplot-nox acl rsync
  liblttng-ust-dev lttng-tools
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
as_root=(env DEBIAN_FRONTEND=noninteractive)
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "setup: need root or sudo" >&2; exit 1; }
  as_root=(sudo -n "${as_root[@]}")
fi
"${as_root[@]}" apt-get update </dev/null
"${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
echo "setup: done"
