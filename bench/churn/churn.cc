#include "bench/churn/churn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/histogram.h"

namespace walfs::bench::churn {
namespace {

constexpr char kTmpName[] = "tmp";
constexpr char kFinalName[] = "file";
// A byte on the start pipe tells a process not to run (the parent could not
// start all of them); end of file tells it to start.
constexpr char kAbort = 'x';

// One process's results, in memory shared with the parent.  The process
// writes them, exits, and the parent reads them after waitpid(), which orders
// the two.  The histogram's counters are lock-free atomics, valid across
// processes.
struct Slot {
  std::uint64_t cycles = 0;
  std::int64_t nanos = 0;  // from the start to the end of its last cycle
  int err = 0;             // errno of the step that failed; 0: none
  Step step = Step::kCreate;
  bool failed = false;
  Histogram latency_us;
};

// The slots, mapped shared before the fork and unmapped by the parent.
class SharedSlots {
 public:
  explicit SharedSlots(int n) : n_(n) {
    const std::size_t bytes = sizeof(Slot) * static_cast<std::size_t>(n);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      err_ = errno;
      return;
    }
    slots_ = static_cast<Slot*>(p);
    for (int i = 0; i < n; ++i) new (&slots_[i]) Slot();
  }
  ~SharedSlots() {
    if (slots_ == nullptr) return;
    for (int i = 0; i < n_; ++i) slots_[i].~Slot();
    munmap(slots_, sizeof(Slot) * static_cast<std::size_t>(n_));
  }
  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;

  int err() const { return err_; }
  Slot& operator[](int i) { return slots_[i]; }

 private:
  int n_;
  int err_ = 0;
  Slot* slots_ = nullptr;
};

// The run's directory under Config::dir, removed with everything in it when
// the level ends (a failed cycle leaves its files behind).
class Workspace {
 public:
  explicit Workspace(std::filesystem::path path) : path_(std::move(path)) {}
  ~Workspace() {
    if (!made_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec) std::fprintf(stderr, "walfs-churn: cannot remove %s: %s\n", path_.c_str(), ec.message().c_str());
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  Status Make(int processes) {
    if (mkdir(path_.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + path_.string());
    made_ = true;
    for (int i = 0; i < processes; ++i) {
      const std::filesystem::path d = ProcessDir(i);
      if (mkdir(d.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + d.string());
    }
    return Status::Ok();
  }
  std::filesystem::path ProcessDir(int i) const { return path_ / fmt::format("p{}", i); }

 private:
  std::filesystem::path path_;
  bool made_ = false;
};

[[noreturn]] void Fail(Slot* slot, Step step, int err, int fd) {
  slot->failed = true;
  slot->step = step;
  slot->err = err;
  if (fd >= 0) close(fd);
  _exit(1);
}

// One forked process: waits for the start, then cycles until the time is up.
// It ends with _exit(): nothing of the parent's (stdio buffers, atexit
// handlers) runs twice.
[[noreturn]] void RunProcess(const Config& c, const std::filesystem::path& dir, int start_fd, Slot* slot) {
  signal(SIGINT, SIG_DFL);  // the parent's handler; here ^C just ends the process
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) Fail(slot, Step::kCreate, errno, -1);
  const std::string data(c.write_bytes, 'c');
  char go = 0;
  ssize_t r;
  while ((r = read(start_fd, &go, 1)) < 0 && errno == EINTR) {
  }
  if (r != 0) _exit(0);  // aborted before the start
  close(start_fd);

  const std::int64_t start = MonotonicNanos();
  const auto deadline = start + static_cast<std::int64_t>(c.seconds * 1e9);
  std::int64_t now = start;
  std::uint64_t cycles = 0;
  while (cycles == 0 || now < deadline) {
    const std::int64_t t0 = now;
    const int fd = openat(dfd, kTmpName, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) Fail(slot, Step::kCreate, errno, -1);
    for (std::size_t done = 0; done < data.size();) {
      const ssize_t w = write(fd, data.data() + done, data.size() - done);
      if (w < 0 && errno == EINTR) continue;
      // A write that accepts nothing without an errno would loop forever.
      if (w <= 0) Fail(slot, Step::kWrite, w < 0 ? errno : EIO, fd);
      done += static_cast<std::size_t>(w);
    }
    if (fsync(fd) != 0) Fail(slot, Step::kFsync, errno, fd);
    if (close(fd) != 0) Fail(slot, Step::kClose, errno, -1);
    if (renameat(dfd, kTmpName, dfd, kFinalName) != 0) Fail(slot, Step::kRename, errno, -1);
    if (unlinkat(dfd, kFinalName, 0) != 0) Fail(slot, Step::kUnlink, errno, -1);
    now = MonotonicNanos();
    slot->latency_us.Record((now - t0) / 1000);
    ++cycles;
    slot->cycles = cycles;
    slot->nanos = now - start;
  }
  _exit(0);
}

Status CheckConfig(const Config& c) {
  if (c.processes < 1 || c.processes > kMaxProcesses)
    return Status::InvalidArgument(fmt::format("processes must be 1 to {}, not {}", kMaxProcesses, c.processes));
  if (!(c.seconds > 0) || !std::isfinite(c.seconds))
    return Status::InvalidArgument(fmt::format("seconds must be above 0, not {}", c.seconds));
  if (c.write_bytes > kMaxWriteBytes)
    return Status::InvalidArgument(fmt::format("the write must be at most 64 MiB, not {} bytes", c.write_bytes));
  return Status::Ok();
}

// waitpid() until `pid` is reaped; its wait status.
int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    WALFS_CHECK(errno == EINTR);  // ECHILD would mean someone else reaped our child
  }
  return status;
}

}  // namespace

std::string_view StepName(Step s) {
  switch (s) {
    case Step::kCreate: return "create";
    case Step::kWrite: return "write";
    case Step::kFsync: return "fsync";
    case Step::kClose: return "close";
    case Step::kRename: return "rename";
    case Step::kUnlink: return "unlink";
  }
  return "?";
}

Result<LevelResult> RunLevel(const Config& c) {
  WALFS_RETURN_IF_ERROR(CheckConfig(c));
  Workspace ws(c.dir / fmt::format("walfs-churn.{}", getpid()));
  WALFS_RETURN_IF_ERROR(ws.Make(c.processes));
  SharedSlots slots(c.processes);
  if (slots.err() != 0) return Status::FromErrno(slots.err(), "mmap of the processes' results");
  int start[2];
  if (pipe2(start, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");

  std::vector<pid_t> pids;
  std::fflush(nullptr);  // unflushed stdio buffers would be copied into every child
  for (int i = 0; i < c.processes; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(start[1]);
      RunProcess(c, ws.ProcessDir(i), start[0], &slots[i]);
    }
    if (pid < 0) {
      const int err = errno;
      // Every started process reads one byte and leaves without running.
      const std::string abort(pids.size(), kAbort);
      if (!abort.empty() && write(start[1], abort.data(), abort.size()) < 0) {
        for (const pid_t p : pids) kill(p, SIGKILL);
      }
      close(start[0]);
      close(start[1]);
      for (const pid_t p : pids) Reap(p);
      return Status::FromErrno(err, fmt::format("fork of process {} of {}", i + 1, c.processes));
    }
    pids.push_back(pid);
  }
  close(start[0]);
  close(start[1]);  // end of file: every process starts

  std::vector<int> statuses;
  for (const pid_t p : pids) statuses.push_back(Reap(p));

  LevelResult res;
  res.processes = c.processes;
  Histogram all;
  Status first_failure;
  for (int i = 0; i < c.processes; ++i) {
    Slot& s = slots[i];
    const std::string who = fmt::format("process {} of {}", i + 1, c.processes);
    if (s.failed && first_failure.ok()) {
      first_failure = Status::FromErrno(
          s.err, fmt::format("{}, cycle {}: {} in {}", who, s.cycles + 1, StepName(s.step), ws.ProcessDir(i).string()));
    } else if (!s.failed && first_failure.ok() && WIFSIGNALED(statuses[i])) {
      first_failure = Status::FromErrno(EINTR, fmt::format("{} was killed by signal {} ({})", who,
                                                           WTERMSIG(statuses[i]), strsignal(WTERMSIG(statuses[i]))));
    } else if (!s.failed && first_failure.ok() && (!WIFEXITED(statuses[i]) || WEXITSTATUS(statuses[i]) != 0)) {
      first_failure = Status::Internal(fmt::format("{} ended with wait status {:#x}", who, statuses[i]));
    }
    res.cycles += s.cycles;
    if (s.nanos > 0) res.cycles_per_s += static_cast<double>(s.cycles) / (static_cast<double>(s.nanos) / 1e9);
    res.seconds = std::max(res.seconds, static_cast<double>(s.nanos) / 1e9);
    all.Merge(s.latency_us);
  }
  if (!first_failure.ok()) return first_failure;
  res.p50_us = all.Percentile(0.5);
  res.p99_us = all.Percentile(0.99);
  res.max_us = all.Max();
  return res;
}

}  // namespace walfs::bench::churn
