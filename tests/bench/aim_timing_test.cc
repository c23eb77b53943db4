// re-aim's derived numbers: jobs per minute and the job timing index.
#include <gtest/gtest.h>

#include "bench/aim/timing.h"

namespace walfs::bench::aim {
namespace {

TEST(AimTiming, OneUserHasJtiOneHundred) {
  const Spread s = ChildSpread({3.5});
  EXPECT_EQ(s.jti, 100);
  EXPECT_DOUBLE_EQ(s.std_dev_s, 0);
}

TEST(AimTiming, UsersFinishingTogetherHaveJtiOneHundred) {
  EXPECT_EQ(ChildSpread({2.0, 2.0, 2.0, 2.0}).jti, 100);
}

TEST(AimTiming, JtiIsOneMinusCoefficientOfVariation) {
  const Spread s = ChildSpread({1.0, 3.0});  // mean 2, population sd 1
  EXPECT_DOUBLE_EQ(s.mean_s, 2.0);
  EXPECT_DOUBLE_EQ(s.std_dev_s, 1.0);
  EXPECT_EQ(s.jti, 50);
  EXPECT_DOUBLE_EQ(s.max_s, 3.0);
  EXPECT_DOUBLE_EQ(s.min_s, 1.0);
  EXPECT_EQ(ChildSpread({1.0, 1.0, 1.0, 2.0}).jti, 65);  // sd .433, mean 1.25: 65.36 truncated
}

TEST(AimTiming, JtiIsZeroWhenSpreadExceedsTheMean) {
  EXPECT_EQ(ChildSpread({0.0, 0.0, 0.0, 10.0}).jti, 0);  // cov 1.73
}

TEST(AimTiming, JobsPerMinuteCountsEveryUsersJobs) {
  EXPECT_DOUBLE_EQ(JobsPerMinute(102, 4, 60.0), 408.0);
  EXPECT_DOUBLE_EQ(JobsPerMinutePerChild(102, 30.0), 204.0);
  EXPECT_DOUBLE_EQ(JobsPerMinute(102, 4, 0.0), 0.0);
}

}  // namespace
}  // namespace walfs::bench::aim
