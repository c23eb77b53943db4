// Specs of the Filesystem's space accounting (fs/filesystem.h): StatFs
// counts as files come and go, what a Forget or a removed tree gives back,
// a stats name, and a full filesystem (ENOSPC, short and whole writes, zero
// range and rename with no free block, space used again after a remount).
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstddef>
#include <cstdint>
#include <string>
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

TEST_F(FilesystemTest, StatFsCountsFollowCreatesWritesAndRemoves) {
  const struct statvfs before = StatFs();
  EXPECT_EQ(before.f_bsize, kBs);
  EXPECT_EQ(before.f_namemax, 255u);
  EXPECT_GT(before.f_bfree, 0u);
  const std::uint64_t f = Create(root_, "f");
  const struct statvfs created = StatFs();
  EXPECT_EQ(created.f_ffree, before.f_ffree - 1);
  Write(f, 0, Pattern(10 * kBs, 1));
  const struct statvfs written = StatFs();
  EXPECT_EQ(written.f_bfree, before.f_bfree - 10);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(StatFs().f_bfree, written.f_bfree) << "an open file keeps its blocks";
  fs_->Forget(f, 1);
  const struct statvfs after = StatFs();
  EXPECT_EQ(after.f_bfree, before.f_bfree);
  EXPECT_EQ(after.f_ffree, before.f_ffree);
  EXPECT_EQ(after.f_bavail, before.f_bavail);
}

TEST_F(FilesystemTest, StatFsAvailableBlocksFollowAllocations) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(10 * kBs, 1));
  const struct statvfs written = StatFs();
  EXPECT_LE(written.f_bavail, written.f_bfree);
  EXPECT_EQ(written.f_bavail, before.f_bavail - 10);
}

TEST_F(FilesystemTest, ForgetOfAnUnlinkedInodeFreesItsBlocksAndTheInode) {
  const struct statvfs before = StatFs();
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, Pattern(40 * kBs, 1));
  ASSERT_TRUE(fs_->SetXattr(f, "user.x", "y", 0).ok());
  auto again = fs_->Lookup(root_, "f");  // a second kernel reference
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  fs_->Forget(f, 1);
  EXPECT_LT(StatFs().f_bfree, before.f_bfree) << "one reference is left";
  EXPECT_EQ(ReadAll(f).size(), 40 * kBs);
  fs_->Forget(f, 1);
  EXPECT_EQ(StatFs().f_bfree, before.f_bfree);
  EXPECT_EQ(StatFs().f_ffree, before.f_ffree);
  EXPECT_EQ(Err(fs_->GetAttr(f)), ESTALE);
  // Forgetting a linked inode only evicts it: it comes back from disk.
  const std::uint64_t g = Create(root_, "g");
  Write(g, 0, "stays");
  fs_->Forget(g, 1);
  EXPECT_TRUE(SameBytes(ReadAll(g), "stays"));
  EXPECT_EQ(Ino(root_, "g"), g);
}

TEST_F(FilesystemTest, RemovingADirectoryTreeGivesEverythingBack) {
  // Inode chunks stay allocated once made (docs/fs.md): the first rounds
  // make them, the later ones must give back everything they take.  Each
  // round's directory takes the next AG (the directory rotor, docs/fs.md),
  // so the chunks are made by one round in each AG.
  auto round = [&] {
    const std::uint64_t d = Mkdir(root_, "d");
    std::vector<std::uint64_t> inos;
    for (int i = 0; i < 400; ++i) {
      inos.push_back(Create(d, "f" + std::to_string(i)));
      if (i % 50 == 0) Write(inos.back(), 0, Pattern(3 * kBs, i));
    }
    for (int i = 0; i < 400; ++i) {
      ASSERT_TRUE(fs_->Unlink(d, "f" + std::to_string(i)).ok());
      fs_->Forget(inos[i], 1);
    }
    ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
    fs_->Forget(d, 1);
  };
  const std::uint32_t ags = fs_->superblock().ag_count;
  for (std::uint32_t i = 0; i < ags; ++i) round();
  const struct statvfs before = StatFs();
  for (std::uint32_t i = 0; i < ags; ++i) round();
  const struct statvfs after = StatFs();
  EXPECT_EQ(after.f_bfree, before.f_bfree);
  EXPECT_EQ(after.f_ffree, before.f_ffree);
}

// docs/stats.md: a value that is not a count says its unit in its name.
TEST_F(FilesystemTest, StatsNameTheTailSpaceInBytes) {
  const std::string text = fs_->StatsText();
  EXPECT_NE(text.find("\ntail_space_bytes "), std::string::npos) << text;
  EXPECT_EQ(text.find("\ntail_space "), std::string::npos) << text;
}

// Fills an image with one file: 1 MiB writes until one is ENOSPC, then
// single blocks until one is (a write either reserves all it may need or
// fails whole, so the big ones stop with some space left).
void FillUntilENOSPC(Filesystem* fs, std::uint64_t f, const std::string& chunk) {
  std::uint64_t off = 0;
  for (std::size_t len : {chunk.size(), std::size_t{kBs}}) {
    int err = 0;
    for (int i = 0; i < 8192; ++i) {
      auto n = fs->Write(f, off, chunk.data(), len);
      if (!n.ok()) {
        err = Err(n);
        break;
      }
      off += *n;
    }
    EXPECT_EQ(err, ENOSPC);
  }
}

TEST_F(FilesystemTest, RunningOutOfSpaceIsENOSPCAndSpaceReturnsAfterUnlink) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const struct statvfs before = StatFs();
  const std::string chunk = Pattern(1 << 20, 5);
  const std::uint64_t f = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), f, chunk);
  // What is left for ordinary writes; a pool stays free for truncate and
  // unlink (Filesystem::kFreeingPool), so f_bfree stays higher.
  EXPECT_LT(StatFs().f_bavail, 16u);
  EXPECT_TRUE(SameBytes(Read(f, 0, 1 << 20), chunk)) << "what did get written reads back";
  // Other allocations fail cleanly too: a create (it may need a new inode
  // chunk) or else a write into the new file.
  auto g = fs_->Mknod(caller_, root_, "g", S_IFREG | 0644, 0);
  if (g.ok()) {
    const std::string big = Pattern(64 * kBs, 6);
    auto n = fs_->Write(g->st_ino, 0, big.data(), big.size());
    EXPECT_TRUE(!n.ok() && Err(n) == ENOSPC) << (n.ok() ? "wrote" : n.status().ToString());
  } else {
    EXPECT_EQ(Err(g), ENOSPC) << g.status().ToString();
  }
  // The full image is consistent.
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(f, 0, 1 << 20), chunk));
  Unmount();
  // Space comes back within one mount (and across a remount: the next spec).
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f2 = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), f2, chunk);
  fs_->Forget(f2, 1);  // the create's reference
  UnlinkAndForget(root_, "fill");
  EXPECT_GE(StatFs().f_bfree + 2, before.f_bfree);
  const std::uint64_t h = Create(root_, "h");
  Write(h, 0, chunk);
  EXPECT_TRUE(SameBytes(Read(h, 0, chunk.size()), chunk));
}

TEST_F(FilesystemTest, SpaceFreedOnAMountThatStartedFullCanBeUsedAgain) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const struct statvfs before = StatFs();
  const std::string chunk = Pattern(1 << 20, 5);
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), chunk);
  Remount();
  UnlinkAndForget(root_, "fill");
  EXPECT_GE(StatFs().f_bfree + 2, before.f_bfree);
  auto st = fs_->Mknod(caller_, root_, "h", S_IFREG | 0644, 0);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  Write(st->st_ino, 0, chunk);
}

// POSIX: a write that runs out of space part way returns the bytes it
// wrote; the next one gets ENOSPC.
TEST_F(FilesystemTest, AWriteLargerThanTheFreeSpaceIsShortAndTheNextIsENOSPC) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f = Create(root_, "fill");
  const std::string big = Pattern(32 << 20, 5);  // more than the device
  auto n = fs_->Write(f, 0, big.data(), big.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_GT(*n, 8u << 20) << "most of the free space was used";
  EXPECT_LT(*n, big.size());
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(*n)) << "the size covers exactly what was written";
  EXPECT_TRUE(SameBytes(Read(f, 0, *n), big.substr(0, *n)));
  auto again = fs_->Write(f, *n, big.data() + *n, big.size() - *n);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(Err(again), ENOSPC);
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(f, 0, *n), big.substr(0, *n)));
  UnlinkAndForget(root_, "fill");
}

// O_DIRECT through FUSE cannot be short (the kernel turns a short reply into
// EIO), so such a write is whole or ENOSPC, and gives back what it took.
TEST_F(FilesystemTest, AWholeWriteThatRunsOutOfSpaceIsENOSPCAndGivesBackTheBlocksItMapped) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::string chunk = Pattern(1 << 20, 5);
  const std::uint64_t fill = Create(root_, "fill");
  FillUntilENOSPC(fs_.get(), fill, chunk);
  Truncate(fill, Stat(fill).st_size - 64 * kBs);  // room for a quarter of a MiB
  const std::uint64_t g = Create(root_, "g");
  Write(g, 8 * kBs, "kept");  // a block already there, in the middle of what follows
  const std::uint64_t free_before = FreeBlocks();
  auto n = fs_->Write(g, 0, chunk.data(), chunk.size(), NoSpaceWrite::kWhole);
  ASSERT_FALSE(n.ok()) << "wrote " << *n;
  EXPECT_EQ(Err(n), ENOSPC);
  EXPECT_EQ(Stat(g).st_size, static_cast<off_t>(8 * kBs + 4)) << "the size did not move";
  EXPECT_EQ(Stat(g).st_blocks, 8) << "only the block that was there";
  EXPECT_EQ(FreeBlocks(), free_before) << "every block the write mapped went back";
  std::string model(8 * kBs + 4, '\0');
  model.replace(8 * kBs, 4, "kept");
  const std::string got = ReadAll(g);
  EXPECT_TRUE(SameBytes(got.substr(0, 8 * kBs), model.substr(0, 8 * kBs))) << "the holes are holes again";
  // What fits goes in whole; the same write allowed to be short fills the rest.
  Write(g, 0, chunk.substr(0, 16 * kBs));
  auto whole = fs_->Write(g, 16 * kBs, chunk.data(), 16 * kBs, NoSpaceWrite::kWhole);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, 16 * kBs);
  auto shorter = fs_->Write(g, 32 * kBs, chunk.data(), chunk.size(), NoSpaceWrite::kShort);
  ASSERT_TRUE(shorter.ok()) << shorter.status().ToString();
  EXPECT_GT(*shorter, 0u);
  EXPECT_LT(*shorter, chunk.size());
  Unmount();
  ExpectFsckClean();
  Mount();
  EXPECT_TRUE(SameBytes(Read(g, 0, 16 * kBs), chunk.substr(0, 16 * kBs)));
}

// Zeroing blocks a file has needs no free block (their map change may use
// the pool kept for freeing); a range over holes needs new ones, and a full
// filesystem refuses it before anything is zeroed: the data and the size
// stay as they were.
TEST_F(FilesystemTest, ZeroRangeOnAFullFilesystemWorksOverAllocatedBlocksAndIsACleanENOSPCOverHoles) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t f = Create(root_, "f");
  std::string model_f = Pattern(32 * kBs, 12);
  Write(f, 0, model_f);
  const std::uint64_t g = Create(root_, "g");
  std::string model_g(20 * kBs + 3, '\0');
  model_g.replace(0, kBs, Pattern(kBs, 13));
  model_g.replace(20 * kBs, 3, "end");
  Write(g, 0, model_g.substr(0, kBs));
  Write(g, 20 * kBs, "end");  // blocks 1-19 a hole
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), Pattern(1 << 20, 5));

  ASSERT_TRUE(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 5 * kBs + 10, 10 * kBs).ok());
  model_f.replace(5 * kBs + 10, 10 * kBs, std::string(10 * kBs, '\0'));
  EXPECT_TRUE(SameBytes(ReadAll(f), model_f));
  EXPECT_EQ(Err(fs_->Fallocate(g, FALLOC_FL_ZERO_RANGE, 100, 15 * kBs)), ENOSPC);
  EXPECT_TRUE(SameBytes(ReadAll(g), model_g)) << "nothing zeroed";
  EXPECT_EQ(Err(fs_->Fallocate(f, FALLOC_FL_ZERO_RANGE, 40 * kBs, 64 * kBs)), ENOSPC);
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(32 * kBs)) << "the size did not move";
  Remount();
  EXPECT_TRUE(SameBytes(ReadAll(f), model_f));
  EXPECT_TRUE(SameBytes(ReadAll(g), model_g));
}

// An editor's save-by-rename on a full disk (XFS: xfs_rename retries
// without a block reservation): a rename that needs no new block works;
// one whose directory would have to grow is ENOSPC and changes nothing.
TEST_F(FilesystemTest, OnAFullFilesystemARenameThatNeedsNoBlockWorksAndOneThatDoesIsENOSPC) {
  Make(16ull << 20, {.ag_count = 1});
  if (HasFatalFailure()) return;
  const std::uint64_t doc = Create(root_, "doc");
  Write(doc, 0, "old");
  const std::uint64_t tmp = Create(root_, "doc.tmp");
  Write(tmp, 0, "new");
  // An inline directory (336 bytes of entries) with room for a 100-byte
  // name but not a 200-byte one: that one would make it a B+tree.
  const std::uint64_t tight = Mkdir(root_, "tight");
  Create(tight, std::string(200, 'a'));
  const std::string long_name(200, 'b');
  const std::uint64_t moving = Create(root_, long_name);
  FillUntilENOSPC(fs_.get(), Create(root_, "fill"), Pattern(1 << 20, 5));

  EXPECT_EQ(Err(fs_->Rename(root_, long_name, tight, long_name, 0)), ENOSPC);
  EXPECT_EQ(Ino(root_, long_name), moving);
  EXPECT_EQ(List(tight).size(), 3u) << "., .. and the 200-byte name";
  ASSERT_TRUE(fs_->Rename(root_, "doc.tmp", root_, "doc", 0).ok()) << "over an existing name";
  EXPECT_EQ(Ino(root_, "doc"), tmp);
  EXPECT_FALSE(Exists(root_, "doc.tmp"));
  fs_->Forget(doc, 1);  // the replaced file goes
  ASSERT_TRUE(fs_->Rename(root_, long_name, tight, std::string(100, 'c'), 0).ok()) << "where there is room";
  ASSERT_TRUE(fs_->Rename(root_, "doc", root_, "document", 0).ok()) << "in the same directory";
  ASSERT_TRUE(fs_->Rename(root_, "document", tight, std::string(100, 'c'), RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(tight, std::string(100, 'c')), tmp);
  EXPECT_EQ(Ino(root_, "document"), moving);
  EXPECT_TRUE(SameBytes(ReadAll(tmp), "new"));
  Remount();
  EXPECT_EQ(Ino(tight, std::string(100, 'c')), tmp);
  EXPECT_EQ(List(tight).size(), 4u);
}

}  // namespace
}  // namespace walfs::fs
