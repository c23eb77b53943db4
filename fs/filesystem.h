// Filesystem: a mounted walfs image, its operations in POSIX terms (the FUSE
// adapter in mount/ only translates).  Every metadata change is one
// transaction (rolling for multi-step changes) with a reservation from the
// per-type table; file data is written in place, before the transaction
// that maps it commits (docs/fs.md, "Operations" and "Data").
//
//   WALFS_ASSIGN_OR_RETURN(auto fs, Filesystem::Mount({.image = "img"}));
//   WALFS_ASSIGN_OR_RETURN(struct stat st, fs->Mknod(ctx, fs->root(), "a", S_IFREG | 0644, 0));
//   WALFS_RETURN_IF_ERROR(fs->Unmount());
//
// Inode numbers are the on-disk ones; the FUSE root (1) is mapped by the
// adapter.  Errors carry the errno a POSIX caller expects (Status::ToErrno).
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_fault.h"
#include "base/status.h"
#include "fs/alloc.h"
#include "fs/buf_cache.h"
#include "fs/dir.h"
#include "fs/file_map.h"
#include "fs/format/superblock_format.h"
#include "fs/ialloc.h"
#include "fs/inode.h"
#include "journal/log.h"
#include "journal/wake_mode.h"

namespace walfs::fs {

struct MountOptions {
  std::string image;
  bool read_only = false;
  bool norecovery = false;  // implies read_only; a log that needs recovery is refused
  journal::WakeMode wake_mode = journal::WakeMode::kWakeQueue;
  std::uint32_t logbufs = 8;
  std::uint32_t logbsize = 32 * 1024;
  // Committed changes reach the log at most this many seconds after the
  // first of them, forced or not (xfs_log_worker's 30 s): the most
  // un-fsynced work a crash can lose.  0: only when the CIL fills or on a
  // force.  The mount's `-o commit=N` (0..86400).
  std::uint32_t commit_interval_s = 30;
  // Committed changes are written to the image at most this many
  // milliseconds after the first of them, without a device flush (the CIL's
  // lazy push): a killed daemon loses none of them (the image file's page
  // cache outlives it), a power cut may.  0: off.  The mount's
  // `-o lazy_commit_ms=N` (0..1000).
  std::uint32_t lazy_commit_ms = 5;
  bool io_uring = true;     // false: pread/pwrite
  std::size_t buffer_cache = 16384;
  // Mount() puts a FaultDevice (base/block_device_fault.h) between the
  // filesystem and the image, so tests can fail its writes, flushes and
  // reads at run time (fault_device()); the mount's `-o fault_injection`.
  bool fault_injection = false;
};

// Who is asking (new files' owners).
struct Caller {
  std::uint32_t uid = 0, gid = 0;
};

// setattr: which fields of the stat to apply.
enum SetAttrMask : std::uint32_t {
  kSetMode = 1u << 0,
  kSetUid = 1u << 1,
  kSetGid = 1u << 2,
  kSetSize = 1u << 3,
  kSetAtime = 1u << 4,
  kSetMtime = 1u << 5,
  kSetAtimeNow = 1u << 6,
  kSetMtimeNow = 1u << 7,
  kSetCtime = 1u << 8,
};

struct FsCounters {
  std::atomic<std::uint64_t> creates{0}, removes{0}, renames{0}, writes{0}, reads{0}, fsyncs{0},
      bytes_written{0}, bytes_read{0}, truncates{0}, inactivated{0},
      fsync_flushes_covered{0};  // data flushes fsync skipped: the log force's preflush covered them
};

class Filesystem {
 public:
  static Result<std::unique_ptr<Filesystem>> Mount(const MountOptions& options);
  // Also usable on a device the caller owns (tests).
  static Result<std::unique_ptr<Filesystem>> MountDevice(BlockDevice* device, const MountOptions& options);
  ~Filesystem();  // without Unmount(): a crash (the log halts)

  // Frees what is unlinked and no longer used, closes the log (force,
  // writeback, unmount record) and marks the superblock clean.
  Status Unmount();

  std::uint64_t root() const { return sb_.root_ino; }
  bool read_only() const { return options_.read_only; }
  const format::Superblock& superblock() const { return sb_; }
  std::string Describe() const;  // one line: device, geometry, recovery
  // The fault injector of a mount with MountOptions::fault_injection, else null.
  FaultDevice* fault_device() const { return fault_device_.get(); }

  // ---- Namespace ----
  // Lookup and every call that returns a new entry's attributes add one to
  // the inode's lookup count (the kernel's reference); Forget drops them.
  Result<struct stat> Lookup(std::uint64_t parent, std::string_view name);
  void Forget(std::uint64_t ino, std::uint64_t n);
  Result<struct stat> GetAttr(std::uint64_t ino);
  Result<struct stat> SetAttr(std::uint64_t ino, const struct stat& attr, std::uint32_t mask);
  Result<struct stat> Mknod(const Caller& c, std::uint64_t parent, std::string_view name,
                            std::uint32_t mode, std::uint32_t rdev);
  Result<struct stat> Mkdir(const Caller& c, std::uint64_t parent, std::string_view name,
                            std::uint32_t mode);
  Result<struct stat> Symlink(const Caller& c, std::uint64_t parent, std::string_view name,
                              std::string_view target);
  Result<std::string> Readlink(std::uint64_t ino);
  Status Unlink(std::uint64_t parent, std::string_view name);
  Status Rmdir(std::uint64_t parent, std::string_view name);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE.
  Status Rename(std::uint64_t parent, std::string_view name, std::uint64_t new_parent,
                std::string_view new_name, std::uint32_t flags);
  Result<struct stat> Link(std::uint64_t ino, std::uint64_t new_parent, std::string_view new_name);
  // Entries with cookie >= offset ("." is 1, ".." 2); fn gets each entry and
  // the offset to resume after it, and returns false when full.
  Status ReadDir(std::uint64_t ino, std::uint64_t offset,
                 const std::function<bool(std::string_view name, std::uint64_t ino, std::uint32_t type,
                                          std::uint64_t next)>& fn);
  Result<struct statvfs> StatFs();

  // ---- Data ----
  Result<std::size_t> Read(std::uint64_t ino, std::uint64_t offset, std::size_t size, char* out);
  Result<std::size_t> Write(std::uint64_t ino, std::uint64_t offset, const char* data, std::size_t size);
  Status Fsync(std::uint64_t ino, bool datasync);
  Status Fallocate(std::uint64_t ino, int mode, std::uint64_t offset, std::uint64_t length);
  Result<std::uint64_t> Lseek(std::uint64_t ino, std::uint64_t offset, int whence);

  // ---- Extended attributes ----
  Result<std::string> GetXattr(std::uint64_t ino, std::string_view name);
  Status SetXattr(std::uint64_t ino, std::string_view name, std::string_view value, int flags);
  Result<std::vector<std::string>> ListXattr(std::uint64_t ino);
  Status RemoveXattr(std::uint64_t ino, std::string_view name);

  // The body of /.walfs/stats.
  std::string StatsText() const;
  journal::Log* log() const { return log_.get(); }
  Status SetWakeMode(journal::WakeMode mode);
  journal::WakeMode wake_mode() const;

 private:
  class Op;
  friend class Op;
  Filesystem(BlockDevice* device, std::unique_ptr<BlockDevice> owned, std::unique_ptr<FaultDevice> fault,
             const MountOptions& options);
  Status Start();
  void DestroyComponents();
  Status ProcessUnlinkedLists();

  Result<InodeRef> Iget(std::uint64_t ino);
  struct stat StatOf(const format::InodeCore& core) const;
  Status CheckWritable() const;
  Result<struct stat> CreateNode(const Caller& c, std::uint64_t parent, std::string_view name,
                                 std::uint32_t mode, std::uint32_t rdev, std::string_view symlink);
  Status RemoveName(std::uint64_t parent, std::string_view name, bool dir);
  Status RenameLocked(Op& op, const InodeRef& sp, std::string_view name, const InodeRef& dp,
                      std::string_view new_name, std::uint32_t flags);

  // Data helpers (filesystem_data.cc).
  Status Truncate(const InodeRef& ip, std::uint64_t size);
  Status UnmapRange(const InodeRef& ip, std::uint64_t first, std::uint64_t end);
  Status ZeroTail(const InodeRef& ip, std::uint64_t from, std::uint64_t to);
  // The bytes written from `offset`: all of `size`, or fewer when space ran
  // out part way (ENOSPC only when nothing could be written).
  Result<std::size_t> WriteBlocks(const InodeRef& ip, std::uint64_t offset, const char* data, std::size_t size);
  // Where new blocks for file block `pos` should go: right after the disk
  // block that maps pos - 1, else near the inode.
  Result<std::uint64_t> DataGoal(const InodeRef& ip, std::uint64_t pos);
  Btree XattrTree(std::uint64_t ino) const;
  Status DestroyXattrs(const InodeRef& ip);
  // Frees everything an inode owns and the inode itself (no links, no users).
  Status Inactivate(const InodeRef& ip);
  // The AG unlinked list (nlink 0, still in use).
  Status AddUnlinked(Op& op, const InodeRef& ip);
  Status RemoveUnlinked(Op& op, const InodeRef& ip);

  // Block reservations: an operation takes the most blocks it may allocate
  // before it changes anything, so it never runs out halfway.
  // Operations that free space (truncate, punch, unlink) may dip into a
  // pool of kFreeingPool blocks the others leave alone, so that a full
  // filesystem can still be emptied (XFS's reserve pool).
  static constexpr std::int64_t kFreeingPool = 64;
  Status ReserveBlocks(std::uint64_t n, bool freeing = false);
  void UnreserveBlocks(std::uint64_t n);

  std::unique_ptr<BlockDevice> owned_device_;
  std::unique_ptr<FaultDevice> fault_device_;  // over owned_device_ (destroyed first)
  BlockDevice* const device_;
  MountOptions options_;
  format::Superblock sb_;
  std::unique_ptr<journal::Log> log_;
  std::unique_ptr<BufCache> cache_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<InodeAllocator> ialloc_;
  std::unique_ptr<InodeCache> icache_;
  std::unique_ptr<DirIndex> dirs_;
  std::unique_ptr<FileMap> maps_;
  std::atomic<std::int64_t> reserved_blocks_{0};  // blocks running operations may still allocate
  mutable Mutex unlinked_mu_;
  // ino -> the inode before it on its AG's unlinked list (absent: the head).
  std::unordered_map<std::uint64_t, std::uint64_t> unlinked_prev_ GUARDED_BY(unlinked_mu_);
  FsCounters counters_;
  std::atomic<bool> unmounted_{false};
  std::string recovery_summary_;
};

}  // namespace walfs::fs
