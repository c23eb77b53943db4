// The filesystem test recipes: each runs once and leaves its directory as it
// found it; the ones re-aim wrote that way unlink their file while it is open.
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <set>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aim_test_dir.h"
#include "bench/aim/fakeh.h"
#include "bench/aim/tests_cpu.h"
#include "bench/aim/tests_fs.h"
#include "bench/aim/workfile.h"

namespace walfs::bench::aim {
namespace {

constexpr std::int64_t kBlocks = 16;

class AimRecipes : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CreateFakeh(dir_.fd()).ok());
    ASSERT_TRUE(CreateCommonFile(dir_.fd(), kBlocks).ok());
    env_.dir_fd = dir_.fd();
    env_.blocks = kBlocks;
    env_.pid = getpid();
    env_.rng = &rng_;
    env_.namer = &namer_;
  }

  Status Run(const char* name) {
    FsTestFn fn = FindFsTest(name);
    if (fn == nullptr) return Status::NotFound(name);
    return fn(env_);
  }

  TempDir dir_;
  std::mt19937 rng_{1};
  TempNamer namer_{getpid()};
  FsEnv env_;
};

TEST_F(AimRecipes, EveryRecipeRunsOnceAndLeavesNothingBehind) {
  const std::set<std::string> before = ListTree(dir_.path());
  for (const WorkfileLine& t : SelectTests(false)) {
    const std::string name(t.name);
    Status s = Run(name.c_str());
    EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
    EXPECT_EQ(ListTree(dir_.path()), before) << name;
  }
  for (const WorkfileLine& t : SelectTests(true)) {
    if (t.kind != TestKind::kCpu) continue;
    Status s = FindCpuTest(t.name)();
    EXPECT_TRUE(s.ok()) << t.name << ": " << s.ToString();
  }
}

TEST_F(AimRecipes, SyncCallsRunSyncfs) {
  env_.sync_calls = true;
  const std::set<std::string> before = ListTree(dir_.path());
  for (const char* name : {"disk_rr", "disk_rw", "disk_rd", "disk_cp", "disk_wrt"}) {
    EXPECT_TRUE(Run(name).ok()) << name;
  }
  EXPECT_EQ(ListTree(dir_.path()), before);
}

TEST_F(AimRecipes, CopyWithoutTheCommonFileFailsWithEnoent) {
  ASSERT_EQ(unlinkat(dir_.fd(), kCommonFile, 0), 0);
  const std::set<std::string> before = ListTree(dir_.path());
  for (const char* name : {"disk_cp", "sync_disk_cp"}) {
    Status s = Run(name);
    EXPECT_EQ(s.ToErrno(), ENOENT) << name;
    EXPECT_NE(s.message().find("tmpa.common"), std::string_view::npos) << s.ToString();
  }
  EXPECT_EQ(ListTree(dir_.path()), before);
}

TEST_F(AimRecipes, DiskSrcWithoutTheTreeFails) {
  ASSERT_EQ(renameat(dir_.fd(), kFakehDir, dir_.fd(), "elsewhere"), 0);
  EXPECT_EQ(Run("disk_src").ToErrno(), ENOENT);
}

TEST(AimTempNamer, NamesArePidAndCounterLikeAimMktemp) {
  TempNamer n(1234567);
  EXPECT_EQ(n.Next("tmpb."), "tmpb.3456700000");
  EXPECT_EQ(n.Next("link"), "link3456700001");
}

// The order of IN_DELETE (name removed) and the last IN_CLOSE_* of each file
// the recipe made, seen through an inotify watch on the directory.
class InotifyOrder {
 public:
  explicit InotifyOrder(const std::string& dir) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    inotify_add_watch(fd_, dir.c_str(), IN_DELETE | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE);
  }
  ~InotifyOrder() { close(fd_); }

  // For every name that was deleted: was it deleted before its last close?
  std::map<std::string, bool> DeletedWhileOpen() {
    std::map<std::string, int> last_close, deleted;
    alignas(inotify_event) char buf[64 * 1024];
    int seq = 0;
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (char* p = buf; p < buf + n;) {
        auto* e = reinterpret_cast<inotify_event*>(p);
        const std::string name = e->len ? e->name : "";
        if (e->mask & IN_DELETE) deleted[name] = ++seq;
        if (e->mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) last_close[name] = ++seq;
        p += sizeof(inotify_event) + e->len;
      }
    }
    std::map<std::string, bool> out;
    for (const auto& [name, when] : deleted)
      if (name.rfind("tmp", 0) == 0 || name.rfind("link", 0) == 0)
        out[name] = last_close.count(name) && when < last_close[name];
    return out;
  }

 private:
  int fd_ = -1;
};

TEST_F(AimRecipes, WriteRecipesUnlinkTheirFileWhileItIsOpen) {
  for (const char* name : {"disk_rw", "disk_wrt", "disk_cp"}) {
    InotifyOrder order(dir_.path());
    ASSERT_TRUE(Run(name).ok()) << name;
    const auto deleted = order.DeletedWhileOpen();
    ASSERT_EQ(deleted.size(), 1u) << name;
    EXPECT_TRUE(deleted.begin()->second) << name << " closed " << deleted.begin()->first << " first";
  }
}

TEST_F(AimRecipes, ReadRecipesCloseBeforeUnlinking) {
  for (const char* name : {"disk_rr", "disk_rd", "sync_disk_wrt", "sync_disk_rw", "sync_disk_cp"}) {
    InotifyOrder order(dir_.path());
    ASSERT_TRUE(Run(name).ok()) << name;
    const auto deleted = order.DeletedWhileOpen();
    ASSERT_EQ(deleted.size(), 1u) << name;
    EXPECT_FALSE(deleted.begin()->second) << name;
  }
}

TEST_F(AimRecipes, LinkTestFreesTheInodeWhileItIsOpen) {
  InotifyOrder order(dir_.path());
  ASSERT_TRUE(Run("link_test").ok());
  const auto deleted = order.DeletedWhileOpen();
  ASSERT_EQ(deleted.size(), 8u);  // the file and its 7 links
  // The first name is the one that was opened: removed before the close.
  EXPECT_TRUE(deleted.begin()->second) << deleted.begin()->first;
}

}  // namespace
}  // namespace walfs::bench::aim
