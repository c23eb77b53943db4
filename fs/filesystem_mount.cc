// The mount's life: opening the image (Mount, MountDevice), recovering the
// log and building the components over it (Start), and unmounting
// (Unmount: closing the log and marking the superblock clean) -- XFS's
// xfs_mount.c.  The unlinked lists a crashed mount left are processed at
// the end of Start (filesystem_unlinked.cc).
#include "fs/filesystem.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "base/block_device_file.h"
#include "base/messages.h"
#include "fs/fs_op.h"
#include "fs/mkfs.h"
#include "fs/super.h"
#include "fs/super_copy.h"

namespace walfs::fs {

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
  if (!S_ISDIR(root->Core().mode))
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
}  // namespace walfs::fs
