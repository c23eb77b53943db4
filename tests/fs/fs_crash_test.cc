// Crash specs of the mounted filesystem over the write-recording device,
// through the crash harness (crash/, docs/crashtest.md): a seeded random
// POSIX workload of 400 operations, and short operation sequences after an
// fsync (CrashMonkey's seq-1), each checked in every crash state the
// planner makes (every flush prefix, torn last writes, sampled reorderings)
// against the Checker's oracles: recovery and fsck, fsynced files, no stale
// data, the namespace a prefix of the log (rename atomicity), idempotent
// recovery.  FsCrashRegression below keeps the bugs this test found,
// reduced.  WALFS_FS_CRASH_SEEDS=N runs random seeds 1..N (default 3; 2
// under ASan, none under TSan); walfs-crashtest runs more.
#include <sys/stat.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "crash/namespace_oracle.h"
#include "crash/planner.h"
#include "crash/runner.h"
#include "crash/short_workload.h"
#include "crash/tree.h"
#include "crash/workload.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/sanitizer_build.h"

namespace walfs::fs {
namespace {

using crash::kImageBytes;
using crash::Problems;
constexpr Caller kRoot{};

// Random seeds per build (tests/sanitizer_build.h): each is a few seconds
// in an optimized build, ten times that under TSan, where ctest's
// walfs_crashtest_quick runs the random workload instead (two seeds of 100
// operations: crash/CMakeLists.txt).
constexpr walfs::testing::Counts kCrashSeeds{.full = 3, .address = 2, .thread = 0};

std::vector<std::uint64_t> Seeds() {
  const char* env = std::getenv("WALFS_FS_CRASH_SEEDS");
  const int n = env ? std::max(1, std::atoi(env)) : walfs::testing::ForBuild(kCrashSeeds);
  std::vector<std::uint64_t> v;
  for (int i = 1; i <= n; ++i) v.push_back(static_cast<std::uint64_t>(i));
  return v;
}

void ExpectPasses(const crash::RunResult& r) {
  EXPECT_TRUE(r.ok()) << r.failure;
  std::printf("%s seed %llu: %zu ops, %zu device ops, %zu flushes, %zu crash states checked%s%s\n",
              std::string(crash::WorkloadName(r.workload)).c_str(), static_cast<unsigned long long>(r.seed), r.ops,
              r.device_ops, r.flushes, r.crash_states, r.sequence.empty() ? "" : ": ", r.sequence.c_str());
}

class FsCrash : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FsCrash, EveryCrashStateKeepsFsyncedFilesAndNoStaleData) {
  const crash::RunResult r = crash::RunCrashTest({.workload = crash::WorkloadKind::kRandom, .seed = GetParam()});
  EXPECT_GT(r.flushes, 10u);
  ExpectPasses(r);
  RecordProperty("crash_states", static_cast<int>(r.crash_states));
}

INSTANTIATE_TEST_SUITE_P(Seeds, FsCrash, ::testing::ValuesIn(Seeds()));

// The one-seed campaigns below run the random workload's full 400
// operations, half of them under ASan and a quarter under TSan (each crash
// state is a mount and a check there, five and ten times dearer), with 40
// reordered samples, 8 under TSan (as walfs_crashtest_quick there: each
// sample's check runs on one thread beside the same mount threads).
constexpr int kOneSeedOps = walfs::testing::ForBuild({.full = 400, .address = 200, .thread = 100});
constexpr int kOneSeedSamples = walfs::testing::ForBuild({.full = 40, .address = 40, .thread = 8});

// With -o discard the recording holds a write of zeros for every freed run
// once its checkpoint is on disk (docs/fs.md, "Discard"), and every crash
// state must still pass every oracle: a discard of a block a live file owns
// would show as lost fsynced data.  What it does not catch: a discard issued
// before the free was on disk (the Checker does not check the contents of a
// file whose unlink a crash state undoes; discarding at commit time passed
// here).  TrimTest and OnlineDiscardTest (trim_test.cc) cover that window.
TEST(FsCrashDiscard, EveryCrashStateWithOnlineDiscardKeepsFsyncedFilesAndNoStaleData) {
  const crash::RunResult r =
      crash::RunCrashTest({.seed = 1, .ops = kOneSeedOps, .samples = kOneSeedSamples, .discard = true});
  ExpectPasses(r);
}
// Writes into fallocated space: the data (and the zeros a write puts over a
// small unwritten remainder, MountOptions::zeroout_kb) must be on the device
// before the transaction that marks the blocks written, or a crash state
// shows a block's old bytes where the file should read zeros or the write.
TEST(FsCrashPreallocated, EveryCrashStateOfWritesIntoUnwrittenExtentsKeepsFsyncedFilesAndNoStaleData) {
  const crash::RunResult r =
      crash::RunCrashTest({.seed = 1, .ops = kOneSeedOps, .samples = kOneSeedSamples, .preallocate = true});
  ExpectPasses(r);
}
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FsCrash);  // no seeds under TSan

// Every core operation on each file, then an fsync of it (seq-1's first
// row); walfs-crashtest --workload short runs the rest.  Under TSan every
// fourth seed (file A's operations, every other one): the crash states are
// checked single-threaded, so the race detector gains nothing from the rest.
constexpr std::uint64_t kShortStride = walfs::testing::ForBuild({.full = 1, .address = 1, .thread = 4});

class FsCrashShort : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FsCrashShort, EveryCrashStateAfterTheSequenceKeepsFsyncedFilesAndAtomicNames) {
  const crash::RunResult r = crash::RunCrashTest({.workload = crash::WorkloadKind::kShort, .seed = GetParam()});
  EXPECT_GT(r.crash_states, 0u);
  ExpectPasses(r);
}

INSTANTIATE_TEST_SUITE_P(Seq1, FsCrashShort, ::testing::Range<std::uint64_t>(1, crash::kShortCoreOps + 1, kShortStride));

TEST(FsCrashShortSequence, SeedsNumberEverySingleOpThenEveryPairThenRandomLongerOnes) {
  std::set<std::string> seen;
  for (std::uint64_t s = 1; s <= crash::kSeq1; ++s) {
    const auto seq = crash::ShortSequence(s);
    ASSERT_EQ(seq.size(), 1u);
    EXPECT_NE(seq[0].persist, crash::ShortPersist::kNone) << "a single op ends with a persistence point";
    seen.insert(crash::DescribeSequence(seq));
  }
  EXPECT_EQ(seen.size(), crash::kSeq1);
  EXPECT_EQ(crash::ShortSequence(crash::kSeq1 + 1).size(), 2u);
  EXPECT_EQ(crash::ShortSequence(crash::kSeq1 + crash::kSeq2).size(), 2u);
  const auto longer = crash::ShortSequence(crash::kSeq1 + crash::kSeq2 + 1);
  EXPECT_GE(longer.size(), 3u);
  EXPECT_NE(longer.back().persist, crash::ShortPersist::kNone);
}

// The oracle itself: with b fsynced, after "rename a over b" b is the old
// file or the new one -- never missing, never both names -- and an fsync
// that returned after the rename leaves only the new state.
TEST(FsCrashNamespaceOracle, RenamedOverNameHoldsTheOldOrTheNewFile) {
  crash::History h;
  const crash::Name a{1, "a"}, b{1, "b"};
  h.log = {{.start = 0, .end = 1, .text = "create a", .touched = {1, 10}, .fsynced = 0},
           {.start = 1, .end = 2, .text = "create b", .touched = {1, 11}, .fsynced = 0},
           {.start = 2, .end = 3, .text = "fsync b", .touched = {}, .fsynced = 11},
           {.start = 3, .end = 4, .text = "rename a over b", .touched = {1, 10, 11}, .fsynced = 0},
           {.start = 4, .end = 6, .text = "fsync a", .touched = {}, .fsynced = 10}};
  h.namespaces = {{-1, {}}, {0, {{a, 10}}}, {1, {{a, 10}, {b, 11}}}, {3, {{b, 10}}}};
  const crash::NamespaceOracle oracle(h);
  EXPECT_EQ(oracle.Check({{a, 10}, {b, 11}}, 5, 5), std::nullopt) << "the old file";
  EXPECT_EQ(oracle.Check({{b, 10}}, 5, 5), std::nullopt) << "the new file";
  EXPECT_NE(oracle.Check({{a, 10}}, 5, 5), std::nullopt) << "b missing";
  EXPECT_NE(oracle.Check({{a, 10}, {b, 10}}, 5, 5), std::nullopt) << "both names";
  EXPECT_NE(oracle.Check({{b, 11}}, 5, 5), std::nullopt) << "a missing, b old";
  EXPECT_NE(oracle.Check({{a, 10}, {b, 11}}, 6, 6), std::nullopt) << "the fsync forced the rename";
  EXPECT_NE(oracle.Check({{b, 10}}, 3, 3), std::nullopt) << "the rename had not begun";
}

// ---------------------------------------------------------------- reduced bugs

struct Mounted {
  Mounted() {
    EXPECT_TRUE(MakeFilesystem(&disk, {.log_bytes = MinLogBytes(4096), .now_s = 1}).ok());
    rec = std::move(RecordingDevice::Create(&disk)).value();
    fs = std::move(Filesystem::MountDevice(rec.get(), {})).value();
  }
  std::uint64_t Create(const std::string& name) {
    auto st = fs->Mknod(kRoot, fs->root(), name, S_IFREG | 0644, 0);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return st.ok() ? st->st_ino : 0;
  }
  // Crashes and recovers the image as it was when everything issued landed.
  std::unique_ptr<MemoryDevice> CrashAndRecover() {
    fs.reset();
    auto img = rec->MaterializePrefix(rec->op_count());
    EXPECT_TRUE(img.ok());
    return std::move(img).value();
  }
  MemoryDevice disk{kImageBytes};
  std::unique_ptr<RecordingDevice> rec;
  std::unique_ptr<Filesystem> fs;
};

// An inode the kernel forgot (evicted with its last_seq and data_dirty)
// and looked up again: its fsync still forces its changes.
TEST(FsCrashRegression, FsyncAfterTheInodeWasForgottenForcesItsChanges) {
  Mounted m;
  const std::uint64_t ino = m.Create("a");
  const std::string data(10000, 'x');
  ASSERT_TRUE(m.fs->Write(ino, 0, data.data(), data.size()).ok());
  m.fs->Forget(ino, 1);  // the kernel drops the inode; the file stays
  ASSERT_TRUE(m.fs->Lookup(m.fs->root(), "a").ok());  // open("a")
  const std::size_t before = m.rec->op_count();
  ASSERT_TRUE(m.fs->Fsync(ino, false).ok());
  EXPECT_GT(m.rec->op_count(), before) << "fsync issued no I/O";
  auto img = m.CrashAndRecover();
  auto fs = Filesystem::MountDevice(img.get(), {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto st = (*fs)->Lookup((*fs)->root(), "a");
  ASSERT_TRUE(st.ok()) << "the fsynced file is gone: " << st.status().ToString();
  EXPECT_EQ(st->st_size, static_cast<off_t>(data.size()));
}

// A freed data block reused as metadata (here an xattr leaf) whose old
// bytes read as a later LSN at the stamp's offset is still replayed:
// recovery trusts a stamp only in a block of the logged type at its address
// (format::BlockStampValid).
TEST(FsCrashRegression, DataBlockReusedAsMetadataIsReplayed) {
  Mounted m;
  const std::uint64_t a = m.Create("a");
  const std::string data(4096, '\xff');  // reads as LSN 0xffffffff/0xffffffff
  ASSERT_TRUE(m.fs->Write(a, 0, data.data(), data.size()).ok());
  ASSERT_TRUE(m.fs->Fsync(a, false).ok());
  ASSERT_TRUE(m.fs->Unlink(m.fs->root(), "a").ok());
  m.fs->Forget(a, 1);  // frees a's block
  const std::uint64_t b = m.Create("b");
  ASSERT_TRUE(m.fs->Fsync(b, false).ok());  // the free is on disk: the block is reusable
  const std::uint64_t c = m.Create("c");
  ASSERT_TRUE(m.fs->SetXattr(c, "user.x", "value", 0).ok());  // its leaf takes a's block
  ASSERT_TRUE(m.fs->Fsync(c, false).ok());
  auto img = m.CrashAndRecover();
  MemoryDevice copy(img->Contents());
  auto r = CheckImage(&copy, {.replay = true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->problems.empty()) << Problems(*r);
  auto fs = Filesystem::MountDevice(img.get(), {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto v = (*fs)->GetXattr(c, "user.x");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "value");
}

// A metadata block whose writeback was torn after its first sector holds
// the new LSN stamp over old bytes.  Recovery must not take the stamp's
// word for the rest of the block: an inode chunk block torn so kept a
// stale inode ("inode N is free but the inode map says in use"), found by
// the growfs crash spec.  Every prefix of an fsync and a clean unmount's
// writeback, each write also torn to one sector, recovers clean.
TEST(FsCrashRegression, AWritebackTornAfterItsFirstSectorIsReplayedNotTrusted) {
  Mounted m;
  std::vector<std::uint64_t> inos;
  for (const char* name : {"a", "b", "c"}) {
    inos.push_back(m.Create(name));
    const std::string data(6000, name[0]);
    ASSERT_TRUE(m.fs->Write(inos.back(), 0, data.data(), data.size()).ok());
  }
  ASSERT_TRUE(m.fs->Mkdir(kRoot, m.fs->root(), "d", 0755).ok());
  ASSERT_TRUE(m.fs->Fsync(inos.back(), false).ok());
  const std::size_t synced = m.rec->op_count();
  ASSERT_TRUE(m.fs->Unmount().ok());  // writes back inode chunks, bitmaps, the root directory
  m.fs.reset();
  auto states = crash::PlanCrashStates(*m.rec, {.seed = 1, .samples = 8, .first_op = synced, .every_prefix = true});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  int torn = 0;
  for (const crash::CrashState& s : *states) {
    if (s.kind == crash::CrashState::Kind::kTorn) ++torn;
    auto img = crash::Materialize(*m.rec, s);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    MemoryDevice copy(img.value()->Contents());
    auto r = CheckImage(&copy, {.replay = true});
    ASSERT_TRUE(r.ok()) << s.description << ": " << r.status().ToString();
    EXPECT_TRUE(r->problems.empty()) << s.description << ":\n" << Problems(*r);
    auto fs = Filesystem::MountDevice(img->get(), {});
    ASSERT_TRUE(fs.ok()) << s.description << ": " << fs.status().ToString();
    for (const char* name : {"a", "b", "c"}) {
      auto st = (*fs)->Lookup((*fs)->root(), name);
      ASSERT_TRUE(st.ok()) << s.description << ": " << name << ": " << st.status().ToString();
      EXPECT_EQ(st->st_size, 6000) << s.description << ": " << name;
    }
  }
  EXPECT_GT(torn, 0) << "no torn writeback was planned";
}

}  // namespace
}  // namespace walfs::fs
