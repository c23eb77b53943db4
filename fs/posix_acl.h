// POSIX ACLs (POSIX 1003.1e draft 17, as Linux implements them): the value
// of the `system.posix_acl_access` and `system.posix_acl_default` xattrs,
// and the rules that keep an ACL and the file mode in step.  The kernel
// checks access against them (FUSE_CAP_POSIX_ACL with default_permissions);
// walfs stores them, keeps them consistent with the mode, and lets new
// inodes inherit a directory's default ACL (docs/fs.md, "POSIX ACLs").
//
//   WALFS_ASSIGN_OR_RETURN(Acl acl, DecodeAcl(value));   // InvalidArgument if malformed
//   std::uint32_t mode = inode_mode;
//   if (UpdateModeFromAcl(acl, &mode)) { ...store EncodeAcl(acl)... } else { ...mode only... }
//
// The value is the kernel's xattr encoding (include/uapi/linux/
// posix_acl_xattr.h), little-endian:
//
//   acl   := version:u32 (= 2) entry+
//   entry := tag:u16 perm:u16 id:u32
//
// Entries are sorted by tag (USER_OBJ, USER..., GROUP_OBJ, GROUP..., MASK,
// OTHER), named ones by id without repeats; USER_OBJ, GROUP_OBJ and OTHER
// appear exactly once, MASK at most once and whenever a named entry does;
// perm uses the rwx bits only.  The ids of the unnamed entries are
// ignored on input and written as ACL_UNDEFINED_ID (the kernel's rule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace walfs::fs {

inline constexpr std::string_view kAclAccessXattr = "system.posix_acl_access";
inline constexpr std::string_view kAclDefaultXattr = "system.posix_acl_default";
bool IsAclXattr(std::string_view name);

enum AclTag : std::uint16_t {
  kAclUserObj = 0x01,
  kAclUser = 0x02,
  kAclGroupObj = 0x04,
  kAclGroup = 0x08,
  kAclMask = 0x10,
  kAclOther = 0x20,
};
inline constexpr std::uint32_t kAclVersion = 2;
inline constexpr std::uint32_t kAclUndefinedId = 0xffffffff;
inline constexpr std::size_t kAclHeaderSize = 4;
inline constexpr std::size_t kAclEntrySize = 8;

struct AclEntry {
  std::uint16_t tag = 0;
  std::uint16_t perm = 0;  // rwx: 4, 2, 1
  std::uint32_t id = kAclUndefinedId;
  friend bool operator==(const AclEntry&, const AclEntry&) = default;
};

struct Acl {
  std::vector<AclEntry> entries;
  friend bool operator==(const Acl&, const Acl&) = default;
};

// The ACL a value encodes, or InvalidArgument saying what is wrong with it.
Result<Acl> DecodeAcl(std::string_view value);
// The value of a valid ACL.
std::string EncodeAcl(const Acl& acl);

// Setting an access ACL (the kernel's posix_acl_update_mode): the
// permission bits of *mode become the ACL's owner, group class (the mask
// if there is one, else the owning group) and other entries.  Returns
// false when the ACL says nothing the mode does not (three entries): it is
// then kept as the mode alone, as ext4 and XFS do.
bool UpdateModeFromAcl(const Acl& acl, std::uint32_t* mode);

// chmod of a file with an access ACL (posix_acl_chmod): the owner, group
// class and other entries take the new mode's permission bits.
void ChmodAcl(Acl* acl, std::uint32_t mode);

// What a new inode gets from its directory's default ACL
// (posix_acl_create): the access ACL is the default, each class limited by
// the create mode, and the mode limited by the ACL; the umask plays no
// part.  A new directory also keeps the default ACL itself.
struct InheritedAcl {
  std::uint32_t mode = 0;         // the new inode's mode (file type and all)
  std::optional<Acl> access;      // absent: the mode says it all
  std::optional<Acl> default_acl; // directories only
};
InheritedAcl InheritAcl(const Acl& parent_default, std::uint32_t mode);

}  // namespace walfs::fs
