#include "bench/aim/user_process.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "base/clock.h"
#include "bench/aim/tests_cpu.h"
#include "bench/aim/tests_fs.h"

namespace walfs::bench::aim {
namespace {

void Send(int fd, UserMessage m) {
  m.mono_ns = MonotonicNanos();
  // A full pipe blocks until the runner drains it; it always does.
  while (write(fd, &m, sizeof m) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void Fail(const UserSpec& spec, int test, const Status& s) {
  UserMessage m;
  m.type = UserMessage::kFailed;
  m.user = spec.user;
  m.test = test;
  m.err = s.ToErrno();
  const std::string_view msg = s.message();
  std::memcpy(m.text, msg.data(), std::min(msg.size(), sizeof m.text - 1));
  Send(spec.message_fd, m);
  _exit(1);
}

}  // namespace

std::uint64_t UserSeed(std::uint64_t run_seed, int user) {
  // splitmix64 of (seed, user): neighbouring users get unrelated streams.
  std::uint64_t z = run_seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(user + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void RunUserProcess(const UserSpec& spec) {
  // The runner's interrupt handler must not outlive the fork: a ^C kills
  // users outright, and the runner cleans up after them.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);

  const Mix& mix = *spec.mix;
  const std::uint64_t seed = UserSeed(spec.seed, spec.user);
  const std::vector<int> jobs = ShuffledJobs(mix, seed);
  std::vector<FsTestFn> fs(mix.tests.size(), nullptr);
  std::vector<CpuTestFn> cpu(mix.tests.size(), nullptr);
  for (std::size_t i = 0; i < mix.tests.size(); ++i) {
    fs[i] = FindFsTest(mix.tests[i].name);
    cpu[i] = FindCpuTest(mix.tests[i].name);
    if (fs[i] == nullptr && cpu[i] == nullptr)
      Fail(spec, static_cast<int>(i), Status::NotSupported("no such test"));
  }
  std::mt19937 rng(static_cast<std::uint32_t>(seed >> 32));
  TempNamer namer(getpid());
  FsEnv env;
  env.blocks = spec.blocks;
  env.sync_calls = spec.sync_calls;
  env.pid = getpid();
  env.rng = &rng;
  env.namer = &namer;

  UserMessage m;
  m.user = spec.user;
  m.type = UserMessage::kReady;
  Send(spec.message_fd, m);
  char c;
  while (read(spec.start_fd, &c, 1) < 0 && errno == EINTR) {
  }
  close(spec.start_fd);

  // re-aim: each user starts at a random directory and moves to the next
  // one for every filesystem job.
  const int ndirs = spec.workspace->dir_count();
  int dir = static_cast<int>(rng() % static_cast<unsigned>(ndirs));
  m.type = UserMessage::kJobDone;
  for (int test : jobs) {
    Status s;
    if (fs[test] != nullptr) {
      env.dir_fd = spec.workspace->dir_fd(dir);
      env.syncer = &spec.workspace->syncer(dir);
      dir = (dir + 1) % ndirs;
      s = fs[test](env);
    } else {
      s = cpu[test]();
    }
    if (!s.ok()) Fail(spec, test, s);
    m.test = test;
    Send(spec.message_fd, m);
  }
  m.type = UserMessage::kFinished;
  Send(spec.message_fd, m);
  _exit(0);
}

}  // namespace walfs::bench::aim
