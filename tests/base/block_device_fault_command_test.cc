#include "base/block_device_fault_command.h"

#include <cerrno>
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"

namespace walfs {
namespace {

class FaultCommandTest : public ::testing::Test {
 protected:
  int WriteErrno() { return dev_.Write(0, block_.data(), 512).ToErrno(); }
  int FlushErrno() { return dev_.Flush().ToErrno(); }
  int ReadErrno(std::uint64_t off) { return dev_.Read(off, block_.data(), 512).ToErrno(); }

  MemoryDevice disk_{64 * 1024};
  FaultDevice dev_{&disk_};
  std::vector<std::byte> block_ = std::vector<std::byte>(4096, std::byte{1});
};

TEST_F(FaultCommandTest, WriteFailsOnlyTheNthWriteWithTheNamedErrno) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "write 2 ENOSPC").ok());
  EXPECT_EQ(WriteErrno(), 0);
  EXPECT_EQ(WriteErrno(), ENOSPC);
  EXPECT_EQ(WriteErrno(), 0);
}

TEST_F(FaultCommandTest, WritesFailsEveryWriteFromTheNthWithEioByDefault) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "writes 1\n").ok());
  EXPECT_EQ(WriteErrno(), EIO);
  EXPECT_EQ(WriteErrno(), EIO);
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "clear").ok());
  EXPECT_EQ(WriteErrno(), 0);
}

TEST_F(FaultCommandTest, TearLandsTheFirstSectorsAndReportsTheError) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "tear 1 2").ok());
  EXPECT_EQ(dev_.Write(0, block_.data(), 4096).ToErrno(), EIO);
  EXPECT_EQ(disk_.Contents()[1023], std::byte{1});
  EXPECT_EQ(disk_.Contents()[1024], std::byte{0});
}

TEST_F(FaultCommandTest, FlushAndFlushesFailFlushes) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "flush 1 5").ok());
  EXPECT_EQ(FlushErrno(), 5);
  EXPECT_EQ(FlushErrno(), 0);
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "flushes EROFS").ok());
  EXPECT_EQ(FlushErrno(), EROFS);
  EXPECT_EQ(FlushErrno(), EROFS);
}

TEST_F(FaultCommandTest, ReadFailsReadsTouchingTheRangeWithHexOffsets) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "read 0x1000 4096").ok());
  EXPECT_EQ(ReadErrno(0), 0);
  EXPECT_EQ(ReadErrno(4096), EIO);
  EXPECT_EQ(ReadErrno(8192), 0);
}

TEST_F(FaultCommandTest, BadCommandsAreInvalidArgumentAndChangeNothing) {
  for (const char* bad : {"", "   ", "explode", "write", "write 0", "write x", "write 1 EWHAT", "write 1 EIO extra",
                          "tear 1", "read 0", "read 0 0", "read 65536 1", "read 0 65537", "flushes 1 2",
                          "clear now", "write -1", "write 99999999999999999999"}) {
    const Status s = ApplyFaultCommand(&dev_, bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
    EXPECT_EQ(s.ToErrno(), EINVAL) << "'" << bad << "'";
  }
  EXPECT_EQ(WriteErrno(), 0);
  EXPECT_EQ(FlushErrno(), 0);
  EXPECT_EQ(ReadErrno(0), 0);
}

TEST_F(FaultCommandTest, ErrnoNamesAndNumbersParse) {
  EXPECT_EQ(*ParseErrnoName("EIO"), EIO);
  EXPECT_EQ(*ParseErrnoName("ENOSPC"), ENOSPC);
  EXPECT_EQ(*ParseErrnoName("28"), 28);
  EXPECT_FALSE(ParseErrnoName("0").ok());
  EXPECT_FALSE(ParseErrnoName("4096").ok());
  EXPECT_FALSE(ParseErrnoName("eio").ok());
}

TEST_F(FaultCommandTest, TheTextShowsTheLastCommandAndTheCounters) {
  ASSERT_TRUE(ApplyFaultCommand(&dev_, "write 1").ok());
  EXPECT_EQ(WriteErrno(), EIO);
  const std::string t = FaultText(dev_, "write 1");
  EXPECT_NE(t.find("last: write 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("failed_writes: 1\n"), std::string::npos) << t;
  EXPECT_NE(FaultText(dev_, "").find("last: none\n"), std::string::npos);
}

}  // namespace
}  // namespace walfs
