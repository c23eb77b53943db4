// BufLogItem: one metadata block of a BlockDevice as a log item (XFS's
// xfs_buf_log_item).  It owns the block's bytes in memory, the buffer lock
// that transactions hold from join to commit, and the map of 128-byte
// chunks changed since the block was last written back.  Its op body is
// described in buf_log_format.h.
//
//   BufLogItem buf({.device = dev, .blkno = 12, .lsn_offset = 8, .ail = &ail,
//                   .on_error = [&](Status s) { log.Shutdown(s); }});
//   buf.Lock();
//   WALFS_RETURN_IF_ERROR(buf.Read());
//   std::memcpy(buf.data().data() + 300, name, 20);
//   buf.LogRange(300, 319);                 // marks chunk 2
//   tx.Join(&buf); ... tx.Commit();         // Format(), pin; then buf.Unlock()
//   // later, from the AIL pusher:  buf.Push() -> async write -> Ail::DeleteIfLsn
//
// The dirty map accumulates across transactions until a writeback of the
// block completes.  A relogged item moves forward in the AIL, past the older
// checkpoints that logged its earlier changes, and the tail may then move
// past them too: so the newest checkpoint must carry every change that is
// not on disk yet, not only the newest transaction's.
//
// Push() (called by the AIL pusher with the AIL lock held; never blocks):
//   kPinned   the item is in a checkpoint not yet on disk;
//   kLocked   a transaction holds the buffer lock;
//   kFlushing a writeback (or a cancelled item's removal) is in flight;
//   kSuccess  the block was stamped with ail_lsn() at lsn_offset, copied to a
//             snapshot and the snapshot's write submitted.  The buffer lock is
//             released before the write, so transactions may change and
//             relog the block meanwhile.  When the write completes, the
//             chunks changed since the snapshot stay dirty, the others are
//             clean, and Ail::DeleteIfLsn(this, lsn at push) removes the item
//             unless it was relogged.  A failed write calls on_error and
//             leaves everything dirty and the item in the AIL.
//
// A cancelled item (MarkCancelled(): the block was freed) formats a cancel
// body and is never written back: its Push() only removes it from the AIL.
//
// Lifetime: the item must outlive its time pinned and in the AIL (see
// log_item.h); the destructor waits for an in-flight writeback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "base/block_device.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "journal/buf_log_format.h"
#include "journal/log_item.h"

namespace walfs::journal {

class Ail;

struct BufLogItemOptions {
  BlockDevice* device = nullptr;
  std::uint64_t blkno = 0;  // the block is at byte blkno * block_size
  std::uint32_t block_size = kDefaultBufBlockSize;
  // Where the block keeps the LSN of its last writeback (8 bytes), or
  // kBufNoLsn: recovery then always replays its logged versions.
  std::uint32_t lsn_offset = kBufNoLsn;
  Ail* ail = nullptr;  // required
  // The block's type, logged with it (BufLogFormat::type), and the hook that
  // recomputes its checksums (and anything else derived from its bytes) at
  // writeback, after the LSN stamp, on the buffer (under its lock) before
  // the copy is written.  Recovery calls the
  // same hook, by type, on the blocks it replays (RecoverOptions::seal).
  std::uint8_t type = 0;
  std::function<void(std::span<std::byte>)> seal{};
  // Called, on the device's completion thread, when a writeback fails; the
  // log shuts down.  The item stays in the AIL.
  std::function<void(Status)> on_error{};
};

// The buffer lock: a binary semaphore, not a thread-owned mutex, because a
// transaction may be committed (and so release it) on another thread than the
// one that joined the buffer.  Waits are never taken by the pusher (TryLock).
class CAPABILITY("buffer lock") BufferLock {
 public:
  void Lock() ACQUIRE() EXCLUDES(mu_) NO_THREAD_SAFETY_ANALYSIS;
  bool TryLock() TRY_ACQUIRE(true) EXCLUDES(mu_) NO_THREAD_SAFETY_ANALYSIS;
  void Unlock() RELEASE() EXCLUDES(mu_) NO_THREAD_SAFETY_ANALYSIS;

 private:
  Mutex mu_;  // leaf
  CondVar cv_{&mu_};
  bool held_ GUARDED_BY(mu_) = false;
};

class BufLogItem final : public LogItem {
 public:
  explicit BufLogItem(const BufLogItemOptions& options);
  ~BufLogItem() override;  // waits for an in-flight writeback
  BufLogItem(const BufLogItem&) = delete;
  BufLogItem& operator=(const BufLogItem&) = delete;

  void Lock() ACQUIRE(lock_) { lock_.Lock(); }
  bool TryLock() TRY_ACQUIRE(true, lock_) { return lock_.TryLock(); }
  void Unlock() RELEASE(lock_) { lock_.Unlock(); }

  // Loads the block from the device (before its first use; not while a
  // writeback is in flight).
  Status Read() REQUIRES(lock_);
  std::span<std::byte> data() REQUIRES(lock_) { return {block_, block_size_}; }
  std::span<const std::byte> data() const REQUIRES(lock_) { return {block_, block_size_}; }

  // Marks bytes [first_byte, last_byte] changed (last_byte < block_size).
  // Logging a cancelled block means it was allocated again: the cancel is
  // withdrawn (as XFS clears a stale buffer's flag when it is reused).
  void LogRange(std::uint32_t first_byte, std::uint32_t last_byte) REQUIRES(lock_);
  // The block was freed: the next Format() logs a cancel, and it is never
  // written back again.
  void MarkCancelled() REQUIRES(lock_);
  // The block, freed, is being set up again as another kind of metadata
  // (the caller then logs it whole): its type, LSN stamp offset and seal
  // hook become the new kind's.
  void Retype(std::uint8_t type, std::uint32_t lsn_offset,
              std::function<void(std::span<std::byte>)> seal) REQUIRES(lock_);
  bool cancelled() const REQUIRES(lock_) { return cancelled_; }
  // The chunks a Format() now would log.
  std::vector<std::uint32_t> dirty_map() const EXCLUDES(mu_);

  ItemType type() const override { return ItemType::kBuffer; }
  // Appends the body for the current dirty chunks (or a cancel); false if
  // there is nothing to log.  The caller holds the buffer lock.
  bool Format(std::string* out) override REQUIRES(lock_) EXCLUDES(mu_);
  PushResult Push() override EXCLUDES(mu_);

  std::uint64_t blkno() const { return blkno_; }
  std::uint32_t block_size() const { return block_size_; }
  std::uint32_t lsn_offset() const { return lsn_offset_; }
  std::uint8_t buf_type() const { return type_; }
  bool flushing() const EXCLUDES(mu_);

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlign}); }
  };
  using Bytes = std::unique_ptr<std::byte[], AlignedFree>;
  static constexpr std::size_t kAlign = 4096;  // enough for any O_DIRECT device
  Bytes NewBlock() const;

  void WriteDone(Status s) EXCLUDES(mu_);  // device completion thread

  BlockDevice* const device_;
  Ail* const ail_;
  const std::function<void(Status)> on_error_;
  const std::uint64_t blkno_;
  const std::uint32_t block_size_;
  // Fixed but for Retype() (under lock_, which Format and Push hold).
  std::uint32_t lsn_offset_;
  std::uint8_t type_;
  std::function<void(std::span<std::byte>)> seal_;

  // Lock order: (Ail::mu_, when Push() is called) before lock_ before mu_.
  BufferLock lock_;
  const Bytes block_storage_;
  std::byte* const block_ PT_GUARDED_BY(lock_) = block_storage_.get();
  bool cancelled_ GUARDED_BY(lock_) = false;

  // Writeback state and the dirty map.  A mutex of their own, not the buffer
  // lock, because the write completion updates them and must not wait for a
  // transaction that holds the buffer.
  mutable Mutex mu_;  // leaf
  CondVar idle_cv_{&mu_};
  std::vector<std::uint32_t> dirty_ GUARDED_BY(mu_);      // since the last completed writeback began
  std::vector<std::uint32_t> redirtied_ GUARDED_BY(mu_);  // since the in-flight one began
  bool flushing_ GUARDED_BY(mu_) = false;
  Lsn flush_lsn_ GUARDED_BY(mu_) = kNullLsn;  // ail_lsn() when the in-flight push began
  // The in-flight write's source: written by Push() only while !flushing_,
  // read by the device until WriteDone().
  Bytes snapshot_;
};

}  // namespace walfs::journal
