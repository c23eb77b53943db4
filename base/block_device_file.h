// FileDevice: a BlockDevice over a regular file or a block device, with
// two engines for the batched path:
//
//   io_uring  one ring per device (UringEngine): batched submission, a
//             reaper thread, FUA as RWF_DSYNC, flush as a datasync fsync,
//             PREFLUSH as a fsync linked before the write.
//   pwrite    pread / pwrite / fdatasync on a worker thread, one request at
//             a time; FUA as pwritev2(RWF_DSYNC).
//
// engine=auto (the default) takes io_uring and falls back to pwrite when the
// ring cannot be set up (a seccomp filter, kernel.io_uring_disabled, an old
// kernel, a bad ring size); engine_reason() says why, and the mount prints
// Describe().  engine=io_uring fails instead of falling back.  With
// `pwrite_in_memory`, auto also takes pwrite for a file that lives in memory
// (tmpfs, ramfs): nothing there waits for a device, and io_uring hands each
// buffered write to a kernel io-wq worker before its reaper sees it, two
// thread hops where pwrite's worker is one (docs/block_device.md has the
// measurement).
//
//   FileDeviceOptions opts{.engine = IoEngine::kAuto, .direct_io = true};
//   WALFS_ASSIGN_OR_RETURN(std::unique_ptr<FileDevice> dev, FileDevice::Open(path, opts));
//   fmt::print("walfs: {}\n", dev->Describe());
//   // "/dev/vdb: io_uring (64 entries), O_DIRECT, 4096-byte sectors, 10737418240 bytes"
//
// The synchronous Read/Write/Flush are pread/pwrite(v2)/fdatasync on the
// calling thread with either engine: one I/O needs no handoff to another
// thread, and a completion callback may call them without deadlock.
//
// With O_DIRECT every offset, length and buffer address must be a multiple of
// io_alignment() (the device's DIO alignment); Validate() refuses others.  A
// filesystem that refuses O_DIRECT (tmpfs) gets buffered I/O, reported in
// direct_io() and Describe().
//
// A device opened `read_only` (O_RDONLY, for fsck.walfs -n, walfs-logprint,
// walfs-admin's -l/-u and a read-only mount) works on an image nobody may
// write: mode 0444 to its user, `chattr +i`, read-only media.  It refuses
// every write, flush, discard, zero and grow with EROFS before anything is
// attempted (a batched write's callback gets the EROFS, in order, on the
// completion thread), so a caller that should write nothing learns at once
// when it tries.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/block_device.h"
#include "base/status.h"

namespace walfs {

class BlockDeviceWorker;
class UringEngine;

enum class IoEngine : std::uint8_t { kAuto, kIoUring, kSync };
// "auto", "io_uring", "sync".
std::string_view IoEngineName(IoEngine engine);
// Parses an engine= option value ("auto", "io_uring", "sync").
Result<IoEngine> ParseIoEngine(std::string_view name);

struct FileDeviceOptions {
  IoEngine engine = IoEngine::kAuto;
  bool direct_io = false;         // O_DIRECT, when the filesystem allows it
  bool create = false;            // O_CREAT, and grow the file to size_bytes
  std::uint64_t size_bytes = 0;   // 0: the file's (or block device's) size
  unsigned ring_entries = 64;     // io_uring SQ size (a power of two is best)
  // kAuto: pwrite for a regular file in memory (tmpfs, ramfs), io_uring
  // elsewhere (see above).
  bool pwrite_in_memory = false;
  // Take the image lock (base/file_lock.h) for as long as the device is
  // open; EBUSY when another live process holds it.
  bool exclusive = false;
  // O_RDONLY: reads only; everything that would change the image (or flush
  // it) fails with EROFS.  Not with `create`.  The image lock still works:
  // flock needs no write access.
  bool read_only = false;
};

// Whether a FileDevice::Open failed because this process may not write the
// image -- its mode bits (EACCES), `chattr +i` (EPERM), read-only media or
// mount (EROFS) -- so that a read_only open may still work.
bool CannotOpenForWriting(const Status& open_error);

// Whether the file open at `fd` lives in memory (tmpfs or ramfs): its
// filesystem's name when it does ("tmpfs"), empty otherwise.
std::string_view InMemoryFilesystem(int fd);

class FileDevice final : public BlockDevice {
 public:
  // Opens path O_RDWR|O_CLOEXEC (O_RDONLY with `read_only`).  NotFound,
  // Permission etc. carry open()'s errno; a path that is neither a regular
  // file nor a block device, an empty file, size_bytes beyond the file
  // without `create`, or `create` with `read_only`, is InvalidArgument.
  static Result<std::unique_ptr<FileDevice>> Open(const std::string& path,
                                                  const FileDeviceOptions& options = {});
  // Waits for every submitted request and its callback, then closes the fd.
  ~FileDevice() override;

  // "io_uring" or "pwrite".
  std::string_view kind() const override;
  std::string Describe() const override;
  // A regular file punches a hole (fallocate PUNCH_HOLE | KEEP_SIZE: the
  // file's blocks go back to its filesystem, its size stays); a block
  // device gets BLKDISCARD.  Either runs on the calling thread with either
  // engine (a discard is rare, and io_uring's fallocate would only hand the
  // same call to a kernel worker).  A filesystem or device that cannot
  // discard returns NotSupported.  A read-only device cannot (EROFS).
  bool SupportsDiscard() const override { return !read_only_; }
  // A regular file's length (fstat), a block device's BLKGETSIZE64.
  Result<std::uint64_t> ProbeSize() override;

  // kIoUring or kSync: the engine in use, never kAuto.
  IoEngine engine() const { return engine_; }
  // Why: "engine=io_uring requested", "engine=sync requested",
  // "auto: io_uring works", or "auto: io_uring unavailable: <why>".
  const std::string& engine_reason() const { return engine_reason_; }
  bool direct_io() const { return direct_io_; }
  // Why O_DIRECT is off when it was asked for; empty otherwise.
  const std::string& direct_io_reason() const { return direct_io_reason_; }
  const std::string& path() const { return path_; }
  // Opened with FileDeviceOptions::read_only.
  bool read_only() const { return read_only_; }
  // How many short reads and writes were continued for their remainder, on
  // both paths (a count for tests and stats: short I/O is rare on files).
  std::uint64_t short_io_continued() const;

 protected:
  Status DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) override;
  Status DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                 IoFlags flags) override;
  Status DoFlush() override;
  // A regular file shorter than new_size is extended (ftruncate, sparse); a
  // block device must already be that large.
  Status DoGrow(std::uint64_t new_size) override;
  void DoSubmit(std::vector<IoRequest> batch) override;
  Status DoDiscard(std::uint64_t offset, std::uint64_t len) override;
  Status DoZero(std::uint64_t offset, std::uint64_t len) override;

 private:
  struct Geometry;
  FileDevice(std::string path, int fd, const Geometry& geometry);

  // The pwrite engine's and the synchronous calls' I/O loops.
  Status WriteAll(std::uint64_t offset, const std::byte* buf, std::size_t len, bool fua);
  std::string Context(std::string_view op, std::uint64_t offset, std::size_t len) const;
  // EROFS for `what` (an op and its range) on a read-only device.
  Status RefuseReadOnly(std::string_view what) const;

  const std::string path_;
  const int fd_;
  bool block_device_ = false;  // S_ISBLK: BLKDISCARD, not a punched hole
  bool read_only_ = false;     // O_RDONLY: every change refused (RefuseReadOnly)
  bool direct_io_ = false;
  std::string direct_io_reason_;
  IoEngine engine_ = IoEngine::kSync;
  std::string engine_reason_;
  // pwritev2(RWF_DSYNC) refused (ENOSYS / EOPNOTSUPP): FUA becomes
  // pwrite + fdatasync from then on.  Relaxed: either path is correct.
  std::atomic<bool> fua_by_fdatasync_{false};
  std::atomic<std::uint64_t> continued_{0};  // by the pread/pwrite loops
  // Exactly one of these runs the batched path; both are stopped (in the
  // destructor) before fd_ is closed.
  std::unique_ptr<UringEngine> uring_;
  std::unique_ptr<BlockDeviceWorker> worker_;
};

}  // namespace walfs
