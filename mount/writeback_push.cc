#include "mount/writeback_push.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/messages.h"

namespace walfs::mount {

namespace {

// Closes a descriptor when it leaves scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

WritebackPush::WritebackPush(Options options, std::function<bool()> wanted)
    : options_(std::move(options)), wanted_(std::move(wanted)) {}

WritebackPush::~WritebackPush() {
  RequestStop();
  Join();
}

void WritebackPush::Start() {
  if (options_.interval_ms <= 0) return;
  {
    MutexLock l(&mu_);
    if (state_ != State::kOff) return;
    state_ = State::kOn;
  }
  thread_ = std::thread([this] { Loop(); });
}

void WritebackPush::RequestStop() {
  MutexLock l(&mu_);
  stopping_ = true;
  if (state_ == State::kOn) state_ = State::kStopped;
  cv_.SignalAll();
}

void WritebackPush::Join() {
  if (thread_.joinable()) thread_.join();
}

WritebackPush::State WritebackPush::state() const {
  MutexLock l(&mu_);
  return state_;
}

const char* WritebackPush::StateName(State s) {
  switch (s) {
    case State::kOff: return "off";
    case State::kOn: return "on";
    case State::kUnavailable: return "unavailable";
    case State::kStopped: return "stopped";
  }
  return "?";
}

std::string WritebackPush::StatsText() const {
  MutexLock l(&mu_);
  return fmt::format(
      "writeback_push {}\nwriteback_push_ms {}\nwriteback_pushes {}\nwriteback_push_skipped {}\n"
      "writeback_push_failed {}\nwriteback_push_p50_us {}\nwriteback_push_p99_us {}\nwriteback_push_max_us {}\n",
      StateName(state_), options_.interval_ms, pushes_, skipped_, failed_, latency_ns_.Percentile(0.5) / 1000,
      latency_ns_.Percentile(0.99) / 1000, latency_ns_.Max() / 1000);
}

void WritebackPush::Loop() {
  const std::int64_t interval_ns = std::int64_t{options_.interval_ms} * 1'000'000;
  for (;;) {
    {
      MutexLock l(&mu_);
      const std::int64_t until = MonotonicNanos() + interval_ns;
      for (std::int64_t now = MonotonicNanos(); !stopping_ && now < until; now = MonotonicNanos())
        cv_.WaitFor(&mu_, until - now);
      if (stopping_) return;
    }
    if (!wanted_()) continue;
    if (!PushOnce()) return;
  }
}

bool WritebackPush::PushOnce() {
  const std::int64_t start = MonotonicNanos();
  // A private mount of this superblock, outside every namespace: an umount
  // of the real mount meanwhile succeeds (the superblock lives until the
  // clone is closed below).
  Fd tree(::open_tree(AT_FDCWD, options_.mountpoint.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (tree.get() < 0) {
    const int err = errno;
    if (err == EPERM || err == ENOSYS || err == EINVAL) {
      MutexLock l(&mu_);
      state_ = State::kUnavailable;
      unavailable_why_ = err == EPERM ? "cloning the mount needs CAP_SYS_ADMIN" : std::strerror(err);
      Message(Severity::kWarning,
              "writeback push off: {} ({}); data written through the page cache reaches walfs at close, "
              "fsync or the kernel's own write-back (about 30 s), and a killed daemon loses what it had not",
              unavailable_why_, strerrorname_np(err));
      return false;
    }
    MutexLock l(&mu_);
    ++skipped_;  // the mountpoint is gone (unmounted meanwhile)
    return true;
  }
  // Never sync another filesystem: the path may now name the directory
  // under this mount (unmounted) or a mount on top of it.  statx with an
  // empty path reads the device number from the superblock; DONT_SYNC
  // keeps it from asking walfs anything.
  struct statx stx = {};
  const bool ours =
      ::statx(tree.get(), "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) == 0 &&
      fmt::format("{}:{}", stx.stx_dev_major, stx.stx_dev_minor) == options_.device;
  if (!ours) {
    MutexLock l(&mu_);
    ++skipped_;
    return true;
  }
  // syncfs needs a file open for reading (open_tree's is a path): the
  // clone's root.  walfs answers no OPENDIR by default, so this asks
  // nothing.
  Fd root(::openat(tree.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const bool synced = root.get() >= 0 && ::syncfs(root.get()) == 0;
  const int err = errno;
  latency_ns_.Record(MonotonicNanos() - start);
  MutexLock l(&mu_);
  ++pushes_;
  if (!synced) {
    // ENOTCONN / ENODEV: the connection is going away; anything else is
    // worth a line once.
    if (failed_++ == 0 && err != ENOTCONN && err != ENODEV)
      Message(Severity::kWarning, "writeback push: syncfs of {}: {}", options_.mountpoint, std::strerror(err));
  }
  return true;
}

}  // namespace walfs::mount
