// Spec of the deferred waker's end: the process's tracer is never
// destroyed, but its waker thread is joined when the process exits.  It
// runs in a child process: what it checks happens during exit().
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tracing/tracer.h"

namespace walfs::tracing {
namespace {

// How many of this process's threads are named "walfs-twake" (the waker).
int WakerThreads() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "walfs-twake") ++n;
  }
  closedir(dir);
  return n;
}

void StartWaker() {
  TracerOptions o = Tracer::Get().options();
  o.wakeup = WakeupMode::kDeferred;
  if (!Tracer::Get().SetOptions(o).ok()) _exit(90);
}

// Waits up to `seconds` for `pid` and returns its wait status, or -1 (and
// kills it) when it has not exited by then (a hang in the exit hook).
int WaitStatus(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

// Runs after the tracer's exit hook (exit handlers run last registered
// first): exits with the number of waker threads still there once the
// kernel has had a second to remove a joined one.
void ExitWithWakerCount() {
  int n = WakerThreads();
  for (int i = 0; i < 200 && n > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = WakerThreads();
  }
  _exit(n < 0 ? 91 : n);
}

TEST(TracerWaker, IsJoinedWhenTheProcessExits) {
  // A child inherits the started-once flag but not the thread.
  if (WakerThreads() != 0)
    GTEST_SKIP() << "an earlier test in this process started the waker: run this spec on its own, as ctest does";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atexit(ExitWithWakerCount);
    StartWaker();
    if (WakerThreads() != 1) _exit(92);  // the check below would prove nothing
    std::exit(0);
  }
  const int status = WaitStatus(pid, 30);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "waker threads left at exit (9x: the child's own check failed)";
}

}  // namespace
}  // namespace walfs::tracing
