#include "base/file_lock.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace walfs {

namespace {

// True while `pid` runs: it exists and is not a zombie (a zombie has closed
// its files already).
bool Alive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');  // comm may hold spaces and parens
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

std::string Comm(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/comm", pid));
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

pid_t FlockHolder(int fd) {
  struct stat st = {};
  if (::fstat(fd, &st) != 0) return -1;
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "1: FLOCK  ADVISORY  WRITE 4242 00:1f:12345 0 EOF"; waiters carry "->".
    std::istringstream f(line);
    std::string id, kind, advisory, mode, dev;
    long pid = 0;
    if (!(f >> id >> kind) || kind != "FLOCK") continue;
    if (!(f >> advisory >> mode >> pid >> dev)) continue;
    unsigned maj = 0, min = 0;
    unsigned long ino = 0;
    if (std::sscanf(dev.c_str(), "%x:%x:%lu", &maj, &min, &ino) != 3) continue;
    if (maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino)
      return static_cast<pid_t>(pid);
  }
  return -1;
}

Status LockImage(int fd, const std::string& path, const LockWait& wait) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  bool told = false;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return Status::FromErrno(errno, fmt::format("flock {}", path));
    const pid_t holder = FlockHolder(fd);
    const bool alive = holder > 0 && (holder == ::getpid() || Alive(holder));
    const bool closing = alive && holder != ::getpid() && Comm(holder) == kClosingComm;
    const auto waited = Clock::now() - start;
    if (alive && !closing && (holder == ::getpid() || waited >= std::chrono::milliseconds(wait.live_holder_ms))) {
      return Status::FromErrno(
          EBUSY, fmt::format("{} is in use by pid {} ({}), which holds its lock: is it mounted? "
                             "Unmount it first",
                             path, holder, Comm(holder)));
    }
    const int limit_ms = closing ? wait.closing_holder_ms : alive ? wait.live_holder_ms : wait.dead_holder_ms;
    if (Clock::now() >= start + std::chrono::milliseconds(limit_ms)) {
      if (closing) {
        return Status::FromErrno(
            EBUSY, fmt::format("{} is still held by pid {}, the walfs daemon of a mount that is gone, "
                               "after {} s: it is still writing its changes back; wait for it to exit "
                               "(killing it is safe: the next mount replays its log)",
                               path, holder, limit_ms / 1000));
      }
      return Status::FromErrno(
          EBUSY, fmt::format("{} is still locked {} ms after its holder{} exited", path, limit_ms,
                             holder > 0 ? fmt::format(" (pid {})", holder) : ""));
    }
    if (closing && !told && wait.notices != nullptr) {
      fmt::print(wait.notices,
                 "{}: waiting for pid {}, the walfs daemon of a mount that is gone, to finish writing "
                 "its changes back (up to {} s)\n",
                 path, holder, limit_ms / 1000);
      std::fflush(wait.notices);
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void MarkImageClosing() { (void)::prctl(PR_SET_NAME, kClosingComm, 0, 0, 0); }

}  // namespace walfs
