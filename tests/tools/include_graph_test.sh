#!/usr/bin/env bash
# scripts/include_graph.py: the tree keeps its layers and has no header
# circle; and the checker catches both (on small trees made here).
# Usage: include_graph_test.sh REPO_ROOT
set -euo pipefail
root=$1
script=$root/scripts/include_graph.py
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$script" --root "$root") || fail "the tree breaks a rule:"$'\n'"$out"
grep -q '^include_graph: 0 broken rule' <<<"$out" || fail "no verdict line:"$'\n'"$out"
echo "$out" | head -1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An include running up a layer: base including fs.
mkdir -p "$tmp/up/base" "$tmp/up/fs"
printf '#pragma once\n' >"$tmp/up/fs/inode.h"
printf '#include "fs/inode.h"\n' >"$tmp/up/base/coding.cc"
rc=0
out=$("$script" --root "$tmp/up") || rc=$?
((rc == 1)) || fail "an upward include passed (exit $rc):"$'\n'"$out"
grep -q 'base/coding.cc:1: includes fs/inode.h: base may not include fs' <<<"$out" ||
  fail "the upward include is not named:"$'\n'"$out"

# Two headers including each other.
mkdir -p "$tmp/circle/journal"
printf '#pragma once\n#include "journal/b.h"\n' >"$tmp/circle/journal/a.h"
printf '#pragma once\n#include "journal/a.h"\n' >"$tmp/circle/journal/b.h"
rc=0
out=$("$script" --root "$tmp/circle") || rc=$?
((rc == 1)) || fail "a header circle passed (exit $rc):"$'\n'"$out"
grep -q 'headers include each other in a circle: journal/a.h -> journal/b.h' <<<"$out" ||
  fail "the circle is not named:"$'\n'"$out"

# Units in a circle: a note, a broken rule with --strict.
mkdir -p "$tmp/units/fs"
printf '#pragma once\n' >"$tmp/units/fs/x.h"
printf '#pragma once\n' >"$tmp/units/fs/y.h"
printf '#include "fs/x.h"\n#include "fs/y.h"\n' >"$tmp/units/fs/x.cc"
printf '#include "fs/y.h"\n#include "fs/x.h"\n' >"$tmp/units/fs/y.cc"
out=$("$script" --root "$tmp/units") || fail "units in a circle broke a rule without --strict:"$'\n'"$out"
grep -q '^note: units .* fs/x, fs/y' <<<"$out" || fail "the unit circle is not noted:"$'\n'"$out"
rc=0
"$script" --root "$tmp/units" --strict >/dev/null || rc=$?
((rc == 1)) || fail "--strict passed units in a circle (exit $rc)"
echo "include_graph_test: passed"
