// Read-only mounts (`-o ro`, `-o ro,norecovery`) write nothing -- no
// superblock mount mark, no log write, no clean-unmount record -- and so
// work on an image nobody may write (mode 0444, `chattr +i`, read-only
// media), as XFS's do: `ro` reads such an image when its log is clean and
// refuses, saying what to do, when the log needs replaying; `norecovery`
// reads it as last written back whatever the log holds.  A writable image
// whose log needs replaying is still replayed by `ro` (XFS does the same).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_file.h"
#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "tests/unwritable_file.h"

namespace walfs::fs {
namespace {

constexpr std::uint64_t kImageBytes = 64ull << 20;

// Mounts, makes the file "f" holding "data", and either unmounts cleanly
// or (`crash`) fsyncs it and drops the Filesystem: the log then holds the
// file, still to be replayed.
void MakeFile(Result<std::unique_ptr<Filesystem>> fs, bool crash) {
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto f = (*fs)->Mknod({}, (*fs)->root(), "f", S_IFREG | 0644, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*fs)->Write(f->st_ino, 0, "data", 4).ok());
  if (crash) {
    ASSERT_TRUE((*fs)->Fsync(f->st_ino, false).ok());
    fs->reset();
  } else {
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
}

// The file "f" is there and holds "data".
void ExpectTheFile(Filesystem* fs) {
  auto f = fs->Lookup(fs->root(), "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  char buf[8] = {};
  auto n = fs->Read(f->st_ino, 0, sizeof buf, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(std::string(buf, *n), "data");
}

class ReadOnlyMountOfMemory : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(MakeFilesystem(&dev_, {.ag_count = 2}).ok()); }
  std::uint64_t Changes() const {
    const BlockDeviceStats s = dev_.stats();
    return s.writes + s.flushes + s.discards;
  }
  MemoryDevice dev_{kImageBytes};
};

TEST_F(ReadOnlyMountOfMemory, AReadOnlyMountOfACleanImageWritesNothing) {
  MakeFile(Filesystem::MountDevice(&dev_, {}), /*crash=*/false);
  const std::uint64_t before = Changes();
  MountOptions ro;
  ro.read_only = true;
  auto fs = Filesystem::MountDevice(&dev_, ro);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  ExpectTheFile(fs->get());
  EXPECT_EQ((*fs)->Sync().ToErrno(), 0);
  ASSERT_TRUE((*fs)->Unmount().ok());
  EXPECT_EQ(Changes(), before) << "a read-only mount wrote, flushed or discarded";
}

TEST_F(ReadOnlyMountOfMemory, ANorecoveryMountOfAnImageWhoseLogNeedsReplayWritesNothing) {
  MakeFile(Filesystem::MountDevice(&dev_, {}), /*crash=*/true);
  const std::uint64_t before = Changes();
  MountOptions o;
  o.norecovery = true;
  auto fs = Filesystem::MountDevice(&dev_, o);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_NE((*fs)->Describe().find("log not replayed (norecovery)"), std::string::npos) << (*fs)->Describe();
  ASSERT_TRUE((*fs)->Unmount().ok());
  EXPECT_EQ(Changes(), before) << "a norecovery mount wrote, flushed or discarded";
}

// An image file in the test's temp dir, made with mkfs.
class ReadOnlyMountOfAFile : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = ::testing::TempDir() + "walfs_read_only_mount_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".img";
    std::filesystem::remove(image_);
    auto dev = FileDevice::Open(image_, {.create = true, .size_bytes = kImageBytes});
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    ASSERT_TRUE(MakeFilesystem(dev->get(), {}).ok());
  }
  void TearDown() override { std::filesystem::remove(image_); }

  Result<std::unique_ptr<Filesystem>> Mount(bool read_only, bool norecovery) {
    MountOptions o;
    o.image = image_;
    o.read_only = read_only;
    o.norecovery = norecovery;
    return Filesystem::Mount(o);
  }
  std::string image_;
};

TEST_F(ReadOnlyMountOfAFile, ReadOnlyMountsAnUnwritableImageWhoseLogIsClean) {
  MakeFile(Mount(false, false), /*crash=*/false);
  testing::UnwritableFile unwritable(image_);
  if (!unwritable.why_not().empty()) GTEST_SKIP() << unwritable.why_not();
  auto fs = Mount(/*read_only=*/true, /*norecovery=*/false);
  ASSERT_TRUE(fs.ok()) << "made unwritable by " << unwritable.how() << ": " << fs.status().ToString();
  ExpectTheFile(fs->get());
  EXPECT_NE((*fs)->Describe().find("clean log"), std::string::npos) << (*fs)->Describe();
  ASSERT_TRUE((*fs)->Unmount().ok());
}

TEST_F(ReadOnlyMountOfAFile, ReadOnlyRefusesAnUnwritableImageWhoseLogNeedsReplayAndSaysWhatToDo) {
  MakeFile(Mount(false, false), /*crash=*/true);
  testing::UnwritableFile unwritable(image_);
  if (!unwritable.why_not().empty()) GTEST_SKIP() << unwritable.why_not();
  auto fs = Mount(/*read_only=*/true, /*norecovery=*/false);
  ASSERT_FALSE(fs.ok()) << "mounted an image whose log needs replay without replaying it";
  const std::string why(fs.status().message());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_NE(why.find("the log must be replayed"), std::string::npos) << why;
  EXPECT_NE(why.find("write access"), std::string::npos) << why;
  EXPECT_NE(why.find("-o ro,norecovery"), std::string::npos) << why;
  EXPECT_NE(why.find("make the image writable"), std::string::npos) << why;
}

TEST_F(ReadOnlyMountOfAFile, NorecoveryMountsAnUnwritableImageWhoseLogNeedsReplay) {
  MakeFile(Mount(false, false), /*crash=*/true);
  testing::UnwritableFile unwritable(image_);
  if (!unwritable.why_not().empty()) GTEST_SKIP() << unwritable.why_not();
  auto fs = Mount(/*read_only=*/true, /*norecovery=*/true);
  ASSERT_TRUE(fs.ok()) << "made unwritable by " << unwritable.how() << ": " << fs.status().ToString();
  EXPECT_NE((*fs)->Describe().find("log not replayed (norecovery)"), std::string::npos) << (*fs)->Describe();
  ASSERT_TRUE((*fs)->Unmount().ok());
}

TEST_F(ReadOnlyMountOfAFile, ReadOnlyStillReplaysAWritableImageWhoseLogNeedsIt) {
  MakeFile(Mount(false, false), /*crash=*/true);
  auto fs = Mount(/*read_only=*/true, /*norecovery=*/false);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_NE((*fs)->Describe().find("log recovered"), std::string::npos) << (*fs)->Describe();
  ExpectTheFile(fs->get());
  ASSERT_TRUE((*fs)->Unmount().ok());
}

}  // namespace
}  // namespace walfs::fs
