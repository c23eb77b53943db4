#include "mount/setid_kill.h"

#include <sys/stat.h>

namespace walfs::mount {

namespace {
constexpr std::string_view kCapabilityXattr = "security.capability";
}

std::uint32_t ModeWithoutSetid(std::uint32_t mode) {
  mode &= ~static_cast<std::uint32_t>(S_ISUID);
  if (mode & S_IXGRP) mode &= ~static_cast<std::uint32_t>(S_ISGID);
  return mode;
}

Result<bool> DropPrivileges(fs::Filesystem* fs, std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(struct stat st, fs->GetAttr(ino));
  if (!S_ISREG(st.st_mode)) return false;
  const std::uint32_t mode = ModeWithoutSetid(st.st_mode);
  if (mode != st.st_mode) {
    struct stat attr {};
    attr.st_mode = mode;
    WALFS_RETURN_IF_ERROR(fs->SetAttr(ino, attr, fs::kSetMode).status());
  }
  Status rm = fs->RemoveXattr(ino, kCapabilityXattr);
  if (!rm.ok() && rm.ToErrno() != ENODATA) return rm;
  return mode != st.st_mode;
}

}  // namespace walfs::mount
