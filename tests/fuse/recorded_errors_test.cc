// Damage found while mounted is remembered (docs/disk_format.md, "Errors
// found while mounted"): a mount that meets a damaged directory block
// records the error in the superblock, so that after a clean unmount
// fsck.walfs -p still checks the image (as e2fsck -p does when ext4's
// s_error_count is set), the next mount warns, walfs-admin -e shows it,
// and fsck.walfs -y clears it once it has repaired the image.
//
// Skips where FUSE cannot mount (no /dev/fuse, no fusermount3, not root).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fs/format/block_header.h"
#include "tests/fuse/mount_fixture.h"
#include "tests/hostile/hostile_image.h"
#include "tests/tools/tool_run.h"

namespace walfs::testing {
namespace {

using hostile::BlockKind;

class RecordedErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = FuseUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
    if (geteuid() != 0) GTEST_SKIP() << "not root";
    ASSERT_EQ(mount_.Create("walfs-errors"), "");
  }

  // The hostile base image (a multi-level directory among others) with
  // one byte of its first directory B+tree node changed and the CRC left
  // as it was: the image is clean, the block fails its check when read.
  void WriteImageWithDamagedDirectoryBlock(std::uint64_t* blkno) {
    auto base = hostile::BuildBaseImage(hostile::Flavour::kClean);
    ASSERT_TRUE(base.ok()) << base.status().ToString();
    const auto& nodes = base->blocks[static_cast<int>(BlockKind::kDirNode)];
    ASSERT_FALSE(nodes.empty());
    std::vector<std::byte> image = base->image;
    image[nodes.front().offset + nodes.front().length / 2] ^= std::byte{0x5a};
    *blkno = nodes.front().blkno;
    std::ofstream out(mount_.image(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    ASSERT_TRUE(static_cast<bool>(out));
  }

  ToolRun Tool(const std::string& program, const std::string& args) {
    return RunTool(BinDir() + "/" + program + " " + args + " " + mount_.image());
  }

  WalfsMount mount_{MountConfig{.image_size = "", .options = {}, .mount_timeout_s = 20}};
};

TEST_F(RecordedErrors, DamageFoundWhileMountedMakesPreenCheckAndTheNextMountWarnUntilRepaired) {
  std::uint64_t blkno = 0;
  WriteImageWithDamagedDirectoryBlock(&blkno);
  ASSERT_EQ(Tool("fsck.walfs", "-p").exit_code, 0) << "the damage is not yet known: preen skips a clean image";
  const std::string image = mount_.image();

  // The mount meets the damage: EUCLEAN, and a message naming the fsck
  // command for this image.
  ASSERT_EQ(mount_.Mount({}), "");
  const ToolRun find = RunTool("{ timeout -s KILL 60 find " + mount_.mountpoint() + " 2>&1 >/dev/null; }");
  EXPECT_NE(find.exit_code, 0);
  EXPECT_NE(find.out.find("Structure needs cleaning"), std::string::npos) << find.out;
  const std::string messages = Slurp(mount_.mountpoint() + "/.walfs/messages");
  EXPECT_NE(messages.find("directory block CRC (block " + std::to_string(blkno) + ")"), std::string::npos)
      << messages;
  EXPECT_NE(messages.find("fsck.walfs -f -y " + image), std::string::npos) << messages;
  ASSERT_EQ(mount_.Unmount(0), "");

  // Unmounted cleanly, but preen checks it, says why, and leaves the
  // directory to a person (fsck(8): 4, problems left).
  const ToolRun preen = Tool("fsck.walfs", "-p");
  EXPECT_EQ(preen.exit_code, 4) << preen.out;
  EXPECT_EQ(preen.out.find("not checked"), std::string::npos) << preen.out;
  EXPECT_NE(preen.out.find("errors were recorded while mounted: 1 error: directory block CRC (block " +
                           std::to_string(blkno) + ")"),
            std::string::npos)
      << preen.out;

  const ToolRun admin = Tool("walfs-admin", "-e");
  EXPECT_EQ(admin.exit_code, 0) << admin.out;
  EXPECT_NE(admin.out.find("errors = 1\nfirst error = directory block CRC"), std::string::npos) << admin.out;
  EXPECT_NE(admin.out.find("last error = directory block CRC"), std::string::npos) << admin.out;

  // The next mount warns in one line and mounts.
  ASSERT_EQ(mount_.Mount({}), "");
  const std::string again = Slurp(mount_.mountpoint() + "/.walfs/messages");
  EXPECT_NE(again.find("errors were recorded while mounted before (1 error: directory block CRC"),
            std::string::npos)
      << again;
  EXPECT_NE(mount_.Output().find("run fsck.walfs -f -y " + image), std::string::npos) << mount_.Output();
  ASSERT_EQ(mount_.Unmount(0), "");

  // A repair that leaves nothing clears the record: preen skips the image
  // again, and walfs-admin shows none.
  const ToolRun repair = Tool("fsck.walfs", "-y");
  EXPECT_EQ(repair.exit_code, 1) << repair.out;
  EXPECT_NE(repair.out.find("the record is cleared"), std::string::npos) << repair.out;
  // Its own repair mount does not warn about the record it is clearing.
  EXPECT_EQ(repair.out.find("errors were recorded while mounted before"), std::string::npos) << repair.out;
  EXPECT_EQ(Tool("walfs-admin", "-e").out, "errors = 0\n");
  const ToolRun clean = Tool("fsck.walfs", "-p");
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_NE(clean.out.find("not checked"), std::string::npos) << clean.out;
}

// Damage inside a block that passes its checks (its CRC is right): the
// first AG's bitmap says every block is free, so freeing a file's blocks
// finds them free already.  The allocator records that as a checksum
// failure is recorded.
TEST_F(RecordedErrors, DamageInsideABlockThatPassedItsChecksIsRecordedToo) {
  auto base = hostile::BuildBaseImage(hostile::Flavour::kClean);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const auto& bitmaps = base->blocks[static_cast<int>(BlockKind::kBitmap)];
  ASSERT_FALSE(bitmaps.empty());
  std::vector<std::byte> image = base->image;
  const hostile::MetaBlock& bm = bitmaps.front();
  std::span<std::byte> block(image.data() + bm.offset, bm.length);
  std::fill(block.begin() + fs::format::kBlockHeaderSize, block.end(), std::byte{0});
  fs::format::SealBlock(block);
  {
    std::ofstream out(mount_.image(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    ASSERT_TRUE(static_cast<bool>(out));
  }
  ASSERT_EQ(mount_.Mount({}), "");
  RunTool("timeout -s KILL 60 rm -rf " + mount_.mountpoint() + "/* 2>&1");
  const std::string messages = Slurp(mount_.mountpoint() + "/.walfs/messages");
  EXPECT_NE(messages.find("AG bitmap bit (block " + std::to_string(bm.blkno) + ")"), std::string::npos)
      << messages;
  // The failed free shut the filesystem down before the record could be
  // logged: the unmount writes it into the superblock in place.
  (void)mount_.Unmount(1);
  const ToolRun admin = Tool("walfs-admin", "-e");
  EXPECT_NE(admin.out.find("first error = AG bitmap bit"), std::string::npos) << admin.out;
  // Recovery, a clean unmount, and preen still checks and says why.
  ASSERT_EQ(mount_.Mount({}), "");
  ASSERT_EQ(mount_.Unmount(0), "");
  const ToolRun preen = Tool("fsck.walfs", "-p");
  EXPECT_NE(preen.exit_code, 0) << preen.out;
  EXPECT_NE(preen.out.find("errors were recorded while mounted: 1 error: AG bitmap bit"), std::string::npos)
      << preen.out;
}

TEST_F(RecordedErrors, CheckOnlyReportsTheRecordAndKeepsIt) {
  std::uint64_t blkno = 0;
  WriteImageWithDamagedDirectoryBlock(&blkno);
  ASSERT_EQ(mount_.Mount({}), "");
  RunTool("timeout -s KILL 60 find " + mount_.mountpoint() + " >/dev/null");
  ASSERT_EQ(mount_.Unmount(0), "");
  const ToolRun check = Tool("fsck.walfs", "-n");
  EXPECT_EQ(check.exit_code, 4) << check.out;
  EXPECT_NE(check.out.find("errors were recorded while mounted"), std::string::npos) << check.out;
  EXPECT_NE(Tool("walfs-admin", "-e").out.find("errors = 1\n"), std::string::npos);
}

TEST_F(RecordedErrors, AReadOnlyMountKeepsTheErrorInMemoryAndSaysSo) {
  std::uint64_t blkno = 0;
  WriteImageWithDamagedDirectoryBlock(&blkno);
  ASSERT_EQ(mount_.Mount({"ro"}), "");
  RunTool("timeout -s KILL 60 find " + mount_.mountpoint() + " >/dev/null");
  const std::string messages = Slurp(mount_.mountpoint() + "/.walfs/messages");
  EXPECT_NE(messages.find("kept in memory only"), std::string::npos) << messages;
  ASSERT_EQ(mount_.Unmount(0), "");
  EXPECT_EQ(Tool("walfs-admin", "-e").out, "errors = 0\n");
}

}  // namespace
}  // namespace walfs::testing
