// Specs of OverlayDevice: writes are seen through the overlay and never
// reach the device under it.
#include "base/block_device_overlay.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Pattern;

TEST(OverlayDevice, WritesAreReadBackButNeverReachTheDeviceBelow) {
  MemoryDevice disk(Pattern(1 << 16, 1), 512);
  const std::vector<std::byte> before = disk.Contents();
  auto view = OverlayDevice::Create(&disk);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  // Unaligned, across three sectors: the sectors' other bytes stay the disk's.
  const std::vector<std::byte> w = Pattern(1000, 2);
  ASSERT_TRUE((*view)->Write(700, w.data(), w.size()).ok());
  ASSERT_TRUE((*view)->Flush().ok());
  EXPECT_EQ(disk.Contents(), before);
  EXPECT_EQ((*view)->changed_sectors(), 3u);
  std::vector<std::byte> got(1 << 16);
  ASSERT_TRUE((*view)->Read(0, got.data(), got.size()).ok());
  std::vector<std::byte> want = before;
  std::copy(w.begin(), w.end(), want.begin() + 700);
  EXPECT_EQ(got, want);
}

TEST(OverlayDevice, LaterWritesWinAndBatchedRequestsSeeThem) {
  MemoryDevice disk(1 << 16, 512);
  auto view = OverlayDevice::Create(&disk);
  ASSERT_TRUE(view.ok());
  const std::vector<std::byte> a = Pattern(512, 3), b = Pattern(100, 4);
  ASSERT_TRUE((*view)->Write(1024, a.data(), a.size()).ok());
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(1100, b.data(), b.size(), kIoFua, [](Status) {}));
  ASSERT_TRUE((*view)->SubmitAndWait(std::move(batch)).ok());
  std::vector<std::byte> got(512);
  std::vector<IoRequest> reads;
  reads.push_back(IoRequest::Read(1024, got.data(), got.size(), [](Status) {}));
  ASSERT_TRUE((*view)->SubmitAndWait(std::move(reads)).ok());
  std::vector<std::byte> want = a;
  std::copy(b.begin(), b.end(), want.begin() + 76);
  EXPECT_EQ(got, want);
  EXPECT_EQ(disk.Contents(), std::vector<std::byte>(1 << 16));
}

TEST(OverlayDevice, ADeviceWhoseSizeIsNotWholeSectorsKeepsItsShortLastSector) {
  MemoryDevice disk(Pattern(1000, 5), 512);
  auto view = OverlayDevice::Create(&disk);
  ASSERT_TRUE(view.ok());
  const std::vector<std::byte> w = Pattern(10, 6);
  ASSERT_TRUE((*view)->Write(990, w.data(), w.size()).ok());
  std::vector<std::byte> got(488);
  ASSERT_TRUE((*view)->Read(512, got.data(), got.size()).ok());
  EXPECT_TRUE(std::equal(w.begin(), w.end(), got.begin() + 478));
  EXPECT_FALSE((*view)->Write(995, w.data(), w.size()).ok());  // past the end: refused
}

}  // namespace
}  // namespace walfs
