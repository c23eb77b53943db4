#include "journal/buf_item.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "journal/ail.h"

namespace walfs::journal {

void BufferLock::Lock() {
  MutexLock l(&mu_);
  while (held_) cv_.Wait(&mu_);
  held_ = true;
}

bool BufferLock::TryLock() {
  MutexLock l(&mu_);
  if (held_) return false;
  held_ = true;
  return true;
}

void BufferLock::Unlock() {
  MutexLock l(&mu_);
  WALFS_CHECK_MSG(held_, "unlocking a buffer that is not locked");
  held_ = false;
  cv_.Signal();
}

BufLogItem::BufLogItem(const BufLogItemOptions& options)
    : device_(options.device),
      ail_(options.ail),
      on_error_(options.on_error),
      blkno_(options.blkno),
      block_size_(options.block_size),
      lsn_offset_(options.lsn_offset),
      type_(options.type),
      seal_(options.seal),
      block_storage_(NewBlock()),
      dirty_(BufMapWords(options.block_size)),
      redirtied_(BufMapWords(options.block_size)),
      snapshot_(NewBlock()) {
  WALFS_CHECK(device_ != nullptr && ail_ != nullptr);
  WALFS_CHECK_MSG(ValidBufBlockSize(block_size_), "buffer block size");
  WALFS_CHECK_MSG(lsn_offset_ == kBufNoLsn || lsn_offset_ + kBufLsnSize <= block_size_,
                  "buffer LSN stamp outside the block");
  // A block outside the device, or one an O_DIRECT device cannot write, is a
  // caller bug; checking it here lets Push() treat a refused write as one.
  WALFS_CHECK_MSG(blkno_ <= device_->size_bytes() / block_size_ &&
                      (blkno_ + 1) * block_size_ <= device_->size_bytes(),
                  "buffer block beyond the end of its device");
  WALFS_CHECK_MSG(block_size_ % device_->io_alignment() == 0 && kAlign % device_->io_alignment() == 0,
                  "buffer block not aligned for its device");
}

BufLogItem::~BufLogItem() {
  {
    MutexLock l(&mu_);
    while (flushing_) idle_cv_.Wait(&mu_);
  }
  // The CIL and the AIL hold pointers to an item while it is pinned or in
  // the AIL; destroying it then would leave them dangling.
  WALFS_CHECK_MSG(!pinned() && !in_ail(), "destroying a buffer item that is pinned or in the AIL");
}

BufLogItem::Bytes BufLogItem::NewBlock() const {
  auto* p = static_cast<std::byte*>(::operator new[](block_size_, std::align_val_t{kAlign}));
  std::memset(p, 0, block_size_);
  return Bytes(p);
}

Status BufLogItem::Read() {
  {
    MutexLock l(&mu_);
    WALFS_CHECK_MSG(!flushing_, "reading a buffer while its writeback is in flight");
  }
  return device_->Read(blkno_ * block_size_, block_, block_size_);
}

void BufLogItem::LogRange(std::uint32_t first_byte, std::uint32_t last_byte) {
  WALFS_CHECK_MSG(first_byte <= last_byte && last_byte < block_size_,
                  "logged range outside the buffer");
  cancelled_ = false;
  MutexLock l(&mu_);
  SetChunks(&dirty_, first_byte, last_byte);
  if (flushing_) SetChunks(&redirtied_, first_byte, last_byte);
}

void BufLogItem::MarkCancelled() {
  cancelled_ = true;
  // Nothing of the block needs logging or writing any more.
  MutexLock l(&mu_);
  std::fill(dirty_.begin(), dirty_.end(), 0u);
  std::fill(redirtied_.begin(), redirtied_.end(), 0u);
}

std::vector<std::uint32_t> BufLogItem::dirty_map() const {
  MutexLock l(&mu_);
  return dirty_;
}

bool BufLogItem::flushing() const {
  MutexLock l(&mu_);
  return flushing_;
}

void BufLogItem::Retype(std::uint8_t type, std::uint32_t lsn_offset,
                        std::function<void(std::span<std::byte>)> seal) {
  WALFS_CHECK_MSG(lsn_offset == kBufNoLsn || lsn_offset + kBufLsnSize <= block_size_,
                  "LSN stamp outside the block");
  type_ = type;
  lsn_offset_ = lsn_offset;
  seal_ = std::move(seal);
}

bool BufLogItem::Format(std::string* out) {
  BufLogFormat f;
  f.blkno = blkno_;
  f.block_size = block_size_;
  f.lsn_offset = lsn_offset_;
  f.type = type_;
  if (cancelled_) {
    f.flags = kBufCancel;
    f.chunk_map.assign(BufMapWords(block_size_), 0u);
  } else {
    MutexLock l(&mu_);
    if (CountChunks(dirty_) == 0) return false;
    f.chunk_map = dirty_;
  }
  f.data.reserve(std::size_t{CountChunks(f.chunk_map)} * kBufChunkSize);
  for (std::uint32_t c = 0; c < BufChunks(block_size_); ++c) {
    if (ChunkSet(f.chunk_map, c))
      f.data.append(reinterpret_cast<const char*>(block_) + std::size_t{c} * kBufChunkSize,
                    kBufChunkSize);
  }
  EncodeBufLog(f, out);
  return true;
}

PushResult BufLogItem::Push() {
  if (pinned()) return PushResult::kPinned;
  if (!lock_.TryLock()) return PushResult::kLocked;
  // A transaction may have committed (pinning the item) between the check
  // above and taking the lock; with the lock held no new change can arrive,
  // so from here every change to the block is in a checkpoint on disk.
  if (pinned()) {
    lock_.Unlock();
    return PushResult::kPinned;
  }
  const Lsn lsn = ail_lsn();
  IoRequest req;
  {
    MutexLock l(&mu_);
    if (flushing_) {
      lock_.Unlock();
      return PushResult::kFlushing;
    }
    flushing_ = true;
    flush_lsn_ = lsn;
    if (cancelled_) {
      // Never written back: a request that touches nothing, only so that
      // DeleteIfLsn runs on the completion thread and not here, under the
      // AIL lock the pusher holds.
      req = IoRequest::Read(0, nullptr, 0, [this](Status s) { WriteDone(std::move(s)); });
    } else {
      // The stamp says "every change logged up to checkpoint `lsn` is in
      // this block": recovery skips those versions (buf_log_format.h).
      // Stamp and seal the buffer itself, not only the copy: the stamp may
      // land inside checksummed bytes (an inode block keeps its LSN in its
      // first inode), and the in-memory block must stay valid for readers.
      StampBufLsn({block_, block_size_}, lsn_offset_, lsn);
      if (seal_) seal_({block_, block_size_});
      std::memcpy(snapshot_.get(), block_, block_size_);
      std::fill(redirtied_.begin(), redirtied_.end(), 0u);
      req = IoRequest::Write(blkno_ * block_size_, snapshot_.get(), block_size_, 0,
                             [this](Status s) { WriteDone(std::move(s)); });
    }
  }
  lock_.Unlock();
  std::vector<IoRequest> batch;
  batch.push_back(std::move(req));
  const Status s = device_->Submit(std::move(batch));
  // The constructor checked the range and alignment: a refusal is a bug.
  WALFS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
  return PushResult::kSuccess;
}

void BufLogItem::WriteDone(Status s) {
  Lsn lsn;
  {
    MutexLock l(&mu_);
    lsn = flush_lsn_;
    // The snapshot is on disk: what changed after it was taken stays dirty.
    if (s.ok()) dirty_ = redirtied_;
  }
  if (s.ok()) {
    ail_->DeleteIfLsn(this, lsn);
  } else if (on_error_) {
    on_error_(std::move(s));
  }
  // Last: once flushing_ is false the destructor may run.
  MutexLock l(&mu_);
  flushing_ = false;
  idle_cv_.SignalAll();
}

}  // namespace walfs::journal
