// fsck phase 2, the B+trees an inode roots (extent map, directory index,
// xattr tree): walked from the root, every node verified, owned by the
// inode at its level, claimed, and its keys in order within its parent's
// bounds.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/format/btree_format.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

bool WalkTree(Context* c, std::uint64_t ino, const char* what, std::uint64_t root, std::uint8_t levels,
              const std::function<void(std::uint64_t key, std::string_view value)>& fn) {
  if (root == 0) return true;
  const Superblock& sb = c->sb();
  if (levels == 0 || levels > 8) {
    c->Problem(fmt::format("inode {}: {} tree of height {}", ino, what, levels));
    return false;
  }
  struct Todo {
    std::uint64_t block;
    int level;
    std::uint64_t low, high;
  };
  std::vector<Todo> stack{{root, levels - 1, 0, UINT64_MAX}};
  std::vector<std::byte> b;
  std::uint64_t last_key = 0;
  bool any = false;
  while (!stack.empty()) {
    const Todo t = stack.back();
    stack.pop_back();
    if (t.block < sb.data_start() || t.block >= sb.total_blocks) {
      c->Problem(fmt::format("inode {}: {} tree points outside the filesystem (block {})", ino, what, t.block));
      return false;
    }
    c->Claim(t.block, 1, fmt::format("inode {} ({} tree)", ino, what));
    if (!c->ReadBlock(t.block, &b).ok()) {
      c->Problem(fmt::format("inode {}: {} tree block {} unreadable", ino, what, t.block));
      return false;
    }
    if (Status st = VerifyBtreeNode(b, t.block, sb.metadata_uuid()); !st.ok()) {
      c->Problem(fmt::format("inode {}: {} tree: {}", ino, what, st.message()));
      return false;
    }
    const BtreeNodeHeader h = DecodeBtreeNodeHeader(b);
    if (h.owner != ino || h.level != t.level) {
      c->Problem(fmt::format("inode {}: {} tree block {} belongs to {} at level {}, not level {}", ino, what, t.block,
                             h.owner, h.level, t.level));
      return false;
    }
    if (h.level == 0) {
      for (const auto& [key, value] : BtreeLeafRecords(b)) {
        if (key < t.low || key >= t.high || (any && key <= last_key)) {
          c->Problem(fmt::format("inode {}: {} tree key {} out of order", ino, what, key));
          return false;
        }
        any = true;
        last_key = key;
        fn(key, value);
      }
    } else {
      const auto entries = BtreeEntries(b);
      // Children in reverse so the leftmost is walked first.
      for (std::size_t i = entries.size(); i-- > 0;) {
        const std::uint64_t low = i == 0 ? t.low : entries[i].first;
        const std::uint64_t high = i + 1 < entries.size() ? entries[i + 1].first : t.high;
        stack.push_back({entries[i].second, t.level - 1, low, high});
      }
    }
  }
  return true;
}

}  // namespace walfs::fs::fsck
