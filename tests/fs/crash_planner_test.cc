// The crash planner's prefixes (crash/planner.h).
#include "crash/planner.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"

namespace walfs::crash {
namespace {

// Ten 4 KiB writes with a flush after the fifth: ops 0-4 writes, 5 the
// flush, 6-10 writes (11 ops).
std::unique_ptr<RecordingDevice> Recorded(MemoryDevice* disk) {
  auto rec = RecordingDevice::Create(disk);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  const std::vector<char> block(4096, 'x');
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE((*rec)->Write(static_cast<std::uint64_t>(i) * 4096, block.data(), block.size()).ok());
    if (i == 4) {
      EXPECT_TRUE((*rec)->Flush().ok());
    }
  }
  return std::move(rec).value();
}

// The prefixes of the states of one kind (prefix states by default).
std::vector<std::size_t> Prefixes(const std::vector<CrashState>& states,
                                  CrashState::Kind kind = CrashState::Kind::kPrefix) {
  std::vector<std::size_t> out;
  for (const CrashState& s : states)
    if (s.kind == kind) out.push_back(s.prefix);
  return out;
}

TEST(CrashPlanner, EveryPrefixPlansEachPrefixOfTheRecording) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  ASSERT_EQ(rec->ops().size(), 11u);
  auto states = PlanCrashStates(*rec, {.samples = 0, .every_prefix = true});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  EXPECT_EQ(Prefixes(*states), (std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(CrashPlanner, APrefixStrideKeepsEveryFlushAndTheWholeRecording) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto states = PlanCrashStates(*rec, {.samples = 0, .every_prefix = true, .prefix_stride = 4});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  // 1, 5, 9 by the stride; 6 ends at the flush (op 5); 11 is the whole run.
  EXPECT_EQ(Prefixes(*states), (std::vector<std::size_t>{1, 5, 6, 9, 11}));
}

TEST(CrashPlanner, APrefixStrideCountsFromTheFirstOp) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto states = PlanCrashStates(*rec, {.samples = 0, .first_op = 6, .every_prefix = true, .prefix_stride = 2});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  EXPECT_EQ(Prefixes(*states), (std::vector<std::size_t>{7, 9, 11}));
}

TEST(CrashPlanner, AStrideOfZeroMeansEveryPrefix) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto states = PlanCrashStates(*rec, {.samples = 0, .every_prefix = true, .prefix_stride = 0});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  EXPECT_EQ(Prefixes(*states).size(), 11u);
}

TEST(CrashPlanner, AStateStrideKeepsEveryNthStateOfEachKindAndTheWholeRecording) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto all = PlanCrashStates(*rec, {.seed = 3, .samples = 6});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  auto thin = PlanCrashStates(*rec, {.seed = 3, .samples = 6, .state_stride = 3});
  ASSERT_TRUE(thin.ok()) << thin.status().ToString();
  // The flush prefixes: 6 and the torn 5 (the flush at op 5); no flush ends
  // the run, so its whole prefix is not planned either way.
  EXPECT_EQ(Prefixes(*thin), Prefixes(*all));
  EXPECT_EQ(Prefixes(*thin, CrashState::Kind::kTorn), Prefixes(*all, CrashState::Kind::kTorn));
  // Samples 0 and 3 of the six.
  std::vector<std::string> want, got;
  int k = 0;
  for (const CrashState& s : *all)
    if (s.kind == CrashState::Kind::kReordered && k++ % 3 == 0) want.push_back(s.description);
  for (const CrashState& s : *thin)
    if (s.kind == CrashState::Kind::kReordered) got.push_back(s.description);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(got, want);
}

TEST(CrashPlanner, AStateStrideOverEveryPrefixKeepsTheFirstAndTheWholeRecording) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto states = PlanCrashStates(*rec, {.samples = 0, .every_prefix = true, .state_stride = 4});
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  // Prefixes 1..11 planned, of which the 1st, 5th and 9th, and 11 (the whole run).
  EXPECT_EQ(Prefixes(*states), (std::vector<std::size_t>{1, 5, 9, 11}));
}

TEST(CrashPlanner, AStateStrideOfOneOrZeroKeepsEveryState) {
  MemoryDevice disk(1 << 20);
  auto rec = Recorded(&disk);
  auto all = PlanCrashStates(*rec, {.seed = 2, .samples = 4, .every_prefix = true});
  ASSERT_TRUE(all.ok());
  for (std::size_t stride : {0u, 1u}) {
    auto same = PlanCrashStates(*rec, {.seed = 2, .samples = 4, .every_prefix = true, .state_stride = stride});
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->size(), all->size()) << "stride " << stride;
  }
}

}  // namespace
}  // namespace walfs::crash
