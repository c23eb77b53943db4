// Spec of the deferred waker's end: the process's tracer is never
// destroyed, but its waker thread is joined when the process exits.  It
// runs in a fresh process of this binary (fork, exec of /proc/self/exe
// with only this spec): what it checks happens during exit(), and it must
// start the waker itself, whatever earlier specs of the process did (a
// ctest entry may run a shard of the binary's specs in one process).
#include <dirent.h>
#include <fcntl.h>
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

// Set in the fresh process that runs the check.
constexpr char kChildEnv[] = "WALFS_WAKER_EXIT_CHILD";

TEST(TracerWaker, IsJoinedWhenTheProcessExits) {
  if (std::getenv(kChildEnv) != nullptr) {
    if (WakerThreads() != 0) _exit(93);  // not a fresh process after all
    std::atexit(ExitWithWakerCount);
    StartWaker();
    if (WakerThreads() != 1) _exit(92);  // the check below would prove nothing
    std::exit(0);
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A forked child inherits the started-once flag but not the thread:
    // exec a new image.  Without the shard variables, or gtest would run
    // the one spec only in shard 0.
    setenv(kChildEnv, "1", 1);
    unsetenv("GTEST_TOTAL_SHARDS");
    unsetenv("GTEST_SHARD_INDEX");
    unsetenv("GTEST_SHARD_STATUS_FILE");
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);  // gtest's report of the child
    execl("/proc/self/exe", "/proc/self/exe", "--gtest_filter=TracerWaker.IsJoinedWhenTheProcessExits",
          static_cast<char*>(nullptr));
    _exit(94);
  }
  const int status = WaitStatus(pid, 30);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "waker threads left at exit (9x: the child's own check failed; 94: exec)";
}

}  // namespace
}  // namespace walfs::tracing
