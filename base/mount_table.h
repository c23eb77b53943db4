// The mount table (/proc/self/mountinfo): which filesystem is mounted
// where, as the kernel sees it from this process's mount namespace.
//
//   if (auto m = TopMountAt("/mnt/w"); m && m->fstype == "fuse.walfs") ...
//
// Mount points and sources come unescaped (mountinfo writes space, tab,
// newline and backslash as \ooo).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace walfs {

struct MountEntry {
  std::string point;   // absolute
  std::string fstype;  // "fuse.walfs", "ext4", ...
  std::string source;  // the image for walfs, the device for a kernel fs
  std::string root;    // the directory of the filesystem mounted here: "/" but for bind mounts
  // The filesystem's st_dev, as major and minor (makedev(major, minor)).
  unsigned major = 0, minor = 0;
};

// Every mount, in the table's order: a later entry at the same point is
// mounted on top of an earlier one.  Empty if the table cannot be read.
std::vector<MountEntry> ReadMountTable();

// The topmost mount at `point` (absolute, spelled as the table spells it),
// which is what path lookup reaches; nullopt if nothing is mounted there.
std::optional<MountEntry> TopMountAt(const std::string& point);

// mountinfo's \ooo escapes undone.
std::string UnescapeMountField(const std::string& s);

}  // namespace walfs
