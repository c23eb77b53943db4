#include "mount/setid_kill.h"

#include <sys/stat.h>

namespace walfs::mount {

namespace {

constexpr std::string_view kCapabilityXattr = "security.capability";
constexpr std::uint32_t kSuid = S_ISUID;
constexpr std::uint32_t kSgid = S_ISGID;

bool InGroupOrCapable(std::uint32_t gid, const SetidCaller& c) { return c.in_group(gid) || c.has_fsetid(); }

Status SetMode(fs::Filesystem* fs, std::uint64_t ino, std::uint32_t mode) {
  struct stat attr {};
  attr.st_mode = mode;
  return fs->SetAttr(ino, attr, fs::kSetMode).status();
}

Status RemoveCapability(fs::Filesystem* fs, std::uint64_t ino) {
  Status rm = fs->RemoveXattr(ino, kCapabilityXattr);
  if (!rm.ok() && rm.ToErrno() != ENODATA) return rm;
  return Status::Ok();
}

}  // namespace

std::uint32_t ModeAfterFlaggedWrite(std::uint32_t mode, std::uint32_t file_gid, const SetidCaller& c) {
  if (!S_ISREG(mode)) return mode;  // should_remove_suid: regular files only
  mode &= ~kSuid;
  // setattr_should_drop_sgid: the flag already says "no CAP_FSETID".
  if ((mode & kSgid) && ((mode & S_IXGRP) || !c.in_group(file_gid))) mode &= ~kSgid;
  return mode;
}

std::uint32_t ModeAfterChown(std::uint32_t mode, std::uint32_t old_gid, std::uint32_t new_gid,
                             const SetidCaller& c) {
  if (S_ISDIR(mode) || !(mode & (kSuid | kSgid))) return mode;
  std::uint32_t out = mode & ~kSuid;  // ATTR_KILL_SUID
  if ((out & kSgid) && ((out & S_IXGRP) || !InGroupOrCapable(old_gid, c))) out &= ~kSgid;
  // notify_change turned the kill into a mode change only if a bit was set;
  // setattr_copy_mode then judges S_ISGID against the new group.
  if (out != mode && (out & kSgid) && !InGroupOrCapable(new_gid, c)) out &= ~kSgid;
  return out;
}

Result<bool> DropPrivilegesForWrite(fs::Filesystem* fs, std::uint64_t ino, const SetidCaller& c) {
  WALFS_ASSIGN_OR_RETURN(struct stat st, fs->GetAttr(ino));
  if (!S_ISREG(st.st_mode)) return false;
  const std::uint32_t mode = ModeAfterFlaggedWrite(st.st_mode, st.st_gid, c);
  if (mode != st.st_mode) WALFS_RETURN_IF_ERROR(SetMode(fs, ino, mode));
  WALFS_RETURN_IF_ERROR(RemoveCapability(fs, ino));
  return mode != st.st_mode;
}

Status DropPrivilegesForChown(fs::Filesystem* fs, std::uint64_t ino, std::uint32_t new_gid,
                              const SetidCaller& c) {
  WALFS_ASSIGN_OR_RETURN(struct stat st, fs->GetAttr(ino));
  if (S_ISDIR(st.st_mode)) return Status::Ok();
  const std::uint32_t mode = ModeAfterChown(st.st_mode, st.st_gid, new_gid, c);
  if (mode != st.st_mode) WALFS_RETURN_IF_ERROR(SetMode(fs, ino, mode));
  return RemoveCapability(fs, ino);
}

}  // namespace walfs::mount
