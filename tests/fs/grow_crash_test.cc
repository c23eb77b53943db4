// Crash safety of walfs-growfs through the crash harness (crash/planner.h):
// a grow recorded write by write over the RecordingDevice -- the new AGs'
// metadata written and flushed past the old end, the growfs transaction, its
// log force, the writeback of the superblock and the AG header, the clean
// unmount -- and every crash state the planner makes of it (every prefix,
// torn last writes, sampled reorderings) mounted (recovery) and checked:
// the geometry is the old one or the new one, and fsck finds nothing.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "crash/planner.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/fs/quiet_mount.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using walfs::testing::kMiB;


TEST(GrowCrash, EveryCrashStateOfAGrowRecoversTheOldOrTheNewGeometryAndFsckIsClean) {
  MemoryDevice disk(16 * kMiB);
  auto made = MakeFilesystem(&disk, {.ag_count = 1, .size_bytes = 8 * kMiB});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  // A short last AG first (not recorded), so the recorded grow both
  // lengthens it and adds an AG.
  std::uint64_t old_blocks = 0;
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto r = (*fs)->Grow((made->total_blocks + MinAgBlocks(*made) + 100) * made->block_size);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    old_blocks = r->new_blocks;
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  auto rec = RecordingDevice::Create(&disk);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  std::uint64_t new_blocks = 0;
  {
    auto fs = Filesystem::MountDevice(rec->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto r = (*fs)->Grow(0);  // the whole 16 MiB
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->old_blocks, old_blocks);
    ASSERT_GT(r->new_ag_count, r->old_ag_count);
    new_blocks = r->new_blocks;
    // The grow forced into the log, then a clean unmount: its buffers (the
    // superblock, AG header and bitmap) written back and the superblock
    // rewritten clean, all recorded.  (No file is written here: a torn
    // writeback of an inode chunk block is a recovery problem of its own,
    // not the grow's -- see the branch's report.)
    ASSERT_TRUE((*fs)->Sync().ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  auto states = crash::PlanCrashStates(**rec, {.seed = 1, .samples = 20, .every_prefix = true});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  ASSERT_GT(states->size(), 10u);
  int old_seen = 0, new_seen = 0;
  for (const crash::CrashState& s : *states) {
    auto img = crash::Materialize(**rec, s);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    auto fs = Filesystem::MountDevice(img->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << s.description << ": " << fs.status().ToString();
    const std::uint64_t blocks = (*fs)->Geometry().new_blocks;
    EXPECT_TRUE(blocks == old_blocks || blocks == new_blocks) << s.description << ": " << blocks << " blocks";
    (blocks == old_blocks ? old_seen : new_seen)++;
    // Whatever geometry it recovered, the space it has is usable.
    auto st = (*fs)->Mknod({}, (*fs)->root(), "f", 0100644, 0);
    ASSERT_TRUE(st.ok()) << s.description << ": " << st.status().ToString();
    const std::string data(2 * kMiB, 'n');
    auto n = (*fs)->Write(st->st_ino, 0, data.data(), data.size());
    ASSERT_TRUE(n.ok() && *n == data.size()) << s.description;
    ASSERT_TRUE((*fs)->Unmount().ok()) << s.description;
    fs->reset();
    auto r = CheckImage(img->get(), {});
    ASSERT_TRUE(r.ok()) << s.description << ": " << r.status().ToString();
    std::string problems;
    for (const auto& p : r->problems) problems += p.message + "\n";
    EXPECT_TRUE(r->problems.empty()) << s.description << ":\n" << problems;
  }
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
  std::printf("%zu crash states: %d with the old geometry, %d with the new\n", states->size(), old_seen, new_seen);
}

}  // namespace
}  // namespace walfs::fs
