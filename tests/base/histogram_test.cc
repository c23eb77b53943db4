#include "base/histogram.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(Histogram, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Percentile(0.99), 0);
  EXPECT_EQ(h.Mean(), 0.0);
}

TEST(Histogram, SmallValuesAreExact) {
  Histogram h;
  for (int v = 0; v < 10; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.0), 0);
  EXPECT_EQ(h.Percentile(0.5), 4);
  EXPECT_EQ(h.Percentile(1.0), 9);
  EXPECT_DOUBLE_EQ(h.Mean(), 4.5);
}

TEST(Histogram, PercentilesAreWithinOneSubBucket) {
  Histogram h;
  for (int v = 1; v <= 100000; ++v) h.Record(v);
  const auto p50 = h.Percentile(0.5);
  const auto p99 = h.Percentile(0.99);
  EXPECT_GE(p50, 50000);
  EXPECT_LE(p50, 50000 * 1.125);
  EXPECT_GE(p99, 99000);
  EXPECT_LE(p99, 100000);
  EXPECT_EQ(h.Max(), 100000);
}

TEST(Histogram, ConcurrentRecordsAreAllCounted) {
  Histogram h;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Record(i);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(h.Count(), 40000u);
}

TEST(Histogram, MergeAddsCountsAndKeepsMax) {
  Histogram a, b;
  a.Record(5);
  b.Record(500);
  a.Merge(b);
  EXPECT_EQ(a.Count(), 2u);
  EXPECT_EQ(a.Max(), 500);
}

}  // namespace
}  // namespace walfs
