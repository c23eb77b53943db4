#include "fs/filesystem.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <time.h>

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "base/block_device_file.h"
#include "base/coding.h"
#include "base/messages.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"
#include "fs/fs_op.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "fs/super_copy.h"

namespace walfs::fs {

using format::ForkFormat;
using format::InodeCore;
using journal::TransType;

namespace {
constexpr std::uint32_t kMaxLinks = 65000;
constexpr std::uint32_t kUnlinkedHeadOffset = 72;  // in the AG header (ag_format.h)

Status Errno(int err, std::string_view what) { return Status::FromErrno(err, what); }

Status CheckName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return Errno(EINVAL, "invalid name");
  if (name.size() > format::kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return Errno(EINVAL, "name with '/' or NUL");
  return Status::Ok();
}

bool IsDir(const InodeCore& c) { return S_ISDIR(c.mode); }

// Exclusive locks on several inodes in ascending inode order (the one order
// every operation uses), each once.
class InodeLocks {
 public:
  explicit InodeLocks(std::vector<InodeRef> ips) : ips_(std::move(ips)) {
    std::sort(ips_.begin(), ips_.end(), [](const InodeRef& a, const InodeRef& b) { return a->ino < b->ino; });
    ips_.erase(std::unique(ips_.begin(), ips_.end(),
                           [](const InodeRef& a, const InodeRef& b) { return a->ino == b->ino; }),
               ips_.end());
    for (const InodeRef& ip : ips_) ip->rw.lock();
  }
  ~InodeLocks() { Release(); }
  // Unlocks them all now.
  void Release() {
    for (auto it = ips_.rbegin(); it != ips_.rend(); ++it) (*it)->rw.unlock();
    ips_.clear();
  }
  InodeLocks(const InodeLocks&) = delete;
  InodeLocks& operator=(const InodeLocks&) = delete;

 private:
  std::vector<InodeRef> ips_;
};
}  // namespace

std::uint8_t DirentType(std::uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return DT_REG;
    case S_IFDIR: return DT_DIR;
    case S_IFLNK: return DT_LNK;
    case S_IFCHR: return DT_CHR;
    case S_IFBLK: return DT_BLK;
    case S_IFIFO: return DT_FIFO;
    case S_IFSOCK: return DT_SOCK;
    default: return DT_UNKNOWN;
  }
}

format::Timestamp Now() {
  // The kernel's current_time(): the coarse clock (a tick's resolution), so
  // that back-to-back writes find the timestamps already current and log
  // nothing (Write skips its transaction then).
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return format::Timestamp{ts.tv_sec, static_cast<std::uint32_t>(ts.tv_nsec)};
}

void StoreCore(const InodeRef& ip, InodeCore next) {
  MutexLock l(&ip->core_mu);
  next.next_unlinked = ip->core.next_unlinked;
  ip->core = std::move(next);
}

// ---------------------------------------------------------------- Op

Filesystem::Op::~Op() {
  if (tx_) tx_->Cancel();
  if (reserved_) fs_->UnreserveBlocks(reserved_);
}

Status Filesystem::Op::Begin(TransType type, std::uint64_t blocks, bool freeing) {
  if (blocks) {
    WALFS_RETURN_IF_ERROR(fs_->ReserveBlocks(blocks, freeing));
    reserved_ = blocks;
  }
  WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(fs_->log_.get(), type));
  tx_.emplace(std::move(tx));
  tx_->SetPrecommit([this](FsTransaction* t) { return LogInodes(t); });
  return Status::Ok();
}

void Filesystem::Op::Dirty(const InodeRef& ip) {
  std::erase(timestamps_only_, ip.get());
  if (std::none_of(dirty_.begin(), dirty_.end(), [&](const InodeRef& d) { return d.get() == ip.get(); }))
    dirty_.push_back(ip);
}

void Filesystem::Op::DirtyTimestamps(const InodeRef& ip) {
  if (std::any_of(dirty_.begin(), dirty_.end(), [&](const InodeRef& d) { return d.get() == ip.get(); })) return;
  dirty_.push_back(ip);
  timestamps_only_.push_back(ip.get());
}

void Filesystem::Op::SetNextUnlinked(const InodeRef& ip, std::uint64_t next) {
  {
    MutexLock l(&ip->core_mu);
    ip->core.next_unlinked = next;
  }
  for (auto& [ino, n] : next_patches_)
    if (ino == ip->ino) {
      n = next;
      return;
    }
  next_patches_.emplace_back(ip->ino, next);
}

Status Filesystem::Op::LogInodes(FsTransaction* tx) {
  // Chunk blocks last and in ascending order: inode order is block order.
  std::sort(dirty_.begin(), dirty_.end(), [](const InodeRef& a, const InodeRef& b) { return a->ino < b->ino; });
  std::sort(next_patches_.begin(), next_patches_.end());
  auto patch = next_patches_.begin();
  for (const InodeRef& ip : dirty_) {
    for (; patch != next_patches_.end() && patch->first < ip->ino; ++patch)
      WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, patch->first, nullptr, patch->second));
    std::optional<std::uint64_t> next;
    if (patch != next_patches_.end() && patch->first == ip->ino) next = (patch++)->second;
    const InodeCore core = ip->Core();
    WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, ip->ino, &core, next));
  }
  for (; patch != next_patches_.end(); ++patch)
    WALFS_RETURN_IF_ERROR(fs_->ialloc_->LogInode(tx, patch->first, nullptr, patch->second));
  next_patches_.clear();
  return Status::Ok();
}

Result<std::uint64_t> Filesystem::Op::Commit() {
  Result<std::uint64_t> seq = tx_->Commit();
  tx_.reset();
  if (!seq.ok()) return seq;
  auto raise = [&](std::atomic<std::uint64_t>& to) {
    std::uint64_t prev = to.load(std::memory_order_relaxed);
    while (prev < *seq && !to.compare_exchange_weak(prev, *seq)) {
    }
  };
  for (const InodeRef& ip : dirty_) {
    raise(ip->last_seq);
    if (std::find(timestamps_only_.begin(), timestamps_only_.end(), ip.get()) == timestamps_only_.end())
      raise(ip->datasync_seq);
  }
  return seq;
}

// ---------------------------------------------------------------- mount

Filesystem::Filesystem(BlockDevice* device, std::unique_ptr<BlockDevice> owned,
                       std::unique_ptr<FaultDevice> fault, const MountOptions& options)
    : owned_device_(std::move(owned)), fault_device_(std::move(fault)), device_(device), options_(options) {
  if (options_.norecovery) options_.read_only = true;
}

Filesystem::~Filesystem() {
  // No record is logged once the log halts (a crash: what the log already
  // holds is what the next mount recovers).
  if (errors_) errors_->Stop(false);
  if (log_ && !unmounted_.load()) log_->Halt();
  DestroyComponents();
}

void Filesystem::DestroyComponents() {
  // Users of the cache first; the cache after the log is closed or halted
  // (nothing pinned, nothing in the AIL); the log last.
  icache_.reset();
  maps_.reset();
  dirs_.reset();
  ialloc_.reset();
  alloc_.reset();
  cache_.reset();
  log_.reset();
}

namespace {

// A read-only mount writes nothing: no mount mark, no log write, no
// clean-unmount record.  A clean log has nothing to replay, so it is opened
// as norecovery opens it, never written (not even the stale blocks ahead
// of its head cleared: nothing will be written after them).  A log that
// needs replay is replayed, which writes, as XFS's ro mount does -- unless
// the image could only be opened read-only (Mount), where it is refused.
// A log that cannot be read is left to Log::Open, which says what to do.
// `owned` is the device Mount opened (nullptr for MountDevice).
Status ChooseReadOnlyLog(BlockDevice* device, const BlockDevice* owned, const format::Superblock& sb,
                         const std::string& image, journal::LogOptions* lo) {
  Result<bool> dirty = LogNeedsRecovery(device, sb);
  if (!dirty.ok()) return Status::Ok();
  if (!*dirty) {
    lo->ignore = true;
    return Status::Ok();
  }
  const auto* file = dynamic_cast<const FileDevice*>(owned);
  if (file == nullptr || !file->read_only()) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "{}: the log must be replayed (the image was not unmounted cleanly), and that needs write access, "
      "which this process does not have to the image; mount with -o ro,norecovery to read the image as "
      "last written back, without the log, or make the image writable and mount again",
      image));
}

}  // namespace

Result<std::unique_ptr<Filesystem>> Filesystem::Mount(const MountOptions& options) {
  FileDeviceOptions fo;
  fo.engine = options.io_uring ? IoEngine::kAuto : IoEngine::kSync;
  fo.pwrite_in_memory = !options.io_uring_in_memory;
  fo.exclusive = true;  // one mount per image (base/file_lock.h)
  // norecovery reads the image and nothing else, so it opens it read-only
  // and works on one nobody may write.  `ro` opens it for writing when it
  // can, because a log that needs replay is replayed (as XFS's ro mount
  // does), and read-only when it cannot; Start() then mounts it only if
  // the log is clean.
  fo.read_only = options.norecovery;
  Result<std::unique_ptr<FileDevice>> opened = FileDevice::Open(options.image, fo);
  if (!opened.ok() && options.read_only && !fo.read_only && CannotOpenForWriting(opened.status())) {
    fo.read_only = true;
    opened = FileDevice::Open(options.image, fo);
  }
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<FileDevice> dev, std::move(opened));
  std::unique_ptr<FaultDevice> fault;
  if (options.fault_injection) fault = std::make_unique<FaultDevice>(dev.get());
  BlockDevice* raw = fault ? static_cast<BlockDevice*>(fault.get()) : dev.get();
  std::unique_ptr<Filesystem> fs(new Filesystem(raw, std::move(dev), std::move(fault), options));
  WALFS_RETURN_IF_ERROR(fs->Start());
  return fs;
}

Result<std::unique_ptr<Filesystem>> Filesystem::MountDevice(BlockDevice* device, const MountOptions& options) {
  std::unique_ptr<Filesystem> fs(new Filesystem(device, nullptr, nullptr, options));
  WALFS_RETURN_IF_ERROR(fs->Start());
  return fs;
}

Status Filesystem::Start() {
  std::vector<std::byte> b(format::kSuperSize);
  WALFS_RETURN_IF_ERROR(device_->Read(0, b.data(), b.size()));
  Result<format::Superblock> primary = format::DecodeSuperblock(b, device_->size_bytes());
  if (!primary.ok() && FindSuperblockCopy(device_, /*scan=*/true).ok()) {
    // The AG headers' copies verify: the image is walfs's, damaged, and
    // fsck can rebuild its superblock (a file that is not a walfs image is
    // not scanned: FindSuperblockCopy).
    return Status::Corruption(fmt::format("{}; the AG headers hold copies of it: fsck.walfs -y {} rebuilds it",
                                          primary.status().message(),
                                          options_.image.empty() ? std::string("IMAGE") : options_.image));
  }
  WALFS_ASSIGN_OR_RETURN(sb_, std::move(primary));
  journal::LogOptions lo = LogOptionsFor(device_, sb_);
  lo.wake_mode = options_.wake_mode;
  lo.iclog_count = options_.logbufs;
  lo.iclog_bytes = options_.logbsize;
  lo.push_interval_ns = std::int64_t{options_.commit_interval_s} * 1'000'000'000;
  lo.lazy_push_ns = std::int64_t{options_.lazy_commit_ms} * 1'000'000;
  lo.inline_force_io = options_.inline_force_io;
  lo.ignore = options_.norecovery;
  if (options_.read_only && !options_.norecovery)
    WALFS_RETURN_IF_ERROR(ChooseReadOnlyLog(device_, owned_device_.get(), sb_, options_.image, &lo));
  Result<std::unique_ptr<journal::Log>> opened = journal::Log::Open(lo);
  if (!opened.ok() && opened.status().IsCorruption()) {
    // Say what can still be done with an image whose log cannot be replayed.
    return Status::Corruption(fmt::format(
        "{}; the log is damaged: mount with -o norecovery to read the image as it was last written "
        "back (read-only, the log ignored), or run fsck.walfs -L to zero the log (what it holds is lost)",
        opened.status().message()));
  }
  WALFS_ASSIGN_OR_RETURN(log_, std::move(opened));
  const journal::RecoverReport& r = log_->recovery();
  // Recovery may have replayed a grow into the superblock (growfs logs its
  // geometry): mount the geometry the log leaves.
  if (r.replayed) {
    WALFS_RETURN_IF_ERROR(device_->Read(0, b.data(), b.size()));
    WALFS_ASSIGN_OR_RETURN(sb_, format::DecodeSuperblock(b, device_->size_bytes()));
  }
  if (!r.ignored.empty())
    recovery_summary_ = fmt::format("log not replayed (norecovery): {}; the image is as last written back", r.ignored);
  else
    recovery_summary_ = !r.replayed ? "clean log"
                                    : fmt::format("log recovered: {} transactions, {} buffers replayed",
                                                  r.transactions, r.buffers_replayed);
  // The head search takes a record that does not read whole, or a hole,
  // near the head for a write the crash cut short, and the log ends before
  // it.  Damage there looks the same and drops the checkpoints after it, so
  // say how much was dropped rather than nothing.
  const journal::LogPosition& at = r.position;
  const bool cut_short = r.ignored.empty() && (at.trimmed_records > 0 || at.hole_sectors > 0);
  if (cut_short)
    recovery_summary_ += fmt::format(
        "; the log ended early at {} ({} {} that did not read whole and {} sectors after a hole "
        "dropped, as a write torn by a crash is)",
        journal::LsnString(at.head), at.trimmed_records, at.trimmed_records == 1 ? "record" : "records",
        at.hole_sectors);
  if (!options_.read_only) WALFS_RETURN_IF_ERROR(MarkMounted(device_, &sb_, Now().sec));
  StartErrorRecorder();
  cache_ = std::make_unique<BufCache>(BufCache::Options{
      device_, log_.get(), &sb_, options_.buffer_cache,
      [this](std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s) {
        errors_->Note(what, ino, blkno, s);
      }});
  alloc_ = std::make_unique<Allocator>(cache_.get(), log_.get(), &sb_);
  ialloc_ = std::make_unique<InodeAllocator>(cache_.get(), alloc_.get(), &sb_);
  icache_ = std::make_unique<InodeCache>(ialloc_.get(), [log = log_.get()] { return log->cil().current_seq(); });
  dirs_ = std::make_unique<DirIndex>(cache_.get(), alloc_.get(), &sb_);
  maps_ = std::make_unique<FileMap>(cache_.get(), alloc_.get(), &sb_);
  WALFS_RETURN_IF_ERROR(alloc_->LoadFreeTotal());
  WALFS_ASSIGN_OR_RETURN(InodeRef root, icache_->Get(sb_.root_ino));
  if (!IsDir(root->Core()))
    return Status::Corruption(fmt::format("root inode {} is not a directory", sb_.root_ino));
  root->pinned = true;
  if (options_.discard && !options_.read_only) {
    if (device_->SupportsDiscard()) {
      const std::uint64_t bs = sb_.block_size;
      alloc_->StartOnlineDiscard([this, bs](std::uint64_t block, std::uint64_t count) {
        return device_->Discard(block * bs, count * bs);
      });
    } else {
      Message(Severity::kWarning, "{}: -o discard: a {} device cannot discard; freed blocks are not given back",
              options_.image.empty() ? device_->Describe() : options_.image, device_->kind());
    }
  }
  if (!options_.read_only) WALFS_RETURN_IF_ERROR(ProcessUnlinkedLists());
  Message(log_->recovery().ignored.empty() && !cut_short ? Severity::kInfo : Severity::kWarning, "{}: mounted{}; {}",
          options_.image.empty() ? device_->Describe() : options_.image,
          options_.read_only ? " read-only" : "", recovery_summary_);
  return Status::Ok();
}

std::string Filesystem::Describe() const {
  return fmt::format("{}; {} blocks of {} bytes, {} AGs, log {} KiB; {}{}", device_->Describe(),
                     sb_.total_blocks, sb_.block_size, sb_.ag_count,
                     std::uint64_t{sb_.log_blocks} * sb_.block_size / 1024, recovery_summary_,
                     options_.read_only ? "; read-only" : "");
}

Status Filesystem::Unmount() {
  if (unmounted_.exchange(true)) return Status::Ok();
  Status s;
  // The record's last update goes in before the log closes.
  const bool shut_down = log_->IsShutdown();
  if (errors_) errors_->Stop(!options_.read_only && !shut_down);
  if (shut_down) {
    // Nothing more may be written: the next mount recovers the log.
    s = log_->status();
    if (s.ok()) s = Status::Shutdown("the filesystem was shut down");
    log_->Halt();
  } else if (!options_.read_only) {
    // Unlinked inodes the kernel never forgot stay on their lists; the next
    // mount frees them.
    s = log_->Close();
    // A close that failed (a log or writeback error on the way) leaves items
    // pinned or in the AIL: halt as a crash would before they are destroyed.
    if (!s.ok()) log_->Halt();
  } else {
    log_->Halt();
  }
  DestroyComponents();
  // The clean unmount rewrites the superblock from sb_: with the record
  // as the log left it, or one the log could not take.
  if (errors_) sb_.errors = errors_->record();
  if (shut_down) WriteErrorRecordInPlace();
  if (s.ok() && !options_.read_only) s = MarkUnmountedClean(device_, &sb_);
  const std::string name = options_.image.empty() ? device_->Describe() : options_.image;
  if (s.ok()) {
    Message(Severity::kInfo, "{}: unmounted cleanly", name);
  } else {
    Message(Severity::kError, "{}: unmounted with the log not closed ({}); the next mount recovers it", name,
            s.ToString());
  }
  return s;
}

Status Filesystem::ProcessUnlinkedLists() {
  for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno) {
    for (;;) {
      std::uint64_t head;
      {
        WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
        agh->Lock();
        head = DecodeFixed64(reinterpret_cast<const char*>(agh->data().data()) + kUnlinkedHeadOffset);
        agh->Unlock();
      }
      if (head == 0) break;
      WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(head));
      if (ip->Core().nlink != 0)
        return Status::Corruption(fmt::format("inode {} is on AG {}'s unlinked list with links", head, agno));
      WALFS_RETURN_IF_ERROR(Inactivate(ip));
      ip.reset();
      icache_->Evict(head);
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- helpers

Status Filesystem::ReserveBlocks(std::uint64_t n, bool freeing) {
  // Free now (the allocator's count, which this operation's own
  // allocations lower while its reservation still stands: conservative)
  // minus what running operations may still take, minus the freeing pool.
  const std::int64_t pool = freeing ? 0 : kFreeingPool;
  std::int64_t r = reserved_blocks_.load(std::memory_order_relaxed);
  for (;;) {
    if (alloc_->FreeTotal() - r - pool < static_cast<std::int64_t>(n)) return Errno(ENOSPC, "no free space");
    if (reserved_blocks_.compare_exchange_weak(r, r + static_cast<std::int64_t>(n))) return Status::Ok();
  }
}

void Filesystem::UnreserveBlocks(std::uint64_t n) {
  reserved_blocks_.fetch_sub(static_cast<std::int64_t>(n));
}

Status Filesystem::CheckWritable() const {
  if (options_.read_only) return Errno(EROFS, "read-only filesystem");
  if (log_->IsShutdown()) return Status::Shutdown(fmt::format("the filesystem is shut down: {}", log_->status().ToString()));
  return Status::Ok();
}

Result<InodeRef> Filesystem::Iget(std::uint64_t ino) {
  if (ino / sb_.inodes_per_block() < sb_.data_start() || ino / sb_.inodes_per_block() >= sb_.total_blocks)
    return Errno(ESTALE, fmt::format("inode {} is outside the filesystem", ino));
  Result<InodeRef> ip = icache_->Get(ino);
  if (!ip.ok() && ip.status().code() == StatusCode::kNotFound) return Errno(ESTALE, ip.status().message());
  return ip;
}

struct stat Filesystem::StatOf(const InodeCore& c) const {
  struct stat st {};
  st.st_ino = c.ino;
  st.st_mode = c.mode;
  st.st_nlink = c.nlink;
  st.st_uid = c.uid;
  st.st_gid = c.gid;
  st.st_rdev = c.rdev;
  st.st_size = static_cast<off_t>(c.size);
  st.st_blksize = sb_.block_size;
  st.st_blocks = static_cast<blkcnt_t>(c.nblocks * (sb_.block_size / 512));
  st.st_atim = {c.atime.sec, c.atime.nsec};
  st.st_mtim = {c.mtime.sec, c.mtime.nsec};
  st.st_ctim = {c.ctime.sec, c.ctime.nsec};
  return st;
}

// ---------------------------------------------------------------- namespace

Result<struct stat> Filesystem::Lookup(std::uint64_t parent, std::string_view name) {
  if (name.size() > format::kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  // The lookup count is taken before the directory lets go: an unlink (which
  // needs the directory exclusively) and the forget after it cannot free the
  // inode between finding the name and counting the reference.
  std::shared_lock l(dp->rw);
  const InodeCore dc = dp->Core();
  if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
  std::uint64_t target;
  if (name == ".") {
    target = parent;
  } else if (name == "..") {
    target = dirs_->Parent(dc);
  } else {
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> t, dirs_->Lookup(dc, name));
    if (!t) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    target = t->ino;
  }
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(target));
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

void Filesystem::Forget(std::uint64_t ino, std::uint64_t n) {
  InodeRef ip = icache_->Forget(ino, n);
  if (!ip) return;
  if (ip->Core().nlink == 0 && !options_.read_only && !log_->IsShutdown()) {
    Status s = Inactivate(ip);
    if (!s.ok()) Message(Severity::kError, "{}: freeing unlinked inode {}: {}", options_.image, ino, s.ToString());
  }
  ip.reset();
  icache_->Evict(ino);
}

Result<struct stat> Filesystem::GetAttr(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  // Under the core's lock rather than from a Core() copy: the copy would
  // allocate and copy the literal area (400+ bytes) for every GETATTR.
  MutexLock l(&ip->core_mu);
  return StatOf(ip->core);
}

Result<struct stat> Filesystem::Mknod(const Caller& c, std::uint64_t parent, std::string_view name,
                                      std::uint32_t mode, std::uint32_t rdev) {
  switch (mode & S_IFMT) {
    case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK: break;
    case 0: mode |= S_IFREG; break;
    default: return Errno(EINVAL, "mknod of a directory or symlink");
  }
  return CreateNode(c, parent, name, mode, rdev, {});
}

Result<struct stat> Filesystem::Mkdir(const Caller& c, std::uint64_t parent, std::string_view name,
                                      std::uint32_t mode) {
  return CreateNode(c, parent, name, S_IFDIR | (mode & 07777), 0, {});
}

Result<struct stat> Filesystem::Symlink(const Caller& c, std::uint64_t parent, std::string_view name,
                                        std::string_view target) {
  if (target.empty() || target.size() >= 4096 || target.size() > sb_.block_size)
    return Errno(target.empty() ? ENOENT : ENAMETOOLONG, "symlink target length");
  return CreateNode(c, parent, name, S_IFLNK | 0777, 0, target);
}

Result<struct stat> Filesystem::CreateNode(const Caller& c, std::uint64_t parent, std::string_view name,
                                           std::uint32_t mode, std::uint32_t rdev,
                                           std::string_view symlink) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_RETURN_IF_ERROR(CheckName(name));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  InodeRef ip;
  {
    InodeLocks locks({dp});
    InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> exists, dirs_->Lookup(dc, name));
    if (exists) return Errno(EEXIST, fmt::format("\"{}\" exists", name));
    const bool dir = S_ISDIR(mode);
    if (dir && dc.nlink >= kMaxLinks) return Errno(EMLINK, "too many subdirectories");
    const bool remote_link = S_ISLNK(mode) && symlink.size() > kDataForkRoom;
    // The umask, or the directory's default ACL (one xattr leaf more).
    WALFS_ASSIGN_OR_RETURN(const NewInodeAcls acls, NewInodeAclsLocked(c, parent, dc, mode));
    mode = acls.mode;
    const TransType type = dir ? (acls.any() ? TransType::kMkdirAcl : TransType::kMkdir)
                           : S_ISLNK(mode) ? TransType::kSymlink
                           : acls.any()    ? TransType::kCreateAcl
                                           : TransType::kCreate;
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(type, sb_.blocks_per_chunk() + 2 * 3 + 1 + (remote_link ? 1 : 0) + (acls.any() ? 1 : 0)));

    const format::Timestamp now = Now();
    InodeCore n;
    n.mode = static_cast<std::uint16_t>(mode);
    n.uid = c.uid;
    n.gid = (dc.mode & S_ISGID) ? dc.gid : c.gid;
    if (dir && (dc.mode & S_ISGID)) n.mode |= S_ISGID;
    n.nlink = dir ? 2 : 1;
    n.atime = n.mtime = n.ctime = n.crtime = now;
    n.literal.assign(format::kLiteralSize, '\0');
    n.rdev = rdev;
    n.ino = 1;  // Pick sets it; non-zero keeps the inode "in use" for the checks
    if (dir) {
      DirIndex::InitLocal(&n, parent);
    } else if (S_ISREG(mode)) {
      FileMap::InitEmpty(&n);
    } else if (S_ISLNK(mode)) {
      n.size = symlink.size();
      if (!remote_link) {
        n.format = ForkFormat::kLocal;
        std::copy(symlink.begin(), symlink.end(), n.literal.begin());
      } else {
        FileMap::InitEmpty(&n);
      }
    } else {
      n.format = ForkFormat::kNone;
    }
    WALFS_ASSIGN_OR_RETURN(std::uint64_t ino, ialloc_->Pick(op.tx(), ialloc_->AgOf(parent), &n));
    // Unseen by anyone until the directory entry below: no lock needed.
    WALFS_RETURN_IF_ERROR(InheritAclsLocked(op, ino, &n, acls));
    if (remote_link) {
      WALFS_ASSIGN_OR_RETURN(format::Extent e, alloc_->Alloc(op.tx(), {.goal = ino / sb_.inodes_per_block()}));
      std::string block(sb_.block_size, '\0');
      std::copy(symlink.begin(), symlink.end(), block.begin());
      // The target is on disk before the transaction that points at it.
      WALFS_RETURN_IF_ERROR(device_->Write(e.disk_block * sb_.block_size, block.data(), block.size()));
      e.file_block = 0;
      WALFS_RETURN_IF_ERROR(maps_->Map(op.tx(), &n, e));
      n.nblocks = 1;
    }
    ip = icache_->Insert(n);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), &dc, name, DirTarget{ino, DirentType(mode)}));
    if (dir) dc.nlink += 1;
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  counters_.creates.fetch_add(1, std::memory_order_relaxed);
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Result<std::string> Filesystem::Readlink(std::uint64_t ino) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (!S_ISLNK(c.mode)) return Errno(EINVAL, "not a symlink");
  if (c.format == ForkFormat::kLocal) return c.literal.substr(0, c.size);
  WALFS_ASSIGN_OR_RETURN(std::vector<format::Extent> es, maps_->Overlapping(c, 0, 1));
  if (es.empty()) return Status::Corruption(fmt::format("symlink {} has no target block", ino));
  std::string out(c.size, '\0');
  WALFS_RETURN_IF_ERROR(device_->Read(es.front().disk_block * sb_.block_size, out.data(), out.size()));
  return out;
}

Status Filesystem::Unlink(std::uint64_t parent, std::string_view name) { return RemoveName(parent, name, false); }
Status Filesystem::Rmdir(std::uint64_t parent, std::string_view name) { return RemoveName(parent, name, true); }

Status Filesystem::RemoveName(std::uint64_t parent, std::string_view name, bool dir) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (name == ".") return Errno(EINVAL, "rmdir of \".\"");
  if (name == "..") return Errno(ENOTEMPTY, "rmdir of \"..\"");
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  for (int attempt = 0;; ++attempt) {
    std::optional<DirTarget> t;
    {
      std::shared_lock l(dp->rw);
      const InodeCore dc = dp->Core();
      if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
      WALFS_ASSIGN_OR_RETURN(t, dirs_->Lookup(dc, name));
    }
    if (!t) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(t->ino));
    InodeLocks locks({dp, ip});
    InodeCore dc = dp->Core();
    // The name may have moved while nothing was locked: look again.
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> again, dirs_->Lookup(dc, name));
    if (!again || again->ino != t->ino) continue;
    InodeCore c = ip->Core();
    if (dir && !IsDir(c)) return Errno(ENOTDIR, "not a directory");
    if (!dir && IsDir(c)) return Errno(EISDIR, "is a directory");
    if (dir) {
      WALFS_ASSIGN_OR_RETURN(bool empty, dirs_->Empty(c));
      if (!empty) return Errno(ENOTEMPTY, "directory not empty");
    }
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kRemove, 0));
    const format::Timestamp now = Now();
    c.nlink = dir ? 0 : c.nlink - std::min<std::uint32_t>(c.nlink, 1);
    c.ctime = now;
    StoreCore(ip, c);
    op.Dirty(ip);
    // The unlinked list first: its AG header is the first one this
    // transaction takes (a directory block it frees may be in a lower AG).
    if (c.nlink == 0) WALFS_RETURN_IF_ERROR(AddUnlinked(op, ip));
    WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &dc, name));
    if (dir) dc.nlink -= 1;
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    counters_.removes.fetch_add(1, std::memory_order_relaxed);
    if (c.nlink == 0 && icache_->Unused(ip)) {
      locks.Release();  // Inactivate takes the inode's lock itself
      WALFS_RETURN_IF_ERROR(Inactivate(ip));
      const std::uint64_t ino = ip->ino;
      ip.reset();
      icache_->Evict(ino);
    }
    return Status::Ok();
  }
}

Result<struct stat> Filesystem::Link(std::uint64_t ino, std::uint64_t new_parent, std::string_view new_name) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_RETURN_IF_ERROR(CheckName(new_name));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(new_parent));
  {
    InodeLocks locks({ip, dp});
    InodeCore c = ip->Core();
    InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    if (IsDir(c)) return Errno(EPERM, "hard link to a directory");
    const bool first_name = c.nlink == 0;  // an O_TMPFILE inode's
    if (first_name && !ip->linkable.load()) return Errno(ENOENT, "file was removed");
    if (c.nlink >= kMaxLinks) return Errno(EMLINK, "too many links");
    WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> exists, dirs_->Lookup(dc, new_name));
    if (exists) return Errno(EEXIST, fmt::format("\"{}\" exists", new_name));
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kLink, 2 * 3 + 1));
    const format::Timestamp now = Now();
    if (first_name) {
      // Off the unlinked list first, as xfs_link does for a tmpfile: its AG
      // header is then held before any block the new name may take.
      WALFS_RETURN_IF_ERROR(RemoveUnlinked(op, ip));
      c = ip->Core();
    }
    WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), &dc, new_name, DirTarget{ino, DirentType(c.mode)}));
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
    c.nlink += 1;
    c.ctime = now;
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    if (first_name) ip->linkable.store(false);
  }
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Result<struct stat> Filesystem::TmpFile(const Caller& c, std::uint64_t parent, std::uint32_t mode) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(parent));
  InodeRef ip;
  {
    InodeLocks locks({dp});
    const InodeCore dc = dp->Core();
    if (!IsDir(dc)) return Errno(ENOTDIR, "not a directory");
    if (dc.nlink == 0) return Errno(ENOENT, "directory was removed");
    // The umask, or the directory's default ACL, as for any create.
    WALFS_ASSIGN_OR_RETURN(const NewInodeAcls acls, NewInodeAclsLocked(c, parent, dc, S_IFREG | (mode & 07777)));
    WALFS_ASSIGN_OR_RETURN(ip, CreateUnlinked(c, dp, acls.mode, 0, &acls));
  }
  ip->linkable.store(true);
  counters_.creates.fetch_add(1, std::memory_order_relaxed);
  icache_->AddLookup(ip);
  return StatOf(ip->Core());
}

Status Filesystem::Rename(std::uint64_t parent, std::string_view name, std::uint64_t new_parent,
                          std::string_view new_name, std::uint32_t flags, const Caller& caller) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return Errno(EINVAL, "unknown rename flags");
  if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
    return Errno(EINVAL, "EXCHANGE with NOREPLACE or WHITEOUT");
  WALFS_RETURN_IF_ERROR(CheckName(name));
  WALFS_RETURN_IF_ERROR(CheckName(new_name));
  WALFS_ASSIGN_OR_RETURN(InodeRef sp, Iget(parent));
  WALFS_ASSIGN_OR_RETURN(InodeRef dp, Iget(new_parent));
  for (;;) {
    std::optional<DirTarget> src, dst;
    {
      InodeLocks locks({sp, dp});
      const InodeCore sc = sp->Core(), dc = dp->Core();
      if (!IsDir(sc) || !IsDir(dc)) return Errno(ENOTDIR, "not a directory");
      WALFS_ASSIGN_OR_RETURN(src, dirs_->Lookup(sc, name));
      WALFS_ASSIGN_OR_RETURN(dst, dirs_->Lookup(dc, new_name));
    }
    if (!src) return Errno(ENOENT, fmt::format("no \"{}\"", name));
    WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(src->ino));
    InodeRef tp;
    if (dst) {
      WALFS_ASSIGN_OR_RETURN(tp, Iget(dst->ino));
    }
    std::vector<InodeRef> all{sp, dp, ip};
    if (tp) all.push_back(tp);
    // A directory moving to another parent: no other such rename may run,
    // so the ancestry checked below cannot change (the VFS's rename lock).
    static std::mutex cross_dir_mu;
    std::unique_lock<std::mutex> cross(cross_dir_mu, std::defer_lock);
    if (sp != dp) cross.lock();
    InodeLocks locks(all);
    {
      const InodeCore sc = sp->Core(), dc = dp->Core();
      WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> src2, dirs_->Lookup(sc, name));
      WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> dst2, dirs_->Lookup(dc, new_name));
      const bool same = src2 && src2->ino == src->ino &&
                        (dst2 ? dst && dst2->ino == dst->ino : !dst);
      if (!same) continue;  // raced a change: resolve again
    }
    // The whiteout is made first, in a transaction of its own, and only
    // linked by the rename's (XFS's xfs_rename_alloc_whiteout): the name
    // change stays one transaction, and a crash between the two leaves an
    // unlinked inode that the next mount frees.
    InodeRef wip;
    if (flags & RENAME_WHITEOUT) {
      WALFS_ASSIGN_OR_RETURN(wip, CreateUnlinked(caller, sp, S_IFCHR, 0));
    }
    Status st;
    {
      Op op(this);
      st = RenameLocked(op, sp, name, dp, new_name, flags, wip);
    }
    if (wip && wip->Core().nlink == 0) {  // the rename failed or had nothing to do
      locks.Release();
      // If this fails too, the next mount frees it from the unlinked list.
      Status freed = Inactivate(wip);
      if (st.ok()) st = freed;
    }
    return st;
  }
}

Result<InodeRef> Filesystem::CreateUnlinked(const Caller& c, const InodeRef& dp, std::uint32_t mode,
                                            std::uint32_t rdev, const NewInodeAcls* acls) {
  const InodeCore dc = dp->Core();
  const bool inherits = acls != nullptr && acls->any();
  Op op(this);
  WALFS_RETURN_IF_ERROR(
      op.Begin(inherits ? TransType::kCreateAcl : TransType::kCreate, sb_.blocks_per_chunk() + (inherits ? 1 : 0)));
  const format::Timestamp now = Now();
  InodeCore n;
  n.mode = static_cast<std::uint16_t>(mode);
  n.uid = c.uid;
  n.gid = (dc.mode & S_ISGID) ? dc.gid : c.gid;
  n.nlink = 0;
  n.atime = n.mtime = n.ctime = n.crtime = now;
  n.literal.assign(format::kLiteralSize, '\0');
  n.rdev = rdev;
  n.ino = 1;  // Pick sets it; non-zero keeps the inode "in use" for the checks
  if (S_ISREG(mode))
    FileMap::InitEmpty(&n);
  else
    n.format = ForkFormat::kNone;
  WALFS_RETURN_IF_ERROR(ialloc_->Pick(op.tx(), ialloc_->AgOf(dp->ino), &n).status());  // sets n.ino
  // Unseen by anyone yet: no lock needed.
  if (inherits) WALFS_RETURN_IF_ERROR(InheritAclsLocked(op, n.ino, &n, *acls));
  InodeRef ip = icache_->Insert(n);
  op.Dirty(ip);
  // Its AG header is held already (Pick took it), so the order holds.
  WALFS_RETURN_IF_ERROR(AddUnlinked(op, ip));
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  return ip;
}

Status Filesystem::RenameLocked(Op& op, const InodeRef& sp, std::string_view name, const InodeRef& dp,
                                std::string_view new_name, std::uint32_t flags, const InodeRef& wip) {
  InodeCore sc = sp->Core();
  WALFS_ASSIGN_OR_RETURN(std::optional<DirTarget> src, dirs_->Lookup(sc, name));
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(src->ino));
  std::optional<DirTarget> dst;
  {
    const InodeCore dc = dp->Core();
    WALFS_ASSIGN_OR_RETURN(dst, dirs_->Lookup(dc, new_name));
  }
  InodeRef tp;
  if (dst) {
    WALFS_ASSIGN_OR_RETURN(tp, Iget(dst->ino));
  }
  if (tp && tp->ino == ip->ino) return Status::Ok();  // two names of one file: nothing to do
  if ((flags & RENAME_NOREPLACE) && tp) return Errno(EEXIST, fmt::format("\"{}\" exists", new_name));
  if ((flags & RENAME_EXCHANGE) && !tp) return Errno(ENOENT, fmt::format("no \"{}\"", new_name));
  InodeCore c = ip->Core();
  const bool src_dir = IsDir(c);
  const bool exchange = flags & RENAME_EXCHANGE;
  InodeCore tc;
  if (tp) tc = tp->Core();
  const bool dst_dir = tp && IsDir(tc);
  if (!exchange && tp) {
    if (src_dir && !dst_dir) return Errno(ENOTDIR, "renaming a directory over a non-directory");
    if (!src_dir && dst_dir) return Errno(EISDIR, "renaming a non-directory over a directory");
    if (dst_dir) {
      WALFS_ASSIGN_OR_RETURN(bool empty, dirs_->Empty(tc));
      if (!empty) return Errno(ENOTEMPTY, "target directory not empty");
    }
  }
  // A directory may not move below itself.
  if (sp != dp) {
    auto below = [&](const InodeRef& moving, std::uint64_t start) -> Result<bool> {
      std::uint64_t at = start;
      for (int depth = 0; depth < 4096 && at != sb_.root_ino; ++depth) {
        if (at == moving->ino) return true;
        WALFS_ASSIGN_OR_RETURN(InodeRef p, Iget(at));
        at = dirs_->Parent(p->Core());
      }
      return at == moving->ino;
    };
    if (src_dir) {
      WALFS_ASSIGN_OR_RETURN(bool loop, below(ip, dp->ino));
      if (loop) return Errno(EINVAL, "moving a directory below itself");
    }
    if (exchange && dst_dir) {
      WALFS_ASSIGN_OR_RETURN(bool loop, below(tp, sp->ino));
      if (loop) return Errno(EINVAL, "moving a directory below itself");
    }
    const InodeCore dc = dp->Core();
    if (src_dir && !dst_dir && dc.nlink >= kMaxLinks) return Errno(EMLINK, "too many subdirectories");
  }

  // A full filesystem still renames where no block is needed: without a
  // reservation the new name may only use the room its directory has, and
  // is ENOSPC where it would need a block (xfs_rename retries with no block
  // reservation; xfs_dir_canenter).  A replaced name needs none.  That
  // ENOSPC comes before anything changes -- the new name's insert is the
  // first change when there is no target -- except after a whiteout's
  // unlinked-list change, so a whiteout rename keeps its reservation.
  constexpr std::uint64_t kRenameBlocks = 2 * (2 * 3 + 1);  // two directory inserts split to the root
  bool may_allocate = true;
  Status begun = op.Begin(TransType::kRename, kRenameBlocks);
  if (!begun.ok() && begun.ToErrno() == ENOSPC && !wip) {
    may_allocate = false;
    begun = op.Begin(TransType::kRename, 0);
  }
  WALFS_RETURN_IF_ERROR(begun);
  const format::Timestamp now = Now();
  const bool same_dir = sp == dp;
  // The unlinked lists first, their AG headers in ascending order: the
  // target losing its last link goes on its list, the whiteout comes off
  // its own.  (The rename's log reservation covers the whiteout: it adds
  // two inodes at most -- itself and its predecessor on the list -- and an
  // AG header, and its source entry is a replace, one leaf path that never
  // splits, where the reservation allows a second insert split to the root.)
  bool target_unlinked = false;
  if (tp && !exchange) {
    tc.nlink = dst_dir ? 0 : tc.nlink - std::min<std::uint32_t>(tc.nlink, 1);
    tc.ctime = now;
    StoreCore(tp, tc);
    op.Dirty(tp);
    target_unlinked = tc.nlink == 0;
  }
  const bool target_first = target_unlinked && wip && ialloc_->AgOf(tp->ino) < ialloc_->AgOf(wip->ino);
  if (target_first) WALFS_RETURN_IF_ERROR(AddUnlinked(op, tp));
  if (wip) {
    WALFS_RETURN_IF_ERROR(RemoveUnlinked(op, wip));
    InodeCore w = wip->Core();
    w.nlink = 1;
    w.ctime = now;
    StoreCore(wip, w);
    op.Dirty(wip);
  }
  if (target_unlinked && !target_first) WALFS_RETURN_IF_ERROR(AddUnlinked(op, tp));
  InodeCore dc = same_dir ? sc : dp->Core();
  InodeCore* d = same_dir ? &sc : &dc;
  if (exchange) {
    WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), &sc, name, DirTarget{tp->ino, DirentType(tc.mode)}));
    WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}));
    if (!same_dir) {
      if (src_dir) dirs_->SetParent(&c, dp->ino);
      if (dst_dir) dirs_->SetParent(&tc, sp->ino);
      if (src_dir != dst_dir) {
        if (src_dir) { sc.nlink -= 1; dc.nlink += 1; } else { sc.nlink += 1; dc.nlink -= 1; }
      }
    }
    tc.ctime = now;
    StoreCore(tp, tc);
    op.Dirty(tp);
  } else {
    // In an inline directory the old name's room is free at once: removing
    // it changes only the copy in hand (nothing is logged before the
    // commit), so the new name may use it.
    const bool remove_first = same_dir && !wip && sc.format == ForkFormat::kLocal;
    if (remove_first) WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &sc, name));
    if (tp)
      WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}));
    else
      WALFS_RETURN_IF_ERROR(dirs_->Add(op.tx(), d, new_name, DirTarget{ip->ino, DirentType(c.mode)}, may_allocate));
    if (wip)
      WALFS_RETURN_IF_ERROR(dirs_->Replace(op.tx(), &sc, name, DirTarget{wip->ino, DT_CHR}));
    else if (!remove_first)
      WALFS_RETURN_IF_ERROR(dirs_->Remove(op.tx(), &sc, name));
    // Link counts of the parents: a directory's ".." moves with it, and a
    // replaced directory's goes away.
    if (src_dir) {
      if (!same_dir) {
        dirs_->SetParent(&c, dp->ino);
        sc.nlink -= 1;
        if (!dst_dir) dc.nlink += 1;
      } else if (dst_dir) {
        sc.nlink -= 1;
      }
    }
  }
  c.ctime = now;
  StoreCore(ip, c);
  op.Dirty(ip);
  sc.mtime = sc.ctime = now;
  StoreCore(sp, sc);
  op.Dirty(sp);
  if (!same_dir) {
    dc.mtime = dc.ctime = now;
    StoreCore(dp, dc);
    op.Dirty(dp);
  }
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  counters_.renames.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Filesystem::ReadDir(std::uint64_t ino, std::uint64_t offset,
                           const std::function<bool(std::string_view, std::uint64_t, std::uint32_t,
                                                    std::uint64_t)>& fn) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (!IsDir(c)) return Errno(ENOTDIR, "not a directory");
  if (offset == 0 && !fn(".", ino, DT_DIR, 1)) return Status::Ok();
  if (offset <= 1 && !fn("..", dirs_->Parent(c), DT_DIR, 2)) return Status::Ok();
  return dirs_->List(c, std::max<std::uint64_t>(offset, 3),
                     [&](std::uint64_t key, std::string_view name, DirTarget t) {
                       return fn(name, t.ino, t.ftype, key + 1);
                     });
}

std::uint64_t Filesystem::AvailableBytes() const {
  const std::int64_t free_now = std::max<std::int64_t>(0, alloc_->FreeTotal());
  const std::int64_t avail = std::max<std::int64_t>(0, free_now - reserved_blocks_.load() - kFreeingPool);
  return static_cast<std::uint64_t>(avail) * sb_.block_size;
}

Result<struct statvfs> Filesystem::StatFs() NO_THREAD_SAFETY_ANALYSIS {
  struct statvfs st {};
  st.f_bsize = sb_.block_size;
  st.f_frsize = sb_.block_size;
  st.f_blocks = sb_.total_blocks - sb_.data_start();
  const std::int64_t free_now = std::max<std::int64_t>(0, alloc_->FreeTotal());
  st.f_bfree = static_cast<fsblkcnt_t>(free_now);
  st.f_bavail = static_cast<fsblkcnt_t>(std::max<std::int64_t>(0, free_now - reserved_blocks_.load() - kFreeingPool));
  std::uint64_t icount = 0, ifree = 0;
  for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno) {
    WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
    agh->Lock();
    const format::AgHeader h = format::PeekAgHeader(agh->data());
    agh->Unlock();
    icount += h.icount;
    ifree += std::min(h.ifree, h.icount);
  }
  // Inodes come in chunks from free space: what is free can still become inodes.
  const std::uint64_t possible = ifree + static_cast<std::uint64_t>(free_now) / sb_.blocks_per_chunk() * sb_.inodes_per_chunk;
  st.f_files = icount - ifree + possible;
  st.f_ffree = possible;
  st.f_favail = possible;
  st.f_namemax = format::kMaxNameLen;
  st.f_fsid = DecodeFixed64(reinterpret_cast<const char*>(sb_.uuid.data()));
  return st;
}

// ---------------------------------------------------------------- unlinked lists

Status Filesystem::AddUnlinked(Op& op, const InodeRef& ip) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t agno = ialloc_->AgOf(ip->ino);
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
  if (!op.tx()->HoldAgHeader(agh, agno))
    return Status::Internal(fmt::format("AG {} header out of order for the unlinked list", agno));
  char* p = reinterpret_cast<char*>(agh->data().data());
  const std::uint64_t head = DecodeFixed64(p + kUnlinkedHeadOffset);
  op.SetNextUnlinked(ip, head);
  EncodeFixed64(p + kUnlinkedHeadOffset, ip->ino);
  op.tx()->LogRange(agh, kUnlinkedHeadOffset, kUnlinkedHeadOffset + 7);
  {
    MutexLock l(&unlinked_mu_);
    if (head != 0) unlinked_prev_[head] = ip->ino;
  }
  return Status::Ok();
}

Status Filesystem::RemoveUnlinked(Op& op, const InodeRef& ip) NO_THREAD_SAFETY_ANALYSIS {
  const std::uint32_t agno = ialloc_->AgOf(ip->ino);
  WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
  if (!op.tx()->HoldAgHeader(agh, agno))
    return Status::Internal(fmt::format("AG {} header out of order for the unlinked list", agno));
  const std::uint64_t next = ip->Core().next_unlinked;
  op.SetNextUnlinked(ip, 0);
  std::optional<std::uint64_t> prev;
  {
    MutexLock l(&unlinked_mu_);
    auto it = unlinked_prev_.find(ip->ino);
    if (it != unlinked_prev_.end()) {
      prev = it->second;
      unlinked_prev_.erase(it);
    }
    if (next != 0) {
      if (prev)
        unlinked_prev_[next] = *prev;
      else
        unlinked_prev_.erase(next);
    }
  }
  if (!prev) {
    char* p = reinterpret_cast<char*>(agh->data().data());
    if (DecodeFixed64(p + kUnlinkedHeadOffset) != ip->ino) {
      // Inherited from a crashed mount: find the predecessor on disk.
      std::uint64_t at = DecodeFixed64(p + kUnlinkedHeadOffset);
      while (at != 0) {
        WALFS_ASSIGN_OR_RETURN(InodeRef pp, Iget(at));
        const std::uint64_t n = pp->Core().next_unlinked;
        if (n == ip->ino) {
          prev = at;
          break;
        }
        at = n;
      }
      if (!prev) return Status::Corruption(fmt::format("inode {} is not on AG {}'s unlinked list", ip->ino, agno));
    } else {
      EncodeFixed64(p + kUnlinkedHeadOffset, next);
      op.tx()->LogRange(agh, kUnlinkedHeadOffset, kUnlinkedHeadOffset + 7);
    }
  }
  if (prev) {
    WALFS_ASSIGN_OR_RETURN(InodeRef pp, Iget(*prev));
    op.SetNextUnlinked(pp, next);  // that field only: pp's other changes are its own operation's
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- stats

Status Filesystem::SetWakeMode(journal::WakeMode mode) {
  log_->space().set_wake_mode(mode);
  return Status::Ok();
}

journal::WakeMode Filesystem::wake_mode() const { return log_->space().wake_mode(); }

std::string Filesystem::StatsText() const {
  std::string out;
  const journal::LogStats ls = log_->Stats();
  out += fmt::format("log_head {}\nlog_durable {}\nlog_tail {}\nlog_shutdown {}\n", journal::LsnString(ls.head),
                     journal::LsnString(ls.durable), journal::LsnString(ls.tail), ls.shutdown ? 1 : 0);
  out += fmt::format("log_bytes {}\ntail_space_bytes {}\nwake_mode {}\nlive_tickets {}\n", ls.space.log_bytes,
                     ls.space.tail_space, journal::WakeModeName(ls.space.wake_mode), ls.space.live_tickets);
  for (const journal::GrantHeadStats* h : {&ls.space.reserve_head, &ls.space.write_head}) {
    out += fmt::format(
        "{0}_grant_bytes {1}\n{0}_free_bytes {2}\n{0}_queued {3}\n{0}_sleeps {4}\n{0}_wake_passes {5}\n"
        "{0}_wakes_issued {6}\n{0}_wake_syscalls {7}\n{0}_duplicate_wakes {8}\n"
        "{0}_duplicate_wakes_avoided {9}\n{0}_useful_wakes {10}\n{0}_futile_wakes {11}\n"
        "{0}_signals_under_lock {12}\n{0}_signals_after_unlock {13}\n",
        h->name, h->grant_bytes, h->free_bytes, h->queued, h->sleeps, h->wake_passes, h->wakes_issued,
        h->wake_syscalls, h->duplicate_wakes, h->duplicate_wakes_avoided, h->useful_wakes,
        h->futile_wakes, h->signals_under_lock, h->signals_after_unlock);
  }
  out += fmt::format("ail_items {}\nail_tail {}\nail_target {}\nail_pushes {}\nail_tail_moves {}\nail_log_forces {}\n",
                     ls.ail.items, journal::LsnString(ls.ail.tail), journal::LsnString(ls.ail.target), ls.ail.pushes,
                     ls.ail.tail_moves, ls.ail.log_forces);
  out += fmt::format("cil_commits {}\ncil_pushes {}\ncil_forces {}\ncil_forced_pushes {}\ncil_empty_forces {}\n",
                     ls.cil.commits, ls.cil.pushes, ls.cil.forces, ls.cil.forced_pushes, ls.cil.empty_forces);
  out += fmt::format("cil_background_pushes {}\ncil_timed_pushes {}\ncil_seq {}\ncil_items {}\ncil_committed_seq {}\n"
                     "cil_written_seq {}\n",
                     ls.cil.background_pushes, ls.cil.timed_pushes, ls.cil.seq, ls.cil.items, ls.cil.committed_seq,
                     ls.cil.written_seq);
  out += fmt::format(
      "cil_lazy_pushes {}\ncil_lazy_written {}\ncil_lazy_p50_us {}\ncil_lazy_p99_us {}\ncil_lazy_max_us {}\n"
      "cil_kick_flushes {}\n",
      ls.cil.lazy_pushes, ls.cil.lazy_written, ls.cil.lazy_p50_ns / 1000, ls.cil.lazy_p99_ns / 1000,
      ls.cil.lazy_max_ns / 1000, ls.cil.kick_flushes);
  out += fmt::format("log_records {}\nlog_preflushes {}\nlog_forces {}\n", ls.writer.records, ls.writer.preflushes,
                     ls.writer.forces);
  out += fmt::format("log_force_waits {}\nlog_force_wait_p50_us {}\nlog_force_wait_p99_us {}\nlog_force_wait_max_us {}\n",
                     ls.writer.force_waits, ls.writer.force_wait_p50_ns / 1000, ls.writer.force_wait_p99_ns / 1000,
                     ls.writer.force_wait_max_ns / 1000);
  out += fmt::format("log_written {}\nlog_record_bytes {}\nlog_lazy_records {}\nlog_span_preflushes {}\nlog_flushes {}\n",
                     journal::LsnString(ls.writer.written), ls.writer.record_bytes, ls.writer.lazy_records,
                     ls.writer.span_preflushes, ls.writer.flushes);
  const BlockDeviceStats ds = device_->stats();
  out += fmt::format("dev_reads {}\ndev_writes {}\ndev_flushes {}\ndev_fua_writes {}\ndev_preflush_writes {}\n",
                     ds.reads, ds.writes, ds.flushes, ds.fua_writes, ds.preflush_writes);
  const AllocStats as = alloc_->Stats();
  out += fmt::format("free_blocks {}\nreserved_blocks {}\nallocs {}\nfrees {}\nbusy_forces {}\n",
                     alloc_->FreeTotal(), reserved_blocks_.load(), as.allocs, as.frees, as.busy_forces);
  out += fmt::format("trims {}\ntrimmed_bytes {}\ntrim_busy_skips {}\ndev_discards {}\n", counters_.trims.load(),
                     counters_.trimmed_bytes.load(), as.trim_busy_skips, ds.discards);
  out += fmt::format("online_discards {}\nonline_discard_blocks {}\nonline_discard_errors {}\n", as.online_discards,
                     as.online_discard_blocks, as.online_discard_errors);
  const BufCacheStats bs = cache_->Stats();
  out += fmt::format("buffers {}\nbuffer_hits {}\nbuffer_misses {}\ninodes_cached {}\n", bs.buffers, bs.hits,
                     bs.misses, icache_->size());
  const auto& c = counters_;
  out += fmt::format(
      "creates {}\nremoves {}\nrenames {}\nwrites {}\nreads {}\nfsyncs {}\nbytes_written {}\n"
      "bytes_read {}\ntruncates {}\ninactivated {}\nfsync_flushes_covered {}\nsyncs {}\n",
      c.creates.load(), c.removes.load(), c.renames.load(), c.writes.load(), c.reads.load(),
      c.fsyncs.load(), c.bytes_written.load(), c.bytes_read.load(), c.truncates.load(),
      c.inactivated.load(), c.fsync_flushes_covered.load(), c.syncs.load());
  out += fmt::format("unwritten_conversions {}\nzeroout_blocks {}\n", c.unwritten_conversions.load(),
                     c.zeroout_blocks.load());
  return out;
}

}  // namespace walfs::fs
