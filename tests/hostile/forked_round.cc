#include "tests/hostile/forked_round.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace walfs::hostile {

Fate RunForked(const std::function<void()>& round, const bool* done, double timeout_s, int* signo) {
  *signo = 0;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    round();
    _exit(0);
  }
  if (pid < 0) {
    std::perror("walfs-hostile: fork");
    std::exit(1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Fate::kHung;
    }
    poll(nullptr, 0, 5);
  }
  // The child wrote *done through shared memory before it exited.
  if (WIFSIGNALED(status) || !*const_cast<const volatile bool*>(done) || WEXITSTATUS(status) != 0) {
    *signo = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return Fate::kCrashed;
  }
  return Fate::kFinished;
}

}  // namespace walfs::hostile
