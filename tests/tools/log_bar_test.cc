// The log's bar in `walfs-trace top` (tools/log_bar.h).
#include "tools/log_bar.h"

#include <gtest/gtest.h>

namespace walfs::tracing {
namespace {

constexpr std::uint64_t kLog = 1 << 20;  // 2048 sectors of 512 bytes

TEST(BytesPastTail, CountsSectorsWithinOneCycle) {
  EXPECT_EQ(BytesPastTail("3:100", "3:164", kLog), 64u * 512);
}

TEST(BytesPastTail, CountsAcrossTheLogsWrap) {
  // The tail near the end of cycle 3, the target early in cycle 4.
  EXPECT_EQ(BytesPastTail("3:2040", "4:8", kLog), 16u * 512);
}

TEST(BytesPastTail, IsZeroWhenNothingIsAheadOfTheTail) {
  EXPECT_EQ(BytesPastTail("3:100", "3:100", kLog), 0u);
  EXPECT_EQ(BytesPastTail("3:100", "2:2000", kLog), 0u);
  EXPECT_EQ(BytesPastTail("3:100", "0:0", kLog), 0u) << "no target";
}

TEST(BytesPastTail, IsZeroForWhatDoesNotParseOrAnUnknownLogSize) {
  EXPECT_EQ(BytesPastTail("", "3:164", kLog), 0u);
  EXPECT_EQ(BytesPastTail("3:100", "3:16x", kLog), 0u);
  EXPECT_EQ(BytesPastTail("3-100", "3:164", kLog), 0u);
  EXPECT_EQ(BytesPastTail("3:100", "3:164", 0), 0u);
}

TEST(BytesPastTail, NeverExceedsTheLog) {
  EXPECT_EQ(BytesPastTail("3:100", "5:100", kLog), kLog);
}

TEST(LogBar, DrawsWrittenThenGrantedThenFree) {
  LogPicture log{.size = 1000, .tail_space = 300, .grant = 200};
  EXPECT_EQ(LogBar(log, 10), "###==.....");
}

TEST(LogBar, MarksTheAilTargetInsideTheWrittenPart) {
  LogPicture log{.size = 1000, .tail_space = 500, .grant = 100, .target_past_tail = 200};
  EXPECT_EQ(LogBar(log, 10), "#|###=....");
  log.target_past_tail = 900;  // a target past the head is drawn at the head
  EXPECT_EQ(LogBar(log, 10), "####|=....");
  log.target_past_tail = 1;  // a target inside the first cell is still shown
  EXPECT_EQ(LogBar(log, 10), "|####=....");
}

TEST(LogBar, ShowsNoTargetWhenNothingIsWritten) {
  LogPicture log{.size = 1000, .tail_space = 0, .grant = 100, .target_past_tail = 100};
  EXPECT_EQ(LogBar(log, 10), "=.........");
}

TEST(LogBar, IsQuestionMarksWhenTheLogsSizeIsUnknown) {
  EXPECT_EQ(LogBar(LogPicture{}, 4), "????");
  EXPECT_EQ(LogBar(LogPicture{}, 0), "");
}

TEST(LogBar, NeverOverflowsItsWidth) {
  LogPicture log{.size = 1000, .tail_space = 900, .grant = 900};
  EXPECT_EQ(LogBar(log, 10), "#########=");
}

}  // namespace
}  // namespace walfs::tracing
