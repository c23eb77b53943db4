// Status and Result<T>: how every fallible walfs call reports failure.
//
//   Status s = device.Write(...);
//   if (!s.ok()) return s;                       // or WALFS_RETURN_IF_ERROR
//   Result<Superblock> sb = ReadSuperblock(dev);
//   if (!sb.ok()) return sb.status();
//   Use(*sb);
//
// A Status is a code, the errno it maps to, and a message for humans.  The
// errno is chosen where the failure is first seen (FromErrno keeps the one
// the kernel returned); the FUSE adapter is the only place that hands it to
// the kernel (STYLE.md rule 7).  No exceptions cross walfs APIs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace walfs {

enum class StatusCode : unsigned char {
  kOk = 0,
  kInvalidArgument,  // EINVAL: the caller's input (an option, a size) is wrong
  kNotFound,         // ENOENT
  kAlreadyExists,    // EEXIST
  kNoSpace,          // ENOSPC
  kIoError,          // EIO, or the device's own errno
  kCorruption,       // EUCLEAN: on-disk data failed a check (EFSCORRUPTED)
  kShutdown,         // EIO: the filesystem or log was shut down
  kNotSupported,     // EOPNOTSUPP
  kWouldBlock,       // EAGAIN
  kPermission,       // EPERM / EACCES
  kInternal,         // an errno that fits no class above
};

// The name of a code, for messages and traces ("Corruption").
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string_view msg);
  static Status NotFound(std::string_view msg);
  static Status AlreadyExists(std::string_view msg);
  static Status NoSpace(std::string_view msg);
  static Status IoError(std::string_view msg);
  static Status Corruption(std::string_view msg);
  static Status Shutdown(std::string_view msg);
  static Status NotSupported(std::string_view msg);
  static Status WouldBlock(std::string_view msg);
  static Status Internal(std::string_view msg);
  // Wraps a failed syscall: keeps `err` exactly and classifies it.
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The errno a kernel caller should see (0 for OK).
  int ToErrno() const { return rep_ ? rep_->err : 0; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->msg) : ""; }
  // "Corruption: superblock magic 0x0 is not WALFS (errno 117)" or "OK".
  std::string ToString() const;

  bool IsCorruption() const { return code() == StatusCode::kCorruption; }
  bool IsShutdown() const { return code() == StatusCode::kShutdown; }
  bool IsNoSpace() const { return code() == StatusCode::kNoSpace; }

 private:
  struct Rep {
    StatusCode code;
    int err;
    std::string msg;
  };
  Status(StatusCode code, int err, std::string_view msg);

  std::unique_ptr<Rep> rep_;  // null when OK: an OK Status is one null pointer
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    WALFS_CHECK_MSG(!std::get<Status>(v_).ok(), "Result built from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const& {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status() : std::get<Status>(std::move(v_)); }

  T& value() & { return Checked(), std::get<T>(v_); }
  const T& value() const& { return Checked(), std::get<T>(v_); }
  T&& value() && { return Checked(), std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Checked() const { WALFS_CHECK_MSG(ok(), "value() of a failed Result"); }
  std::variant<Status, T> v_;
};

}  // namespace walfs

#define WALFS_CONCAT_INNER(a, b) a##b
#define WALFS_CONCAT(a, b) WALFS_CONCAT_INNER(a, b)

#define WALFS_RETURN_IF_ERROR(expr)           \
  do {                                        \
    ::walfs::Status _walfs_st = (expr);       \
    if (!_walfs_st.ok()) return _walfs_st;    \
  } while (0)

#define WALFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

#define WALFS_ASSIGN_OR_RETURN(lhs, expr) \
  WALFS_ASSIGN_OR_RETURN_IMPL(WALFS_CONCAT(_walfs_res_, __LINE__), lhs, expr)
