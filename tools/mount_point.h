// Where `walfs IMAGE MOUNTPOINT` mounts, checked before anything is opened
// (tools/walfs.cc): the source the mount table records, the mount point as
// the kernel takes it, and whether the mount would hide its own image.
#pragma once

#include <string>

namespace walfs::tools {

// The mount's source as /proc/mounts, df and findmnt show it: the image's
// canonical path, so that `umount /srv/img` and `findmnt --source /srv/img`
// find the mount whatever directory `walfs img MNT` ran in.  Escaped for
// -o (a ',' would end the option).  An image that cannot be resolved is
// given as typed: opening it fails and says why.
std::string MountSource(const char* image);

// Sets *resolved to `mountpoint` as fuse_session_mount and the mount table
// take it (absolute, as libfuse's fuse_parse_cmdline would have made it), or
// returns why it cannot be mounted on (missing, not a directory).  /dev/fd/N
// (mount.fuse3's drop_privileges hands over an opened /dev/fuse) is passed
// on as it is.
std::string ResolveMountpoint(const char* mountpoint, std::string* resolved);

// Why mounting `image` on `mountpoint` would hide the image from its own
// users (the mountpoint is the image, or a directory above it), or "".
std::string HidesImage(const char* image, const char* mountpoint);

}  // namespace walfs::tools
