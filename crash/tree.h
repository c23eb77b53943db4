// Tree: what a mounted (recovered) image holds, read through the
// filesystem's own operations: every inode reachable from the root with its
// mode, link count, bytes (a symlink's target) and xattrs, and every name it
// is under.  Two walks compare equal when the images hold the same tree.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "base/block_device.h"
#include "base/status.h"
#include "crash/history.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"

namespace walfs::crash {

struct Node {
  std::uint32_t mode = 0;
  std::uint32_t nlink = 0;
  std::string data;  // file bytes, or a symlink's target
  Xattrs xattrs;
  bool operator==(const Node&) const = default;
};

struct Tree {
  std::map<std::uint64_t, Node> inodes;
  std::map<std::uint64_t, std::set<Name>> names;
  bool operator==(const Tree&) const = default;

  // Every name in the tree and the inode under it.
  Namespace Names() const;
};

// Walks the tree below directory `dir` into `t`.
Status Walk(fs::Filesystem* fs, std::uint64_t dir, Tree* t);

// Mounts `dev` (recovering its log), walks it, and unmounts cleanly -- or,
// without `unmount`, drops the filesystem mounted: a crash right after
// recovery.
Result<Tree> MountAndWalk(BlockDevice* dev, bool unmount);

// fsck's problems, one per line, each line starting "\n  ".
std::string Problems(const fs::FsckReport& r);

}  // namespace walfs::crash
