// The BlockDevice contract (base/block_device.h) that every implementation
// shares, exercised through MemoryDevice: range checks, the batched path's
// completion order and thread, SubmitAndWait, the torn-write definition.
#include "base/block_device.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_worker.h"
#include "base/mutex.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Pattern;

constexpr std::uint64_t kDevBytes = 64 * 1024;

void ExpectInvalid(const Status& s, std::string_view fragment) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.ToErrno(), EINVAL);
  EXPECT_NE(s.ToString().find(fragment), std::string::npos) << s.ToString();
}

TEST(BlockDevice, OutOfRangeRequestsAreRefusedWithInvalidArgument) {
  MemoryDevice dev(kDevBytes);
  std::vector<std::byte> buf(4096);
  ExpectInvalid(dev.Write(kDevBytes - 100, buf.data(), 4096), "beyond the end");
  ExpectInvalid(dev.Read(kDevBytes + 1, buf.data(), 0), "beyond the end");
  // offset + len wraps around 2^64: must still be refused, not wrap to "fits".
  ExpectInvalid(dev.Read(UINT64_MAX - 10, buf.data(), 4096), "beyond the end");
  ExpectInvalid(dev.Write(0, nullptr, 10), "null buffer");
  EXPECT_EQ(dev.stats().refused, 4u);
  EXPECT_EQ(dev.stats().writes, 0u);
  // The last byte, and an empty request at the very end, are fine.
  EXPECT_TRUE(dev.Write(kDevBytes - 1, buf.data(), 1).ok());
  EXPECT_TRUE(dev.Read(kDevBytes, buf.data(), 0).ok());
}

TEST(BlockDevice, FlagsThatMakeNoSenseAreRefused) {
  MemoryDevice dev(kDevBytes);
  std::vector<std::byte> buf(512);
  IoRequest read = IoRequest::Read(0, buf.data(), 512, [](Status) {});
  read.flags = kIoFua;
  ExpectInvalid(dev.Validate(read), "apply to writes only");
  ExpectInvalid(dev.Write(0, buf.data(), 512, 1u << 7), "unknown flags");
  IoRequest flush = IoRequest::Flush([](Status) {});
  flush.len = 512;
  ExpectInvalid(dev.Validate(flush), "takes no range");
}

TEST(BlockDevice, ARefusedBatchIssuesNothingAndRunsNoCallback) {
  MemoryDevice dev(kDevBytes);
  const std::vector<std::byte> data = Pattern(512, 1);
  int callbacks = 0;
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, data.data(), 512, 0, [&](Status) { ++callbacks; }));
  batch.push_back(IoRequest::Write(kDevBytes, data.data(), 512, 0, [&](Status) { ++callbacks; }));
  Status s = dev.Submit(std::move(batch));
  ExpectInvalid(s, "request 1 of 2");
  std::vector<IoRequest> none;
  none.push_back(IoRequest::Write(0, data.data(), 512, 0, nullptr));
  ExpectInvalid(dev.Submit(std::move(none)), "no completion callback");
  EXPECT_EQ(dev.Contents()[0], std::byte{0}) << "the valid first request was not issued";
  EXPECT_EQ(callbacks, 0);
}

TEST(BlockDevice, BatchedRequestsCompleteInSubmissionOrderOnTheCompletionThread) {
  MemoryDevice dev(kDevBytes);
  Mutex mu;
  std::vector<int> order;
  bool on_completion_thread = true;
  const std::thread::id submitter = std::this_thread::get_id();
  std::vector<std::vector<std::byte>> data;
  for (int i = 0; i < 16; ++i) data.push_back(Pattern(1024, i));
  for (int b = 0; b < 4; ++b) {
    std::vector<IoRequest> batch;
    for (int i = b * 4; i < b * 4 + 4; ++i) {
      auto cb = [&, i](Status s) {
        EXPECT_TRUE(s.ok()) << s.ToString();
        MutexLock l(&mu);
        order.push_back(i);
        on_completion_thread &= internal::IsCompletionThread() &&
                                std::this_thread::get_id() != submitter;
      };
      if (i % 5 == 4) {
        batch.push_back(IoRequest::Flush(cb));
      } else {
        batch.push_back(IoRequest::Write(static_cast<std::uint64_t>(i) * 1024, data[i].data(),
                                         1024, i % 3 == 0 ? kIoFua : 0, cb));
      }
    }
    ASSERT_TRUE(dev.Submit(std::move(batch)).ok());
  }
  // SubmitAndWait's request completes after every earlier one.
  std::vector<IoRequest> last;
  last.push_back(IoRequest::Flush([&](Status) { MutexLock l(&mu); order.push_back(16); }));
  ASSERT_TRUE(dev.SubmitAndWait(std::move(last)).ok());
  MutexLock l(&mu);
  std::vector<int> expected(17);
  for (int i = 0; i < 17; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(on_completion_thread);
}

TEST(BlockDevice, SubmitAndWaitNeedsNoCallbacksAndCountsFuaAndPreflush) {
  MemoryDevice dev(kDevBytes);
  std::vector<std::byte> buf(512);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Read(0, buf.data(), 512, nullptr));
  batch.push_back(IoRequest::Write(512, buf.data(), 512, kIoPreflush | kIoFua, nullptr));
  EXPECT_TRUE(dev.SubmitAndWait(std::move(batch)).ok());
  EXPECT_EQ(dev.flush_count(), 1u) << "the preflush reached the device";
  EXPECT_EQ(dev.stats().preflush_writes, 1u);
  EXPECT_EQ(dev.stats().fua_writes, 1u);
}

// Flush tickets: only a flush accepted after a ticket was taken, and
// completed, covers the writes seen before it (a preflush counts).
TEST(BlockDevice, OnlyAFlushIssuedAfterATicketAndCompletedCoversIt) {
  MemoryDevice dev(kDevBytes);
  std::vector<std::byte> buf(512);
  const std::uint64_t t0 = dev.FlushTicket();
  EXPECT_FALSE(dev.FlushedSince(t0));
  ASSERT_TRUE(dev.Write(0, buf.data(), 512).ok());
  EXPECT_FALSE(dev.FlushedSince(t0)) << "a plain write flushes nothing";
  ASSERT_TRUE(dev.Flush().ok());
  EXPECT_TRUE(dev.FlushedSince(t0));
  const std::uint64_t t1 = dev.FlushTicket();
  EXPECT_FALSE(dev.FlushedSince(t1)) << "the flush before the ticket does not count";
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(512, buf.data(), 512, kIoPreflush | kIoFua, nullptr));
  ASSERT_TRUE(dev.SubmitAndWait(std::move(batch)).ok());
  EXPECT_TRUE(dev.FlushedSince(t1)) << "a completed preflush write covers it";
  const std::uint64_t t2 = dev.FlushTicket();
  std::vector<IoRequest> flush;
  flush.push_back(IoRequest::Flush(nullptr));
  ASSERT_TRUE(dev.SubmitAndWait(std::move(flush)).ok());
  EXPECT_TRUE(dev.FlushedSince(t2)) << "so does a kFlush request";
}

TEST(BlockDevice, SubmitAndWaitFromACompletionCallbackIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        MemoryDevice dev(kDevBytes);
        std::vector<IoRequest> batch;
        batch.push_back(IoRequest::Flush([&](Status) { (void)dev.SubmitAndWait({}); }));
        (void)dev.Submit(std::move(batch));
      },
      "would wait for itself");
}

TEST(BlockDevice, CallbacksMaySubmitMoreWork) {
  MemoryDevice dev(kDevBytes);
  const std::vector<std::byte> data = Pattern(512, 3);
  Mutex mu;
  CondVar cv(&mu);
  bool second_done = false;
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, data.data(), 512, 0, [&](Status s) {
    ASSERT_TRUE(s.ok());
    std::vector<IoRequest> next;
    next.push_back(IoRequest::Flush([&](Status s2) {
      EXPECT_TRUE(s2.ok());
      MutexLock l(&mu);
      second_done = true;
      cv.SignalAll();
    }));
    EXPECT_TRUE(dev.Submit(std::move(next)).ok());
  }));
  ASSERT_TRUE(dev.Submit(std::move(batch)).ok());
  MutexLock l(&mu);
  while (!second_done) cv.Wait(&mu);
}

TEST(BlockDevice, DestroyingADeviceRunsEveryPendingCallback) {
  int callbacks = 0;
  const std::vector<std::byte> data = Pattern(4096, 4);
  {
    MemoryDevice dev(kDevBytes);
    for (int i = 0; i < 50; ++i) {
      std::vector<IoRequest> batch;
      batch.push_back(IoRequest::Write(0, data.data(), 4096, 0, [&](Status) { ++callbacks; }));
      ASSERT_TRUE(dev.Submit(std::move(batch)).ok());
    }
  }
  EXPECT_EQ(callbacks, 50);
}

TEST(BlockDevice, TornWriteLengthCountsWholeSectorsFromTheFirst) {
  EXPECT_EQ(TornWriteLength(0, 4096, 512, 0), 0u);
  EXPECT_EQ(TornWriteLength(0, 4096, 512, 3), 1536u);
  EXPECT_EQ(TornWriteLength(0, 4096, 512, 8), 4096u);
  EXPECT_EQ(TornWriteLength(0, 4096, 512, 100), 4096u);
  // An unaligned write: its first sector is the one holding its offset.
  EXPECT_EQ(TornWriteLength(100, 1000, 512, 1), 412u);
  EXPECT_EQ(TornWriteLength(100, 1000, 512, 2), 924u);
  EXPECT_EQ(TornWriteLength(100, 1000, 512, 3), 1000u);
}

TEST(BlockDevice, NamesForMessagesAndTraces) {
  EXPECT_EQ(IoOpName(IoOp::kRead), "read");
  EXPECT_EQ(IoOpName(IoOp::kFlush), "flush");
  EXPECT_EQ(IoFlagsToString(0), "-");
  EXPECT_EQ(IoFlagsToString(kIoFua | kIoPreflush), "fua|preflush");
  EXPECT_EQ(IoFlagsToString(kIoPreflush), "preflush");
}

}  // namespace
}  // namespace walfs
