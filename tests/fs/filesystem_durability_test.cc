// Specs of what the Filesystem (fs/filesystem.h) keeps across an unmount or
// a crash: a clean remount, recovery after a crash with and without fsync,
// what fsync, fdatasync and Sync force and flush (counted in the log's
// pushes and the device's flushes), and unlinked inodes freed by the next
// mount or by recovery.
#include <sys/statvfs.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::kBs;
using testing::Pattern;
using testing::SameBytes;

TEST_F(FilesystemTest, EverythingSurvivesACleanRemount) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  const std::string data = Pattern(100000, 3);
  Write(f, 0, data);
  ASSERT_TRUE(fs_->Symlink(caller_, d, "l", "target").ok());
  ASSERT_TRUE(fs_->SetXattr(f, "user.k", "v", 0).ok());
  Remount();
  EXPECT_EQ(Ino(root_, "d"), d);
  EXPECT_EQ(Ino(d, "f"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
  EXPECT_EQ(*fs_->Readlink(Ino(d, "l")), "target");
  EXPECT_EQ(*fs_->GetXattr(f, "user.k"), "v");
}

TEST_F(FilesystemTest, ACrashAfterFsyncRecoversWhatWasSynced) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  const std::string data = Pattern(50000, 4);
  Write(f, 0, data);
  ASSERT_TRUE(fs_->Rename(d, "f", d, "renamed", 0).ok());
  for (int i = 0; i < 50; ++i) Create(d, "n" + std::to_string(i));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  ASSERT_TRUE(fs_->Fsync(d, false).ok());
  Crash();
  {
    auto r = CheckImage(dev_.get(), {.replay = false});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->log_dirty) << "the crash left the log to recover";
  }
  Mount();
  EXPECT_NE(fs_->Describe().find("recovered"), std::string::npos) << fs_->Describe();
  EXPECT_EQ(Ino(d, "renamed"), f);
  EXPECT_FALSE(Exists(d, "f"));
  EXPECT_TRUE(SameBytes(ReadAll(f), data));
  EXPECT_EQ(List(d).size(), 2u + 51u);
  // The recovered filesystem keeps working.
  Write(Create(d, "after"), 0, "ok");
}

// fsync semantics as XFS has them (docs/fs.md, "fsync").
std::uint64_t Pushes(Filesystem* fs) { return fs->log()->Stats().cil.pushes; }
std::uint64_t CoveredFlushes(Filesystem* fs) {
  const std::string text = fs->StatsText();
  const std::string key = "fsync_flushes_covered ";
  const std::size_t at = text.find(key);
  return at == std::string::npos ? ~0ull : std::stoull(text.substr(at + key.size()));
}

TEST_F(FilesystemTest, AnFsyncWithNothingNewDoesNotForceTheLog) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(kBs, 1));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  ASSERT_TRUE(fs_->Fsync(f, true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "no data written since: no flush either";
}

TEST_F(FilesystemTest, AnFsyncWhoseLogForceFlushedTheDeviceSkipsItsOwnDataFlush) {
  const std::uint64_t f = Create(root_, "f");
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  Write(f, 0, Pattern(4 * kBs, 2));  // new blocks: data in place, the mapping in the log
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  const std::uint64_t preflushes = dev_->stats().preflush_writes;
  const std::uint64_t covered = CoveredFlushes(fs_.get());
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_GT(dev_->stats().preflush_writes, preflushes);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "the commit record's preflush covered the data";
  EXPECT_EQ(CoveredFlushes(fs_.get()), covered + 1);
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), Pattern(4 * kBs, 2)));
}

TEST_F(FilesystemTest, AnFdatasyncAfterAnOverwriteInPlaceFlushesTheDataButDoesNotForceTheTimestamps) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(kBs, 3));
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  // Past the coarse clock's tick, so the overwrite logs new timestamps.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  Write(f, 0, Pattern(kBs, 4));
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Fsync(f, /*datasync=*/true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes) << "timestamps alone are not fdatasync's business";
  EXPECT_EQ(dev_->stats().flushes, flushes + 1) << "the data is";
  ASSERT_TRUE(fs_->Fsync(f, false).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1) << "fsync forces them";
  EXPECT_EQ(dev_->stats().flushes, flushes + 1) << "and has no data left to flush";
  // Growing the file is not timestamps alone: fdatasync forces the size.
  Write(f, kBs, Pattern(10, 5));
  ASSERT_TRUE(fs_->Fsync(f, true).ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 2);
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(f), Pattern(kBs, 4) + Pattern(10, 5)));
}

// Sync (.walfs/sync): everything, every inode; and fsync of a directory is it.
TEST_F(FilesystemTest, SyncMakesEveryChangeDurableAndFlushesOnlyWhenTheForceDidNot) {
  const std::uint64_t d = Mkdir(root_, "d");
  const std::uint64_t f = Create(d, "f");
  Write(f, 0, Pattern(3 * kBs, 6));
  const std::uint64_t pushes = Pushes(fs_.get());
  const std::uint64_t flushes = dev_->stats().flushes;
  ASSERT_TRUE(fs_->Sync().ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_EQ(dev_->stats().flushes, flushes) << "the commit record's preflush covered the data";
  // Nothing new in the log: the force writes nothing, so the device is
  // flushed on its own (data written in place since would need it).
  ASSERT_TRUE(fs_->Sync().ok());
  EXPECT_EQ(Pushes(fs_.get()), pushes + 1);
  EXPECT_EQ(dev_->stats().flushes, flushes + 1);
  EXPECT_NE(fs_->StatsText().find("\nsyncs 2\n"), std::string::npos) << fs_->StatsText();
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(Ino(Ino(root_, "d"), "f")), Pattern(3 * kBs, 6)));
}

TEST_F(FilesystemTest, AnFsyncOfADirectoryForcesTheChangesOfEveryOtherInode) {
  const std::uint64_t other = Mkdir(root_, "other");
  ASSERT_TRUE(fs_->Fsync(other, false).ok());
  const std::uint64_t d = Mkdir(root_, "d");
  Write(Create(d, "f"), 0, Pattern(kBs, 7));
  ASSERT_TRUE(fs_->Fsync(other, /*datasync=*/true).ok());
  Crash();
  Mount();
  EXPECT_TRUE(SameBytes(ReadAll(Ino(Ino(root_, "d"), "f")), Pattern(kBs, 7)));
}

TEST_F(FilesystemTest, ACrashWithoutFsyncRecoversAConsistentImage) {
  for (int i = 0; i < 30; ++i) {
    const std::uint64_t f = Create(root_, "f" + std::to_string(i));
    Write(f, 0, Pattern(3 * kBs + i, i));
    if (i % 3 == 0) {
      ASSERT_TRUE(fs_->Unlink(root_, "f" + std::to_string(i)).ok());
    }
  }
  Crash();
  Mount();
  Unmount();
  ExpectFsckClean();
  Mount();
}

TEST_F(FilesystemTest, AnUnlinkedButReferencedInodeIsFreedByTheNextMount) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(20 * kBs, 1));
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(ReadAll(f).size(), 20 * kBs);  // still in use: Forget never comes
  Unmount();
  ExpectFsckClean();  // an inode on the unlinked list is not lost
  Mount();
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  EXPECT_EQ(Err(fs_->GetAttr(f)), ESTALE);
}

TEST_F(FilesystemTest, UnlinkedInodesLeftByACrashAreFreedByRecovery) {
  const struct statvfs before = StatFs();
  std::vector<std::uint64_t> inos;
  for (int i = 0; i < 5; ++i) {
    inos.push_back(Create(root_, "f" + std::to_string(i)));
    Write(inos.back(), 0, Pattern((i + 1) * kBs, i));
  }
  const std::uint64_t d = Mkdir(root_, "d");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(fs_->Unlink(root_, "f" + std::to_string(i)).ok());
  ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
  for (std::uint64_t ino : inos) ASSERT_TRUE(fs_->Fsync(ino, false).ok());
  ASSERT_TRUE(fs_->Fsync(d, false).ok());
  Crash();
  Mount();
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  for (std::uint64_t ino : inos) EXPECT_EQ(Err(fs_->GetAttr(ino)), ESTALE);
}

}  // namespace
}  // namespace walfs::fs
