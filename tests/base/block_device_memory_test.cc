#include "base/block_device_memory.h"
#include "tests/base/byte_pattern.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs {
namespace {
using walfs::testing::Pattern;

TEST(MemoryDevice, StartsZeroedAndReportsItsGeometry) {
  MemoryDevice dev(1 << 20, 4096);
  EXPECT_EQ(dev.size_bytes(), 1u << 20);
  EXPECT_EQ(dev.logical_block_size(), 4096u);
  EXPECT_EQ(dev.io_alignment(), 1u);
  EXPECT_EQ(dev.kind(), "memory");
  std::vector<std::byte> buf(4096, std::byte{0xff});
  ASSERT_TRUE(dev.Read(8192, buf.data(), buf.size()).ok());
  EXPECT_EQ(buf, std::vector<std::byte>(4096));
}

TEST(MemoryDevice, WritesReadBackSyncAndBatched) {
  MemoryDevice dev(1 << 16);
  const std::vector<std::byte> a = Pattern(1000, 1), b = Pattern(3000, 2);
  ASSERT_TRUE(dev.Write(10, a.data(), a.size()).ok());
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(5000, b.data(), b.size(), kIoFua, [](Status) {}));
  ASSERT_TRUE(dev.SubmitAndWait(std::move(batch)).ok());
  std::vector<std::byte> got_a(1000), got_b(3000);
  std::vector<IoRequest> reads;
  reads.push_back(IoRequest::Read(10, got_a.data(), got_a.size(), [](Status) {}));
  reads.push_back(IoRequest::Read(5000, got_b.data(), got_b.size(), [](Status) {}));
  ASSERT_TRUE(dev.SubmitAndWait(std::move(reads)).ok());
  EXPECT_EQ(got_a, a);
  EXPECT_EQ(got_b, b);
  const std::vector<std::byte> image = dev.Contents();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), image.begin() + 10));
}

TEST(MemoryDevice, ServesAnImageItWasGiven) {
  std::vector<std::byte> image = Pattern(8192, 9);
  MemoryDevice dev(image);
  std::vector<std::byte> got(8192);
  ASSERT_TRUE(dev.Read(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, image);
}

TEST(MemoryDevice, CountsFlushesAndPreflushes) {
  MemoryDevice dev(4096);
  std::byte b{1};
  ASSERT_TRUE(dev.Flush().ok());
  ASSERT_TRUE(dev.Write(0, &b, 1, kIoPreflush).ok());
  EXPECT_EQ(dev.flush_count(), 2u);
}

TEST(MemoryDevice, DiscardZeroesTheRangeAndOnlyIt) {
  MemoryDevice dev(1 << 16, 512);
  const std::vector<std::byte> data = Pattern(3 * 4096, 3);
  ASSERT_TRUE(dev.Write(0, data.data(), data.size()).ok());
  EXPECT_TRUE(dev.SupportsDiscard());
  ASSERT_TRUE(dev.Discard(4096, 4096).ok());
  const std::vector<std::byte> image = dev.Contents();
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 4096, image.begin()));
  EXPECT_EQ(std::vector<std::byte>(image.begin() + 4096, image.begin() + 8192),
            std::vector<std::byte>(4096));
  EXPECT_TRUE(std::equal(data.begin() + 8192, data.end(), image.begin() + 8192));
  EXPECT_EQ(dev.stats().discards, 1u);
  EXPECT_EQ(dev.stats().bytes_discarded, 4096u);
}

TEST(MemoryDevice, DiscardRefusesRangesOutsideTheDeviceOrOffTheSector) {
  MemoryDevice dev(1 << 16, 512);
  EXPECT_EQ(dev.Discard((1 << 16) - 512, 1024).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev.Discard(~std::uint64_t{0} - 511, 1024).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev.Discard(100, 512).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev.Discard(512, 100).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(dev.Discard(512, 0).ok());
  EXPECT_EQ(dev.stats().refused, 4u);
  EXPECT_EQ(dev.stats().discards, 0u);
}

// Several threads, each on its own slice, mixing sync and batched calls:
// under TSan this is the thread-safety check.
TEST(MemoryDevice, ConcurrentUseFromSeveralThreads) {
  constexpr int kThreads = 4, kRounds = 200;
  constexpr std::size_t kSlice = 4096;
  MemoryDevice dev(kThreads * kSlice);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::uint64_t base = static_cast<std::uint64_t>(t) * kSlice;
      for (int r = 0; r < kRounds; ++r) {
        const std::vector<std::byte> data = Pattern(kSlice, t * 1000 + r);
        std::vector<std::byte> got(kSlice);
        Status s = r % 2 ? dev.Write(base, data.data(), kSlice) : [&] {
          std::vector<IoRequest> batch;
          batch.push_back(IoRequest::Write(base, data.data(), kSlice, 0, [](Status) {}));
          batch.push_back(IoRequest::Flush([](Status) {}));
          return dev.SubmitAndWait(std::move(batch));
        }();
        if (!s.ok() || !dev.Read(base, got.data(), kSlice).ok() || got != data) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(dev.stats().writes, static_cast<std::uint64_t>(kThreads * kRounds));
}

}  // namespace
}  // namespace walfs
