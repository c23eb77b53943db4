// fsck phase 4, the directory tree: walked from the root, each entry names
// an in-use inode of the type it says, ".." is right, every directory is
// reached once; the links found to each inode are counted for phase 5.
// With `clear_and_reconnect`, an entry naming an inode not in use is
// dropped: from an inline directory here, once phase 5 is done; from a
// B+tree directory through a mount (fs/fsck.cc).
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/dir.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// The file type a directory entry records for an inode of `mode`.
std::uint8_t FtypeOf(std::uint16_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return 8;   // DT_REG
    case S_IFDIR: return 4;   // DT_DIR
    case S_IFLNK: return 10;  // DT_LNK
    case S_IFCHR: return 2;   // DT_CHR
    case S_IFBLK: return 6;   // DT_BLK
    case S_IFIFO: return 1;   // DT_FIFO
    case S_IFSOCK: return 12; // DT_SOCK
  }
  return 0;
}

}  // namespace

void CheckTree(Context* c) {
  FsckReport* r = c->report;
  const std::uint64_t root = r->sb.root_ino;
  auto it = c->inodes.find(root);
  if (it == c->inodes.end() || !S_ISDIR(it->second.mode)) {
    c->Problem(fmt::format("the root inode {} is not an allocated directory", root));
    return;
  }
  std::deque<std::uint64_t> queue{root};
  it->second.reached = true;
  it->second.links_found += 1;  // the root's ".." is itself
  while (!queue.empty()) {
    const std::uint64_t dir = queue.front();
    queue.pop_front();
    InodeInfo& d = c->inodes[dir];
    d.links_found += 1;  // "."
    if (!d.entries_known) continue;
    if (dir == root && d.parent != root) c->Problem(fmt::format("the root directory's parent is {}, not itself", d.parent));
    std::map<std::string, int> names;
    for (const DirEntry& e : d.entries) {
      if (++names[e.name] == 2) c->Problem(fmt::format("directory {} holds \"{}\" twice", dir, e.name));
      auto t = c->inodes.find(e.ino);
      if (t == c->inodes.end()) {
        c->Problem(fmt::format("directory {}: \"{}\" names inode {}, which is not in use", dir, e.name, e.ino));
        if (!c->options.clear_and_reconnect) continue;
        if (d.local_dir) c->dangling[dir].push_back({e.name, r->problems.size() - 1});
        else c->drops.push_back({dir, e.name, r->problems.size() - 1});
        continue;
      }
      InodeInfo& target = t->second;
      if (FtypeOf(target.mode) != e.ftype)
        c->Problem(fmt::format("directory {}: \"{}\" says file type {} but inode {} has mode {:o}", dir, e.name,
                               e.ftype, e.ino, target.mode));
      target.links_found += 1;
      if (S_ISDIR(target.mode)) {
        if (target.reached) {
          c->Problem(fmt::format("directory {} is reached twice (again as \"{}\" in {})", e.ino, e.name, dir));
          continue;
        }
        if (target.entries_known && target.parent != dir)
          c->Problem(
              fmt::format("directory {} (\"{}\" in {}) says its parent is {}", e.ino, e.name, dir, target.parent));
        d.links_found += 1;  // the child's ".."
        queue.push_back(e.ino);
      }
      target.reached = true;
    }
  }
}

// -y's repair of the inline directories' entries CheckTree found naming
// inodes not in use: each directory rewritten without them.  One that
// cannot be rewritten keeps its problems, reported.
void DropDanglingEntries(Context* c) {
  for (const auto& entry : c->dangling) {
    // Not a structured binding: a lambda may not capture one (C++20).
    const auto& names = entry.second;
    Status s = c->RewriteInode(entry.first, [&](InodeCore* n) -> Status {
      const std::uint32_t room = n->fork_off ? n->fork_off : kLiteralSize;
      std::uint64_t parent = 0;
      std::vector<DirEntry> entries;
      WALFS_RETURN_IF_ERROR(
          DecodeLocalDir(std::string_view(n->literal).substr(0, std::min<std::uint64_t>(n->size, room)), &parent,
                         &entries));
      std::erase_if(entries, [&](const DirEntry& e) {
        return std::any_of(names.begin(), names.end(), [&](const auto& d) { return d.first == e.name; });
      });
      DirIndex::SetLocal(n, parent, entries);
      return Status::Ok();
    });
    if (!s.ok()) continue;  // left reported
    for (const auto& [name, problem] : names) c->Repaired(problem, "entry removed");
  }
}

}  // namespace walfs::fs::fsck
