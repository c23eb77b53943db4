// LogItem: a piece of metadata that transactions log and the AIL writes
// back (XFS's xfs_log_item).
//
// Life of an item:
//   1. A transaction joins it and changes it (the transaction holds the
//      item's own lock, e.g. the buffer lock, from join to commit).
//   2. At commit the CIL calls Format() to snapshot the item's logged state
//      into an op body, and pins the item the first time it enters a
//      checkpoint context.  A pinned item must not be written back: its
//      change is not on disk in the log yet (Push() returns kPinned).
//   3. When the checkpoint's commit record is durable (not merely written:
//      see LogWriter's stable head), the CIL unpins the item and the AIL
//      takes it at the checkpoint's start LSN.
//   4. The AIL pushes the oldest items; when an item's writeback is done its
//      owner calls Ail::DeleteIfLsn(item, lsn_it_wrote) and the tail moves
//      past it.
//
// Lifetime and locking: the AIL links an item into its list (the hook) under
// its own lock; the CIL keeps a pointer to it while it is in a checkpoint
// context.  The item must stay alive while it is pinned or in the AIL.
// Push() is called by the pusher thread with the AIL lock held: it must not
// block.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/intrusive/list_hook.hpp>

#include "journal/log_format.h"
#include "journal/lsn.h"

namespace walfs::journal {

enum class PushResult : std::uint8_t {
  kSuccess,   // writeback started; Ail::DeleteIfLsn() follows when it completes
  kPinned,    // the item is in a checkpoint not yet on disk: the log needs forcing
  kLocked,    // busy (e.g. its buffer is locked): try again later
  kFlushing,  // writeback already in progress
};
std::string_view PushResultName(PushResult r);

class LogItem : public boost::intrusive::list_base_hook<
                    boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  virtual ~LogItem() = default;

  // The op type recovery dispatches on (ItemType::kBuffer, ...).
  virtual ItemType type() const = 0;
  // Appends the item's logged state, the body of its op, to *out.  Called at
  // transaction commit by the committing thread, which holds the item's lock.
  // Returns false if the item has nothing to log (it is then not added).
  virtual bool Format(std::string* out) = 0;
  // Starts writing the item back in place.  Must not block.  An item that is
  // pinned() must return kPinned.
  virtual PushResult Push() = 0;
  // Called when a checkpoint holding the item is on disk (before the AIL
  // insert), or with aborted=true when the log shut down before it was.
  virtual void Unpinned(bool aborted) { (void)aborted; }

  // The LSN of the checkpoint that last logged the item (valid while in the AIL).
  Lsn ail_lsn() const { return ail_lsn_.load(std::memory_order_acquire); }
  bool in_ail() const { return is_linked(); }

  // Pins: one per checkpoint context the item is in.
  bool pinned() const { return pins_.load(std::memory_order_acquire) > 0; }
  std::int32_t pin_count() const { return pins_.load(std::memory_order_acquire); }

 private:
  friend class Ail;
  friend class Cil;
  std::atomic<Lsn> ail_lsn_{kNullLsn};  // written under the AIL's lock
  std::atomic<std::int32_t> pins_{0};
  // CIL membership (under the CIL's context lock): the sequence of the
  // context the item was last formatted into and its slot there.
  std::uint64_t cil_seq_ = 0;
  std::size_t cil_index_ = 0;
};

}  // namespace walfs::journal
