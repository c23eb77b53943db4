#include "journal/reservation.h"

#include <gtest/gtest.h>

#include "journal/log_space.h"

namespace walfs::journal {
namespace {

TEST(ReservationTable, EveryTypeReservesAtLeastWhatItDirties) {
  ReservationTable t(ReservationGeometry{});
  for (int i = 0; i < kTransTypeCount; ++i) {
    const TransResv& r = t.Get(static_cast<TransType>(i));
    // At least one inode plus the transaction's own records.
    EXPECT_GT(r.unit_bytes, 512 + ReservationTable::kTransOverhead) << TransTypeName(static_cast<TransType>(i));
    EXPECT_GE(r.log_count, 1);
    EXPECT_EQ(r.permanent, r.log_count > 1);
  }
  // A rename touches two directories: it cannot cost less than a link.
  EXPECT_GT(t.Get(TransType::kRename).unit_bytes, t.Get(TransType::kLink).unit_bytes);
}

TEST(ReservationTable, MinimumLogIsThreeTimesTheLargestReservation) {
  ReservationTable t(ReservationGeometry{});
  std::int64_t largest = 0;
  for (int i = 0; i < kTransTypeCount; ++i) {
    const TransResv& r = t.Get(static_cast<TransType>(i));
    largest = std::max<std::int64_t>(largest, std::int64_t{r.unit_bytes} * r.log_count);
  }
  EXPECT_EQ(t.LargestBytes(), largest);
  EXPECT_EQ(t.MinLogBytes(), 3 * largest);
}

TEST(ReservationTable, ScalesWithBlockSize) {
  ReservationGeometry small{}, big{};
  small.block_size = 1024;
  big.block_size = 65536;
  EXPECT_LT(ReservationTable(small).MinLogBytes(), ReservationTable(big).MinLogBytes());
}

TEST(ReservationTable, LogSpaceRefusesALogBelowTheMinimum) {
  ReservationTable t(ReservationGeometry{});
  auto r = LogSpace::Create({.log_bytes = t.MinLogBytes() - 1, .min_log_bytes = t.MinLogBytes()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("too small"), std::string_view::npos);
  EXPECT_TRUE(LogSpace::Create({.log_bytes = t.MinLogBytes(), .min_log_bytes = t.MinLogBytes()}).ok());
}

}  // namespace
}  // namespace walfs::journal
