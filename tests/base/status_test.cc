#include "base/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(Status, DefaultIsOkAndMapsToNoErrno) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToErrno(), 0);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, EachClassMapsToItsErrno) {
  EXPECT_EQ(Status::InvalidArgument("x").ToErrno(), EINVAL);
  EXPECT_EQ(Status::NoSpace("x").ToErrno(), ENOSPC);
  EXPECT_EQ(Status::Corruption("x").ToErrno(), EUCLEAN);
  EXPECT_EQ(Status::Shutdown("x").ToErrno(), EIO);
  EXPECT_EQ(Status::NotFound("x").ToErrno(), ENOENT);
}

TEST(Status, FromErrnoKeepsTheExactErrnoAndClassifies) {
  Status s = Status::FromErrno(EDQUOT, "write");
  EXPECT_EQ(s.ToErrno(), EDQUOT);
  EXPECT_TRUE(s.IsNoSpace());
  EXPECT_NE(s.ToString().find("write"), std::string::npos);
}

TEST(Status, PosixAnswersAreNotClassifiedAsIoErrors) {
  for (int err : {ENXIO, EROFS}) {
    Status s = Status::FromErrno(err, "lseek");
    EXPECT_EQ(s.ToErrno(), err);
    EXPECT_NE(s.code(), StatusCode::kIoError) << strerrorname_np(err);
  }
  EXPECT_EQ(Status::FromErrno(EIO, "pread").code(), StatusCode::kIoError);
  EXPECT_EQ(Status::FromErrno(ENODEV, "pread").code(), StatusCode::kIoError);
}

TEST(Status, CopiesAreIndependent) {
  Status a = Status::Corruption("bad magic");
  Status b = a;
  a = Status::Ok();
  EXPECT_TRUE(b.IsCorruption());
  EXPECT_EQ(b.message(), "bad magic");
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  int h;
  WALFS_ASSIGN_OR_RETURN(h, Half(x));
  return Half(h);
}

TEST(Result, PropagatesErrorsThroughAssignOrReturn) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ResultDeathTest, ValueOfFailedResultAborts) {
  Result<int> r = Status::IoError("boom");
  EXPECT_DEATH((void)r.value(), "value\\(\\) of a failed Result");
}

}  // namespace
}  // namespace walfs
