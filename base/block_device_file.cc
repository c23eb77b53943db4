#include "base/block_device_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "base/block_device_uring.h"
#include "base/block_device_worker.h"
#include "base/file_lock.h"

namespace walfs {

namespace {

// Closes the fd on every early return of Open().
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The sector size and DIO alignment of a regular file, from statx (Linux
// 6.1+ reports DIO alignment); 512 where the kernel does not say.
void FileAlignment(int fd, std::uint32_t* sector, std::uint32_t* mem_align) {
  *sector = 512;
  *mem_align = 512;
  struct statx stx = {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align != 0) {
    *sector = stx.stx_dio_offset_align;
    *mem_align = std::max(stx.stx_dio_mem_align, 1u);
  }
}

}  // namespace

std::string_view IoEngineName(IoEngine engine) {
  switch (engine) {
    case IoEngine::kAuto: return "auto";
    case IoEngine::kIoUring: return "io_uring";
    case IoEngine::kSync: return "sync";
  }
  return "?";
}

Result<IoEngine> ParseIoEngine(std::string_view name) {
  for (IoEngine e : {IoEngine::kAuto, IoEngine::kIoUring, IoEngine::kSync})
    if (name == IoEngineName(e)) return e;
  return Status::InvalidArgument(
      fmt::format("engine={}: expected auto, io_uring or sync", name));
}

struct FileDevice::Geometry {
  std::uint64_t size_bytes;
  std::uint32_t sector;
  std::uint32_t io_alignment;
};

Result<std::unique_ptr<FileDevice>> FileDevice::Open(const std::string& path,
                                                     const FileDeviceOptions& options) {
  if (options.read_only && options.create)
    return Status::InvalidArgument(fmt::format("{}: a read-only open cannot create the image", path));
  const int base_flags =
      (options.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | (options.create ? O_CREAT : 0);
  int fd = ::open(path.c_str(), base_flags | (options.direct_io ? O_DIRECT : 0), 0644);
  std::string direct_reason;
  if (fd < 0 && options.direct_io && errno == EINVAL) {
    // The filesystem does not do O_DIRECT (tmpfs): buffered, and say so.
    direct_reason = "O_DIRECT refused by the filesystem (EINVAL); buffered I/O";
    fd = ::open(path.c_str(), base_flags, 0644);
  }
  if (fd < 0) return Status::FromErrno(errno, fmt::format("open {}", path));
  FdCloser closer(fd);
  const bool direct = options.direct_io && direct_reason.empty();
  if (options.exclusive) WALFS_RETURN_IF_ERROR(LockImage(fd, path));

  struct stat st = {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, fmt::format("fstat {}", path));
  Geometry g = {};
  std::uint32_t mem_align = 1;
  std::uint64_t actual = 0;
  if (S_ISBLK(st.st_mode)) {
    int sector = 0;
    if (::ioctl(fd, BLKGETSIZE64, &actual) != 0)
      return Status::FromErrno(errno, fmt::format("ioctl(BLKGETSIZE64) {}", path));
    if (::ioctl(fd, BLKSSZGET, &sector) != 0)
      return Status::FromErrno(errno, fmt::format("ioctl(BLKSSZGET) {}", path));
    g.sector = static_cast<std::uint32_t>(sector);
    mem_align = g.sector;
  } else if (S_ISREG(st.st_mode)) {
    actual = static_cast<std::uint64_t>(st.st_size);
    if (options.create && options.size_bytes > actual) {
      if (::ftruncate(fd, static_cast<off_t>(options.size_bytes)) != 0)
        return Status::FromErrno(errno, fmt::format("ftruncate {} to {} bytes", path,
                                                    options.size_bytes));
      actual = options.size_bytes;
    }
    FileAlignment(fd, &g.sector, &mem_align);
  } else {
    return Status::InvalidArgument(
        fmt::format("{} is neither a regular file nor a block device", path));
  }
  g.size_bytes = options.size_bytes != 0 ? options.size_bytes : actual;
  if (g.size_bytes > actual)
    return Status::InvalidArgument(fmt::format("{} has {} bytes, fewer than the {} asked for",
                                               path, actual, g.size_bytes));
  if (g.size_bytes == 0) return Status::InvalidArgument(fmt::format("{} is empty", path));
  g.io_alignment = direct ? std::max(g.sector, mem_align) : 1;

  std::unique_ptr<FileDevice> dev(new FileDevice(path, closer.Release(), g));
  dev->direct_io_ = direct;
  dev->block_device_ = S_ISBLK(st.st_mode);
  dev->read_only_ = options.read_only;
  dev->direct_io_reason_ = std::move(direct_reason);

  // The engine.  Only a ring that cannot be set up is a reason to fall back;
  // engine=io_uring reports it as the error instead.
  const std::string_view memory_fs =
      options.engine == IoEngine::kAuto && options.pwrite_in_memory && S_ISREG(st.st_mode)
          ? InMemoryFilesystem(dev->fd_)
          : std::string_view();
  if (!memory_fs.empty()) {
    dev->engine_reason_ = fmt::format("auto: the file is in memory ({}), where pwrite is one thread hop fewer",
                                      memory_fs);
  } else if (options.engine != IoEngine::kSync) {
    Result<std::unique_ptr<UringEngine>> ring =
        UringEngine::Create(dev->fd_, options.ring_entries, path);
    if (ring.ok()) {
      dev->uring_ = std::move(*ring);
      dev->engine_ = IoEngine::kIoUring;
      dev->engine_reason_ = options.engine == IoEngine::kAuto ? "auto: io_uring works"
                                                              : "engine=io_uring requested";
      return dev;
    }
    if (options.engine == IoEngine::kIoUring) return std::move(ring).status();
    dev->engine_reason_ =
        fmt::format("auto: io_uring unavailable: {}", ring.status().message());
  } else {
    dev->engine_reason_ = "engine=sync requested";
  }
  dev->engine_ = IoEngine::kSync;
  dev->worker_ = std::make_unique<BlockDeviceWorker>("walfs-pwrite");
  return dev;
}

bool CannotOpenForWriting(const Status& open_error) {
  const int err = open_error.ToErrno();
  return err == EACCES || err == EPERM || err == EROFS;
}

std::string_view InMemoryFilesystem(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return {};
  if (fs.f_type == TMPFS_MAGIC) return "tmpfs";
  if (fs.f_type == RAMFS_MAGIC) return "ramfs";
  return {};
}

FileDevice::FileDevice(std::string path, int fd, const Geometry& geometry)
    : BlockDevice(geometry.size_bytes, geometry.sector, geometry.io_alignment),
      path_(std::move(path)),
      fd_(fd) {}

FileDevice::~FileDevice() {
  // Drain first: the kernel and the worker may still hold fd_ and buffers,
  // and a callback may still submit (so the engines stay in place until
  // they are idle).
  if (uring_) uring_->Stop();
  if (worker_) worker_->Stop();
  uring_.reset();
  worker_.reset();
  ::close(fd_);
}

std::string_view FileDevice::kind() const {
  return engine_ == IoEngine::kIoUring ? "io_uring" : "pwrite";
}

std::string FileDevice::Describe() const {
  std::string engine(kind());
  if (uring_) engine += fmt::format(" ({} entries)", uring_->entries());
  if (engine_ == IoEngine::kSync) engine += fmt::format(" ({})", engine_reason_);
  std::string direct = direct_io_ ? "O_DIRECT" : "buffered";
  if (!direct_io_reason_.empty()) direct += fmt::format(" ({})", direct_io_reason_);
  return fmt::format("{}: {}, {}{}, {}-byte sectors, {} bytes", path_, engine, direct,
                     read_only_ ? ", read-only" : "", logical_block_size(), size_bytes());
}

std::uint64_t FileDevice::short_io_continued() const {
  return continued_.load(std::memory_order_relaxed) + (uring_ ? uring_->continued() : 0);
}

std::string FileDevice::Context(std::string_view op, std::uint64_t offset,
                                std::size_t len) const {
  return fmt::format("{} [{}, +{}) on {}", op, offset, len, path_);
}

Status FileDevice::RefuseReadOnly(std::string_view what) const {
  return Status::FromErrno(EROFS, fmt::format("{} refused: {} is open read-only", what, path_));
}

Status FileDevice::DoRead(std::uint64_t offset, std::byte* buf, std::size_t len) {
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd_, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Context("pread", offset, len));
    }
    if (n == 0)
      return Status::IoError(fmt::format("{}: unexpected end of file at offset {}",
                                         Context("pread", offset, len), offset + done));
    done += static_cast<std::size_t>(n);
    if (done < len) continued_.fetch_add(1, std::memory_order_relaxed);  // short: continue
  }
  return Status::Ok();
}

Status FileDevice::WriteAll(std::uint64_t offset, const std::byte* buf, std::size_t len,
                            bool fua) {
  const bool dsync = fua && !fua_by_fdatasync_.load(std::memory_order_relaxed);
  std::size_t done = 0;
  while (done < len) {
    const off_t at = static_cast<off_t>(offset + done);
    ssize_t n;
    if (dsync) {
      iovec iov{const_cast<std::byte*>(buf + done), len - done};  // pwritev2 only reads it
      n = ::pwritev2(fd_, &iov, 1, at, RWF_DSYNC);
      if (n < 0 && (errno == ENOSYS || errno == EOPNOTSUPP) && done == 0) {
        fua_by_fdatasync_.store(true, std::memory_order_relaxed);
        return WriteAll(offset, buf, len, fua);
      }
    } else {
      n = ::pwrite(fd_, buf + done, len - done, at);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Context(dsync ? "pwritev2(RWF_DSYNC)" : "pwrite",
                                              offset, len));
    }
    if (n == 0)
      return Status::IoError(fmt::format("{}: the write made no progress at offset {}",
                                         Context("pwrite", offset, len), offset + done));
    done += static_cast<std::size_t>(n);
    if (done < len) continued_.fetch_add(1, std::memory_order_relaxed);  // short: continue
  }
  if (fua && !dsync && ::fdatasync(fd_) != 0)
    return Status::FromErrno(errno, Context("fdatasync after", offset, len));
  return Status::Ok();
}

Status FileDevice::DoWrite(std::uint64_t offset, const std::byte* buf, std::size_t len,
                           IoFlags flags) {
  if (read_only_) return RefuseReadOnly(Context("write", offset, len));
  if ((flags & kIoPreflush) && ::fdatasync(fd_) != 0)
    return Status::FromErrno(errno, Context("preflush fdatasync before write", offset, len));
  return WriteAll(offset, buf, len, (flags & kIoFua) != 0);
}

Status FileDevice::DoFlush() {
  if (read_only_) return RefuseReadOnly("flush");
  if (::fdatasync(fd_) != 0) return Status::FromErrno(errno, "fdatasync " + path_);
  return Status::Ok();
}

Status FileDevice::DoDiscard(std::uint64_t offset, std::uint64_t len) {
  if (read_only_) return RefuseReadOnly(Context("discard", offset, len));
  int rc;
  do {
    if (block_device_) {
      std::uint64_t range[2] = {offset, len};
      rc = ::ioctl(fd_, BLKDISCARD, range);
    } else {
      rc = ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                       static_cast<off_t>(len));
    }
  } while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return Status::FromErrno(errno, Context(block_device_ ? "ioctl(BLKDISCARD)"
                                                          : "fallocate(PUNCH_HOLE)",
                                            offset, len));
  return Status::Ok();
}

Status FileDevice::DoZero(std::uint64_t offset, std::uint64_t len) {
  // A hole reads as zeros and costs no space; BLKZEROOUT lets the device
  // zero without the data crossing the bus.  Where neither works (a
  // filesystem without holes, a device without the ioctl): zeros written.
  if (read_only_) return RefuseReadOnly(Context("zeroing", offset, len));
  int rc;
  do {
    if (block_device_) {
      std::uint64_t range[2] = {offset, len};
      rc = ::ioctl(fd_, BLKZEROOUT, range);
    } else {
      rc = ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                       static_cast<off_t>(len));
    }
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return Status::Ok();
  if (errno == EOPNOTSUPP || errno == ENOTTY || errno == EINVAL) return BlockDevice::DoZero(offset, len);
  return Status::FromErrno(errno, Context(block_device_ ? "ioctl(BLKZEROOUT)" : "fallocate(PUNCH_HOLE)",
                                          offset, len));
}

void FileDevice::DoSubmit(std::vector<IoRequest> batch) {
  if (read_only_ && uring_) {
    // The pwrite worker refuses in DoWrite/DoFlush (Execute); the ring
    // would hand a write to the kernel, which says EBADF.  So a write or
    // flush becomes a zero-length read (a NOP in the ring) whose callback
    // gets the EROFS: still in order, still on the completion thread.
    for (IoRequest& r : batch) {
      if (r.op == IoOp::kRead) continue;
      Status refused = RefuseReadOnly(r.op == IoOp::kFlush ? std::string("flush")
                                                           : Context("write", r.offset, r.len));
      r = IoRequest::Read(r.offset, r.buf, 0,
                          [done = std::move(r.done), refused = std::move(refused)](const Status&) {
                            done(refused);
                          });
    }
  }
  if (uring_) {
    uring_->Submit(std::move(batch));
    return;
  }
  worker_->EnqueueRequests(std::move(batch), [this](const IoRequest& r) { return Execute(r); });
}

Result<std::uint64_t> FileDevice::ProbeSize() {
  if (block_device_) {
    std::uint64_t bytes = 0;
    if (::ioctl(fd_, BLKGETSIZE64, &bytes) != 0)
      return Status::FromErrno(errno, fmt::format("ioctl(BLKGETSIZE64) {}", path_));
    return bytes;
  }
  struct stat st = {};
  if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, fmt::format("fstat {}", path_));
  return static_cast<std::uint64_t>(st.st_size);
}

Status FileDevice::DoGrow(std::uint64_t new_size) {
  if (read_only_) return RefuseReadOnly(fmt::format("growing to {} bytes", new_size));
  WALFS_ASSIGN_OR_RETURN(const std::uint64_t actual, ProbeSize());
  if (actual >= new_size) return Status::Ok();
  if (block_device_)
    return Status::NoSpace(fmt::format("{} is a block device of {} bytes, fewer than {}; grow the device first",
                                       path_, actual, new_size));
  if (::ftruncate(fd_, static_cast<off_t>(new_size)) != 0)
    return Status::FromErrno(errno, fmt::format("extending {} to {} bytes", path_, new_size));
  return Status::Ok();
}

}  // namespace walfs
