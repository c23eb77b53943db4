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
// keeps that vector (moved in, not copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_worker.h"
#include "base/mutex.h"

namespace walfs {

class MemoryDevice final : public BlockDevice {
 public:
  // size_bytes of zeros, in sectors of logical_block_size (a power of two).
  explicit MemoryDevice(std::uint64_t size_bytes, std::uint32_t logical_block_size = 512);
  // A device whose contents are `image`.
  explicit MemoryDevice(std::vector<std::byte> image, std::uint32_t logical_block_size = 512);
  ~MemoryDevice() override;

  std::string_view kind() const override { return "memory"; }
  // Discard writes zeros, so a test can see what was discarded.
  bool SupportsDiscard() const override { return true; }

  // A copy of the whole image.
  std::vector<std::byte> Contents() const EXCLUDES(mu_);
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
  struct Unmap {
    std::size_t bytes;
    void operator()(std::byte* p) const;
  };
  static std::unique_ptr<std::byte, Unmap> MapZeros(std::size_t bytes);

  mutable Mutex mu_;  // leaf lock: guards the bytes at image_
  std::vector<std::byte> owned_;                 // the image, when made from one
  const std::unique_ptr<std::byte, Unmap> map_;  // or zeros, mapped on demand
  std::byte* const image_;                       // size_bytes() bytes: one of the two
  std::uint64_t flush_count_ GUARDED_BY(mu_) = 0;
  BlockDeviceWorker worker_{"walfs-memdev"};  // last: stopped before the image goes
};

}  // namespace walfs
