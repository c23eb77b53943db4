// walfs-growfs [-n] MNT [SIZE] (also `walfs grow`): grows the mounted walfs
// at MNT to SIZE (default: the size of its image file or device), as
// xfs_growfs does, through the mount's WALFS_IOC_GROWFS ioctl
// (mount/growfs_ioctl.h); -n prints the geometry only.  Exit 0 when grown
// (or already that size), 1 on failure (one line saying what to do), 2 for
// a usage error.
#pragma once

#include <string_view>

namespace walfs::tools {

// argv[0] is the program's name as invoked; `program` is how it names itself.
int GrowfsMain(int argc, char** argv, std::string_view program);

}  // namespace walfs::tools
