// The tools that only read work on an image nobody may write -- mode 0444
// to its user, `chattr +i`, read-only media -- as e2fsck -n, xfs_repair -n,
// xfs_db -r and xfs_logprint do: fsck.walfs -n, walfs-admin -l/-u and
// walfs-logprint open it read-only.  What would change it (walfs-admin -L)
// still fails, in one line.  tests/unwritable_file.h makes the image
// unwritable (chattr +i as root, mode 0444 otherwise) and undoes it.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "fs/filesystem.h"
#include "tests/tools/file_digest.h"
#include "tests/tools/tool_run.h"
#include "tests/unwritable_file.h"

namespace walfs {
namespace {

using testing::ToolRun;

ToolRun Sh(const std::string& cmd) { return testing::RunTool(cmd); }


class ReadOnlyImage : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "walfs_read_only_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
    ToolRun made = Sh(std::string(WALFS_MKFS) + " -q -L data " + image_ + " 64m");
    ASSERT_EQ(made.exit_code, 0) << made.out;
  }
  // `unwritable_` goes first (members before TearDown's remove would be
  // too late: an immutable file cannot be removed).
  void TearDown() override {
    unwritable_.reset();
    std::filesystem::remove(image_);
  }

  // Makes the image unwritable; false (and the test skips) where it cannot.
  bool MakeUnwritable() {
    unwritable_ = std::make_unique<testing::UnwritableFile>(image_);
    skip_ = unwritable_->why_not();
    if (skip_.empty()) before_ = testing::DigestOfFile(image_);
    return skip_.empty();
  }
  // The image holds what it held when it was made unwritable.
  void ExpectUnchanged() { EXPECT_TRUE(testing::DigestOfFile(image_) == before_) << "the image changed"; }

  // Mounts in this process, makes "d/f", fsyncs and drops the Filesystem
  // without unmounting: the log holds transactions still to be replayed.
  void MountWriteAndCrash() {
    fs::MountOptions o;
    o.image = image_;
    auto fs = fs::Filesystem::Mount(o);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto dir = (*fs)->Mkdir({}, (*fs)->root(), "d", 0755);
    ASSERT_TRUE(dir.ok());
    auto file = (*fs)->Mknod({}, dir->st_ino, "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*fs)->Fsync(file->st_ino, false).ok());
    fs->reset();
  }

  std::string image_;
  std::string skip_;
  testing::FileDigest before_;
  std::unique_ptr<testing::UnwritableFile> unwritable_;
};

TEST_F(ReadOnlyImage, FsckCheckOnlyChecksAnUnwritableImageAndSaysClean) {
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun n = Sh(std::string(WALFS_FSCK) + " -n " + image_);
  EXPECT_EQ(n.exit_code, 0) << unwritable_->how() << ": " << n.out;
  EXPECT_NE(n.out.find(image_ + ": clean"), std::string::npos) << n.out;
  ExpectUnchanged();
}

// The log is replayed in memory only, as on a writable image.
TEST_F(ReadOnlyImage, FsckCheckOnlyReplaysTheLogOfAnUnwritableImageInMemory) {
  MountWriteAndCrash();
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun n = Sh(std::string(WALFS_FSCK) + " -n " + image_);
  EXPECT_EQ(n.exit_code, 4) << unwritable_->how() << ": " << n.out;
  EXPECT_NE(n.out.find(" committed transactions not yet replayed"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("3 inodes in use (2 directories)"), std::string::npos) << n.out;
  ExpectUnchanged();
}

// Recovering and repairing write: without -n the check cannot run (8),
// and its one line says -n can.
TEST_F(ReadOnlyImage, FsckWithoutCheckOnlyOnAnUnwritableImageSaysThatCheckOnlyWorks) {
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun r = Sh(std::string(WALFS_FSCK) + " " + image_);
  EXPECT_EQ(r.exit_code, 8) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("need write access to the image: fsck.walfs -n checks it without writing"),
            std::string::npos)
      << r.out;
  ExpectUnchanged();
}

TEST_F(ReadOnlyImage, AdminShowsTheLabelAndUuidOfAnUnwritableImage) {
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun l = Sh(std::string(WALFS_ADMIN) + " -l " + image_);
  EXPECT_EQ(l.exit_code, 0) << unwritable_->how() << ": " << l.out;
  EXPECT_EQ(l.out, "label = \"data\"\n");
  ToolRun u = Sh(std::string(WALFS_ADMIN) + " -u -l " + image_);
  EXPECT_EQ(u.exit_code, 0) << u.out;
  EXPECT_EQ(u.out.rfind("UUID = ", 0), 0u) << u.out;
  EXPECT_NE(u.out.find("\nlabel = \"data\"\n"), std::string::npos) << u.out;
  ExpectUnchanged();
}

TEST_F(ReadOnlyImage, AdminRefusesToChangeAnUnwritableImageInOneLine) {
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun set = Sh(std::string(WALFS_ADMIN) + " -l -L other " + image_);
  EXPECT_EQ(set.exit_code, 1) << set.out;
  EXPECT_EQ(std::count(set.out.begin(), set.out.end(), '\n'), 1) << set.out;
  EXPECT_NE(set.out.find(image_), std::string::npos) << set.out;
  EXPECT_NE(set.out.find("needs write access to the image (-l and -u alone do not)"), std::string::npos)
      << set.out;
  ExpectUnchanged();
}

TEST_F(ReadOnlyImage, LogprintPrintsTheLogOfAnUnwritableImage) {
  MountWriteAndCrash();
  if (!MakeUnwritable()) GTEST_SKIP() << skip_;
  ToolRun r = Sh(std::string(WALFS_LOGPRINT) + " " + image_);
  EXPECT_EQ(r.exit_code, 0) << unwritable_->how() << ": " << r.out;
  EXPECT_NE(r.out.find("not cleanly unmounted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lsn: "), std::string::npos) << r.out;
  ExpectUnchanged();
}

}  // namespace
}  // namespace walfs
