#include "tracing/ring.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace {

Record MakeRecord(std::uint64_t seq) {
  Record r;
  r.event_id = 1;
  r.tid = 7;
  r.timestamp = seq;
  for (auto& f : r.fields) f = seq;
  return r;
}

TEST(Ring, CapacityIsRoundedUpToAPowerOfTwo) {
  EXPECT_EQ(Ring(5, 1, "t", 1).capacity(), 8u);
  EXPECT_EQ(Ring(0, 1, "t", 1).capacity(), 2u);
}

TEST(Ring, OverwriteKeepsTheNewestAndReportsTheLost) {
  Ring ring(8, 1, "t", 1);
  for (std::uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(ring.Write(MakeRecord(i), true));
  std::vector<Record> out(32);
  std::uint64_t lost = 0;
  ASSERT_EQ(ring.Consume(out.data(), out.size(), &lost), 8u);
  EXPECT_EQ(lost, 12u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i].timestamp, 12 + i);
  EXPECT_EQ(ring.Counters().overruns, 12u);
  EXPECT_EQ(ring.Counters().entries, 20u);
  EXPECT_FALSE(ring.HasUnread());
}

TEST(Ring, DiscardKeepsTheOldestAndCountsDrops) {
  Ring ring(8, 1, "t", 1);
  int written = 0;
  for (std::uint64_t i = 0; i < 20; ++i) written += ring.Write(MakeRecord(i), false);
  EXPECT_EQ(written, 8);
  std::vector<Record> out(32);
  std::uint64_t lost = 0;
  ASSERT_EQ(ring.Consume(out.data(), out.size(), &lost), 8u);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(out[0].timestamp, 0u);
  EXPECT_EQ(out[7].timestamp, 7u);
  EXPECT_EQ(ring.Counters().drops, 12u);
  // Space is back once read.
  EXPECT_TRUE(ring.Write(MakeRecord(99), false));
}

TEST(Ring, NestedWritesBehaveLikePlainOnesWhenNotInterrupted) {
  Ring ring(8, 1, "t", 1);
  for (std::uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(ring.WriteNested(MakeRecord(i), true));
  std::vector<Record> out(16);
  std::uint64_t lost = 0;
  ASSERT_EQ(ring.Consume(out.data(), out.size(), &lost), 8u);
  EXPECT_EQ(lost, 2u);
  EXPECT_EQ(out[0].timestamp, 2u);
  int accepted = 0;
  for (std::uint64_t i = 0; i < 10; ++i) accepted += ring.WriteNested(MakeRecord(i), false);
  EXPECT_EQ(accepted, 8);
  EXPECT_EQ(ring.Counters().drops, 2u);
}

TEST(Ring, PeekDoesNotConsumeAndClearDoes) {
  Ring ring(8, 1, "t", 1);
  for (std::uint64_t i = 0; i < 3; ++i) ring.Write(MakeRecord(i), true);
  std::vector<Record> out(8);
  std::uint64_t lost = 0;
  EXPECT_EQ(ring.Peek(out.data(), out.size(), &lost), 3u);
  EXPECT_EQ(ring.Peek(out.data(), out.size(), &lost), 3u);
  EXPECT_TRUE(ring.HasUnread());
  ring.Clear();
  EXPECT_FALSE(ring.HasUnread());
  EXPECT_EQ(ring.Consume(out.data(), out.size(), &lost), 0u);
}

// A writer laps a concurrent reader constantly: every record the reader gets
// must be whole (all fields equal) and in order, and read + lost = written.
TEST(Ring, ConcurrentReaderNeverSeesATornRecord) {
  Ring ring(16, 1, "t", 1);
  constexpr std::uint64_t kRecords = 200000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t i = 0; i < kRecords; ++i) ring.Write(MakeRecord(i), true);
    done.store(true);
  });
  std::uint64_t read = 0, lost = 0, last = 0;
  bool first = true;
  std::vector<Record> out(7);
  for (;;) {
    const bool finished = done.load();
    const std::size_t n = ring.Consume(out.data(), out.size(), &lost);
    for (std::size_t i = 0; i < n; ++i) {
      const Record& r = out[i];
      for (auto f : r.fields) ASSERT_EQ(f, r.timestamp) << "torn record";
      if (!first) {
        ASSERT_GT(r.timestamp, last);
      }
      first = false;
      last = r.timestamp;
    }
    read += n;
    if (finished && n == 0) break;
  }
  writer.join();
  EXPECT_EQ(read + lost, kRecords);
}

}  // namespace
}  // namespace walfs::tracing
