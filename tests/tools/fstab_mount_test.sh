#!/usr/bin/env bash
# mount(8) through the installed mount.fuse.walfs helper, from a prefix
# outside sh's default search path (dist/mount/): an /etc/fstab-style line
# of type fuse.walfs (with mount's own options: noauto, nofail, _netdev,
# x-systemd.*) and `mount -t fuse.walfs` both mount the image with the
# installed walfs, whatever PATH says.  The helper is written where mount(8)
# looks for it (WALFS_MOUNT_HELPER_DIR, /sbin) by the install's own script
# and removed afterwards; an existing helper is not replaced (skip).
# Usage: fstab_mount_test.sh BUILD_DIR HELPER_DIR.  Exit 77 (skip) without
# root, /dev/fuse, mount(8) or mount.fuse3.
set -euo pipefail
build=$1 helper_dir=$2
helper=$helper_dir/mount.fuse.walfs

((EUID == 0)) || { echo "SKIP: needs root (mount(8) runs the helper as root)"; exit 77; }
[[ -c /dev/fuse ]] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v mount >/dev/null || { echo "SKIP: no mount(8)"; exit 77; }
[[ -x /sbin/mount.fuse3 || -x /usr/sbin/mount.fuse3 ]] || { echo "SKIP: no mount.fuse3 (fuse3)"; exit 77; }
[[ -e $helper ]] && { echo "SKIP: $helper exists (an installed walfs's): not replaced"; exit 77; }

work=$(mktemp -d)
chmod 755 "$work"
mnt=$work/mnt
cleanup() {
  umount "$mnt" 2>/dev/null || true
  rm -f "$helper"
  rm -rf "$work"
}
trap cleanup EXIT
prefix=$work/opt/walfs  # not on sh's default search path
mkdir -p "$prefix/bin" "$mnt"
cp "$build/bin/walfs" "$prefix/bin/walfs"
cmake -DCMAKE_INSTALL_PREFIX="$prefix" -P "$build/dist/install_helper.cmake" > /dev/null
[[ -x $helper ]] || { echo "FAIL: the install script wrote no $helper" >&2; exit 1; }
grep -qF "walfs='$prefix/bin/walfs'" "$helper" || { echo "FAIL: $helper does not name $prefix/bin/walfs" >&2; exit 1; }

"$build/bin/mkfs.walfs" -q "$work/img" 64m
mounted() { grep -qE "^$work/img $mnt fuse\.walfs " /proc/mounts; }

# An fstab line, as `mount MOUNTPOINT` reads it (a private fstab: -T).
printf '%s  %s  fuse.walfs  defaults,noauto,nofail,_netdev,x-systemd.device-timeout=10,wake=wakeq  0  0\n' \
  "$work/img" "$mnt" > "$work/fstab"
if ! out=$(env -i PATH=/usr/bin:/bin mount -T "$work/fstab" "$mnt" 2>&1); then
  echo "FAIL: mount -T fstab $mnt: $out" >&2
  exit 1
fi
mounted || { echo "FAIL: the fstab line mounted nothing" >&2; exit 1; }
echo hello > "$mnt/f"
grep -q '^wake_mode wakeq$' "$mnt/.walfs/stats" || { echo "FAIL: wake=wakeq did not reach walfs" >&2; exit 1; }
umount "$mnt"

if ! out=$(env -i PATH=/usr/bin:/bin mount -t fuse.walfs -o ro "$work/img" "$mnt" 2>&1); then
  echo "FAIL: mount -t fuse.walfs: $out" >&2
  exit 1
fi
mounted || { echo "FAIL: mount -t fuse.walfs mounted nothing" >&2; exit 1; }
[[ $(cat "$mnt/f") == hello ]] || { echo "FAIL: the file written through the fstab mount is not there" >&2; exit 1; }
umount "$mnt"

# A walfs that is gone: the helper says so, with mount's failure code.
rm "$prefix/bin/walfs"
if out=$(mount -t fuse.walfs "$work/img" "$mnt" 2>&1); then
  echo "FAIL: a mount without walfs succeeded" >&2
  exit 1
fi
grep -q "mount.fuse.walfs: $prefix/bin/walfs: not found" <<<"$out" || { echo "FAIL: no reason given: $out" >&2; exit 1; }
echo "fstab and mount -t fuse.walfs through $helper from $prefix: ok"
