// Specs of ReorderWindow, the timeline `walfs-trace record --mount` writes:
// a record that comes a read late, behind newer records of other rings,
// still takes its place; nothing leaves the window before it is `hold`
// older than the newest entry; the end of the stream takes the rest.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tracing/trace_file_test_util.h"
#include "tracing/reorder_window.h"

namespace walfs::tracing {
namespace {

using testing::Lost;
using testing::Rec;

std::vector<std::uint64_t> Stamps(const std::vector<TraceEntry>& entries) {
  std::vector<std::uint64_t> out;
  for (const TraceEntry& e : entries) out.push_back(e.record.timestamp);
  return out;
}

TEST(ReorderWindow, ARecordThatComesAReadLateTakesItsPlace) {
  ReorderWindow w(250);
  // Read 1: rings 7 and 8, each in order.
  w.Add({Rec(1, 7, "a", 1000), Rec(1, 7, "a", 1100), Rec(1, 8, "b", 1050)});
  EXPECT_TRUE(w.TakeReady().empty());  // nothing is 250 older than 1100 yet
  // Read 2: ring 9's record, committed at 1020 but published after read 1
  // took rings 7 and 8; ring 7 has gone on to 1400.
  w.Add({Rec(1, 9, "c", 1020), Rec(1, 7, "a", 1400)});
  EXPECT_EQ(Stamps(w.TakeReady()), (std::vector<std::uint64_t>{1000, 1020, 1050, 1100}));
  EXPECT_EQ(w.waiting(), 1u);
  EXPECT_EQ(Stamps(w.TakeAll()), (std::vector<std::uint64_t>{1400}));
  EXPECT_EQ(w.waiting(), 0u);
}

TEST(ReorderWindow, WhatLeavesNeverGoesBackWhileRecordsAreLessThanTheHoldLate) {
  ReorderWindow w(100);
  std::vector<std::uint64_t> out;
  // Ten reads; each carries its rings' records of the last 30 units and one
  // record of a ring that was late by up to 90.
  for (std::uint64_t read = 1; read <= 10; ++read) {
    std::vector<TraceEntry> entries;
    for (std::uint64_t t = read * 30 - 29; t <= read * 30; t += 7) entries.push_back(Rec(1, 7, "a", t));
    if (read > 3) entries.push_back(Rec(1, 8, "b", read * 30 - 90));
    w.Add(std::move(entries));
    for (std::uint64_t t : Stamps(w.TakeReady())) out.push_back(t);
  }
  for (std::uint64_t t : Stamps(w.TakeAll())) out.push_back(t);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  EXPECT_EQ(out.size(), 10u * 5 + 7);
}

TEST(ReorderWindow, EqualStampsKeepTheirOrderAndALostMarkerStaysBeforeItsRecord) {
  ReorderWindow w(10);
  w.Add({Rec(1, 7, "a", 50), Lost(8, "b", 3, 50), Rec(2, 8, "b", 50)});
  w.Add({Rec(3, 9, "c", 50), Rec(1, 7, "a", 100)});
  const std::vector<TraceEntry> ready = w.TakeReady();
  ASSERT_EQ(ready.size(), 4u);
  EXPECT_EQ(ready[0].tid, 7u);
  EXPECT_EQ(ready[1].type, TraceEntry::Type::kLost);
  EXPECT_EQ(ready[2].tid, 8u);
  EXPECT_EQ(ready[3].tid, 9u);  // the later read's, after what waited
}

TEST(ReorderWindow, AnEmptyWindowGivesNothing) {
  ReorderWindow w(10);
  EXPECT_TRUE(w.TakeReady().empty());
  w.Add({});
  EXPECT_TRUE(w.TakeReady().empty());
  EXPECT_TRUE(w.TakeAll().empty());
}

}  // namespace
}  // namespace walfs::tracing
