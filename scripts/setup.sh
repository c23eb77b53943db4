#!/usr/bin/env bash
# Installs every Debian 12 package walfs needs to build, test and benchmark.
#
# Idempotent: when all packages are already installed it only checks (no
# apt-get update), so scripts/test.sh and scripts/main.sh can call it on every
# run.  It leaves lttng-sessiond disabled at boot (below).  Runs as root (or through sudo when available) with no
# standard input.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev lld pkg-config
  libfuse3-dev fuse3 liburing-dev
  libboost-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libisal-dev libblkid-dev uuid-dev libxxhash-dev
  fio dbench python3 xfsprogs e2fsprogs fuse2fs gnuplot-nox acl rsync
  liblttng-ust-dev lttng-tools
  help2man groff-base
  gdb  # the user stacks of a FUSE test's daemon that hangs (tests/fuse/thread_report.h)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

as_root=(env DEBIAN_FRONTEND=noninteractive)
can_root=1
if ((EUID != 0)); then
  command -v sudo >/dev/null && as_root=(sudo -n "${as_root[@]}") || can_root=0
fi

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
else
  ((can_root)) || { echo "setup: need root or sudo" >&2; exit 1; }
  echo "setup: installing ${missing[*]}"
  "${as_root[@]}" apt-get update </dev/null
  "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
  echo "setup: done"
fi

# lttng-tools enables lttng-sessiond at boot; nothing here needs it running:
# trace_bench starts a session daemon of its own for its LTTng row and stops
# it afterwards (bench/trace/run_lttng.sh).  `systemctl disable` works without
# a running systemd (a container: it removes the links); --now only with one.
if ((can_root)) && command -v systemctl >/dev/null &&
   [[ "$(systemctl is-enabled lttng-sessiond 2>/dev/null)" == enabled ]]; then
  now=()
  [[ -d /run/systemd/system ]] && now=(--now)
  if "${as_root[@]}" systemctl disable "${now[@]}" lttng-sessiond </dev/null >/dev/null 2>&1; then
    echo "setup: lttng-sessiond no longer starts at boot (trace_bench starts its own)"
  else
    echo "setup: could not disable lttng-sessiond at boot (systemctl disable failed); carrying on" >&2
  fi
fi
