// Hostile images (docs/hostile_images.md): populated images, damaged one
// metadata block at a time, must be refused at mount with a reason or
// survived (errors with messages, a shutdown), never crash or hang; fsck
// must report what checksums and magics catch.
//
// WALFS_HOSTILE_SEEDS=N runs N rounds per flavour (default 36: four per
// block kind; 18 under ASan, 9 under TSan); WALFS_HOSTILE_SEED_BASE=S starts at seed S (to replay one
// round: WALFS_HOSTILE_SEEDS=1 WALFS_HOSTILE_SEED_BASE=<seed>).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "tests/hostile/hostile_guard.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_round.h"
#include "tests/sanitizer_build.h"

namespace walfs::hostile {
namespace {

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

const BaseImage& Base(Flavour f) {
  static const BaseImage* images[2] = {};
  const BaseImage*& b = images[static_cast<int>(f)];
  if (b == nullptr) {
    auto built = BuildBaseImage(f);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    if (!built.ok()) std::abort();
    b = new BaseImage(std::move(built).value());
  }
  return *b;
}

// Rounds per flavour (tests/sanitizer_build.h): four per block kind, two
// under ASan, one under TSan.
constexpr walfs::testing::Counts kRounds{.full = 4 * kBlockKinds, .address = 2 * kBlockKinds, .thread = kBlockKinds};

// Damaged rounds shut filesystems down and refuse mounts, each with a
// message: expected here, so the sink is silenced and a failed round
// prints its own messages (RoundResult::messages).
class HostileImage : public ::testing::TestWithParam<Flavour> {
 protected:
  void SetUp() override { Messages::Get().SetSink(Messages::Sink::kNone); }
  void TearDown() override { Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kWarning); }
};

TEST_P(HostileImage, UndamagedBaseImageChecksCleanAndMounts) {
  const BaseImage& base = Base(GetParam());
  MemoryDevice dev(base.image);
  auto report = fs::CheckImage(&dev, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const auto& p : report->problems) ADD_FAILURE() << p.message;
  EXPECT_EQ(report->log_dirty, GetParam() == Flavour::kCrashed);
  RoundResult r;
  MemoryDevice dev2(base.image);
  auto fs = fs::Filesystem::MountDevice(&dev2, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  ExerciseMounted(fs->get(), &r);
  EXPECT_EQ(r.damage_errors, 0u) << r.first_error;
  EXPECT_TRUE((*fs)->Unmount().ok());
}

TEST_P(HostileImage, DamagedImagesAreRefusedOrSurvivedAndFsckReportsThem) {
  const BaseImage& base = Base(GetParam());
  const std::uint64_t rounds =
      EnvOr("WALFS_HOSTILE_SEEDS", static_cast<std::uint64_t>(walfs::testing::ForBuild(kRounds)));
  const std::uint64_t first = EnvOr("WALFS_HOSTILE_SEED_BASE", 1);
  RoundGuard guard(EnvOr("WALFS_HOSTILE_TIMEOUT_S", 120));
  std::uint64_t refused = 0, mounted = 0, flagged = 0;
  for (std::uint64_t seed = first; seed < first + rounds; ++seed) {
    guard.Begin(seed);
    const RoundResult r = RunRound(base, seed, static_cast<int>(seed % kBlockKinds));
    guard.End();
    for (const std::string& v : r.violations)
      ADD_FAILURE() << "seed " << seed << ": " << v << "\nthe round's messages:\n" << r.messages;
    refused += !r.mounted;
    mounted += r.mounted;
    flagged += r.fsck_flagged;
  }
  std::printf("%s: %llu rounds, %llu refused at mount, %llu mounted, %llu flagged by fsck\n",
              std::string(FlavourName(GetParam())).c_str(), static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(refused), static_cast<unsigned long long>(mounted),
              static_cast<unsigned long long>(flagged));
}

INSTANTIATE_TEST_SUITE_P(Flavours, HostileImage, ::testing::Values(Flavour::kClean, Flavour::kCrashed),
                         [](const auto& p) { return std::string(FlavourName(p.param)); });

}  // namespace
}  // namespace walfs::hostile
