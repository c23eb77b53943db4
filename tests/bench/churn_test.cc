// walfs-churn's loop (bench/churn/churn.h): processes cycle and leave nothing
// behind; a bad config, an unusable directory and a failing step each say
// what went wrong.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "aim_test_dir.h"
#include "bench/churn/churn.h"

namespace walfs::bench::churn {
namespace {

using aim::ListTree;
using aim::TempDir;

TEST(Churn, ProcessesCycleTogetherAndLeaveNothingBehind) {
  TempDir d;
  Result<LevelResult> r = RunLevel({.dir = d.path(), .processes = 3, .seconds = 0.2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->processes, 3);
  EXPECT_GE(r->cycles, 3u) << "every process runs at least one cycle";
  EXPECT_GT(r->cycles_per_s, 0);
  EXPECT_GE(r->seconds, 0.2);
  EXPECT_LE(r->p50_us, r->p99_us);
  EXPECT_LE(r->p99_us, r->max_us);
  EXPECT_TRUE(ListTree(d.path()).empty());
}

TEST(Churn, AnEmptyWriteStillCreatesFsyncsRenamesAndRemoves) {
  TempDir d;
  Result<LevelResult> r = RunLevel({.dir = d.path(), .processes = 1, .seconds = 0.05, .write_bytes = 0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(r->cycles, 1u);
  EXPECT_TRUE(ListTree(d.path()).empty());
}

TEST(Churn, ABadConfigIsRefusedBeforeAnythingIsMade) {
  TempDir d;
  for (const Config& c : {Config{.dir = d.path(), .processes = 0}, Config{.dir = d.path(), .processes = 257},
                          Config{.dir = d.path(), .seconds = 0}, Config{.dir = d.path(), .seconds = -1},
                          Config{.dir = d.path(), .write_bytes = kMaxWriteBytes + 1}}) {
    Result<LevelResult> r = RunLevel(c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  }
  EXPECT_TRUE(ListTree(d.path()).empty());
}

TEST(Churn, AMissingDirectoryIsNamedWithItsErrno) {
  TempDir d;
  const std::string missing = d.path() + "/no/such/dir";
  Result<LevelResult> r = RunLevel({.dir = missing, .processes = 2, .seconds = 0.05});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToErrno(), ENOENT) << r.status().ToString();
  EXPECT_NE(r.status().message().find(missing), std::string::npos) << r.status().message();
}

// RLIMIT_FSIZE below the write, with SIGXFSZ ignored (both inherited by the
// forked processes), makes the write step fail with EFBIG.
TEST(Churn, AFailingStepNamesItsProcessStepAndErrnoAndTheWorkspaceIsRemoved) {
  TempDir d;
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const rlimit small{.rlim_cur = 1024, .rlim_max = old.rlim_max};
  struct sigaction ignore {}, was {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &was), 0);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Result<LevelResult> r = RunLevel({.dir = d.path(), .processes = 2, .seconds = 0.05, .write_bytes = 4096});
  setrlimit(RLIMIT_FSIZE, &old);
  sigaction(SIGXFSZ, &was, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToErrno(), EFBIG) << r.status().ToString();
  EXPECT_NE(r.status().message().find("of 2, cycle 1: write in "), std::string::npos) << r.status().message();
  EXPECT_TRUE(ListTree(d.path()).empty());
}

TEST(Churn, EveryStepHasAName) {
  for (Step s : {Step::kCreate, Step::kWrite, Step::kFsync, Step::kClose, Step::kRename, Step::kUnlink})
    EXPECT_NE(StepName(s), "?");
}

}  // namespace
}  // namespace walfs::bench::churn
