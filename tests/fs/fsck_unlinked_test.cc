// fsck's unlinked-list phase (fs/fsck_unlinked.cc): a file unlinked while
// still open when the mount crashed is on its AG's unlinked list, which is
// no damage (the next mount frees it); a list that names an inode not in
// use, loops, or holds an inode with links is.  A rebuilt AG header keeps
// a list that is sound.
#include <sys/stat.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/inode_format.h"
#include "fs/fsck.h"
#include "fs/fsck_chunks.h"
#include "fs/mkfs.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::InodeCore;

// A mount that unlinked a file it still held open, then crashed; fsck has
// replayed its log, so the file is on its AG's unlinked list on disk.
class FsckUnlinked : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = MakeFilesystem(&dev_, {.ag_count = 2, .now_s = 1});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    sb_ = *made;
    auto fs = Filesystem::MountDevice(&dev_, {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto file = (*fs)->Mknod({}, (*fs)->root(), "open", S_IFREG | 0644, 0);  // its lookup is never forgotten
    ASSERT_TRUE(file.ok());
    ino_ = file->st_ino;
    ASSERT_TRUE((*fs)->Unlink((*fs)->root(), "open").ok());
    ASSERT_TRUE((*fs)->Fsync((*fs)->root(), false).ok());
    fs->reset();  // a crash: the log is halted, not closed
    FsckReport replayed = Check({});
    ASSERT_TRUE(replayed.replayed);
    ASSERT_EQ(replayed.ExitCode(), 0) << testing::FsckProblems(replayed);
    const std::optional<ChunkAt> at = ChunkHolding(sb_, ino_);
    ASSERT_TRUE(at.has_value());
    agno_ = at->agno;
    ASSERT_EQ(Header().unlinked_head, ino_) << "the open file is not at the head of its AG's list";
  }
  FsckReport Check(FsckOptions o) {
    auto r = CheckImage(&dev_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }
  std::vector<std::byte> Read(std::uint64_t blk) {
    std::vector<std::byte> b(sb_.block_size);
    EXPECT_TRUE(dev_.Read(blk * sb_.block_size, b.data(), b.size()).ok());
    return b;
  }
  void Write(std::uint64_t blk, const std::vector<std::byte>& b) {
    EXPECT_TRUE(dev_.Write(blk * sb_.block_size, b.data(), b.size()).ok());
  }
  // The header of the open file's AG, as on disk.
  format::AgHeader Header() { return format::PeekAgHeader(Read(sb_.AgStart(agno_))); }
  void SetUnlinkedHead(std::uint64_t head) {
    auto b = Read(sb_.AgStart(agno_));
    format::AgHeader h = format::PeekAgHeader(b);
    h.unlinked_head = head;
    format::EncodeAgHeader(h, sb_, b);
    Write(sb_.AgStart(agno_), b);
  }
  template <typename F>
  void ChangeInode(F change) {
    const std::uint64_t blk = ino_ / sb_.inodes_per_block();
    const std::size_t off = (ino_ % sb_.inodes_per_block()) * format::kInodeSize;
    auto b = Read(blk);
    auto n = format::DecodeInode(std::span<const std::byte>(b).subspan(off, format::kInodeSize), ino_);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    change(&*n);
    format::EncodeInode(*n, std::span<std::byte>(b).subspan(off, format::kInodeSize));
    Write(blk, b);
  }
  static bool Says(const FsckReport& r, std::string_view what) { return testing::FsckSays(r, what); }
  static std::string All(const FsckReport& r) { return testing::FsckProblems(r); }

  MemoryDevice dev_{64ull << 20};
  format::Superblock sb_;
  std::uint64_t ino_ = 0;
  std::uint32_t agno_ = 0;
};

TEST_F(FsckUnlinked, AFileUnlinkedWhileOpenIsOnItsListAndNoProblem) {
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(r.problems.empty()) << All(r);
  EXPECT_EQ(r.inodes_in_use, 2u) << "the root and the open file";
}

TEST_F(FsckUnlinked, AnInodeWithLinksOnAnUnlinkedListIsReported) {
  ChangeInode([](InodeCore* n) { n->nlink = 1; });
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(Says(r, fmt::format("inode {} is on the unlinked list with 1 links", ino_))) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckUnlinked, AnUnlinkedListThatLoopsIsReported) {
  ChangeInode([this](InodeCore* n) { n->next_unlinked = ino_; });
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(Says(r, fmt::format("AG {} unlinked list loops at inode {}", agno_, ino_))) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckUnlinked, AnUnlinkedListNamingAFreeInodeIsReportedAndItsInodeIsInNoList) {
  SetUnlinkedHead(ino_ + 1);  // the chunk's next inode, never allocated
  FsckReport r = Check({.replay = false});
  EXPECT_TRUE(Says(r, fmt::format("AG {} unlinked list: inode {} is not in use", agno_, ino_ + 1))) << All(r);
  EXPECT_TRUE(Says(r, fmt::format("inode {} (mode 100644, 0 links) is in no directory and on no unlinked list", ino_)))
      << All(r);
}

TEST_F(FsckUnlinked, ARebuiltAgHeaderKeepsItsUnlinkedListWhenTheListIsSound) {
  auto b = Read(sb_.AgStart(agno_));
  b[300] ^= std::byte{0x5a};  // past the fields: the CRC alone fails
  Write(sb_.AgStart(agno_), b);
  FsckReport fixed = Check({.repair = true});
  EXPECT_TRUE(Says(fixed, fmt::format("unlinked list from inode {} kept", ino_))) << All(fixed);
  EXPECT_EQ(fixed.unrepaired(), 0u) << All(fixed);
  EXPECT_EQ(Header().unlinked_head, ino_);
  FsckReport after = Check({.replay = false});
  EXPECT_TRUE(after.problems.empty()) << All(after);
}

}  // namespace
}  // namespace walfs::fs
