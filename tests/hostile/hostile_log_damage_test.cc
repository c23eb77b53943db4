// The log-damage flavour (docs/hostile_images.md, "Log damage"): a crashed
// image whose log is damaged must mount or be refused with a way out, mount
// with norecovery, and be repaired by fsck -L with every durable file kept
// (issue 17).
//
// WALFS_HOSTILE_LOG_SEEDS=N runs N rounds (default 36: six per damage kind;
// 12 under ASan, 6 under TSan); WALFS_HOSTILE_SEED_BASE=S starts at seed S
// (to replay one round: WALFS_HOSTILE_LOG_SEEDS=1 WALFS_HOSTILE_SEED_BASE=<seed>).
#include <algorithm>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "tests/hostile/hostile_guard.h"
#include "tests/hostile/hostile_log_damage.h"
#include "tests/hostile/hostile_log_steps.h"
#include "tests/sanitizer_build.h"
#include "journal/log.h"
#include "journal/lsn.h"

namespace walfs::hostile {
namespace {

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace
const BaseImage& Base() {
  static const BaseImage* b = [] {
    auto built = BuildBaseImage(Flavour::kLogDamage);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    if (!built.ok()) std::abort();
    return new BaseImage(std::move(built).value());
  }();
  return *b;
}

namespace {
constexpr walfs::testing::Counts kRounds{
    .full = 6 * kLogDamageKinds, .address = 2 * kLogDamageKinds, .thread = kLogDamageKinds};

class HostileLog : public ::testing::Test {
 protected:
  void SetUp() override { Messages::Get().SetSink(Messages::Sink::kNone); }
  void TearDown() override { Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kWarning); }
};

std::string Report(const LogDamageResult& r) {
  std::string out = fmt::format("seed {}: {}\n", r.seed, r.mutation.description);
  for (const std::string& v : r.violations) out += "  " + v + "\n";
  return out + "the round's messages:\n" + r.messages;
}

TEST_F(HostileLog, EachStepEndsFurtherOnInTheLog) {
  const BaseImage& base = Base();
  ASSERT_EQ(base.steps.size(), kLogSteps);
  for (std::size_t i = 1; i < base.steps.size(); ++i) EXPECT_GT(base.steps[i].head, base.steps[i - 1].head) << i;
  // The records catalogued are the whole active log, in order, ending at the
  // last step's head: the rounds read "before the damage" from them.
  const auto& records = base.blocks[static_cast<int>(BlockKind::kLogRecord)];
  ASSERT_FALSE(records.empty());
  for (std::size_t i = 1; i < records.size(); ++i)
    EXPECT_EQ(records[i].offset, records[i - 1].offset + records[i - 1].length) << "record " << i;
  EXPECT_LT(records.back().lsn, base.steps.back().head);
  // The named steps lie further behind the head than the recovery window:
  // damage to them is in the middle of the log, not a torn write.
  const std::uint64_t behind = base.steps.back().head - base.steps[kNamedSteps - 1].head;
  EXPECT_GT(behind, journal::RecoveryWindowSectors(base.sb.log_sectors())) << "sectors";
  std::printf("log: %llu records from %u:%u, named steps end %llu sectors before the head\n",
              static_cast<unsigned long long>(records.size()), journal::CycleOf(records.front().lsn),
              journal::SectorOf(records.front().lsn), static_cast<unsigned long long>(behind));
}

TEST_F(HostileLog, UndamagedImageRecoversEveryStepAndNorecoveryShowsNone) {
  const BaseImage& base = Base();
  {
    MemoryDevice dev(base.image);
    auto fs = fs::Filesystem::MountDevice(&dev, {.image = {}, .read_only = true, .norecovery = true});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    EXPECT_EQ(CheckDurable(fs->get(), base), std::vector<std::string>{});
    const StepPrefix p = PrefixOf(StepStates(fs->get(), base));
    EXPECT_TRUE(p.is_prefix) << p.why;
    EXPECT_EQ(p.applied, 0u);
  }
  MemoryDevice dev(base.image);
  auto fs = fs::Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_EQ(CheckDurable(fs->get(), base), std::vector<std::string>{});
  const StepPrefix p = PrefixOf(StepStates(fs->get(), base));
  EXPECT_TRUE(p.is_prefix) << p.why;
  EXPECT_EQ(p.applied, kLogSteps);
  EXPECT_TRUE((*fs)->Unmount().ok());
}

// fsck -L zeroes only a log recovery cannot replay: undamaged, it is
// replayed and nothing is lost.
TEST_F(HostileLog, UndamagedImageKeepsEveryStepThroughFsckL) {
  const BaseImage& base = Base();
  MemoryDevice dev(base.image);
  auto fixed = fs::CheckImage(&dev, {.replay = true, .repair = true, .clear_and_reconnect = true, .zero_log = true});
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  for (const auto& p : fixed->problems) ADD_FAILURE() << p.message;
  auto fs = fs::Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_EQ(PrefixOf(StepStates(fs->get(), base)).applied, kLogSteps);
  EXPECT_TRUE((*fs)->Unmount().ok());
}

// A record at the head whose CRC fails is a torn write: the mount trims it
// and keeps every step before it.
TEST_F(HostileLog, AHeadRecordFailingItsCrcIsTrimmedAndTheStepsBeforeItKept) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const LogDamageResult r = RunLogDamageRound(Base(), seed, static_cast<int>(LogDamageKind::kHeadCrc));
    EXPECT_TRUE(r.violations.empty()) << Report(r);
    EXPECT_TRUE(r.mounted) << Report(r);
    EXPECT_GE(r.steps_replayed, static_cast<int>(r.mutation.steps_before)) << Report(r);
    EXPECT_EQ(r.mutation.steps_before, kLogSteps - 1) << Report(r);
  }
}

// A record near the head whose header is gone ends the log there, as a
// torn write does, and the checkpoints after it are dropped: the mount
// says so and how much, rather than nothing.
TEST_F(HostileLog, AHoleNearTheHeadEndsTheLogThereAndTheMountSaysHowMuchWasDropped) {
  const BaseImage& base = Base();
  const std::size_t kept = kLogSteps - 5;
  std::vector<std::byte> image = base.image;
  bool found = false;
  for (const MetaBlock& rec : base.blocks[static_cast<int>(BlockKind::kLogRecord)]) {
    if (rec.lsn != base.steps[kept - 1].head) continue;
    std::fill_n(image.begin() + static_cast<std::ptrdiff_t>(rec.offset), 512, std::byte{0});
    found = true;
  }
  ASSERT_TRUE(found) << "no record starts where step " << kept << " ended";
  MemoryDevice dev(std::move(image));
  auto fs = fs::Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  const StepPrefix p = PrefixOf(StepStates(fs->get(), base));
  EXPECT_TRUE(p.is_prefix) << p.why;
  EXPECT_EQ(p.applied, kept);
  const std::string said = (*fs)->Describe();
  EXPECT_NE(said.find("; the log ended early at "), std::string::npos) << said;
  EXPECT_NE(said.find("sectors after a hole dropped"), std::string::npos) << said;
  EXPECT_TRUE((*fs)->Unmount().ok());
}

TEST_F(HostileLog, DamagedLogsMountOrAreRefusedAndFsckLRepairsThem) {
  const BaseImage& base = Base();
  const std::uint64_t rounds =
      EnvOr("WALFS_HOSTILE_LOG_SEEDS", static_cast<std::uint64_t>(walfs::testing::ForBuild(kRounds)));
  const std::uint64_t first = EnvOr("WALFS_HOSTILE_SEED_BASE", 1);
  RoundGuard guard(EnvOr("WALFS_HOSTILE_TIMEOUT_S", 120));
  // One row per damage kind, as docs/hostile_images.md shows them.
  struct Row {
    std::uint64_t tried = 0, head = 0, resealed = 0, mounted = 0, refused = 0, norecovery = 0, zeroed = 0,
                  clean_after = 0, repaired_mounted = 0, lost_steps = 0, viol = 0;
  };
  std::vector<Row> rows(kLogDamageKinds + 1);
  const std::uint64_t verbose = EnvOr("WALFS_HOSTILE_VERBOSE", 0);  // 1: a line per round, 2: and its messages
  for (std::uint64_t seed = first; seed < first + rounds; ++seed) {
    guard.Begin(seed);
    const LogDamageResult r = RunLogDamageRound(base, seed, static_cast<int>(seed % kLogDamageKinds));
    guard.End();
    if (!r.violations.empty()) ADD_FAILURE() << Report(r);
    if (verbose)
      std::printf("seed %llu: %s: mount %s (%d steps of %zu, %zu before the damage), -L %s (%d steps)\n",
                  static_cast<unsigned long long>(seed), r.mutation.description.c_str(),
                  r.mounted ? "replayed" : "refused", r.steps_replayed, kLogSteps, r.mutation.steps_before,
                  r.log_zeroed ? "zeroed" : "recovered", r.steps_after_repair);
    if (verbose > 1) std::printf("%s\n", r.messages.c_str());
    for (Row* row : {&rows[static_cast<int>(r.mutation.kind)], &rows.back()}) {
      ++row->tried;
      row->head += r.mutation.at_head;
      row->resealed += r.mutation.resealed;
      row->mounted += r.mounted;
      row->refused += !r.mounted;
      row->norecovery += r.norecovery_mounted;
      row->zeroed += r.log_zeroed;
      row->clean_after += r.recheck_problems == 0;
      row->repaired_mounted += r.repaired_mounted;
      // Steps a mount (or else fsck -L) did not bring back.
      const int kept = r.mounted ? r.steps_replayed : r.steps_after_repair;
      row->lost_steps += kept >= 0 ? kLogSteps - static_cast<std::size_t>(kept) : kLogSteps;
      row->viol += !r.violations.empty();
    }
  }
  std::printf("| kind | tried | at head | resealed | mounted | refused | norecovery | -L zeroed | clean after -L "
              "| mounted after -L | steps lost | viol |\n");
  for (int k = 0; k <= kLogDamageKinds; ++k) {
    const Row& w = rows[k];
    std::printf("| %s | %llu | %llu | %llu | %llu | %llu | %llu | %llu | %llu | %llu | %llu | %llu |\n",
                k == kLogDamageKinds ? "**all**" : std::string(LogDamageKindName(static_cast<LogDamageKind>(k))).c_str(),
                static_cast<unsigned long long>(w.tried), static_cast<unsigned long long>(w.head),
                static_cast<unsigned long long>(w.resealed), static_cast<unsigned long long>(w.mounted),
                static_cast<unsigned long long>(w.refused), static_cast<unsigned long long>(w.norecovery),
                static_cast<unsigned long long>(w.zeroed), static_cast<unsigned long long>(w.clean_after),
                static_cast<unsigned long long>(w.repaired_mounted), static_cast<unsigned long long>(w.lost_steps),
                static_cast<unsigned long long>(w.viol));
  }
}

}  // namespace
}  // namespace walfs::hostile
