// A small multi-user run end to end, an unusable directory, and a user that
// fails.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "aim_test_dir.h"
#include "bench/aim/runner.h"
#include "bench/aim/workspace.h"

namespace walfs::bench::aim {
namespace {

RunConfig SmallConfig(std::vector<WorkfileLine> tests) {
  RunConfig c;
  c.mix = BuildMix(std::move(tests), 11);
  c.filesize_kib = 4;
  c.poolsize_kib = 16;
  return c;
}

TEST(AimRunner, BlocksPerFileShareThePoolAmongUsers) {
  RunConfig c;
  EXPECT_EQ(BlocksPerFile(c, 1), 10 + 1024);
  EXPECT_EQ(BlocksPerFile(c, 3), 10 + 341);  // truncated, never over the pool
}

TEST(AimRunner, UsersRunTheirJobsAndTheWorkspaceLeavesNothingBehind) {
  TempDir a, b;
  RunConfig c = SmallConfig(SelectTests(false));
  int progress_calls = 0;
  {
    auto ws = Workspace::Create({a.path(), b.path()});
    ASSERT_TRUE(ws.ok()) << ws.status().ToString();
    EXPECT_EQ(ListTree(a.path()).count((*ws)->path(0).substr(a.path().size() + 1)), 1u);
    for (int users : {1, 3}) {
      Result<LevelResult> r = RunLevel(c, **ws, users, [&](const Progress&) { ++progress_calls; });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r->failures.empty()) << r->failures[0].message;
      EXPECT_EQ(r->users, users);
      EXPECT_EQ(r->jobs_per_user, 11);
      EXPECT_EQ(r->blocks, 4 + 16 / users);
      ASSERT_EQ(r->elapsed_s.size(), static_cast<std::size_t>(users));
      EXPECT_GT(r->real_s, 0);
      EXPECT_GT(r->user_s + r->sys_s, 0);
      for (double e : r->elapsed_s) EXPECT_LE(e, r->real_s + 1e-9);
    }
    EXPECT_TRUE((*ws)->Remove().ok());
  }
  EXPECT_TRUE(ListTree(a.path()).empty());
  EXPECT_TRUE(ListTree(b.path()).empty());
}

TEST(AimRunner, CpuTestsRunAsThinkTime) {
  TempDir a;
  auto ws = Workspace::Create({a.path()});
  ASSERT_TRUE(ws.ok());
  Result<LevelResult> r = RunLevel(SmallConfig(SelectTests(true)), **ws, 2, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->failures.empty());
}

TEST(AimRunner, FailingUserIsReportedWithTheTestAndErrno) {
  TempDir a;
  auto ws = Workspace::Create({a.path()});
  ASSERT_TRUE(ws.ok());
  std::vector<WorkfileLine> tests = SelectTests(false);
  tests.push_back({"no_such_test", 30, TestKind::kFilesystem, true});
  Result<LevelResult> r = RunLevel(SmallConfig(tests), **ws, 2, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->failures.size(), 2u);
  EXPECT_EQ(r->failures[0].test, "no_such_test");
  EXPECT_EQ(r->failures[0].err, EOPNOTSUPP);
}

TEST(AimRunner, FailingRecipeReportsItsTestAndErrno) {
  TempDir a;
  auto ws = Workspace::Create({a.path()});
  ASSERT_TRUE(ws.ok());
  // disk_src needs the fakeh tree, which only Workspace::Create makes.
  std::filesystem::remove_all((*ws)->path(0) + "/fakeh");
  RunConfig c = SmallConfig({{"disk_src", 30, TestKind::kFilesystem, true}});
  Result<LevelResult> r = RunLevel(c, **ws, 3, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->failures.size(), 3u);
  for (const UserFailure& f : r->failures) {
    EXPECT_EQ(f.test, "disk_src");
    EXPECT_EQ(f.err, ENOENT);
    EXPECT_NE(f.message.find("fakeh"), std::string::npos) << f.message;
  }
  EXPECT_EQ(r->elapsed_s.size(), 3u);
}

TEST(AimRunner, UnusableDirectoriesAreRefusedWithTheirName) {
  TempDir a;
  auto missing = Workspace::Create({a.path() + "/missing"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().ToErrno(), ENOENT);
  EXPECT_NE(missing.status().message().find("/missing"), std::string_view::npos);

  const std::string file = a.path() + "/file";
  close(open(file.c_str(), O_WRONLY | O_CREAT, 0644));
  auto not_dir = Workspace::Create({a.path(), file});
  ASSERT_FALSE(not_dir.ok());
  EXPECT_EQ(not_dir.status().ToErrno(), ENOTDIR);
  // The first directory's work directory was removed again.
  EXPECT_EQ(ListTree(a.path()), std::set<std::string>{"file"});

  EXPECT_FALSE(Workspace::Create({}).ok());
}

}  // namespace
}  // namespace walfs::bench::aim
