// fsck phase 2, an inode's xattr fork: in B+tree format at its offset, its
// tree walked (fs/fsck_btree_walk.cc), each name under its hash, and each
// POSIX ACL (system.posix_acl_*) one the kernel would accept, a default
// one only on a directory.
#include <sys/stat.h>

#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/dir.h"
#include "fs/format/btree_format.h"
#include "fs/fsck_phases.h"
#include "fs/posix_acl.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// A POSIX ACL the kernel would refuse, or a default ACL on a
// non-directory (which nothing applies), is damage.
void CheckAcl(Context* c, std::uint64_t ino, const InodeCore& inode, std::string_view name, std::string_view value) {
  Result<Acl> acl = DecodeAcl(value);
  if (!acl.ok()) {
    c->Problem(fmt::format("inode {}: {}: {}", ino, name, acl.status().message()));
    return;
  }
  if (name == kAclDefaultXattr && !S_ISDIR(inode.mode))
    c->Problem(fmt::format("inode {}: a default ACL on a non-directory", ino));
}

}  // namespace

void CheckXattrFork(Context* c, std::uint64_t ino, const InodeCore& inode) {
  if (inode.aformat == ForkFormat::kNone) return;
  if (inode.aformat != ForkFormat::kBtree || inode.fork_off != kXattrForkOffset) {
    c->Problem(fmt::format("inode {}: xattr fork in {} format at {}", ino, ForkFormatName(inode.aformat),
                           inode.fork_off));
    return;
  }
  const BtreeRoot root = GetForkRoot(inode.literal, kXattrForkOffset);
  // A POSIX ACL's value, gathered from its records (keys ascend: a
  // value's later chunks follow its first).
  struct Pending {
    std::string name;
    std::uint64_t key_base = 0;  // hash and collision index
    std::uint32_t total = 0;
    std::string value;
  };
  std::optional<Pending> acl;
  auto finish_acl = [&] {
    if (!acl) return;
    if (acl->value.size() == acl->total) CheckAcl(c, ino, inode, acl->name, acl->value);
    acl.reset();  // a short value: the xattr walk's own checks speak for it
  };
  // Each value's first record (chunk 0) starts namelen, name, total length.
  WalkTree(c, ino, "xattr", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
    if ((key & 0xff) != 0) {
      if (acl && (key & ~std::uint64_t{0xff}) == acl->key_base) acl->value.append(v);
      return;
    }
    finish_acl();
    const std::size_t n = static_cast<std::uint8_t>(v.empty() ? 0 : v[0]);
    if (n == 0 || v.size() < 5 + n) {
      c->Problem(fmt::format("inode {}: xattr record of {} bytes", ino, v.size()));
      return;
    }
    // As for directory entries: a name under another name's hash is one
    // that getxattr and removexattr cannot find (though listxattr lists it).
    const std::string_view name = v.substr(1, n);
    if ((key & ~std::uint64_t{0xffff}) != DirHashKey(name))
      c->Problem(fmt::format("inode {}: xattr \"{}\" is filed under the wrong hash", ino, name));
    if (IsAclXattr(name))
      acl = Pending{std::string(name), key & ~std::uint64_t{0xff}, DecodeFixed32(v.data() + 1 + n),
                    std::string(v.substr(5 + n))};
  });
  finish_acl();
}

}  // namespace walfs::fs::fsck
