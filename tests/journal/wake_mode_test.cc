#include "journal/wake_mode.h"

#include <gtest/gtest.h>

namespace walfs::journal {
namespace {

TEST(WakeMode, NamesRoundTrip) {
  for (WakeMode m : kAllWakeModes) EXPECT_EQ(*ParseWakeMode(WakeModeName(m)), m);
  for (HeadLockKind k : kAllHeadLockKinds) EXPECT_EQ(*ParseHeadLockKind(HeadLockKindName(k)), k);
}

TEST(WakeMode, UnknownNameIsRefusedWithTheChoices) {
  Result<WakeMode> r = ParseWakeMode("fast");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("inline|waking|wakeq"), std::string_view::npos);
  EXPECT_FALSE(ParseHeadLockKind("ticket").ok());
}

}  // namespace
}  // namespace walfs::journal
