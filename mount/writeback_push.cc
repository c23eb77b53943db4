#include "mount/writeback_push.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/messages.h"

namespace walfs::mount {

namespace {

// futex(2) on a word of a MAP_SHARED page: not FUTEX_PRIVATE_FLAG, since
// daemon and helper are two processes.
void SharedFutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::int64_t timeout_ns) {
  timespec ts = {.tv_sec = timeout_ns / 1'000'000'000, .tv_nsec = timeout_ns % 1'000'000'000};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void SharedFutexWake(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The detached clone of the mount on `mountpoint`, if it is the filesystem
// `major:minor`: a descriptor (O_PATH), -1 with errno otherwise (ENXIO: the
// path names another filesystem now).  Asks walfs nothing: the path walk
// ends at the mount's root, which is never revalidated, and statx with
// AT_STATX_DONT_SYNC reads the device number from the superblock.
int CloneOf(const char* mountpoint, unsigned major, unsigned minor) {
  const int tree = static_cast<int>(::open_tree(AT_FDCWD, mountpoint, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (tree < 0) return -1;
  struct statx stx = {};
  if (::statx(tree, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) != 0 || stx.stx_dev_major != major ||
      stx.stx_dev_minor != minor) {
    ::close(tree);
    errno = ENXIO;
    return -1;
  }
  return tree;
}

// The file with FUSE node id `nodeid`, opened read-only by handle through
// `root` (the root of the mount's clone, open for reading): FUSE encodes a
// handle as the node id's two halves and the generation (0: walfs gives
// none), type FILEID_INO64_GEN, and finds the inode in the kernel's cache
// (it is open) without a LOOKUP.  The open is an OPEN request; -1 with
// errno if it fails (ESTALE: not in the cache yet, a CREATE's reply still
// on its way).
int OpenByNodeId(int root, std::uint64_t nodeid) {
  constexpr int kFileIdIno64Gen = 0x81;
  const std::uint32_t words[3] = {static_cast<std::uint32_t>(nodeid >> 32), static_cast<std::uint32_t>(nodeid), 0};
  alignas(file_handle) unsigned char buf[sizeof(file_handle) + sizeof words];
  auto* h = reinterpret_cast<file_handle*>(buf);
  h->handle_bytes = sizeof words;
  h->handle_type = kFileIdIno64Gen;
  std::memcpy(buf + sizeof(file_handle), words, sizeof words);
  return ::open_by_handle_at(root, h, O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

}  // namespace

WritebackPush::WritebackPush(Options options) : options_(std::move(options)) {
  void* page = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  // Without the page there is no push and nothing to report: state() says off.
  if (page != MAP_FAILED) shared_ = new (page) Shared();
}

WritebackPush::~WritebackPush() {
  RequestStop();
  Join();
  if (shared_ != nullptr) {
    shared_->~Shared();
    ::munmap(shared_, sizeof(Shared));
  }
}

void WritebackPush::Start() {
  if (options_.interval_ms <= 0 || shared_ == nullptr || helper_ >= 0) return;
  unsigned major = 0, minor = 0;
  if (std::sscanf(options_.device.c_str(), "%u:%u", &major, &minor) != 2) {
    shared_->state.store(static_cast<std::uint32_t>(State::kUnavailable));
    Message(Severity::kWarning, "writeback push off: this mount's device number '{}' is unreadable", options_.device);
    return;
  }
  const int tree = CloneOf(options_.mountpoint.c_str(), major, minor);
  if (tree < 0) {
    const int err = errno;
    shared_->state.store(static_cast<std::uint32_t>(State::kUnavailable));
    Message(Severity::kWarning,
            "writeback push off: cannot clone the mount on {} ({}{}); data written through the page cache "
            "reaches walfs at close, fsync or the kernel's own write-back (about 30 s), and a killed daemon "
            "loses what it had not",
            options_.mountpoint, strerrorname_np(err), err == EPERM ? ": it needs CAP_SYS_ADMIN" : "");
    return;
  }
  ::close(tree);
  shared_->state.store(static_cast<std::uint32_t>(State::kOn));
  const pid_t parent = ::getpid();
  const std::int64_t interval_ns = std::int64_t{options_.interval_ms} * 1'000'000;
  const pid_t pid = ::fork();
  if (pid == 0) HelperMain(shared_, options_.mountpoint.c_str(), major, minor, interval_ns, parent);
  if (pid < 0) {
    const int err = errno;
    shared_->state.store(static_cast<std::uint32_t>(State::kUnavailable));
    Message(Severity::kWarning, "writeback push off: fork: {}", std::strerror(err));
    return;
  }
  helper_ = pid;
}

void WritebackPush::HelperMain(Shared* shared, const char* mountpoint, unsigned dev_major, unsigned dev_minor,
                               std::int64_t interval_ns, pid_t parent) {
  // Nothing of the daemon's: above all not /dev/fuse, whose last close is
  // what aborts the connection when the daemon dies.
  ::close_range(0, ~0U, 0);
  ::prctl(PR_SET_NAME, "walfs-wbpush");
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the daemon died before the line above
  // The daemon's handlers (libfuse's SIGINT/SIGTERM/SIGHUP) would set
  // flags in this copy of it: the defaults end the helper instead.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  // The files the helper holds open, by slot (the node id each holds), and
  // what each slot held at the last push (node id and open count).
  std::uint64_t held[kFileSlots] = {};
  Seen seen[kFileSlots] = {};
  int fds[kFileSlots];
  for (int& fd : fds) fd = -1;
  for (;;) {
    const std::int64_t until = MonotonicNanos() + interval_ns;
    for (std::int64_t now = MonotonicNanos(); now < until && shared->stop.load() == 0; now = MonotonicNanos())
      SharedFutexWait(&shared->stop, 0, until - now);
    if (shared->stop.load() != 0) ::_exit(0);
    if (shared->wanted.load(std::memory_order_acquire) == 0) {
      // Nothing is written through the cache: let go of every file (each
      // close writes the file back, then sends a RELEASE), so that none
      // outlives its writers.
      for (int i = 0; i < kFileSlots; ++i) {
        if (fds[i] >= 0) ::close(fds[i]);
        fds[i] = -1;
        held[i] = 0;
        seen[i] = Seen{};
      }
      continue;
    }
    const std::int64_t start = MonotonicNanos();
    const int tree = CloneOf(mountpoint, dev_major, dev_minor);
    if (tree < 0) {
      shared->skipped.fetch_add(1);  // unmounted, or covered by another mount
      continue;
    }
    const bool ok = PushOnce(shared, tree, held, seen, fds);
    ::close(tree);  // the superblock may end here, if the mount was unmounted meanwhile
    shared->latency_ns.Record(MonotonicNanos() - start);
    shared->pushes.fetch_add(1);
    if (!ok) shared->failed.fetch_add(1);
  }
}

bool WritebackPush::PushOnce(Shared* shared, int tree, std::uint64_t* held, Seen* seen, int* fds) {
  // The clone's root, open for reading: what open_by_handle_at takes as
  // the mount (not an O_PATH descriptor) and syncfs needs.  walfs refuses
  // OPENDIR once (skip_opendir) and the kernel stops asking, so this costs
  // no request.
  const int root = ::openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return false;
  bool ok = true;
  bool need_syncfs = shared->untracked.load(std::memory_order_acquire) > 0;
  // Each push starts one slot further on: a file whose write-back is slow
  // (a big buffered writer's) delays a different file each time.
  const int first = static_cast<int>(shared->pushes.load() % kFileSlots);
  for (int n = 0; n < kFileSlots; ++n) {
    const int i = (first + n) % kFileSlots;
    // The count before the id: a slot given to a file between the two loads
    // reads as new (one push's wait), never as the file seen before.
    const std::uint32_t opens = shared->file_opens[i].load(std::memory_order_acquire);
    const std::uint64_t id = shared->files[i].load(std::memory_order_acquire);
    const bool new_here = id != seen[i].id || opens != seen[i].opens;
    seen[i] = Seen{id, opens};
    if (id != held[i]) {
      if (fds[i] >= 0) ::close(fds[i]);  // its writers are gone (or the slot holds another file now)
      fds[i] = -1;
      held[i] = 0;
      // A file first seen now waits for the next push: one open for less
      // than an interval is written back by its own close (the kernel's
      // flush at close writes its pages and waits), and opening it here
      // would only add an OPEN and a RELEASE -- whose flush marks the
      // file's cached block count stale, so the owner's next stat(2) asks
      // walfs again (RequestDiet.AttributesStayCachedPastASecond, CI).
      if (id != 0 && !new_here) {
        fds[i] = OpenByNodeId(root, id);
        // Gone already (ESTALE), or refused: syncfs covers it this time,
        // and the next push tries again.
        if (fds[i] >= 0)
          held[i] = id;
        else
          need_syncfs = true;
      }
    }
    if (fds[i] < 0) continue;
    // Starts write-back of every dirty page of the file, in this task, and
    // waits only for page locks: the WRITEs are walfs's to answer.
    if (::sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE) != 0) {
      ok = false;
      need_syncfs = true;
    }
    shared->file_pushes.fetch_add(1);
  }
  bool synced = true;
  if (need_syncfs) {
    synced = ::syncfs(root) == 0;
    shared->syncfs_pushes.fetch_add(1);
  }
  ::close(root);
  return ok && synced;
}

void WritebackPush::SetWanted(bool wanted) {
  if (shared_ != nullptr) shared_->wanted.store(wanted ? 1 : 0, std::memory_order_release);
}

void WritebackPush::FileOpened(std::uint64_t nodeid) {
  if (shared_ == nullptr) return;
  for (auto& slot : shared_->files) {
    if (slot.load(std::memory_order_relaxed) == 0) {
      shared_->file_opens[&slot - shared_->files].fetch_add(1, std::memory_order_release);
      slot.store(nodeid, std::memory_order_release);
      return;
    }
  }
  shared_->untracked.fetch_add(1, std::memory_order_release);
}

void WritebackPush::FileReleased(std::uint64_t nodeid) {
  if (shared_ == nullptr) return;
  for (auto& slot : shared_->files) {
    if (slot.load(std::memory_order_relaxed) == nodeid) {
      slot.store(0, std::memory_order_release);
      return;
    }
  }
  shared_->untracked.fetch_sub(1, std::memory_order_release);
}

void WritebackPush::RequestStop() {
  if (shared_ == nullptr) return;
  shared_->stop.store(1);
  SharedFutexWake(&shared_->stop);
  std::uint32_t on = static_cast<std::uint32_t>(State::kOn);
  shared_->state.compare_exchange_strong(on, static_cast<std::uint32_t>(State::kStopped));
}

void WritebackPush::Join() {
  if (helper_ < 0) return;
  int status = 0;
  while (::waitpid(helper_, &status, 0) < 0 && errno == EINTR) {
  }
  helper_ = -1;
}

WritebackPush::State WritebackPush::state() const {
  return shared_ == nullptr ? State::kOff : static_cast<State>(shared_->state.load());
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
  if (shared_ == nullptr) return fmt::format("writeback_push off\nwriteback_push_ms {}\n", options_.interval_ms);
  const Shared& s = *shared_;
  return fmt::format(
      "writeback_push {}\nwriteback_push_ms {}\nwriteback_pushes {}\nwriteback_push_files {}\n"
      "writeback_push_syncfs {}\nwriteback_push_skipped {}\n"
      "writeback_push_failed {}\nwriteback_push_p50_us {}\nwriteback_push_p99_us {}\nwriteback_push_max_us {}\n",
      StateName(state()), options_.interval_ms, s.pushes.load(), s.file_pushes.load(), s.syncfs_pushes.load(),
      s.skipped.load(), s.failed.load(),
      s.latency_ns.Percentile(0.5) / 1000, s.latency_ns.Percentile(0.99) / 1000, s.latency_ns.Max() / 1000);
}

}  // namespace walfs::mount
