// RecordingDevice: the recording itself, prefixes and flush points, torn
// last writes, and the crash model that SampleCrashState draws from.
#include "base/block_device_recording.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_fault.h"
#include "base/block_device_memory.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Filled;

constexpr std::uint64_t kRecordingDevBytes = 64 * 1024;

std::vector<std::byte> BaseImage() {
  std::vector<std::byte> v(kRecordingDevBytes);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::byte((i / 512) & 0x3f);
  return v;
}

class RecordingDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rec = RecordingDevice::Create(&disk_);
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    rec_ = std::move(*rec);
  }
  std::vector<std::byte> Image(std::size_t n) {
    auto img = rec_->MaterializePrefix(n);
    EXPECT_TRUE(img.ok()) << img.status().ToString();
    return img.ok() ? (*img)->Contents() : std::vector<std::byte>();
  }
  std::vector<std::size_t> OpsOf(const std::vector<PlannedWrite>& plan) {
    std::vector<std::size_t> ops;
    for (const PlannedWrite& pw : plan) ops.push_back(pw.op);
    return ops;
  }

  MemoryDevice disk_{BaseImage()};
  std::unique_ptr<RecordingDevice> rec_;
};

TEST_F(RecordingDeviceTest, RecordsWritesAndFlushesInIssueOrder) {
  const auto a = Filled(512, 1), b = Filled(1024, 2), c = Filled(512, 3);
  ASSERT_TRUE(rec_->Write(0, a.data(), a.size()).ok());
  ASSERT_TRUE(rec_->Write(4096, b.data(), b.size(), kIoFua).ok());
  ASSERT_TRUE(rec_->Flush().ok());
  ASSERT_TRUE(rec_->Write(8192, c.data(), c.size(), kIoPreflush).ok());
  std::vector<std::byte> ignored(512);
  ASSERT_TRUE(rec_->Read(0, ignored.data(), 512).ok());  // reads are not recorded

  const std::vector<RecordedOp> ops = rec_->ops();
  ASSERT_EQ(ops.size(), 5u);
  using K = RecordedOp::Kind;
  EXPECT_EQ(ops[0].kind, K::kWrite);
  EXPECT_EQ(ops[0].data, a);
  EXPECT_EQ(ops[1].offset, 4096u);
  EXPECT_TRUE(ops[1].fua);
  EXPECT_EQ(ops[2].kind, K::kFlush);
  EXPECT_EQ(ops[3].kind, K::kFlush) << "a preflush is recorded as a flush before its write";
  EXPECT_EQ(ops[4].kind, K::kWrite);
  EXPECT_EQ(ops[4].data, c);
  // Synchronous calls complete before the next op is issued.
  EXPECT_EQ(ops[0].completed_before, 1u);
  EXPECT_EQ(ops[1].completed_before, 2u);
  EXPECT_EQ(ops[2].completed_before, 3u);
  EXPECT_EQ(ops[4].completed_before, 5u);
  EXPECT_EQ(rec_->FlushPoints(), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(disk_.Contents()[8192], std::byte{3}) << "writes reach the inner device";
}

TEST_F(RecordingDeviceTest, ADiscardIsRecordedAsAWriteOfZerosAndReachesTheInnerDevice) {
  const auto a = Filled(4096, 7);
  ASSERT_TRUE(rec_->Write(4096, a.data(), a.size()).ok());
  EXPECT_TRUE(rec_->SupportsDiscard());
  ASSERT_TRUE(rec_->Discard(4096, 2048).ok());
  const std::vector<RecordedOp> ops = rec_->ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].kind, RecordedOp::Kind::kWrite);
  EXPECT_EQ(ops[1].offset, 4096u);
  EXPECT_EQ(ops[1].data, Filled(2048, 0));
  EXPECT_EQ(ops[1].completed_before, 2u);
  EXPECT_EQ(disk_.Contents()[4096], std::byte{0}) << "the inner device discarded it";
  EXPECT_EQ(disk_.Contents()[4096 + 2048], std::byte{7});
  // A crash state before the discard still holds the data.
  EXPECT_EQ(Image(1)[4096], std::byte{7});
  EXPECT_EQ(Image(2), disk_.Contents());
}

TEST_F(RecordingDeviceTest, EveryPrefixEndingAtAFlushIsTheImageAtThatFlush) {
  std::vector<std::vector<std::byte>> at_flush;
  for (int i = 0; i < 40; ++i) {
    // Overlapping writes of varying size, so that order matters.
    const auto data = Filled(512 * (1 + i % 5), static_cast<unsigned char>(0x80 + i));
    ASSERT_TRUE(rec_->Write((i * 1536) % (kRecordingDevBytes - 4096), data.data(), data.size()).ok());
    if (i % 7 == 6) {
      ASSERT_TRUE(rec_->Flush().ok());
      at_flush.push_back(disk_.Contents());
    }
  }
  const std::vector<std::size_t> flushes = rec_->FlushPoints();
  ASSERT_EQ(flushes.size(), at_flush.size());
  for (std::size_t k = 0; k < flushes.size(); ++k)
    EXPECT_EQ(Image(flushes[k] + 1), at_flush[k]) << "flush " << k;
  EXPECT_EQ(Image(0), BaseImage());
  EXPECT_EQ(Image(rec_->op_count()), disk_.Contents());
}

TEST_F(RecordingDeviceTest, TheLastWriteOfAPrefixCanBeTorn) {
  const auto a = Filled(4096, 0x11), b = Filled(4096, 0x22);
  ASSERT_TRUE(rec_->Write(0, a.data(), a.size()).ok());
  ASSERT_TRUE(rec_->Write(0, b.data(), b.size()).ok());
  ASSERT_TRUE(rec_->Flush().ok());
  for (std::size_t n : {2u, 3u}) {  // ending at the write, or at the flush after it
    auto torn = rec_->MaterializePrefix(n, /*torn_sectors=*/1);
    ASSERT_TRUE(torn.ok());
    const std::vector<std::byte> img = (*torn)->Contents();
    EXPECT_EQ(img[511], std::byte{0x22});
    EXPECT_EQ(img[512], std::byte{0x11});
    EXPECT_EQ(img[4095], std::byte{0x11});
  }
  auto none = rec_->MaterializePrefix(2, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->Contents()[0], std::byte{0x11});
  EXPECT_EQ(rec_->MaterializePrefix(4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rec_->MaterializePrefix(0, 1).status().code(), StatusCode::kInvalidArgument);
}

// Writes 0..5, a flush after write 2: ops W0 W1 W2 F3 W4 W5 W6.
class CrashModelTest : public RecordingDeviceTest {
 protected:
  void SetUp() override {
    RecordingDeviceTest::SetUp();
    for (int i = 0; i < 6; ++i) {
      if (i == 3) {
        ASSERT_TRUE(rec_->Flush().ok());
      }
      const auto d = Filled(1024, static_cast<unsigned char>(0xa0 + i));
      // Writes 4 and 5 overlap write 1 and each other.
      const std::uint64_t off = i < 4 ? i * 4096 : 4096 + (i - 4) * 512;
      ASSERT_TRUE(rec_->Write(off, d.data(), d.size()).ok());
    }
  }
};

TEST_F(CrashModelTest, SamplesKeepEverythingBeforeTheLastFlushAndOnlyDropAfterIt) {
  std::set<std::vector<std::size_t>> seen;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto plan = rec_->PlanCrash(7, {.seed = seed});
    ASSERT_TRUE(plan.ok());
    const std::vector<std::size_t> ops = OpsOf(*plan);
    // W0 W1 W2 are durable, first, in order; the tail is a subset of W4 W5 W6.
    ASSERT_GE(ops.size(), 3u);
    EXPECT_EQ(std::vector<std::size_t>(ops.begin(), ops.begin() + 3),
              (std::vector<std::size_t>{0, 1, 2}));
    for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE((*plan)[i].durable);
    for (std::size_t i = 3; i < ops.size(); ++i) {
      EXPECT_GE(ops[i], 4u);
      EXPECT_FALSE((*plan)[i].durable);
    }
    // Each completed before the next was issued: never reordered.
    EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
    seen.insert(ops);
  }
  EXPECT_EQ(seen.size(), 8u) << "every subset of the three tail writes shows up";
}

TEST_F(CrashModelTest, APrefixBeforeTheFlushCompletedHasNothingDurable) {
  // Crash at 3: the flush (op 3) was not yet issued.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto plan = rec_->PlanCrash(3, {.seed = seed, .land_probability = 0.0});
    ASSERT_TRUE(plan.ok());
    EXPECT_TRUE(plan->empty());
  }
}

TEST_F(CrashModelTest, SameSeedSameStateAndSampledImagesMatchThePlan) {
  auto p1 = rec_->PlanCrash(7, {.seed = 42, .tear_probability = 0.5});
  auto p2 = rec_->PlanCrash(7, {.seed = 42, .tear_probability = 0.5});
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(OpsOf(*p1), OpsOf(*p2));
  auto img = rec_->SampleCrashState(7, {.seed = 42, .tear_probability = 0.5});
  auto applied = rec_->Apply(*p1);
  ASSERT_TRUE(img.ok() && applied.ok());
  EXPECT_EQ((*img)->Contents(), (*applied)->Contents());
}

TEST_F(CrashModelTest, TornSamplesKeepWholeSectorsOfWritesThatAreNotDurable) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto plan = rec_->PlanCrash(
        7, {.seed = seed, .land_probability = 1.0, .tear_probability = 1.0});
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->size(), 6u);
    for (const PlannedWrite& pw : *plan) {
      if (pw.durable) {
        EXPECT_EQ(pw.bytes, 1024u);
      } else {
        EXPECT_LT(pw.bytes, 1024u);
        EXPECT_EQ(pw.bytes % 512, 0u);
      }
    }
  }
}

TEST_F(CrashModelTest, IgnoringCompletionOrderPermutesTheTail) {
  std::set<std::vector<std::size_t>> orders;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto plan = rec_->PlanCrash(
        7, {.seed = seed, .land_probability = 1.0, .keep_completion_order = false});
    ASSERT_TRUE(plan.ok());
    orders.insert(OpsOf(*plan));
  }
  EXPECT_GT(orders.size(), 6u);
}

TEST_F(RecordingDeviceTest, WritesInFlightTogetherLandInEitherOrder) {
  ASSERT_TRUE(rec_->Flush().ok());
  const auto a = Filled(512, 0xaa), b = Filled(512, 0xbb);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, a.data(), 512, 0, nullptr));
  batch.push_back(IoRequest::Write(0, b.data(), 512, 0, nullptr));
  ASSERT_TRUE(rec_->SubmitAndWait(std::move(batch)).ok());
  std::set<std::byte> first_byte;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    auto img = rec_->SampleCrashState(3, {.seed = seed, .land_probability = 1.0});
    ASSERT_TRUE(img.ok());
    first_byte.insert((*img)->Contents()[0]);
  }
  EXPECT_EQ(first_byte, (std::set<std::byte>{std::byte{0xaa}, std::byte{0xbb}}));
}

TEST_F(RecordingDeviceTest, AFlushDoesNotCoverWritesStillInFlightWhenItWasIssued) {
  const auto a = Filled(512, 0xaa);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, a.data(), 512, 0, nullptr));
  batch.push_back(IoRequest::Flush(nullptr));
  ASSERT_TRUE(rec_->SubmitAndWait(std::move(batch)).ok());
  // Even with every completion seen, the flush covers nothing.
  auto plan = rec_->PlanCrash(2, {.land_probability = 0.0});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty()) << "the write was in flight with the flush";
  ASSERT_TRUE(rec_->Flush().ok());  // issued after the write completed
  plan = rec_->PlanCrash(3, {.land_probability = 0.0});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_TRUE((*plan)[0].durable);
}

TEST_F(RecordingDeviceTest, AFuaWriteIsDurableOnceItsCompletionWasSeen) {
  const auto a = Filled(512, 0xaa), b = Filled(512, 0xbb);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, a.data(), 512, kIoFua, nullptr));
  batch.push_back(IoRequest::Write(512, b.data(), 512, 0, nullptr));
  ASSERT_TRUE(rec_->SubmitAndWait(std::move(batch)).ok());
  ASSERT_TRUE(rec_->Write(1024, b.data(), 512, kIoFua).ok());
  // Ops 0 and 1 were issued together; op 0's completion was seen before op
  // 2 was issued.  Just before op 2: op 0 is durable.  Just after op 1 was
  // issued, before that completion: nothing is.
  auto at2 = rec_->PlanCrash(2, {.land_probability = 0.0});
  ASSERT_TRUE(at2.ok());
  EXPECT_EQ(OpsOf(*at2), (std::vector<std::size_t>{0}));
  auto in_flight = rec_->PlanCrash(2, {.land_probability = 0.0, .before_completions = true});
  ASSERT_TRUE(in_flight.ok());
  EXPECT_TRUE(in_flight->empty());
  auto at3 = rec_->PlanCrash(3, {.land_probability = 0.0});
  ASSERT_TRUE(at3.ok());
  EXPECT_EQ(OpsOf(*at3), (std::vector<std::size_t>{0, 2}));
}

// docs/block_device.md: a preflush write starts after its flush completed.
// A crash before that completion was seen never has the write on disk.
TEST_F(RecordingDeviceTest, APreflushWriteNeverLandsBeforeItsFlushCompleted) {
  const auto a = Filled(512, 0xaa), b = Filled(512, 0xbb);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, a.data(), 512, 0, nullptr));
  batch.push_back(IoRequest::Write(512, b.data(), 512, kIoPreflush, nullptr));
  ASSERT_TRUE(rec_->SubmitAndWait(std::move(batch)).ok());
  ASSERT_EQ(rec_->ops().size(), 3u);  // a, b's preflush, b
  EXPECT_EQ(rec_->ops()[2].preflush, 1u);
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto before = rec_->PlanCrash(3, {.seed = seed, .land_probability = 1.0, .before_completions = true});
    ASSERT_TRUE(before.ok());
    for (const PlannedWrite& pw : *before) EXPECT_NE(pw.op, 2u) << "seed " << seed;
  }
  auto after = rec_->PlanCrash(3, {.land_probability = 1.0});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(OpsOf(*after), (std::vector<std::size_t>{0, 2})) << "with the flush's completion seen, b may land";
}

TEST_F(RecordingDeviceTest, FailedWritesAndFlushesAreNeverDurable) {
  FaultDevice faulty(&disk_);
  auto rec = RecordingDevice::Create(&faulty);
  ASSERT_TRUE(rec.ok());
  const auto a = Filled(512, 0xaa);
  faulty.FailNthWrite(1, EIO);
  EXPECT_EQ((*rec)->Write(0, a.data(), 512).ToErrno(), EIO);
  faulty.FailNthFlush(1, EIO);
  EXPECT_EQ((*rec)->Flush().ToErrno(), EIO);
  const std::vector<RecordedOp> ops = (*rec)->ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_TRUE(ops[0].failed);
  EXPECT_TRUE(ops[1].failed);
  auto plan = (*rec)->PlanCrash(2, {.land_probability = 0.0});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
}

TEST_F(RecordingDeviceTest, ConcurrentWritersAreRecordedConsistently) {
  constexpr int kThreads = 4, kWrites = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto d = Filled(512, static_cast<unsigned char>(t + 1));
      for (int i = 0; i < kWrites; ++i) {
        const std::uint64_t off = static_cast<std::uint64_t>(t) * 8192 + (i % 16) * 512;
        if (i % 2) {
          EXPECT_TRUE(rec_->Write(off, d.data(), 512).ok());
        } else {
          std::vector<IoRequest> b;
          b.push_back(IoRequest::Write(off, d.data(), 512, 0, nullptr));
          if (i % 10 == 0) b.push_back(IoRequest::Flush(nullptr));
          EXPECT_TRUE(rec_->SubmitAndWait(std::move(b)).ok());
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(rec_->op_count(), static_cast<std::size_t>(kThreads * kWrites + kThreads * 10));
  EXPECT_EQ(Image(rec_->op_count()), disk_.Contents());
  for (const RecordedOp& op : rec_->ops())
    EXPECT_NE(op.completed_before, RecordedOp::kNotCompleted);
}

}  // namespace
}  // namespace walfs
