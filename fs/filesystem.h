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

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_fault.h"
#include "base/status.h"
#include "fs/alloc.h"
#include "fs/buf_cache.h"
#include "fs/dir.h"
#include "fs/error_recorder.h"
#include "fs/file_map.h"
#include "fs/format/superblock_format.h"
#include "fs/fs_trans.h"
#include "fs/ialloc.h"
#include "fs/inode.h"
#include "journal/log.h"
#include "journal/wake_mode.h"

namespace walfs::fs {

struct MountOptions {
  std::string image;
  bool read_only = false;
  bool norecovery = false;  // implies read_only; the log is not replayed, whatever it holds (even damage)
  journal::WakeMode wake_mode = journal::WakeMode::kWakeQueue;
  std::uint32_t logbufs = 8;
  std::uint32_t logbsize = 32 * 1024;
  // Committed changes reach the log at most this many seconds after the
  // first of them, forced or not (ext4's commit=5; xfs_log_worker's is 30):
  // the most un-fsynced work a crash can lose.  0: only when the CIL fills
  // or on a force.  The mount's `-o commit=N` (0..86400).
  std::uint32_t commit_interval_s = 5;
  // Committed changes are written to the image at most this many
  // milliseconds after the first of them, without FUA (the CIL's lazy push;
  // a flush goes before each commit record, so the file data it exposes is
  // stable first): a killed daemon loses none of them (the image file's page
  // cache outlives it), a power cut may.  0: off.  The mount's
  // `-o lazy_commit_ms=N` (0..1000).
  std::uint32_t lazy_commit_ms = 5;
  // A log force writes the record it forces on the forcer's thread
  // (journal::LogWriterOptions::inline_force_io); false: through the
  // device's threads.  The mount's `-o force_io=inline|device`.
  bool inline_force_io = true;
  bool io_uring = true;     // false: pread/pwrite
  // io_uring also for an image in memory (tmpfs, ramfs), where the default
  // is pread/pwrite (FileDeviceOptions::pwrite_in_memory); `-o io=uring`.
  bool io_uring_in_memory = false;
  std::size_t buffer_cache = 16384;
  // Mount() puts a FaultDevice (base/block_device_fault.h) between the
  // filesystem and the image, so tests can fail its writes, flushes and
  // reads at run time (fault_device()); the mount's `-o fault_injection`.
  bool fault_injection = false;
  // Online discard: every run freed is discarded (a hole punched in the
  // image file, BLKDISCARD on a block device) once the checkpoint that
  // freed it is on disk (Allocator::StartOnlineDiscard; docs/fs.md,
  // "Discard").  Ignored, with a warning, on a device that cannot discard.
  // The mount's `-o discard`.
  bool discard = false;
  // Warn at mount when the superblock records errors found before
  // (StartErrorRecorder).  Off for fsck's own repair mount: the errors are
  // what it is repairing, and it reports them itself.
  bool warn_recorded_errors = true;
  // A write into a preallocated (unwritten) extent also writes zeros over
  // what is left of the extent beside it when that and the write together
  // are at most this many KiB (Filesystem::ZeroOutRange), so the extent
  // turns written whole instead of splitting in three (ext4's
  // extent_max_zeroout_kb, default 32).  0: never.  The mount's
  // `-o zeroout_kb=N` (0..1024; larger values are taken as 1024).
  std::uint32_t zeroout_kb = 32;

  // These options as the mount's `-o` words, one `name=value` a line, the
  // defaults included (ro=off, commit=5, io=uring, ...); not wake, which can
  // change while mounted (fs/mount_options.cc; .walfs/mount_options).
  std::string OptionsText() const;
};

// How a write ends that runs out of space part way (Filesystem::Write).
// The FUSE adapter picks by the path the kernel took: its buffered write
// passes a short count on to the caller, its direct-I/O path (O_DIRECT, with
// FUSE_CAP_ASYNC_DIO) turns any short reply into EIO, so an O_DIRECT write
// must be whole or ENOSPC.
enum class NoSpaceWrite { kShort, kWhole };

// Who is asking (new files' owners), and the umask of the process creating
// a file: applied unless the directory has a default ACL (which replaces
// it, POSIX.1e), so the kernel leaves it to walfs (FUSE_CAP_DONT_MASK).
struct Caller {
  std::uint32_t uid = 0, gid = 0;
  std::uint32_t umask = 0;
  // Supplementary groups: asked for only where a decision needs them
  // (setting an access ACL, below).
  std::vector<std::uint32_t> groups{};
  bool InGroup(std::uint32_t g) const {
    return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
  }
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
      fsync_flushes_covered{0},  // data flushes fsync skipped: the log force's preflush covered them
      syncs{0},  // Sync() calls that succeeded (.walfs/sync, fsync of a directory)
      trims{0}, trimmed_bytes{0},  // Trim() calls that succeeded, and the bytes they discarded
      // Writes into unwritten extents (each marks blocks written), and the
      // blocks of zeros they wrote beside their data (MountOptions::zeroout_kb).
      unwritten_conversions{0}, zeroout_blocks{0};
  AgHeaderWaits ag_header;  // the mounted filesystem's transactions' waits (Op::Begin)
};

// The geometry walfs-growfs shows (as xfs_growfs prints it), and what a
// grow changed: old_* == new_* when nothing was (or, for -n, could be).
struct GrowReport {
  std::uint32_t block_size = 0;
  std::uint32_t ag_blocks = 0;
  std::uint64_t data_start = 0;  // blocks before AG 0: the superblock and the log
  std::uint32_t log_blocks = 0;
  std::uint64_t old_blocks = 0, new_blocks = 0;  // total_blocks before and after
  std::uint32_t old_ag_count = 0, new_ag_count = 0;
  std::uint64_t unused_blocks = 0;  // of the size asked for, too few for another AG (or past the limits)
  std::uint64_t device_bytes = 0;   // the device's size after the call
  std::uint32_t steps = 0;          // growfs transactions committed
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
  // The damage found while mounted, this mount's and earlier ones' since
  // the last repair: the superblock's error record as it is in memory
  // (fs/error_recorder.h).
  format::ErrorRecord recorded_errors() const;
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
  // O_TMPFILE: a regular file with no name in directory `parent`, counted
  // as one lookup; Link may name it later, else it is freed at its last
  // Forget (or by the next mount's unlinked-list pass after a crash).
  Result<struct stat> TmpFile(const Caller& c, std::uint64_t parent, std::uint32_t mode);
  Result<std::string> Readlink(std::uint64_t ino);
  Status Unlink(std::uint64_t parent, std::string_view name);
  Status Rmdir(std::uint64_t parent, std::string_view name);
  // fsck.walfs -y's repairs that need the filesystem's own code
  // (fs/filesystem_repair.cc; docs/fs.md, "Repairs through a mount"), each
  // one transaction.  RepairDropEntry removes a directory entry without
  // touching the inode it names (which is not in use).  RepairReconnect
  // names an in-use inode no directory reaches "#INO" in /lost+found (made,
  // mode 0700, if missing), as e2fsck does, and returns that name; a
  // directory's parent becomes lost+found.  Link counts are fsck's to set
  // afterwards, from the links it finds.
  Status RepairDropEntry(std::uint64_t parent, std::string_view name);
  Result<std::string> RepairReconnect(std::uint64_t ino);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT (the old name
  // becomes a whiteout, a 0/0 character device owned by `c`, in the same
  // transaction; overlayfs asks for it on its upper layer).  A rename that
  // needs no new block (a name replaced, or one added where its directory
  // has room) works on a full filesystem.
  Status Rename(std::uint64_t parent, std::string_view name, std::uint64_t new_parent,
                std::string_view new_name, std::uint32_t flags, const Caller& c = {});
  Result<struct stat> Link(std::uint64_t ino, std::uint64_t new_parent, std::string_view new_name);
  // Entries with cookie >= offset ("." is 1, ".." 2); fn gets each entry and
  // the offset to resume after it, and returns false when full.
  Status ReadDir(std::uint64_t ino, std::uint64_t offset,
                 const std::function<bool(std::string_view name, std::uint64_t ino, std::uint32_t type,
                                          std::uint64_t next)>& fn);
  Result<struct statvfs> StatFs();
  // What statfs's f_bavail says, in bytes, without reading the AG headers.
  std::uint64_t AvailableBytes() const;

  // ---- Data ----
  Result<std::size_t> Read(std::uint64_t ino, std::uint64_t offset, std::size_t size, char* out);
  // A write that runs out of space part way is short (`kShort`: the bytes
  // placed count, POSIX) or fails whole (`kWhole`: ENOSPC, the blocks it
  // allocated given back and the size unchanged).  Either way ENOSPC when
  // nothing could be placed.
  Result<std::size_t> Write(std::uint64_t ino, std::uint64_t offset, const char* data, std::size_t size,
                            NoSpaceWrite at_enospc = NoSpaceWrite::kShort);
  // fsync of a file: its changes (and every change committed before them).
  // fsync or fdatasync of a directory is Sync() (XFS's directory fsync
  // forces the log; walfs forces all of it).
  Status Fsync(std::uint64_t ino, bool datasync);
  // What syncfs(2) does on a kernel filesystem, which the kernel never asks
  // of a FUSE daemon (.walfs/sync, `walfs sync`): every change committed and
  // every data write completed before the call is durable when it returns
  // OK -- the whole log forced, then the device flushed unless the force's
  // preflush, issued after those writes, already was.  A read-only mount
  // has nothing to sync.  Errors are the force's or the flush's.
  Status Sync();
  // FITRIM (fstrim): discards the free space in bytes [start, start + len)
  // in runs of at least minlen bytes, and returns the bytes discarded.  The
  // log is forced first; space freed after that, or by a transaction whose
  // checkpoint is not on disk, is left alone (docs/fs.md, "Discard").
  // EINVAL for a start past the end, a len under a block or a minlen over
  // an AG (as ext4 and XFS); EROFS on a read-only mount; EOPNOTSUPP when
  // the device cannot discard.
  Result<std::uint64_t> Trim(std::uint64_t start, std::uint64_t len, std::uint64_t minlen);
  // walfs-growfs (fs/filesystem_grow.cc, docs/disk_format.md "Growing"):
  // grows the mounted filesystem to new_bytes of its device (0: the size
  // the device has now, ProbeSize), extending an image file that is
  // shorter.  The last AG is lengthened to ag_blocks, then AGs are added
  // (fs/grow.h).  The new AGs' metadata is written and flushed beyond the
  // old end first; then one transaction logs the new geometry in the
  // superblock with the old last AG's longer header and bitmap (more than
  // one only when that bitmap change exceeds kGrowfsBitmapBlocks blocks;
  // each step is a whole geometry), and the in-core geometry changes as it
  // commits, so allocations in other threads see the new AGs from then on.
  // EINVAL for a size below the filesystem's (no shrinking), EROFS on a
  // read-only mount, NoSpace/NotSupported when the device cannot be that
  // large.  One grow at a time.
  Result<GrowReport> Grow(std::uint64_t new_bytes) EXCLUDES(grow_mu_);
  // The geometry alone (walfs-growfs -n).
  GrowReport Geometry() const;
  Status Fallocate(std::uint64_t ino, int mode, std::uint64_t offset, std::uint64_t length);
  Result<std::uint64_t> Lseek(std::uint64_t ino, std::uint64_t offset, int whence);

  // ---- Extended attributes ----
  // system.posix_acl_access and system.posix_acl_default are POSIX ACLs
  // (fs/posix_acl.h): a malformed value is EINVAL, an access ACL sets the
  // mode (and one the mode says all of is kept as the mode alone), a
  // default ACL is for directories only (EACCES elsewhere); chmod rewrites
  // the access ACL and new inodes inherit the directory's default ACL.
  // Setting an access ACL clears the setgid bit when `caller` is neither
  // root nor in the file's group (the kernel's posix_acl_update_mode).
  Result<std::string> GetXattr(std::uint64_t ino, std::string_view name);
  Status SetXattr(std::uint64_t ino, std::string_view name, std::string_view value, int flags,
                  const Caller& caller = Caller{});
  Result<std::vector<std::string>> ListXattr(std::uint64_t ino);
  Status RemoveXattr(std::uint64_t ino, std::string_view name);

  // The body of /.walfs/stats (each line: docs/stats.md).
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
  // The superblock's error record (filesystem_errors.cc): the recorder
  // started at mount (a warning when the image has one already), and the
  // transaction that logs the record.
  void StartErrorRecorder();
  Status LogErrorRecord(const format::ErrorRecord& r);
  // At an unmount after a shutdown (no transaction can be logged): the
  // errors noted this mount go into the superblock on disk in place, as
  // ext4 writes its error info on abort, so that fsck -p checks the image.
  void WriteErrorRecordInPlace();
  Status ProcessUnlinkedLists();
  // One growfs transaction: the old last AG `last` from `from` to `to`
  // blocks long, the superblock's geometry to `geo`'s, and `added_free`
  // more free blocks in the new AGs.
  Status GrowStep(std::uint32_t last, std::uint32_t from, std::uint32_t to, const format::Superblock& geo,
                  std::uint64_t added_free) REQUIRES(grow_mu_);

  Result<InodeRef> Iget(std::uint64_t ino);
  struct stat StatOf(const format::InodeCore& core) const;
  Status CheckWritable() const;
  Result<struct stat> CreateNode(const Caller& c, std::uint64_t parent, std::string_view name,
                                 std::uint32_t mode, std::uint32_t rdev, std::string_view symlink);
  Status RemoveName(std::uint64_t parent, std::string_view name, bool dir);
  // What a new inode of `mode` in the directory (locked, core dc) starts
  // with: its mode after the umask or the default ACL, and the ACL xattr
  // values to store (InheritAclsLocked stores them in the create step).
  struct NewInodeAcls {
    std::uint32_t mode = 0;
    std::optional<std::string> access, default_acl;
    bool any() const { return access || default_acl; }
  };
  // wip: the whiteout to leave at `name` (RENAME_WHITEOUT), from CreateUnlinked.
  Status RenameLocked(Op& op, const InodeRef& sp, std::string_view name, const InodeRef& dp,
                      std::string_view new_name, std::uint32_t flags, const InodeRef& wip);
  // A new inode with no name: nlink 0, on its AG's unlinked list (so a
  // crash before it is linked frees it at the next mount), no lookups.  It
  // is linked by the caller's next transaction (RemoveUnlinked) or freed
  // with Inactivate.  XFS's xfs_create_tmpfile.
  // `acls`: what it inherits from dp (NewInodeAclsLocked; mode already applied).
  Result<InodeRef> CreateUnlinked(const Caller& c, const InodeRef& dp, std::uint32_t mode, std::uint32_t rdev,
                                  const NewInodeAcls* acls = nullptr);

  // Data helpers (filesystem_data.cc).
  Status Truncate(const InodeRef& ip, std::uint64_t size);
  Status UnmapRange(const InodeRef& ip, std::uint64_t first, std::uint64_t end);
  Status ZeroTail(const InodeRef& ip, std::uint64_t from, std::uint64_t to);
  // Maps the holes among file blocks [pos, end) with unwritten blocks.
  Status Preallocate(const InodeRef& ip, std::uint64_t pos, std::uint64_t end);
  // FALLOC_FL_ZERO_RANGE over bytes [offset, end_byte), whose blocks are
  // all mapped: whole blocks marked unwritten, partial ones zeroed in place.
  Status ZeroRange(const InodeRef& ip, std::uint64_t offset, std::uint64_t end_byte);
  // The bytes written from `offset`: all of `size`, or (kShort) fewer when
  // space ran out part way; ENOSPC when nothing could be written, or
  // (kWhole) when not all of it could, after unmapping the blocks it mapped.
  Result<std::size_t> WriteBlocks(const InodeRef& ip, std::uint64_t offset, const char* data, std::size_t size,
                                  NoSpaceWrite at_enospc);
  // Where new blocks for file block `pos` should go: right after the disk
  // block that maps pos - 1, else near the inode.
  Result<std::uint64_t> DataGoal(const InodeRef& ip, std::uint64_t pos);
  // The blocks a write of [first, end) into unwritten extent e writes and
  // marks written: [first, end) widened to e's edges where what is left of
  // e there, with the write, is within MountOptions::zeroout_kb (zeros).
  std::pair<std::uint64_t, std::uint64_t> ZeroOutRange(const format::Extent& e, std::uint64_t first,
                                                       std::uint64_t end) const;
  Btree XattrTree(std::uint64_t ino) const;
  Status DestroyXattrs(const InodeRef& ip);
  // E2BIG for a value this filesystem does not store; the blocks storing
  // one may allocate.
  Status CheckXattrSize(std::string_view value) const;
  std::uint64_t XattrBlocks(std::size_t value_size) const;
  // The inode's lock held (shared for reading, exclusive with op); `c` its
  // core, changed in place (the caller stores it).
  Result<bool> HasXattrLocked(std::uint64_t ino, const format::InodeCore& c, std::string_view name);
  Result<std::optional<std::string>> GetXattrLocked(std::uint64_t ino, const format::InodeCore& c,
                                                    std::string_view name);
  Status PutXattrLocked(Op& op, std::uint64_t ino, format::InodeCore* c, std::string_view name,
                        std::string_view value);
  Result<bool> DropXattrLocked(Op& op, std::uint64_t ino, format::InodeCore* c, std::string_view name);

  // POSIX ACLs (filesystem_acl.cc).
  Status SetAcl(std::uint64_t ino, std::string_view name, std::string_view value, int flags,
                const Caller& caller);
  // chmod: the access ACL's owner, group class and other entries follow
  // c->mode (inode locked exclusively, inside op).
  Status ChmodAclLocked(Op& op, std::uint64_t ino, format::InodeCore* c);
  // Whether an inode has an access ACL stored (chmod then needs the xattr
  // reservation).
  Result<bool> HasAccessAclLocked(std::uint64_t ino, const format::InodeCore& c);
  Result<NewInodeAcls> NewInodeAclsLocked(const Caller& caller, std::uint64_t dir, const format::InodeCore& dc,
                                          std::uint32_t mode);
  Status InheritAclsLocked(Op& op, std::uint64_t ino, format::InodeCore* c, const NewInodeAcls& acls);
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
  // Before cache_: the cache tells it of damage until the cache is gone.
  std::unique_ptr<ErrorRecorder> errors_;
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
  // One grow at a time; taken before any buffer lock.  sb_'s total_blocks
  // and ag_count change only under it (and are read without it: they are
  // MountedFields).
  Mutex grow_mu_;
  std::string recovery_summary_;
};

}  // namespace walfs::fs
