#!/usr/bin/env bash
# `cmake --install` end to end (dist/): staged under DESTDIR, as a package
# build does, into a prefix; then every program, man page and bash
# completion must be where the install rules say, every page must render,
# every completion must parse and register, and the mount helper (staged at
# DESTDIR/sbin, never the real /sbin) must name the prefix's walfs.
# Usage: install_test.sh BUILD_DIR NO_MAN_PAGES BINDIR SBINDIR MANDIR COMPLETIONDIR
# (the last four relative to the prefix; NO_MAN_PAGES is why the build made
# no man pages, "-" when it made them).  Exit 77 (skip) without man pages.
set -euo pipefail
build=$1 no_man_pages=$2 bindir=$3 sbindir=$4 mandir=$5 compdir=$6

if [[ $no_man_pages != - ]]; then
  echo "SKIP: $no_man_pages"
  exit 77
fi
command -v groff >/dev/null || { echo "SKIP: groff is not installed (apt-get install groff-base)"; exit 77; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
installed_prefix=/opt/walfs-install-test
DESTDIR=$stage cmake --install "$build" --prefix "$installed_prefix" > "$stage.log" 2>&1 || {
  cat "$stage.log" >&2; rm -f "$stage.log"; echo "FAIL: cmake --install failed" >&2; exit 1; }
rm -f "$stage.log"
prefix=$stage$installed_prefix

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for p in "$sbindir/mkfs.walfs" "$sbindir/fsck.walfs" "$sbindir/walfs-admin" "$sbindir/walfs-growfs" "$bindir/walfs" "$bindir/walfs-logprint" \
         "$bindir/walfs-trace" "$bindir/walfs-aim"; do
  [[ -x $prefix/$p ]] || fail "program $p is not installed (or not executable)"
done
# The installed programs run from the prefix (no build-tree paths baked in).
out=$("$prefix/$sbindir/fsck.walfs" --version 2>&1) || fail "installed fsck.walfs --version: $out"

for page in man8/walfs.8 man8/mkfs.walfs.8 man8/fsck.walfs.8 man8/walfs-admin.8 man8/walfs-growfs.8 man8/walfs-logprint.8 \
            man1/walfs-trace.1 man1/walfs-aim.1; do
  file=$prefix/$mandir/$page
  name=$(basename "$page"); name=${name%.*}
  if [[ ! -s $file ]]; then
    fail "man page $mandir/$page is not installed"
    continue
  fi
  # groff's -ww: warnings too (a help2man page gone wrong shows up as them).
  if ! text=$(groff -man -Tutf8 -ww "$file" 2>&1 >/dev/null); then
    fail "$page: groff failed: $text"
  elif [[ -n $text ]]; then
    fail "$page: groff warns: $text"
  fi
  rendered=$(groff -man -Tutf8 -P-cbou "$file" 2>/dev/null)  # plain text: no SGR, no overstrike
  [[ -n $rendered ]] || fail "$page renders empty"
  grep -q "^NAME" <<<"$rendered" || fail "$page has no NAME section"
  grep -qF -- "$name" <<<"$rendered" || fail "$page does not name $name"
  grep -q "^SYNOPSIS\|^DESCRIPTION" <<<"$rendered" || fail "$page has no SYNOPSIS or DESCRIPTION"
  grep -q "^EXIT STATUS" <<<"$rendered" || fail "$page has no EXIT STATUS section"
done
grep -q "usage or syntax error" <<<"$(groff -man -Tutf8 -P-cbou "$prefix/$mandir/man8/fsck.walfs.8" 2>/dev/null)" ||
  fail "fsck.walfs.8 does not give fsck(8)'s exit code 16"

for c in walfs mkfs.walfs fsck.walfs walfs-admin walfs-growfs walfs-trace walfs-logprint walfs-aim; do
  file=$prefix/$compdir/$c
  if [[ ! -s $file ]]; then
    fail "bash completion $compdir/$c is not installed"
    continue
  fi
  err=$(bash -n "$file" 2>&1) || fail "completion $c does not parse: $err"
  bash -c 'source "$1" && complete -p "$2"' _ "$file" "$c" >/dev/null 2>&1 ||
    fail "completion $c does not register a completion for $c"
done

# mount(8)'s helper for fuse.walfs, where mount looks (cmake -DWALFS_MOUNT_HELPER_DIR; "" when
# not installed), naming the walfs of the prefix it was installed for.
helper_dir=$(sed -n 's/^WALFS_MOUNT_HELPER_DIR:STRING=//p' "$build/CMakeCache.txt")
if [[ -n $helper_dir ]]; then
  helper=$stage$helper_dir/mount.fuse.walfs
  if [[ ! -x $helper ]]; then
    fail "the mount helper $helper_dir/mount.fuse.walfs is not installed"
  else
    grep -qF "walfs='$installed_prefix/$bindir/walfs'" "$helper" || fail "mount.fuse.walfs does not name $installed_prefix/$bindir/walfs"
    sh -n "$helper" || fail "mount.fuse.walfs does not parse"
  fi
fi

# The README's main job (scripts/main.sh) builds only what it runs and what
# the install copies: every program and man page installed above must be the
# output (-o, help2man's --output=) of a command ninja runs for main.sh's --target list, so that
# `cmake --install build` works after that job too, not only after a full build.
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
main_targets=$(sed -n '/cmake --build build .*--target/,/[^\\]$/p' "$source_dir/scripts/main.sh" |
  tr -d '\\\n' | sed 's/.*--target//')
if [[ -z $main_targets ]]; then
  fail "no --target list found in scripts/main.sh"
elif commands=$(ninja -C "$build" -t commands $main_targets 2>&1); then
  for f in "$prefix/$bindir"/* "$prefix/$sbindir"/* "$prefix/$mandir"/man*/*; do
    name=$(basename "$f")
    grep -qE -- "(-o |--output=)[^ ]*/$name( |\$)" <<<"$commands" ||
      fail "scripts/main.sh's targets do not build $name, which the install copies"
  done
else
  fail "ninja -t commands for main.sh's targets failed: $commands"
fi

if ((failures > 0)); then
  echo "$failures problem(s) in the installed tree" >&2
  exit 1
fi
echo "install: 8 programs, 8 man pages, 8 bash completions, the mount helper: ok"
