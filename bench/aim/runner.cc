#include "bench/aim/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "base/clock.h"
#include "bench/aim/fd.h"
#include "bench/aim/user_process.h"

namespace walfs::bench::aim {
namespace {

volatile sig_atomic_t interrupted = 0;

void OnInterrupt(int) { interrupted = 1; }

constexpr int kPollMs = 50;
constexpr std::int64_t kProgressNs = 250'000'000;

struct Child {
  pid_t pid = -1;
  bool reaped = false;
  bool reported = false;  // sent kFinished or kFailed
  int status = 0;
  std::int64_t end_ns = 0;
};

double Seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }
double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

// The parent's side of one level: children, their messages and their reaping.
class Level {
 public:
  Level(const RunConfig& c, LevelResult* res) : c_(c), res_(res) {}

  void Add(pid_t pid) { children_.push_back(Child{.pid = pid}); }
  int live() const { return live_; }
  void set_live(int n) { live_ = n; }

  // Reads what the pipe holds; false at EOF (every child has exited).
  bool Drain(int fd) {
    char buf[64 * sizeof(UserMessage)];
    for (;;) {
      const ssize_t r = read(fd, buf, sizeof buf);
      if (r < 0) return errno == EAGAIN || errno == EINTR;
      if (r == 0) return false;
      pending_.append(buf, static_cast<std::size_t>(r));
      while (pending_.size() >= sizeof(UserMessage)) {
        UserMessage m;
        std::memcpy(&m, pending_.data(), sizeof m);
        pending_.erase(0, sizeof m);
        Handle(m);
      }
    }
  }

  // Reaps without blocking whatever has exited.
  void ReapExited() {
    for (Child& ch : children_)
      if (!ch.reaped) Reap(ch, WNOHANG);
  }

  void KillAll(int sig) {
    for (const Child& ch : children_)
      if (!ch.reaped) kill(ch.pid, sig);
  }

  void ReapAllBlocking() {
    for (Child& ch : children_)
      if (!ch.reaped) Reap(ch, 0);
  }

  int ready = 0;
  std::int64_t jobs_done = 0;
  std::int64_t start_ns = 0;
  std::int64_t last_reap_ns = 0;

  // After every child is reaped: elapsed times, and a failure for every
  // child that exited badly without saying why.
  void Finish() {
    for (std::size_t u = 0; u < children_.size(); ++u) {
      const Child& ch = children_[u];
      res_->elapsed_s.push_back(Seconds(ch.end_ns - start_ns));
      if (ch.reported || (WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0)) continue;
      UserFailure f;
      f.user = static_cast<int>(u);
      if (WIFSIGNALED(ch.status)) {
        f.message = fmt::format("killed by signal {} ({})", WTERMSIG(ch.status),
                                strsignal(WTERMSIG(ch.status)));
      } else {
        f.message = fmt::format("exited with status {}", WEXITSTATUS(ch.status));
      }
      res_->failures.push_back(std::move(f));
    }
  }

 private:
  void Handle(const UserMessage& m) {
    if (m.user < 0 || static_cast<std::size_t>(m.user) >= children_.size()) return;
    Child& ch = children_[static_cast<std::size_t>(m.user)];
    switch (m.type) {
      case UserMessage::kReady:
        ++ready;
        break;
      case UserMessage::kJobDone:
        ++jobs_done;
        break;
      case UserMessage::kFailed: {
        UserFailure f;
        f.user = m.user;
        if (m.test >= 0 && static_cast<std::size_t>(m.test) < c_.mix.tests.size())
          f.test = std::string(c_.mix.tests[static_cast<std::size_t>(m.test)].name);
        f.err = m.err;
        f.message.assign(m.text, strnlen(m.text, sizeof m.text));
        res_->failures.push_back(std::move(f));
      }
        [[fallthrough]];
      case UserMessage::kFinished:
        ch.reported = true;
        // The child's last act before _exit(): reap it now, so that the real
        // time ends when the last child does, not at the next poll.
        Reap(ch, 0);
        ch.end_ns = m.mono_ns;
        break;
      default:
        break;
    }
  }

  void Reap(Child& ch, int flags) {
    if (ch.reaped) return;
    rusage ru = {};
    pid_t r;
    do {
      r = wait4(ch.pid, &ch.status, flags, &ru);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return;  // WNOHANG, still running
    ch.reaped = true;
    --live_;
    last_reap_ns = MonotonicNanos();
    if (ch.end_ns == 0) ch.end_ns = last_reap_ns;
    if (r > 0) {
      res_->user_s += Seconds(ru.ru_utime);
      res_->sys_s += Seconds(ru.ru_stime);
    }
  }

  const RunConfig& c_;
  LevelResult* res_;
  std::vector<Child> children_;
  std::string pending_;
  int live_ = 0;
};

}  // namespace

void InstallInterruptHandler() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() { return interrupted != 0; }

std::int64_t BlocksPerFile(const RunConfig& c, int users) {
  return c.filesize_kib + (users > 0 ? c.poolsize_kib / users : 0);
}

Result<LevelResult> RunLevel(const RunConfig& c, Workspace& ws, int users, const ProgressFn& progress) {
  WALFS_CHECK(users >= 1);
  LevelResult res;
  res.users = users;
  res.jobs_per_user = c.mix.jobs_per_user;
  res.blocks = BlocksPerFile(c, users);
  WALFS_RETURN_IF_ERROR(ws.PrepareLevel(res.blocks));

  int msg[2], start[2];
  if (pipe2(msg, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  Fd msg_r(msg[0]), msg_w(msg[1]);
  if (pipe2(start, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  Fd start_r(start[0]), start_w(start[1]);

  Level level(c, &res);
  std::fflush(nullptr);  // unflushed stdio buffers would be copied into every child
  for (int u = 0; u < users; ++u) {
    const pid_t pid = fork();
    if (pid < 0) {
      const int err = errno;
      level.set_live(u);
      level.KillAll(SIGKILL);
      level.ReapAllBlocking();
      return Status::FromErrno(err, fmt::format("fork of user {} of {}", u + 1, users));
    }
    if (pid == 0) {
      // The child keeps only its write end of the messages and its read end
      // of the start pipe, or the start pipe would never reach EOF.
      close(msg[0]);
      close(start[1]);
      UserSpec spec;
      spec.mix = &c.mix;
      spec.workspace = &ws;
      spec.user = u;
      spec.seed = c.seed;
      spec.blocks = res.blocks;
      spec.sync_calls = c.sync_calls;
      spec.message_fd = msg[1];
      spec.start_fd = start[0];
      RunUserProcess(spec);
    }
    level.Add(pid);
  }
  level.set_live(users);
  msg_w.Reset();
  start_r.Reset();
  if (fcntl(msg_r.get(), F_SETFL, O_NONBLOCK) != 0) return Status::FromErrno(errno, "fcntl");

  bool open = true, killed = false;
  std::int64_t last_progress = MonotonicNanos();
  auto report = [&](std::int64_t now) {
    if (!progress || now - last_progress < kProgressNs) return;
    last_progress = now;
    progress(Progress{users, level.jobs_done, std::int64_t{users} * c.mix.jobs_per_user, level.live(),
                      level.start_ns ? Seconds(now - level.start_ns) : 0.0});
  };
  while (level.live() > 0 || open) {
    if (Interrupted() && !killed) {
      level.KillAll(SIGKILL);
      killed = true;
    }
    if (open) {
      pollfd p = {msg_r.get(), POLLIN, 0};
      if (poll(&p, 1, kPollMs) > 0) open = level.Drain(msg_r.get());
    } else {
      // Every write end is closed; the rest are exiting.
      level.ReapAllBlocking();
    }
    level.ReapExited();
    // Start once every user still alive is ready (one that died before it
    // got there is reported by Finish()).
    if (start_w.ok() && level.ready >= level.live()) {
      level.start_ns = MonotonicNanos();
      start_w.Reset();  // EOF for every child at once
    }
    report(MonotonicNanos());
  }
  if (killed) return Status::FromErrno(EINTR, "interrupted");
  if (level.start_ns == 0) level.start_ns = level.last_reap_ns;
  res.real_s = Seconds(level.last_reap_ns - level.start_ns);
  level.Finish();
  return res;
}

}  // namespace walfs::bench::aim
