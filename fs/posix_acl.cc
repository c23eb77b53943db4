#include "fs/posix_acl.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "base/coding.h"

namespace walfs::fs {

namespace {
constexpr std::uint16_t kPermBits = 07;

Status Bad(std::string_view why) { return Status::InvalidArgument(fmt::format("malformed POSIX ACL: {}", why)); }

// The order entries must come in: each tag's rank.
int Rank(std::uint16_t tag) {
  switch (tag) {
    case kAclUserObj: return 0;
    case kAclUser: return 1;
    case kAclGroupObj: return 2;
    case kAclGroup: return 3;
    case kAclMask: return 4;
    case kAclOther: return 5;
    default: return -1;
  }
}

bool Named(std::uint16_t tag) { return tag == kAclUser || tag == kAclGroup; }
}  // namespace

bool IsAclXattr(std::string_view name) { return name == kAclAccessXattr || name == kAclDefaultXattr; }

Result<Acl> DecodeAcl(std::string_view value) {
  if (value.size() < kAclHeaderSize) return Bad(fmt::format("{} bytes, no header", value.size()));
  const std::uint32_t version = DecodeFixed32(value.data());
  if (version != kAclVersion) return Bad(fmt::format("version {}, not {}", version, kAclVersion));
  if ((value.size() - kAclHeaderSize) % kAclEntrySize != 0)
    return Bad(fmt::format("{} bytes of entries, not a multiple of {}", value.size() - kAclHeaderSize, kAclEntrySize));
  const std::size_t count = (value.size() - kAclHeaderSize) / kAclEntrySize;
  if (count == 0) return Bad("no entries");
  Acl acl;
  acl.entries.reserve(count);
  int last_rank = -1;
  bool named = false, mask = false;
  for (std::size_t i = 0; i < count; ++i) {
    const char* p = value.data() + kAclHeaderSize + i * kAclEntrySize;
    AclEntry e{DecodeFixed16(p), DecodeFixed16(p + 2), DecodeFixed32(p + 4)};
    const int rank = Rank(e.tag);
    if (rank < 0) return Bad(fmt::format("entry {} has tag {:#x}", i, e.tag));
    if (e.perm & ~kPermBits) return Bad(fmt::format("entry {} has permissions {:#o}", i, e.perm));
    if (rank < last_rank) return Bad(fmt::format("entry {} (tag {:#x}) out of order", i, e.tag));
    if (Named(e.tag)) {
      // Within a named class, ids strictly ascend: sorted, no repeats.
      if (e.id == kAclUndefinedId) return Bad(fmt::format("entry {} names id {:#x}", i, e.id));
      if (rank == last_rank && e.id <= acl.entries.back().id)
        return Bad(fmt::format("entry {}: id {} repeated or out of order", i, e.id));
      named = true;
    } else {
      if (rank == last_rank) return Bad(fmt::format("entry {}: a second tag {:#x}", i, e.tag));
      e.id = kAclUndefinedId;
      if (e.tag == kAclMask) mask = true;
    }
    // The unnamed entries before this one's rank must all be there.
    for (int r = last_rank + 1; r < rank; ++r)
      if (r == 0 || r == 2) return Bad(fmt::format("no {} entry", r == 0 ? "owner (USER_OBJ)" : "group (GROUP_OBJ)"));
    last_rank = rank;
    acl.entries.push_back(e);
  }
  if (last_rank != Rank(kAclOther)) return Bad("no other (OTHER) entry last");
  if (named && !mask) return Bad("named entries without a mask (MASK) entry");
  return acl;
}

std::string EncodeAcl(const Acl& acl) {
  std::string out(kAclHeaderSize + acl.entries.size() * kAclEntrySize, '\0');
  EncodeFixed32(out.data(), kAclVersion);
  char* p = out.data() + kAclHeaderSize;
  for (const AclEntry& e : acl.entries) {
    EncodeFixed16(p, e.tag);
    EncodeFixed16(p + 2, e.perm);
    EncodeFixed32(p + 4, Named(e.tag) ? e.id : kAclUndefinedId);
    p += kAclEntrySize;
  }
  return out;
}

bool UpdateModeFromAcl(const Acl& acl, std::uint32_t* mode) {
  std::uint32_t bits = 0, group = 0;
  bool extended = false;
  std::optional<std::uint32_t> mask;
  for (const AclEntry& e : acl.entries) {
    switch (e.tag) {
      case kAclUserObj: bits |= std::uint32_t{e.perm} << 6; break;
      case kAclGroupObj: group = e.perm; break;
      case kAclOther: bits |= e.perm; break;
      case kAclMask: mask = e.perm; extended = true; break;
      default: extended = true; break;
    }
  }
  // The group class bits of the mode show the mask when there is one.
  bits |= (mask ? *mask : group) << 3;
  *mode = (*mode & ~std::uint32_t{0777}) | bits;
  return extended;
}

void ChmodAcl(Acl* acl, std::uint32_t mode) {
  AclEntry* group = nullptr;
  AclEntry* mask = nullptr;
  for (AclEntry& e : acl->entries) {
    switch (e.tag) {
      case kAclUserObj: e.perm = static_cast<std::uint16_t>((mode >> 6) & kPermBits); break;
      case kAclGroupObj: group = &e; break;
      case kAclMask: mask = &e; break;
      case kAclOther: e.perm = static_cast<std::uint16_t>(mode & kPermBits); break;
      default: break;
    }
  }
  AclEntry* klass = mask ? mask : group;
  if (klass) klass->perm = static_cast<std::uint16_t>((mode >> 3) & kPermBits);
}

InheritedAcl InheritAcl(const Acl& parent_default, std::uint32_t mode) {
  InheritedAcl out;
  Acl acl = parent_default;
  AclEntry* group = nullptr;
  AclEntry* mask = nullptr;
  bool extended = false;
  // Each class of the ACL keeps only what the create mode allows, and the
  // mode only what the ACL allows (posix_acl_create_masq).
  for (AclEntry& e : acl.entries) {
    switch (e.tag) {
      case kAclUserObj:
        e.perm &= static_cast<std::uint16_t>((mode >> 6) & kPermBits);
        mode &= ~std::uint32_t{S_IRWXU} | (std::uint32_t{e.perm} << 6);
        break;
      case kAclOther:
        e.perm &= static_cast<std::uint16_t>(mode & kPermBits);
        mode &= ~std::uint32_t{S_IRWXO} | e.perm;
        break;
      case kAclGroupObj: group = &e; break;
      case kAclMask: mask = &e; extended = true; break;
      default: extended = true; break;
    }
  }
  AclEntry* klass = mask ? mask : group;
  if (klass) {
    klass->perm &= static_cast<std::uint16_t>((mode >> 3) & kPermBits);
    mode &= ~std::uint32_t{S_IRWXG} | (std::uint32_t{klass->perm} << 3);
  }
  out.mode = mode;
  if (extended) out.access = std::move(acl);
  if (S_ISDIR(mode)) out.default_acl = parent_default;
  return out;
}

}  // namespace walfs::fs
