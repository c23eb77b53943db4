// fsck.walfs -y after the log is lost over an image whose metadata was
// partly written back (issue 17: "-L zeroes the log ... then repairs the
// metadata, with every file that can be reached kept").  A workload in a
// large (B+tree) and a small (inline) directory is recorded write by write
// through a sync and the unmount's writeback; in every crash state the
// planner makes of it the log is then zeroed -- as fsck -L does to a log
// recovery cannot read -- and the repair must leave an image that a
// no-modify check finds clean, that mounts, and that still holds every file
// that was on disk before the workload (by name, or by number in
// /lost+found), with its data.
#include <sys/stat.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "crash/planner.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/fsck_log.h"
#include "fs/mkfs.h"
#include "tests/fs/quiet_mount.h"
#include "tests/sanitizer_build.h"
#include "tests/sizes.h"

namespace walfs::fs {
namespace {

using walfs::testing::kMiB;
constexpr int kOldFiles = 300;


std::string Content(int i) { return "old file " + std::to_string(i) + std::string(100 + i, 'o'); }

// Every regular file's contents reachable from the root.
std::multiset<std::string> Contents(Filesystem* fs) {
  std::multiset<std::string> out;
  std::vector<std::uint64_t> dirs{fs->root()};
  while (!dirs.empty()) {
    const std::uint64_t d = dirs.back();
    dirs.pop_back();
    std::vector<std::pair<std::uint64_t, std::uint32_t>> children;
    EXPECT_TRUE(fs->ReadDir(d, 0, [&](std::string_view name, std::uint64_t ino, std::uint32_t type, std::uint64_t) {
                      if (name != "." && name != "..") children.push_back({ino, type});
                      return true;
                    }).ok());
    for (const auto& [ino, type] : children) {
      auto st = fs->GetAttr(ino);
      if (!st.ok()) {
        ADD_FAILURE() << "inode " << ino << ": " << st.status().ToString();
        continue;
      }
      if (S_ISDIR(st->st_mode)) {
        dirs.push_back(ino);
      } else if (S_ISREG(st->st_mode)) {
        std::string data(static_cast<std::size_t>(st->st_size), '\0');
        auto n = fs->Read(ino, 0, data.size(), data.data());
        EXPECT_TRUE(n.ok()) << "inode " << ino;
        out.insert(data);
      }
    }
  }
  return out;
}

std::string Problems(const FsckReport& r, bool unrepaired_only) {
  std::string all;
  for (const auto& p : r.problems)
    if (!unrepaired_only || !p.repaired) all += p.message + "\n";
  return all;
}

TEST(FsckRepairCrash, ALostLogOverAPartlyWrittenBackImageIsRepairedKeepingEveryFile) {
  MemoryDevice disk(32 * kMiB);
  auto made = MakeFilesystem(&disk, {.ag_count = 2});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  {
    auto fs = Filesystem::MountDevice(&disk, testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto big = (*fs)->Mkdir({}, (*fs)->root(), "big", 0755);
    ASSERT_TRUE(big.ok());
    for (int i = 0; i < kOldFiles; ++i) {
      auto f = (*fs)->Mknod({}, big->st_ino, "old" + std::to_string(i), 0100644, 0);
      ASSERT_TRUE(f.ok()) << i;
      const std::string c = Content(i);
      ASSERT_TRUE((*fs)->Write(f->st_ino, 0, c.data(), c.size()).ok());
    }
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  // Recorded: creates and writes in both directories, removals and a
  // rename of old files, a sync, and the unmount's writeback.
  auto rec = RecordingDevice::Create(&disk);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  std::set<int> touched;
  {
    auto fs = Filesystem::MountDevice(rec->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    auto big = (*fs)->Lookup((*fs)->root(), "big");
    auto small = (*fs)->Mkdir({}, (*fs)->root(), "small", 0755);
    ASSERT_TRUE(big.ok() && small.ok());
    for (int i = 0; i < 40; ++i) {
      auto f = (*fs)->Mknod({}, i % 2 ? big->st_ino : small->st_ino, "new" + std::to_string(i), 0100644, 0);
      ASSERT_TRUE(f.ok()) << i;
      const std::string data(8192, 'n');
      ASSERT_TRUE((*fs)->Write(f->st_ino, 0, data.data(), data.size()).ok());
    }
    for (int i = 0; i < 100; i += 3) {
      ASSERT_TRUE((*fs)->Unlink(big->st_ino, "old" + std::to_string(i)).ok()) << i;
      touched.insert(i);
    }
    ASSERT_TRUE((*fs)->Rename(big->st_ino, "old1", small->st_ino, "moved", 0).ok());
    ASSERT_TRUE((*fs)->Sync().ok());
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  // Every prefix in the plain build; under ASan every other one and under
  // TSan every fourth (and each that ends at a flush), and under TSan then
  // every fourth of those states: fsck is single-threaded and the mount's
  // threads are the same in each.
  const int stride = walfs::testing::ForBuild({.full = 1, .address = 2, .thread = 4});
  const int thin = walfs::testing::ForBuild({.full = 1, .address = 1, .thread = 4});
  auto states = crash::PlanCrashStates(
      **rec, {.seed = 1, .samples = 10, .every_prefix = true, .prefix_stride = static_cast<std::size_t>(stride),
              .state_stride = static_cast<std::size_t>(thin)});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  ASSERT_GT(states->size(), 50u / static_cast<std::size_t>(stride * thin));
  int repaired_images = 0;
  for (const crash::CrashState& s : *states) {
    auto img = crash::Materialize(**rec, s);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    ASSERT_TRUE(ZeroLog(img->get(), *made).ok()) << s.description;
    auto fixed = CheckImage(img->get(), {.replay = true, .repair = true, .clear_and_reconnect = true});
    ASSERT_TRUE(fixed.ok()) << s.description << ": " << fixed.status().ToString();
    EXPECT_LE(fixed->ExitCode(), 1) << s.description << ": left unrepaired:\n" << Problems(*fixed, true);
    if (!fixed->problems.empty()) ++repaired_images;
    auto again = CheckImage(img->get(), {.replay = false});
    ASSERT_TRUE(again.ok()) << s.description;
    EXPECT_EQ(Problems(*again, false), "") << s.description << ": after the repair:\n" << Problems(*fixed, false);
    auto fs = Filesystem::MountDevice(img->get(), testing::QuietMount());
    ASSERT_TRUE(fs.ok()) << s.description << ": " << fs.status().ToString();
    const std::multiset<std::string> contents = Contents(fs->get());
    for (int i = 0; i < kOldFiles; ++i) {
      if (touched.contains(i) || i == 1) continue;  // removed or moved by the workload: either side is right
      EXPECT_TRUE(contents.contains(Content(i))) << s.description << ": old file " << i << " lost";
    }
    // And usable: a file in lost+found's place of the tree, written and
    // read back.
    auto f = (*fs)->Mknod({}, (*fs)->root(), "after", 0100644, 0);
    ASSERT_TRUE(f.ok()) << s.description << ": " << f.status().ToString();
    ASSERT_TRUE((*fs)->Write(f->st_ino, 0, "after", 5).ok()) << s.description;
    ASSERT_TRUE((*fs)->Unmount().ok()) << s.description;
    fs->reset();
    auto last = CheckImage(img->get(), {.replay = false});
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(Problems(*last, false), "") << s.description << ": after using the repaired image";
  }
  EXPECT_GT(repaired_images, 0) << "no crash state needed a repair: the test tests nothing";
  std::printf("%zu crash states with the log lost: %d needed repairs, all repaired\n", states->size(),
              repaired_images);
}

}  // namespace
}  // namespace walfs::fs
