// fsck.walfs against damage in the B+trees a mounted filesystem builds: a
// large directory, a fragmented file's extent map and an inode's xattrs are
// made through Filesystem, the image is unmounted cleanly (fsck: clean),
// then one thing is damaged on the device and fsck must name it.
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/dir.h"
#include "fs/filesystem.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/format/inode_format.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/fs/fs_test_fixture.h"

namespace walfs::fs {
namespace {

using format::InodeCore;

class FsckTree : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sb = MakeFilesystem(&dev_, {.ag_count = 2, .now_s = 1});
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    sb_ = *sb;
    auto fs = Filesystem::MountDevice(&dev_, {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    const std::uint64_t root = (*fs)->root();
    // A directory past the inline room (a B+tree).
    auto dir = (*fs)->Mkdir({}, root, "big", 0755);
    ASSERT_TRUE(dir.ok());
    dir_ = dir->st_ino;
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE((*fs)->Mknod({}, dir_, "entry-" + std::to_string(i), S_IFREG | 0644, 0).ok());
    // A file with more extents than fit inline: every other block written.
    auto file = (*fs)->Mknod({}, root, "frag", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok());
    file_ = file->st_ino;
    const std::string block(4096, 'x');
    for (int i = 0; i < 60; ++i)
      ASSERT_TRUE((*fs)->Write(file_, std::uint64_t(2 * i) * 4096, block.data(), block.size()).ok());
    ASSERT_TRUE((*fs)->SetXattr(file_, "user.a", std::string(3000, 'v'), 0).ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
    FsckReport clean = Check();
    ASSERT_EQ(clean.ExitCode(), 0) << All(clean);
  }

  FsckReport Check() {
    auto r = CheckImage(&dev_, {.replay = true});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }
  static std::string All(const FsckReport& r) { return testing::FsckProblems(r); }
  static bool Says(const FsckReport& r, std::string_view what) { return testing::FsckSays(r, what); }
  std::vector<std::byte> Read(std::uint64_t blk) {
    std::vector<std::byte> b(sb_.block_size);
    EXPECT_TRUE(dev_.Read(blk * sb_.block_size, b.data(), b.size()).ok());
    return b;
  }
  void Write(std::uint64_t blk, const std::vector<std::byte>& b) {
    EXPECT_TRUE(dev_.Write(blk * sb_.block_size, b.data(), b.size()).ok());
  }
  InodeCore Inode(std::uint64_t ino) {
    auto b = Read(ino / sb_.inodes_per_block());
    auto c = format::DecodeInode(std::span<const std::byte>(b).subspan(
                                     (ino % sb_.inodes_per_block()) * format::kInodeSize, format::kInodeSize),
                                 ino);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : InodeCore{};
  }
  // The leftmost leaf of a tree rooted in an inode's literal area.
  std::uint64_t FirstLeaf(const InodeCore& c, std::uint32_t offset) {
    const BtreeRoot root = GetForkRoot(c.literal, offset);
    std::uint64_t blk = root.block;
    for (int level = root.levels - 1; level > 0; --level) blk = format::BtreeChild(Read(blk), 0);
    return blk;
  }

  MemoryDevice dev_{64ull << 20};
  format::Superblock sb_;
  // The directory's first entry renamed in place (same length, another
  // name): its key no longer matches its name's hash.
  void MisfileFirstEntry() {
    const InodeCore d = Inode(dir_);
    ASSERT_EQ(d.format, format::ForkFormat::kBtree);
    const std::uint64_t leaf = FirstLeaf(d, 0);
    auto b = Read(leaf);
    std::string v(format::BtreeValue(b, 0));
    v.back() = v.back() == 'z' ? 'y' : 'z';
    format::BtreeLeafReplace(b, 0, v);
    format::SealBlock(b);
    Write(leaf, b);
  }

  std::uint64_t dir_ = 0, file_ = 0;
};

TEST_F(FsckTree, ADirectoryEntryUnderAnotherNamesHashIsReported) {
  ASSERT_NO_FATAL_FAILURE(MisfileFirstEntry());
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "filed under the wrong hash")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

// With -y, a B+tree directory whose index does not read whole (every node
// verifies, an entry does not) is emptied -- walfs has no offline B+tree
// editor -- and the files it named are reconnected in /lost+found by
// number: names lost, files kept.
TEST_F(FsckTree, ADirectoryWhoseIndexDoesNotReadWholeIsEmptiedWithYesAndItsFilesReconnected) {
  ASSERT_NO_FATAL_FAILURE(MisfileFirstEntry());
  auto fixed = CheckImage(&dev_, {.repair = true, .clear_and_reconnect = true});
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_TRUE(Says(*fixed, "is filed under the wrong hash: directory emptied")) << All(*fixed);
  EXPECT_EQ(fixed->unrepaired(), 0u) << All(*fixed);
  FsckReport after = Check();
  EXPECT_TRUE(after.problems.empty()) << All(after);
  auto fs = Filesystem::MountDevice(&dev_, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto count = [&](std::uint64_t dir) {
    int n = 0;
    EXPECT_TRUE((*fs)->ReadDir(dir, 0, [&](std::string_view name, std::uint64_t, std::uint32_t, std::uint64_t) {
                       n += name != "." && name != "..";
                       return true;
                     }).ok());
    return n;
  };
  EXPECT_EQ(count(dir_), 0);
  auto lf = (*fs)->Lookup((*fs)->root(), "lost+found");
  ASSERT_TRUE(lf.ok()) << lf.status().ToString();
  EXPECT_EQ(count(lf->st_ino), 200);
  ASSERT_TRUE((*fs)->Unmount().ok());
}

TEST_F(FsckTree, ADirectoryNodeWithABadChecksumIsReported) {
  const std::uint64_t leaf = FirstLeaf(Inode(dir_), 0);
  auto b = Read(leaf);
  b[200] ^= std::byte{1};
  Write(leaf, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "directory tree")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckTree, AnExtentTreeNodeOwnedByAnotherInodeIsReported) {
  const InodeCore f = Inode(file_);
  ASSERT_EQ(f.format, format::ForkFormat::kBtree);
  const std::uint64_t leaf = FirstLeaf(f, 0);
  auto b = Read(leaf);
  format::BlockHeader h = format::DecodeBlockHeader(b);
  h.owner = dir_;
  format::EncodeBlockHeader(h, b);
  format::SealBlock(b);
  Write(leaf, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "belongs to")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckTree, AnExtentMappingBlocksAlreadyOwnedIsReportedAsDoubleUse) {
  const std::uint64_t leaf = FirstLeaf(Inode(file_), 0);
  auto b = Read(leaf);
  // Point the second extent at the first one's blocks.
  format::Extent e0 = format::DecodeExtent(std::string(format::BtreeValue(b, 0)).data());
  std::string v1(format::BtreeValue(b, 1));
  format::Extent e1 = format::DecodeExtent(v1.data());
  e1.disk_block = e0.disk_block;
  format::EncodeExtent(e1, v1.data());
  format::BtreeLeafReplace(b, 1, v1);
  format::SealBlock(b);
  Write(leaf, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "is claimed twice (again by inode")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4) << All(r);
}

TEST_F(FsckTree, ADamagedXattrTreeIsReported) {
  const InodeCore f = Inode(file_);
  ASSERT_EQ(f.aformat, format::ForkFormat::kBtree);
  const std::uint64_t leaf = FirstLeaf(f, kXattrForkOffset);
  auto b = Read(leaf);
  b[100] ^= std::byte{0x80};
  Write(leaf, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "xattr tree")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckTree, AnXattrNameUnderAnotherNamesHashIsReported) {
  const InodeCore f = Inode(file_);
  ASSERT_EQ(f.aformat, format::ForkFormat::kBtree);
  const std::uint64_t leaf = FirstLeaf(f, kXattrForkOffset);
  auto b = Read(leaf);
  // The first record of "user.a": namelen, name, ...  Same length, another
  // name ("user.b"): listxattr would list it, getxattr could not find it.
  std::string v(format::BtreeValue(b, 0));
  ASSERT_EQ(v.substr(0, 7), std::string("\x06user.a"));
  v[6] = 'b';
  format::BtreeLeafReplace(b, 0, v);
  format::SealBlock(b);
  Write(leaf, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "xattr \"user.b\" is filed under the wrong hash")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

TEST_F(FsckTree, AnExtentCountThatDisagreesWithTheTreeIsReported) {
  const std::uint64_t blk = file_ / sb_.inodes_per_block();
  auto b = Read(blk);
  InodeCore f = Inode(file_);
  f.nextents += 1;
  format::EncodeInode(f, std::span<std::byte>(b).subspan((file_ % sb_.inodes_per_block()) * format::kInodeSize,
                                                         format::kInodeSize));
  Write(blk, b);
  FsckReport r = Check();
  EXPECT_TRUE(Says(r, "extents but counts")) << All(r);
  EXPECT_EQ(r.ExitCode(), 4);
}

}  // namespace
}  // namespace walfs::fs
