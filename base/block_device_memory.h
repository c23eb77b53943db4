// MemoryDevice: a BlockDevice held in memory, for unit tests and for the
// images a RecordingDevice materialises.  It keeps the whole BlockDevice
// contract (range checks, in-order callbacks on its own completion thread)
// and is thread-safe; it models no volatile cache, so every completed write
// is already "durable" and Flush() only counts.  Crash behaviour is the
// RecordingDevice's job, which keeps this device simple and exact.
//
//   MemoryDevice dev(1 << 20);                     // 1 MiB of zeros
//   ASSERT_TRUE(dev.Write(4096, buf, 512).ok());
//   std::vector<std::byte> image = dev.Contents(); // a snapshot
//
// Concurrent writes to overlapping ranges land whole, one after the other
// (one lock covers the image), in an unspecified order.
//
// A device of zeros is anonymous memory mapped on demand: a 64 MiB device
// costs only the pages written, not a 64 MiB memset (most specs format a
// fresh device and touch a few MiB of it).  A device made from an image
// keeps that vector (moved in, not copied).  A device made from a
// FrozenImage is a private copy-on-write mapping of it, with patches laid
// over it first (a crash state: the starting image and the writes that
// landed); it costs the pages it writes, and Clone() copies only those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_worker.h"
#include "base/frozen_image.h"
#include "base/mutex.h"

namespace walfs {

// Bytes laid over a frozen image before a MemoryDevice made from it is used.
struct ImagePatch {
  std::uint64_t offset = 0;
  std::span<const std::byte> bytes;
};

class MemoryDevice final : public BlockDevice {
 public:
  // size_bytes of zeros, in sectors of logical_block_size (a power of two).
  explicit MemoryDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size = 512);
  // A device whose contents are `image`.
  explicit MemoryDevice(std::vector<std::byte> image, std::uint32_t logical_block_size = 512);
  // A device whose contents are `base` with `patches` laid over it in order
  // (each inside the image: a patch outside it is a bug, and aborts).
  explicit MemoryDevice(std::shared_ptr<const FrozenImage> base,
                        std::span<const ImagePatch> patches = {},
                        std::uint32_t logical_block_size = 512);
  ~MemoryDevice() override;

  std::string_view kind() const override { return "memory"; }
  // Discard writes zeros, so a test can see what was discarded.
  bool SupportsDiscard() const override { return true; }

  // A copy of the whole image.
  std::vector<std::byte> Contents() const EXCLUDES(mu_);
  // A new device holding this one's bytes now.  From a frozen image it maps
  // the image again and copies only the pages this device has changed.
  std::unique_ptr<MemoryDevice> Clone() const EXCLUDES(mu_);
  // How many flushes (Flush(), kFlush, kIoPreflush) reached the device.
  std::uint64_t flush_count() const EXCLUDES(mu_);

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override EXCLUDES(mu_);
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override EXCLUDES(mu_);
  Status DoFlush() override EXCLUDES(mu_);
  void DoSubmit(std::vector<IoRequest> batch) override;
  Status DoDiscard(std::uint64_t offset, std::uint64_t len) override EXCLUDES(mu_);
  // Discard zeroes here.
  Status DoZero(std::uint64_t offset, std::uint64_t len) override EXCLUDES(mu_) { return DoDiscard(offset, len); }

 private:
  static constexpr std::uint64_t kPage = 4096;  // what a frozen image's view copies on write

  static Mapping MapZeros(std::size_t bytes);
  // Notes the frozen image's pages that [offset, offset + len) changes.
  void MarkChanged(std::uint64_t offset, std::uint64_t len) REQUIRES(mu_);

  mutable Mutex mu_;  // leaf lock: guards the bytes at image_
  std::vector<std::byte> owned_;  // the image, when made from one
  const std::shared_ptr<const FrozenImage> frozen_;  // or the frozen image it views
  const Mapping map_;  // zeros mapped on demand, or the private view of frozen_
  std::byte* const image_;  // size_bytes() bytes: owned_'s or map_'s
  std::vector<bool> changed_ GUARDED_BY(mu_);  // per kPage of a frozen image's view
  std::uint64_t flush_count_ GUARDED_BY(mu_) = 0;
  BlockDeviceWorker worker_{"walfs-memdev"};  // last: stopped before the image goes
};

}  // namespace walfs
