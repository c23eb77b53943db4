#include "base/status.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace walfs {

namespace {

// One row per code: its name and the errno it maps to by default.
struct CodeInfo {
  std::string_view name;
  int err;
};

constexpr CodeInfo kCodeInfo[] = {
    {"OK", 0},
    {"InvalidArgument", EINVAL},
    {"NotFound", ENOENT},
    {"AlreadyExists", EEXIST},
    {"NoSpace", ENOSPC},
    {"IoError", EIO},
    {"Corruption", EUCLEAN},
    {"Shutdown", EIO},
    {"NotSupported", EOPNOTSUPP},
    {"WouldBlock", EAGAIN},
    {"Permission", EPERM},
    {"Internal", EIO},
};

StatusCode ClassifyErrno(int err) {
  switch (err) {
    case EINVAL: return StatusCode::kInvalidArgument;
    case ENOENT: return StatusCode::kNotFound;
    case EEXIST: return StatusCode::kAlreadyExists;
    case ENOSPC: case EDQUOT: return StatusCode::kNoSpace;
    case EIO: case ENODEV: return StatusCode::kIoError;
    // POSIX answers, not failing hardware: ENXIO is lseek's "no data past
    // this offset", EROFS a refusal to write; kInternal keeps the errno.
    case ENXIO: case EROFS: return StatusCode::kInternal;
    case EUCLEAN: case EBADMSG: return StatusCode::kCorruption;
    case EOPNOTSUPP: return StatusCode::kNotSupported;
    case EAGAIN: return StatusCode::kWouldBlock;
    case EPERM: case EACCES: return StatusCode::kPermission;
    default: return StatusCode::kInternal;
  }
}

}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  return kCodeInfo[static_cast<int>(code)].name;
}

Status::Status(StatusCode code, int err, std::string_view msg)
    : rep_(std::make_unique<Rep>(Rep{code, err, std::string(msg)})) {}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

#define WALFS_STATUS_CTOR(Name)                                        \
  Status Status::Name(std::string_view msg) {                          \
    constexpr StatusCode c = StatusCode::k##Name;                      \
    return Status(c, kCodeInfo[static_cast<int>(c)].err, msg);         \
  }
WALFS_STATUS_CTOR(InvalidArgument)
WALFS_STATUS_CTOR(NotFound)
WALFS_STATUS_CTOR(AlreadyExists)
WALFS_STATUS_CTOR(NoSpace)
WALFS_STATUS_CTOR(IoError)
WALFS_STATUS_CTOR(Corruption)
WALFS_STATUS_CTOR(Shutdown)
WALFS_STATUS_CTOR(NotSupported)
WALFS_STATUS_CTOR(WouldBlock)
WALFS_STATUS_CTOR(Internal)
#undef WALFS_STATUS_CTOR

Status Status::FromErrno(int err, std::string_view context) {
  WALFS_CHECK_MSG(err > 0, "FromErrno needs a positive errno");
  return Status(ClassifyErrno(err), err,
                fmt::format("{}: {}", context, std::strerror(err)));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {} (errno {})", StatusCodeName(rep_->code), rep_->msg,
                     rep_->err);
}

}  // namespace walfs
