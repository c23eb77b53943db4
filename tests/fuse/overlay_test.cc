// walfs as overlayfs's upper layer (the way container runtimes use a
// filesystem): the lower directory on /tmp, the upper and work directories
// on the filesystem under test, the merged view on /tmp.  overlayfs takes a
// FUSE upper layer only if it has d_type, trusted.* xattrs and
// RENAME_WHITEOUT (it probes for each at mount and refuses a "remote" upper
// fs missing one); it can do without O_TMPFILE.  Creates, copy-ups, deletes
// of lower files (whiteouts in the upper directory) and renames go through
// the overlay and are checked in the merged view and in the upper
// directory, across a remount of walfs.
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Overlay : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    if (geteuid() != 0) GTEST_SKIP() << "mounting overlayfs needs root";
    char lower[] = "/tmp/walfs-ovl-lower-XXXXXX";
    char merged[] = "/tmp/walfs-ovl-merged-XXXXXX";
    ASSERT_NE(mkdtemp(lower), nullptr) << strerrorname_np(errno);
    lower_ = lower;
    ASSERT_NE(mkdtemp(merged), nullptr) << strerrorname_np(errno);
    merged_ = merged;
    ASSERT_SYS(mkdir(Path("upper").c_str(), 0755));
    ASSERT_SYS(mkdir(Path("work").c_str(), 0755));
    WriteFile(lower_ + "/a", "lower a");
    WriteFile(lower_ + "/b", "lower b");
    WriteFile(lower_ + "/c", "lower c");
    ASSERT_SYS(mkdir((lower_ + "/d").c_str(), 0755));
    WriteFile(lower_ + "/d/x", "lower d/x");
  }
  void TearDown() override {
    Unmount();
    if (!lower_.empty()) RunTool("rm -rf '" + lower_ + "'");
    if (!merged_.empty()) rmdir(merged_.c_str());
    MountedFs::TearDown();
  }
  // Mounts the overlay; "" or why the kernel refused.
  std::string Mount() {
    const std::string opts = "lowerdir=" + lower_ + ",upperdir=" + Path("upper") + ",workdir=" + Path("work");
    if (mount("overlay", merged_.c_str(), "overlay", 0, opts.c_str()) != 0) {
      const int err = errno;
      return std::string("mount -t overlay: ") + strerrorname_np(err) +
             " (overlayfs logs the feature it missed in the kernel log: dmesg | grep overlayfs)";
    }
    mounted_ = true;
    return "";
  }
  void Unmount() {
    if (mounted_ && umount2(merged_.c_str(), 0) == 0) mounted_ = false;
  }
  std::string M(const std::string& rel) const { return merged_ + "/" + rel; }
  std::string U(const std::string& rel) const { return Path("upper/" + rel); }
  static bool IsWhiteout(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
  }
  static bool Missing(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) != 0 && errno == ENOENT;
  }

  std::string lower_, merged_;
  bool mounted_ = false;
};

TEST_F(Overlay, CreateCopyUpDeleteAndRenameThroughAnOverlayWhoseUpperLayerIsHere) {
  const std::string refused = Mount();
  ASSERT_EQ(refused, "") << "overlayfs refused the filesystem under test as its upper layer";
  EXPECT_EQ(ListDir(merged_).size(), 4u) << "the lower files show through";
  EXPECT_EQ(ReadFile(M("a")), "lower a");

  // Create: a new file lives in the upper directory only.
  WriteFile(M("new"), "created");
  EXPECT_EQ(ReadFile(U("new")), "created");
  EXPECT_TRUE(Missing(lower_ + "/new"));

  // Copy-up: writing a lower file copies it up first.
  {
    const int fd = open(M("a").c_str(), O_WRONLY | O_APPEND);
    ASSERT_SYS(fd);
    ASSERT_EQ(write(fd, " more", 5), 5);
    close(fd);
  }
  EXPECT_EQ(ReadFile(M("a")), "lower a more");
  EXPECT_EQ(ReadFile(U("a")), "lower a more");
  EXPECT_EQ(ReadFile(lower_ + "/a"), "lower a") << "the lower layer is never written";

  // Delete of a lower file: a whiteout in the upper directory hides it.
  ASSERT_SYS(unlink(M("b").c_str()));
  EXPECT_TRUE(Missing(M("b")));
  EXPECT_TRUE(IsWhiteout(U("b"))) << "upper/b is a 0/0 character device";
  EXPECT_EQ(ReadFile(lower_ + "/b"), "lower b");

  // Rename of a lower file: copied up under the new name, a whiteout at the old.
  ASSERT_SYS(rename(M("c").c_str(), M("c2").c_str()));
  EXPECT_TRUE(Missing(M("c")));
  EXPECT_EQ(ReadFile(M("c2")), "lower c");
  EXPECT_EQ(ReadFile(U("c2")), "lower c");
  EXPECT_TRUE(IsWhiteout(U("c")));
  // Rename of an upper file, over a lower one.
  ASSERT_SYS(rename(M("new").c_str(), M("a").c_str()));
  EXPECT_EQ(ReadFile(M("a")), "created");
  EXPECT_TRUE(Missing(M("new")));
  EXPECT_TRUE(Missing(U("new")));

  // Delete of a lower directory: its contents first, then the directory.
  EXPECT_ERRNO(ENOTEMPTY, rmdir(M("d").c_str()));
  ASSERT_SYS(unlink(M("d/x").c_str()));
  ASSERT_SYS(rmdir(M("d").c_str()));
  EXPECT_TRUE(Missing(M("d")));
  EXPECT_TRUE(IsWhiteout(U("d")));

  const std::vector<std::string> merged = ListDir(merged_);
  EXPECT_EQ(std::set<std::string>(merged.begin(), merged.end()), (std::set<std::string>{"a", "c2"}));

  // The overlay comes back the same from the upper directory: after a
  // remount of walfs too (unmount, fsck, mount).
  Unmount();
  ASSERT_FALSE(mounted_) << "umount of the overlay: " << strerrorname_np(errno);
  if (OnWalfs()) Remount();
  ASSERT_EQ(Mount(), "");
  const std::vector<std::string> again = ListDir(merged_);
  EXPECT_EQ(std::set<std::string>(again.begin(), again.end()), (std::set<std::string>{"a", "c2"}));
  EXPECT_EQ(ReadFile(M("a")), "created");
  EXPECT_EQ(ReadFile(M("c2")), "lower c");
  EXPECT_TRUE(IsWhiteout(U("b")));
}

}  // namespace
}  // namespace walfs::testing
