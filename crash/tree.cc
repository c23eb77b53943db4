#include "crash/tree.h"

#include <sys/stat.h>

#include <utility>
#include <vector>

#include <fmt/format.h>

namespace walfs::crash {

Namespace Tree::Names() const {
  Namespace ns;
  for (const auto& [ino, set] : names)
    for (const Name& n : set) ns[n] = ino;
  return ns;
}

Status Walk(fs::Filesystem* fs, std::uint64_t dir, Tree* t) {
  std::vector<std::pair<std::string, std::uint64_t>> entries;
  WALFS_RETURN_IF_ERROR(fs->ReadDir(dir, 0, [&](std::string_view name, std::uint64_t ino, std::uint32_t,
                                               std::uint64_t) {
    if (name != "." && name != "..") entries.emplace_back(std::string(name), ino);
    return true;
  }));
  for (const auto& [name, ino] : entries) {
    t->names[ino].insert({dir, name});
    if (t->inodes.count(ino)) continue;
    WALFS_ASSIGN_OR_RETURN(struct stat st, fs->GetAttr(ino));
    Node& n = t->inodes[ino];
    n.mode = st.st_mode;
    n.nlink = static_cast<std::uint32_t>(st.st_nlink);
    if (S_ISDIR(st.st_mode)) {
      WALFS_RETURN_IF_ERROR(Walk(fs, ino, t));
    } else if (S_ISLNK(st.st_mode)) {
      WALFS_ASSIGN_OR_RETURN(n.data, fs->Readlink(ino));
    } else {
      n.data.resize(static_cast<std::size_t>(st.st_size));
      WALFS_ASSIGN_OR_RETURN(std::size_t got, fs->Read(ino, 0, n.data.size(), n.data.data()));
      if (got != n.data.size()) return Status::Internal(fmt::format("short read of inode {}", ino));
      WALFS_ASSIGN_OR_RETURN(std::vector<std::string> keys, fs->ListXattr(ino));
      for (const std::string& k : keys) {
        WALFS_ASSIGN_OR_RETURN(n.xattrs[k], fs->GetXattr(ino, k));
      }
    }
  }
  return Status::Ok();
}

Result<Tree> MountAndWalk(BlockDevice* dev, bool unmount) {
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<fs::Filesystem> fs, fs::Filesystem::MountDevice(dev, {}));
  Tree t;
  WALFS_RETURN_IF_ERROR(Walk(fs.get(), fs->root(), &t));
  if (unmount) WALFS_RETURN_IF_ERROR(fs->Unmount());
  return t;  // else destroyed mounted: a crash right after recovery
}

std::string Problems(const fs::FsckReport& r) {
  std::string s;
  for (const fs::FsckProblem& p : r.problems) s += "\n  " + p.message;
  return s;
}

}  // namespace walfs::crash
