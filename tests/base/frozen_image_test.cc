#include "base/frozen_image.h"

#include <cstddef>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Pattern;

std::shared_ptr<const FrozenImage> Freeze(const std::vector<std::byte>& bytes) {
  auto image = FrozenImage::Make(bytes.size(), [&](std::byte* p) {
    std::memcpy(p, bytes.data(), bytes.size());
    return Status::Ok();
  });
  EXPECT_TRUE(image.ok()) << image.status().ToString();
  return image.ok() ? *image : nullptr;
}

TEST(FrozenImage, EveryPrivateViewSeesTheImageAndNoViewSeesAnothersWrites) {
  const std::vector<std::byte> bytes = Pattern(3 * 4096 + 100, 1);
  auto image = Freeze(bytes);
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->size(), bytes.size());
  Mapping a = image->MapPrivate(), b = image->MapPrivate();
  EXPECT_EQ(std::memcmp(a.get(), bytes.data(), bytes.size()), 0);
  std::memset(a.get() + 4000, 0xee, 300);  // across a page boundary
  EXPECT_EQ(std::memcmp(b.get(), bytes.data(), bytes.size()), 0) << "b saw a's write";
  Mapping c = image->MapPrivate();
  EXPECT_EQ(std::memcmp(c.get(), bytes.data(), bytes.size()), 0) << "a's write reached the image";
}

TEST(FrozenImage, StartsAsZerosAndAFillThatFailsMakesNoImage) {
  auto zeros = FrozenImage::Make(8192, [](std::byte*) { return Status::Ok(); });
  ASSERT_TRUE(zeros.ok()) << zeros.status().ToString();
  Mapping m = (*zeros)->MapPrivate();
  EXPECT_EQ(std::vector<std::byte>(m.get(), m.get() + 8192), std::vector<std::byte>(8192));

  auto failed = FrozenImage::Make(4096, [](std::byte*) { return Status::IoError("read failed"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find("read failed"), std::string::npos) << failed.status().ToString();
}

TEST(FrozenImage, AnEmptyImageMapsToNothing) {
  auto empty = FrozenImage::Make(0, [](std::byte*) { return Status::Ok(); });
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ((*empty)->size(), 0u);
  EXPECT_EQ((*empty)->MapPrivate().get(), nullptr);
}

TEST(MemoryDeviceFromFrozenImage, LaysThePatchesInOrderOverTheImage) {
  const std::vector<std::byte> bytes = Pattern(5 * 4096, 2);
  auto image = Freeze(bytes);
  ASSERT_NE(image, nullptr);
  const std::vector<std::byte> first = Pattern(1000, 3), second = Pattern(200, 4);
  const std::vector<ImagePatch> patches{{100, first}, {600, second}};
  MemoryDevice dev(image, patches, 512);
  std::vector<std::byte> want = bytes;
  std::memcpy(want.data() + 100, first.data(), first.size());
  std::memcpy(want.data() + 600, second.data(), second.size());  // the later patch wins
  EXPECT_EQ(dev.Contents(), want);
  EXPECT_EQ(dev.size_bytes(), bytes.size());
  EXPECT_EQ(MemoryDevice(image).Contents(), bytes) << "a patch reached the image";
}

TEST(MemoryDeviceFromFrozenImage, ACloneHoldsTheBytesOfTheMomentAndGoesItsOwnWay) {
  const std::vector<std::byte> bytes = Pattern(6 * 4096 + 512, 5);
  auto image = Freeze(bytes);
  ASSERT_NE(image, nullptr);
  MemoryDevice dev(image);
  const std::vector<std::byte> w = Pattern(5000, 6);
  ASSERT_TRUE(dev.Write(4096 - 512, w.data(), w.size()).ok());
  ASSERT_TRUE(dev.Discard(6 * 4096, 512).ok());  // the last, partial page
  const std::vector<std::byte> then = dev.Contents();
  std::unique_ptr<MemoryDevice> clone = dev.Clone();
  EXPECT_EQ(clone->Contents(), then);
  ASSERT_TRUE(dev.Write(0, w.data(), 4096).ok());
  EXPECT_EQ(clone->Contents(), then) << "a write to the device reached its clone";
  ASSERT_TRUE(clone->Write(8192, w.data(), 4096).ok());
  std::vector<std::byte> want = dev.Contents();
  EXPECT_NE(want, then);
  std::unique_ptr<MemoryDevice> clone_of_clone = clone->Clone();
  std::vector<std::byte> clone_now = then;
  std::memcpy(clone_now.data() + 8192, w.data(), 4096);
  EXPECT_EQ(clone_of_clone->Contents(), clone_now);
  EXPECT_EQ(dev.Contents(), want) << "a clone's write reached the device";
}

TEST(MemoryDeviceFromFrozenImage, ACloneOfADeviceMadeFromBytesIsACopy) {
  const std::vector<std::byte> bytes = Pattern(4096, 7);
  MemoryDevice dev(bytes);
  std::unique_ptr<MemoryDevice> clone = dev.Clone();
  std::byte one{1};
  ASSERT_TRUE(dev.Write(0, &one, 1).ok());
  EXPECT_EQ(clone->Contents(), bytes);
  EXPECT_EQ(clone->logical_block_size(), dev.logical_block_size());
}

}  // namespace
}  // namespace walfs
