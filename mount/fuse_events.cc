#include "mount/fuse_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/clock.h"

namespace walfs::mount {

using tracing::EventKind;
using tracing::FieldKind;

#define WALFS_FUSE_ENTER_FIELDS_plain {"caller_pid"}, {"ino"}
#define WALFS_FUSE_ENTER_FIELDS_name                                                    \
  {"caller_pid"}, {"ino"}, {"name", FieldKind::kChars}, {"name", FieldKind::kChars},    \
      {"name", FieldKind::kChars}, {"name_len"}
#define WALFS_FUSE_ENTER_FIELDS_io {"caller_pid"}, {"ino"}, {"off"}, {"len"}
#define WALFS_FUSE_ENTER_FIELDS_fallocate \
  {"caller_pid"}, {"ino"}, {"off"}, {"len"}, {"mode", FieldKind::kHex}

#define WALFS_DEFINE_FUSE_OP(op, shape)                                                     \
  WALFS_TRACE_EVENT(kFuseEnter_##op, "fs", #op "_enter", EventKind::kBegin,                 \
                    WALFS_FUSE_ENTER_FIELDS_##shape);                                       \
  WALFS_TRACE_EVENT(kFuseExit_##op, "fs", #op "_exit", EventKind::kEnd, {"caller_pid"},     \
                    {"ino"}, {"err"}, {"latency_ns"});                                      \
  const FuseOpEvents kFuseOp_##op{kFuseEnter_##op, kFuseExit_##op};
WALFS_FUSE_OPS(WALFS_DEFINE_FUSE_OP)
#undef WALFS_DEFINE_FUSE_OP

WALFS_TRACE_EVENT(kFuseRenameTo, "fs", "rename_to", EventKind::kInstant,
                  WALFS_FUSE_ENTER_FIELDS_name);
WALFS_TRACE_EVENT(kFuseTask, "fs", "task", EventKind::kInstant, {"caller_pid"},
                  {"comm", FieldKind::kChars}, {"comm", FieldKind::kChars}, {"tgid"});

namespace {
thread_local int replied_errno = 0;

// A small direct-mapped note per worker of the pids it named, and when.
struct CallerNote {
  std::uint32_t pid = 0;
  std::int64_t at_ns = 0;
};
constexpr std::size_t kCallerNotes = 64;
constexpr std::int64_t kCallerNoteNs = 1'000'000'000;
thread_local std::array<CallerNote, kCallerNotes> caller_notes;

// The first line of a small /proc file ("" if it cannot be read).
std::string ReadProcLine(const std::string& path, std::size_t max) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string buf(max, '\0');
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  ::close(fd);
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return buf;
}

std::uint64_t TgidOf(std::uint32_t pid) {
  const std::string status = ReadProcLine(fmt::format("/proc/{}/status", pid), 512);
  const std::size_t at = status.find("\nTgid:");
  if (at == std::string::npos) return 0;
  std::size_t p = at + 6;
  while (p < status.size() && (status[p] == ' ' || status[p] == '\t')) ++p;
  std::uint64_t tgid = 0;
  std::from_chars(status.data() + p, status.data() + status.size(), tgid);
  return tgid;
}
}  // namespace

void SetRepliedErrno(int err) { replied_errno = err; }
int TakeRepliedErrno() {
  const int e = replied_errno;
  replied_errno = 0;
  return e;
}

void NoteCaller(std::uint32_t pid) {
  // pid 0: the kernel's own request (release after the last close, writeback).
  if (pid == 0 || !kFuseTask.active()) return;
  CallerNote& note = caller_notes[pid % kCallerNotes];
  const std::int64_t now = MonotonicNanos();
  if (note.pid == pid && now - note.at_ns < kCallerNoteNs) return;
  note = {pid, now};
  std::string comm = ReadProcLine(fmt::format("/proc/{}/comm", pid), 16);
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  std::uint64_t v[4] = {pid, 0, 0, TgidOf(pid)};
  tracing::PackChars(comm, &v[1], 2);
  WALFS_TRACE(kFuseTask, v[0], v[1], v[2], v[3]);
}

}  // namespace walfs::mount
