#include "base/file_lock.h"

#include <signal.h>
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

Status LockImage(int fd, const std::string& path) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kDeadHolderWaitMs);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return Status::FromErrno(errno, fmt::format("flock {}", path));
    const pid_t holder = FlockHolder(fd);
    if (holder > 0 && (holder == ::getpid() || Alive(holder))) {
      return Status::FromErrno(
          EBUSY, fmt::format("{} is in use by pid {} ({}), which holds its lock: is it mounted? "
                             "Unmount it first",
                             path, holder, Comm(holder)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::FromErrno(
          EBUSY, fmt::format("{} is still locked {} ms after its holder{} exited", path,
                             kDeadHolderWaitMs, holder > 0 ? fmt::format(" (pid {})", holder) : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace walfs
