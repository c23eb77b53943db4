// Mounting an image nobody may write (mode 0444 to its user, `chattr +i`,
// read-only media) through the real `walfs` daemon, as mount -o ro and
// -o ro,norecovery do for XFS: `ro,norecovery` reads it as last written
// back; `ro` reads it when its log is clean and, when the log needs
// replaying, refuses in one line that says so and what to do.  Nothing is
// written either way.  tests/unwritable_file.h makes the image unwritable
// (chattr +i as root, mode 0444 otherwise) and undoes it.
//
// Skips where FUSE cannot mount (no /dev/fuse, no fusermount3, not root
// without user_allow_other) or the image cannot be made unwritable.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuse/mount_fixture.h"
#include "tests/tools/file_digest.h"
#include "tests/tools/tool_run.h"
#include "tests/unwritable_file.h"

namespace walfs::testing {
namespace {

class ReadOnlyImageMount : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = FuseUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(mount_.Create("walfs-ro-image"), "");
  }
  // The image must be writable again before WalfsMount removes its dir.
  void TearDown() override { unwritable_.reset(); }

  // Mounts read-write and makes the file "f" holding "data"; then unmounts
  // cleanly, or (`crash`) fsyncs it and kills the daemon, leaving the log
  // to replay (and the dead mount detached).
  void MakeFile(bool crash) {
    ASSERT_EQ(mount_.Mount({}), "");
    const std::string f = mount_.mountpoint() + "/f";
    const int fd = open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_SYS(fd);
    ASSERT_EQ(write(fd, "data", 4), 4);
    ASSERT_SYS(fsync(fd));
    ASSERT_SYS(close(fd));
    if (!crash) {
      ASSERT_EQ(mount_.Unmount(), "");
      return;
    }
    mount_.Kill();
    ToolRun detach = RunTool("fusermount3 -u -z " + mount_.mountpoint());
    ASSERT_EQ(detach.exit_code, 0) << detach.out;
  }
  // False (and the test skips) where the image cannot be made unwritable.
  bool MakeUnwritable() {
    unwritable_ = std::make_unique<UnwritableFile>(mount_.image());
    skip_ = unwritable_->why_not();
    if (skip_.empty()) before_ = DigestOfFile(mount_.image());
    return skip_.empty();
  }
  void ExpectUnchanged() { EXPECT_TRUE(DigestOfFile(mount_.image()) == before_) << "the image changed"; }

  WalfsMount mount_{MountConfig{.image_size = "64m"}};
  std::unique_ptr<UnwritableFile> unwritable_;  // after mount_: undone before it goes
  std::string skip_;
  FileDigest before_;
};

TEST_F(ReadOnlyImageMount, RoNorecoveryListsAndReadsTheFilesOfAnUnwritableImage) {
  MakeFile(/*crash=*/false);
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ASSERT_EQ(mount_.Mount({"ro,norecovery"}), "") << unwritable_->how();
  EXPECT_EQ(ListDir(mount_.mountpoint()), std::vector<std::string>{"f"});
  EXPECT_EQ(ReadFile(mount_.mountpoint() + "/f"), "data");
  EXPECT_ERRNO(EROFS, mkdir((mount_.mountpoint() + "/d").c_str(), 0755));
  ASSERT_EQ(mount_.Unmount(), "");
  ExpectUnchanged();
}

TEST_F(ReadOnlyImageMount, RoNorecoveryMountsAnUnwritableImageWhoseLogNeedsReplay) {
  MakeFile(/*crash=*/true);
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ASSERT_EQ(mount_.Mount({"ro,norecovery"}), "") << unwritable_->how();
  EXPECT_NE(mount_.Output().find("log not replayed (norecovery)"), std::string::npos) << mount_.Output();
  // Whether "f" was written back before the crash is the AIL's timing; the
  // root lists either way.
  const std::vector<std::string> names = ListDir(mount_.mountpoint());
  EXPECT_LE(names.size(), 1u);
  ASSERT_EQ(mount_.Unmount(), "");
  ExpectUnchanged();
}

TEST_F(ReadOnlyImageMount, RoMountsAnUnwritableImageWhoseLogIsClean) {
  MakeFile(/*crash=*/false);
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ASSERT_EQ(mount_.Mount({"ro"}), "") << unwritable_->how();
  EXPECT_EQ(ReadFile(mount_.mountpoint() + "/f"), "data");
  EXPECT_ERRNO(EROFS, unlink((mount_.mountpoint() + "/f").c_str()));
  ASSERT_EQ(mount_.Unmount(), "");
  ExpectUnchanged();
}

TEST_F(ReadOnlyImageMount, RoRefusesAnUnwritableImageWhoseLogNeedsReplayAndSaysWhatToDo) {
  MakeFile(/*crash=*/true);
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  const std::string error = mount_.Mount({"ro"});
  if (mount_.exit_status() == -1) mount_.Kill();  // it mounted (or hangs): fail below, clean up
  ASSERT_NE(error, "") << "mounted an image whose log needs replay without replaying it";
  ASSERT_TRUE(WIFEXITED(mount_.exit_status())) << WalfsMount::Describe(mount_.exit_status());
  EXPECT_NE(WEXITSTATUS(mount_.exit_status()), 0);
  const std::string out = mount_.Output();
  const auto at = out.find("the log must be replayed");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(out.rfind('\n', at) + 1, out.find('\n', at) - out.rfind('\n', at) - 1);
  EXPECT_NE(line.find("write access"), std::string::npos) << line;
  EXPECT_NE(line.find("-o ro,norecovery"), std::string::npos) << line;
  EXPECT_NE(line.find("make the image writable"), std::string::npos) << line;
  ExpectUnchanged();
}

}  // namespace
}  // namespace walfs::testing
