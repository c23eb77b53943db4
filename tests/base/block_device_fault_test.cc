#include "base/block_device_fault.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/mutex.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Filled;

constexpr std::uint64_t kFaultDevBytes = 64 * 1024;

class FaultDeviceTest : public ::testing::Test {
 protected:
  MemoryDevice disk_{kFaultDevBytes};
  FaultDevice dev_{&disk_};
  std::vector<std::byte> block_ = Filled(4096, 0xab);
};

TEST_F(FaultDeviceTest, PassesEverythingThroughWithNoRules) {
  ASSERT_TRUE(dev_.Write(0, block_.data(), 4096, kIoFua | kIoPreflush).ok());
  ASSERT_TRUE(dev_.Flush().ok());
  std::vector<std::byte> got(4096);
  ASSERT_TRUE(dev_.Read(0, got.data(), 4096).ok());
  EXPECT_EQ(got, block_);
  EXPECT_EQ(dev_.kind(), "fault");
  EXPECT_EQ(dev_.size_bytes(), kFaultDevBytes);
  EXPECT_NE(dev_.Describe().find("memory"), std::string::npos);
}

TEST_F(FaultDeviceTest, FailsTheNthWriteWithEioByDefault) {
  dev_.FailNthWrite(2);
  EXPECT_TRUE(dev_.Write(0, block_.data(), 512).ok());
  Status s = dev_.Write(4096, block_.data(), 512);
  EXPECT_EQ(s.ToErrno(), EIO);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.ToString().find("injected write failure [4096, +512)"), std::string::npos);
  EXPECT_EQ(disk_.Contents()[4096], std::byte{0}) << "a failed write issues nothing";
  EXPECT_TRUE(dev_.Write(8192, block_.data(), 512).ok()) << "only the Nth fails";
}

TEST_F(FaultDeviceTest, EnospcPropagatesAsNoSpace) {
  dev_.FailNthWrite(1, ENOSPC);
  Status s = dev_.Write(0, block_.data(), 512);
  EXPECT_TRUE(s.IsNoSpace());
  EXPECT_EQ(s.ToErrno(), ENOSPC);
}

TEST_F(FaultDeviceTest, FailWritesFromFailsThatWriteAndEveryLaterOne) {
  dev_.FailWritesFrom(3, EROFS);
  EXPECT_TRUE(dev_.Write(0, block_.data(), 512).ok());
  EXPECT_TRUE(dev_.Write(0, block_.data(), 512).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(dev_.Write(0, block_.data(), 512).ToErrno(), EROFS);
  EXPECT_EQ(dev_.counters().failed_writes, 5u);
  dev_.ClearFaults();
  EXPECT_TRUE(dev_.Write(0, block_.data(), 512).ok());
}

TEST_F(FaultDeviceTest, TornWriteLandsOnlyTheFirstKSectors) {
  dev_.TearNthWrite(1, 3);  // 3 of the write's 8 sectors
  Status s = dev_.Write(8192, block_.data(), 4096);
  EXPECT_EQ(s.ToErrno(), EIO);
  EXPECT_NE(s.ToString().find("1536 of 4096 bytes landed"), std::string::npos) << s.ToString();
  const std::vector<std::byte> image = disk_.Contents();
  for (std::size_t i = 8192; i < 8192 + 4096; ++i)
    ASSERT_EQ(image[i], i < 8192 + 1536 ? std::byte{0xab} : std::byte{0}) << i;
  EXPECT_EQ(dev_.counters().torn_writes, 1u);
}

TEST_F(FaultDeviceTest, ASilentTornWriteReportsSuccess) {
  dev_.TearNthWrite(1, 1, /*err=*/0);
  EXPECT_TRUE(dev_.Write(0, block_.data(), 4096).ok());
  const std::vector<std::byte> image = disk_.Contents();
  EXPECT_EQ(image[511], std::byte{0xab});
  EXPECT_EQ(image[512], std::byte{0});
  EXPECT_EQ(dev_.counters().failed_writes, 0u);
  EXPECT_EQ(dev_.counters().torn_writes, 1u);
}

TEST_F(FaultDeviceTest, FailedFlushesAlsoFailPreflushWritesWithoutWriting) {
  dev_.FailFlushes(EIO);
  EXPECT_EQ(dev_.Flush().ToErrno(), EIO);
  Status s = dev_.Write(0, block_.data(), 4096, kIoPreflush | kIoFua);
  EXPECT_EQ(s.ToErrno(), EIO);
  EXPECT_NE(s.ToString().find("flush"), std::string::npos);
  EXPECT_EQ(disk_.Contents()[0], std::byte{0});
  // A FUA write without preflush is a write: flush rules leave it alone.
  EXPECT_TRUE(dev_.Write(0, block_.data(), 4096, kIoFua).ok());
  const FaultCounters c = dev_.counters();
  EXPECT_EQ(c.failed_flushes, 2u);
  EXPECT_EQ(c.writes, 1u) << "the refused preflush write was never attempted";
}

TEST_F(FaultDeviceTest, FailNthFlushFailsOnlyThatOne) {
  dev_.FailNthFlush(2, EIO);
  EXPECT_TRUE(dev_.Flush().ok());
  EXPECT_EQ(dev_.Flush().ToErrno(), EIO);
  EXPECT_TRUE(dev_.Flush().ok());
  EXPECT_EQ(disk_.flush_count(), 2u);
}

TEST_F(FaultDeviceTest, ReadsOverlappingAFailingRangeFail) {
  dev_.FailReads(8192, 4096, EIO);
  dev_.FailReads(40000, UINT64_MAX, EBADMSG);  // to the end of the device
  std::vector<std::byte> got(4096);
  EXPECT_TRUE(dev_.Read(4096, got.data(), 4096).ok()) << "ends where the range starts";
  EXPECT_TRUE(dev_.Read(12288, got.data(), 4096).ok()) << "starts where the range ends";
  EXPECT_EQ(dev_.Read(12287, got.data(), 1).ToErrno(), EIO);
  EXPECT_EQ(dev_.Read(6000, got.data(), 4096).ToErrno(), EIO);
  Status s = dev_.Read(60000, got.data(), 100);
  EXPECT_EQ(s.ToErrno(), EBADMSG);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(dev_.counters().failed_reads, 3u);
}

TEST_F(FaultDeviceTest, BatchedRequestsFailIndividuallyAndInOrder) {
  dev_.FailNthWrite(2, ENOSPC);
  Mutex mu;
  std::vector<int> errnos;
  std::vector<IoRequest> batch;
  for (int i = 0; i < 4; ++i)
    batch.push_back(IoRequest::Write(i * 4096, block_.data(), 4096, 0, [&](Status s) {
      MutexLock l(&mu);
      errnos.push_back(s.ToErrno());
    }));
  // SubmitAndWait reports the first error in request order.
  Status s = dev_.SubmitAndWait(std::move(batch));
  EXPECT_EQ(s.ToErrno(), ENOSPC);
  MutexLock l(&mu);
  EXPECT_EQ(errnos, (std::vector<int>{0, ENOSPC, 0, 0}));
}

TEST_F(FaultDeviceTest, WrapsAnyDeviceIncludingAnotherWrapper) {
  FaultDevice outer(&dev_);
  dev_.FailNthWrite(1, EIO);
  EXPECT_EQ(outer.Write(0, block_.data(), 512).ToErrno(), EIO);
  EXPECT_EQ(outer.counters().writes, 1u);
  EXPECT_EQ(dev_.counters().failed_writes, 1u);
}

// Rules switched from one thread while others do I/O: every outcome is
// either success or the injected errno, and the counters add up.
TEST_F(FaultDeviceTest, RulesChangeAtRunTimeWhileOtherThreadsDoIo) {
  constexpr int kThreads = 3, kWrites = 300;
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> buf(512, std::byte(t));
      for (int i = 0; i < kWrites; ++i) {
        Status s = i % 2 ? dev_.Write(t * 4096, buf.data(), 512) : [&] {
          std::vector<IoRequest> b;
          b.push_back(IoRequest::Write(t * 4096, buf.data(), 512, 0, nullptr));
          return dev_.SubmitAndWait(std::move(b));
        }();
        if (s.ok()) ++ok;
        else if (s.ToErrno() == ENOSPC) ++failed;
        else ++unexpected;
      }
    });
  }
  std::thread chaos([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (i % 3 == 0) dev_.FailNthWrite(2, ENOSPC);
      else if (i % 3 == 1) dev_.FailFlushes();
      else dev_.ClearFaults();
      std::this_thread::yield();
    }
  });
  for (std::thread& th : threads) th.join();
  stop = true;
  chaos.join();
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(ok.load() + failed.load(), kThreads * kWrites);
  const FaultCounters c = dev_.counters();
  EXPECT_EQ(c.writes, static_cast<std::uint64_t>(kThreads * kWrites));
  EXPECT_EQ(c.failed_writes, static_cast<std::uint64_t>(failed.load()));
}

}  // namespace
}  // namespace walfs
