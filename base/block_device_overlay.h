// OverlayDevice: a copy-on-write view of another device.  Reads see the
// inner device with every write made through the overlay laid over it;
// writes land in memory only, so the inner device is never changed.  fsck
// -n uses it to replay a dirty log and check the image as the log would
// leave it, writing nothing (xfs_repair -n's in-memory replay).
//
//   WALFS_ASSIGN_OR_RETURN(std::unique_ptr<OverlayDevice> view, OverlayDevice::Create(dev));
//   WALFS_RETURN_IF_ERROR(view->Write(off, buf, len));   // dev unchanged
//   WALFS_RETURN_IF_ERROR(view->Read(off, out, len));    // sees the write
//
// Changes are kept per sector of the inner device (its logical block size),
// so the memory used is the sectors written, not the device.  Flush() only
// counts: there is nothing durable about an overlay.  The inner device is
// not owned, must outlive the overlay, and must not change under it (its
// reads are not locked against other writers).  An inner device that needs
// aligned I/O (O_DIRECT) is refused with InvalidArgument: the overlay reads
// partial sectors of it.  Thread-safe; batched requests run on the overlay's
// own completion thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_worker.h"
#include "base/mutex.h"

namespace walfs {

class OverlayDevice final : public BlockDevice {
 public:
  static Result<std::unique_ptr<OverlayDevice>> Create(BlockDevice* inner);
  ~OverlayDevice() override;

  std::string_view kind() const override { return "overlay"; }
  std::string Describe() const override;

  // How many sectors writes have changed (and the overlay holds).
  std::size_t changed_sectors() const EXCLUDES(mu_);

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override EXCLUDES(mu_);
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override EXCLUDES(mu_);
  Status DoFlush() override { return Status::Ok(); }
  void DoSubmit(std::vector<IoRequest> batch) override;

 private:
  explicit OverlayDevice(BlockDevice* inner);

  BlockDevice* const inner_;
  const std::uint32_t sector_;
  // Lock order: mu_ before the inner device's locks (a first write to a
  // sector reads it from the inner device with mu_ held).
  mutable Mutex mu_;
  std::map<std::uint64_t, std::vector<std::byte>> sectors_ GUARDED_BY(mu_);  // by sector number
  BlockDeviceWorker worker_{"walfs-overlay"};  // last: stopped before the sectors go
};

}  // namespace walfs
