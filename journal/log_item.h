// LogItem: a piece of metadata that transactions log and the AIL writes
// back (XFS's xfs_log_item).  A committed checkpoint inserts its items into
// the AIL at the checkpoint's LSN; the AIL pushes the oldest ones to disk so
// that the tail of the log can move; when an item's writeback is done, its
// owner calls Ail::Delete() and the tail moves past it.
//
// Lifetime and locking: the AIL links an item into its list (the hook) under
// its own lock; the item must stay alive while it is in the AIL.  Push() is
// called by the pusher thread without the AIL lock held.
#pragma once

#include <cstdint>
#include <string_view>

#include <boost/intrusive/list_hook.hpp>

#include "journal/lsn.h"

namespace walfs::journal {

enum class PushResult : std::uint8_t {
  kSuccess,   // writeback started; Ail::Delete() follows when it completes
  kPinned,    // the item is in a checkpoint not yet on disk: the log needs forcing
  kLocked,    // busy (e.g. its buffer is locked): try again later
  kFlushing,  // writeback already in progress
};
std::string_view PushResultName(PushResult r);

class LogItem : public boost::intrusive::list_base_hook<
                    boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  virtual ~LogItem() = default;

  // Starts writing the item back in place.  Must not block on I/O.
  virtual PushResult Push() = 0;

  // The LSN of the checkpoint that last logged the item (valid while in the AIL).
  Lsn ail_lsn() const { return ail_lsn_; }
  bool in_ail() const { return is_linked(); }

 private:
  friend class Ail;
  Lsn ail_lsn_ = kNullLsn;  // guarded by the AIL's lock
};

}  // namespace walfs::journal
