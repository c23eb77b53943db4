// fsck over an image whose log cannot be replayed and whose inode map is
// older than its inodes and directories (issue 24, item 7): the map block is
// relogged by every create, so the AIL writes it back less often than the
// inode chunks and directory blocks it describes.  After a crash under load
// the written-back metadata names files in chunks the map on disk has never
// heard of.  A `-o norecovery` mount reads them all; -L must keep them all
// (the chunks are the truth, not the map: xfs_repair -L keeps what the
// written-back metadata holds), and -y / -p must refuse to touch the image
// until the log question is settled.
//
// The image is composed from three snapshots of one workload, so that it is
// the same from run to run: the metadata as the final writeback left it,
// the superblock and the (dirty) log as they were at the crash, and the
// AG headers, block bitmaps and inode maps as they were before the
// workload.  One byte of the log's oldest record is then flipped.
#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "fs/filesystem.h"
#include "fs/format/ag_format.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_region.h"
#include "tests/fs/fs_test_fixture.h"
#include "tests/fs/quiet_mount.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using walfs::testing::kMiB;
constexpr int kDirs = 6;
constexpr int kFilesPerDir = 200;  // B+tree directories, 19 inode chunks in all

// Every path reachable from the root, "/" for the root itself excluded.
std::set<std::string> Paths(Filesystem* fs) {
  std::set<std::string> out;
  std::vector<std::pair<std::uint64_t, std::string>> dirs{{fs->root(), ""}};
  while (!dirs.empty()) {
    const std::uint64_t d = dirs.back().first;
    const std::string path = dirs.back().second;  // not a structured binding: the lambda captures it
    dirs.pop_back();
    Status s = fs->ReadDir(d, 0, [&](std::string_view name, std::uint64_t ino, std::uint32_t type, std::uint64_t) {
      if (name == "." || name == "..") return true;
      const std::string p = path + "/" + std::string(name);
      out.insert(p);
      if (type == 4) dirs.push_back({ino, p});  // DT_DIR
      return true;
    });
    EXPECT_TRUE(s.ok()) << path << ": " << s.ToString();
  }
  return out;
}

class FsckStaleMap : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryDevice dev(64 * kMiB);
    auto made = MakeFilesystem(&dev, {.ag_count = 2});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    sb_ = *made;
    {
      auto fs = Filesystem::MountDevice(&dev, testing::QuietMount());
      ASSERT_TRUE(fs.ok()) << fs.status().ToString();
      for (int i = 0; i < 20; ++i) ASSERT_TRUE((*fs)->Mknod({}, (*fs)->root(), "early" + std::to_string(i), 0100644, 0).ok());
      ASSERT_TRUE((*fs)->Unmount().ok());
    }
    const std::vector<std::byte> before = dev.Contents();
    std::vector<std::byte> crashed;
    {
      auto fs = Filesystem::MountDevice(&dev, testing::QuietMount());
      ASSERT_TRUE(fs.ok()) << fs.status().ToString();
      for (int d = 0; d < kDirs; ++d) {
        auto dir = (*fs)->Mkdir({}, (*fs)->root(), "d" + std::to_string(d), 0755);
        ASSERT_TRUE(dir.ok()) << dir.status().ToString();
        for (int i = 0; i < kFilesPerDir; ++i) {
          auto f = (*fs)->Mknod({}, dir->st_ino, "f" + std::to_string(i), 0100644, 0);
          ASSERT_TRUE(f.ok()) << f.status().ToString();
          const std::string data = "file " + std::to_string(d) + "/" + std::to_string(i);
          ASSERT_TRUE((*fs)->Write(f->st_ino, 0, data.data(), data.size()).ok());
        }
      }
      ASSERT_TRUE((*fs)->Sync().ok());
      crashed = dev.Contents();  // the log forced, nothing written back yet
      ASSERT_TRUE((*fs)->Unmount().ok());
    }
    std::vector<std::byte> image = dev.Contents();  // everything written back
    auto copy = [&](const std::vector<std::byte>& from, std::uint64_t block, std::uint64_t blocks) {
      const std::size_t at = block * sb_.block_size, n = blocks * sb_.block_size;
      std::copy(from.begin() + at, from.begin() + at + n, image.begin() + at);
    };
    copy(crashed, 0, sb_.data_start());  // superblock (not clean) and the dirty log
    for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno)  // header, bitmap and map as before
      copy(before, sb_.AgStart(agno), format::AgFirstFree(sb_));
    image_ = std::make_unique<MemoryDevice>(std::move(image));
    FlipAByteOfTheOldestRecord();
    ASSERT_FALSE(Filesystem::MountDevice(image_.get(), testing::QuietMount()).ok()) << "recovery took the damaged log";
  }

  void FlipAByteOfTheOldestRecord() {
    const journal::LogRegion region{image_.get(), sb_.log_offset(), sb_.log_sectors()};
    auto pos = journal::FindLogPosition(region, journal::RecoveryWindowSectors(region.sectors));
    ASSERT_TRUE(pos.ok()) << pos.status().ToString();
    ASSERT_FALSE(pos->clean);
    auto rec = journal::ReadRecordAt(region, journal::SectorOf(pos->tail), journal::CycleOf(pos->tail));
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    ASSERT_GT(rec->record.payload.size(), 8u);
    const std::uint64_t at = sb_.log_offset() + std::uint64_t{journal::SectorOf(pos->tail)} * journal::kLogSectorSize +
                             (rec->sectors > 1 ? journal::kLogSectorSize + 8 : journal::kRecordHeaderFixedSize + 4);
    std::byte b;
    ASSERT_TRUE(image_->Read(at, &b, 1).ok());
    b ^= std::byte{0x40};
    ASSERT_TRUE(image_->Write(at, &b, 1).ok());
  }

  // What a `-o norecovery` mount reads.
  std::set<std::string> ReadWithoutTheLog() {
    MountOptions o = testing::QuietMount();
    o.read_only = o.norecovery = true;
    auto fs = Filesystem::MountDevice(image_.get(), o);
    EXPECT_TRUE(fs.ok()) << fs.status().ToString();
    if (!fs.ok()) return {};
    std::set<std::string> paths = Paths(fs->get());
    EXPECT_TRUE((*fs)->Unmount().ok());
    return paths;
  }

  format::Superblock sb_;
  std::unique_ptr<MemoryDevice> image_;
};

TEST_F(FsckStaleMap, MinusLKeepsEveryEntryTheWrittenBackMetadataHoldsWhenTheInodeMapIsStale) {
  const std::set<std::string> readable = ReadWithoutTheLog();
  ASSERT_GE(readable.size(), std::size_t{kDirs * kFilesPerDir}) << "the scenario lost its files before fsck ran";

  auto fixed = CheckImage(image_.get(), {.replay = true, .repair = true, .clear_and_reconnect = true, .zero_log = true});
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_LE(fixed->ExitCode(), 1) << testing::FsckProblems(*fixed);
  EXPECT_TRUE(testing::FsckSays(*fixed, "missing from the inode map")) << testing::FsckProblems(*fixed);
  // Every other directory went to AG 1 (the directory rotor), whose inode
  // map had no block written before the workload (uninit_ag): the repair
  // writes the map's first block there and counts it in the AG header.
  EXPECT_TRUE(testing::FsckSays(*fixed, "AG 1: the inode chunk")) << testing::FsckProblems(*fixed);

  auto again = CheckImage(image_.get(), {.replay = false});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(testing::FsckProblems(*again), "") << "after -L";

  auto fs = Filesystem::MountDevice(image_.get(), testing::QuietMount());
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  const std::set<std::string> kept = Paths(fs->get());
  std::size_t lost = 0;
  for (const std::string& p : readable) lost += kept.contains(p) ? 0 : 1;
  std::printf("norecovery read %zu entries; after fsck -L %zu of them are kept\n", readable.size(),
              readable.size() - lost);
  EXPECT_EQ(lost, 0u) << "entries -L dropped of " << readable.size();
  // The rebuilt map hands out no inode that is in use: new files land beside the old.
  auto d0 = (*fs)->Lookup((*fs)->root(), "d0");
  ASSERT_TRUE(d0.ok());
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE((*fs)->Mknod({}, d0->st_ino, "after" + std::to_string(i), 0100644, 0).ok()) << i;
  ASSERT_TRUE((*fs)->Unmount().ok());
  fs->reset();
  auto last = CheckImage(image_.get(), {.replay = false});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(testing::FsckProblems(*last), "") << "after using the repaired image";
}

// xfs_repair refuses to run over a log it cannot replay until -L is given:
// -y and -p must not trade what norecovery can still read for a clean image.
TEST_F(FsckStaleMap, RepairRefusesAnUnreplayableLogAndChangesNoByte) {
  const std::vector<std::byte> before = image_->Contents();
  for (const FsckOptions& o : {FsckOptions{.replay = true, .repair = true, .clear_and_reconnect = true},
                               FsckOptions{.replay = true, .repair = true, .skip_if_clean = true}}) {
    auto r = CheckImage(image_.get(), o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->ExitCode(), 4) << testing::FsckProblems(*r);
    ASSERT_EQ(r->problems.size(), 1u) << testing::FsckProblems(*r);
    const std::string& line = r->problems[0].message;
    EXPECT_NE(line.find("the log cannot be replayed"), std::string::npos) << line;
    EXPECT_NE(line.find("-o ro,norecovery"), std::string::npos) << line;
    EXPECT_NE(line.find("fsck.walfs -L"), std::string::npos) << line;
    EXPECT_TRUE(image_->Contents() == before) << "the refused repair changed the image";
  }
  // -n still checks, read-only.
  auto n = CheckImage(image_.get(), {.replay = false});
  ASSERT_TRUE(n.ok());
  EXPECT_GT(n->problems.size(), 1u) << "-n stopped at the log";
  EXPECT_TRUE(image_->Contents() == before) << "-n changed the image";
}

}  // namespace
}  // namespace walfs::fs
