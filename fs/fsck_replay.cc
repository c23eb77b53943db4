// fsck phase 1, the log: a log recovery cannot replay refused (-y, -p) or
// zeroed (-L) before anything is written; a dirty log recovered and closed
// clean, or with -n replayed onto an in-memory overlay, so the rest of the
// check reads the metadata as the log leaves it.
#include <string>

#include <fmt/format.h>

#include "fs/format/block_types.h"
#include "fs/fsck_log.h"
#include "fs/fsck_phases.h"
#include "fs/mkfs.h"
#include "journal/log.h"
#include "journal/log_recover.h"

namespace walfs::fs::fsck {

namespace {

// Brings the metadata up to date with the log before it is checked: the
// metadata on disk is behind a dirty log, and checking it as it is would
// report the log's contents as damage.  Without -n the log is recovered
// and closed as a mount recovers and cleanly unmounts it (unmount record
// written), so the next mount and fsck find it clean.  With -n the log is
// replayed onto an in-memory overlay of the device (xfs_repair -n's
// in-memory replay) and the rest of the check reads that: the image as
// the log would leave it, with nothing written.
journal::RecoverOptions DryRunOptions(const Context& c) {
  journal::RecoverOptions ro;
  ro.log = journal::LogRegion{c.dev, c.sb().log_offset(), c.sb().log_sectors()};
  ro.metadata = c.dev;
  ro.max_inflight_sectors = journal::RecoveryWindowSectors(c.sb().log_sectors());
  ro.dry_run = true;
  ro.seal = format::SealMetadataBlock;
  ro.stamp_valid = format::BlockStampValid;
  return ro;
}

}  // namespace

Result<bool> RefuseOrZeroLog(Context* c) {
  const FsckOptions& o = c->options;
  FsckReport* r = c->report;
  const Status replayable = journal::RecoverLog(DryRunOptions(*c)).status();
  // A log recovery cannot replay still holds changes the metadata on disk
  // lacks, and a `-o ro,norecovery` mount can still read that metadata.
  // Repairing it now (-y, -p) would rewrite it as if the log held nothing
  // -- dropping the entries whose inodes only the log completes -- and
  // take from the person the choice xfs_repair leaves them: copy out
  // first, then -L.  So nothing is written until -L settles the log.
  if (o.repair && !o.zero_log && !replayable.ok()) {
    r->log_unreplayable = true;
    c->Problem(fmt::format("the log cannot be replayed ({}); repairing now would lose what it holds: mount "
                           "with -o ro,norecovery to copy data out first, then run fsck.walfs -L",
                           replayable.message()));
    return true;
  }
  // -L zeroes only a log that recovery cannot replay: one it can is
  // recovered by CheckLog, losing nothing.
  if (o.zero_log && !replayable.ok()) {
    // Said before the log is touched, so a failed rewrite still says it.
    WALFS_ASSIGN_OR_RETURN(std::string lost, DescribeLogLoss(c->dev, r->sb));
    if (!lost.empty()) {  // a clean log is left alone
      Status zeroed = ZeroLog(c->dev, r->sb);
      r->problems.push_back({fmt::format("log zeroed (-L): {}", lost), zeroed.ok()});
      if (!zeroed.ok()) return Status::IoError(fmt::format("zeroing the log: {}", zeroed.message()));
    }
  }
  return false;
}

Status CheckLog(Context* c) {
  FsckReport* r = c->report;
  journal::RecoverOptions ro = DryRunOptions(*c);
  auto rr = journal::RecoverLog(ro);
  if (!rr.ok()) {
    // The metadata is then checked as last written back; say what can
    // still be done with the log.
    c->Problem(fmt::format("log: {}; the log cannot be replayed: mount with -o ro,norecovery to copy data "
                           "out first (the image as last written back), then run fsck.walfs -L to zero it "
                           "(what it holds is lost)",
                           rr.status().message()));
    return Status::Ok();
  }
  // A log a mount would recover: no unmount record at its head.  It may
  // hold no committed transaction (a crash right after the mount).
  const bool needs_recovery = !rr->position.empty && !rr->position.clean;
  r->log_transactions = needs_recovery ? rr->transactions : 0;
  r->log_dirty = needs_recovery && rr->transactions > 0;
  if (!needs_recovery) {
    c->log_clean = c->log_was_clean = true;
    return Status::Ok();
  }
  if (c->options.replay) {
    auto log = journal::Log::Open(LogOptionsFor(c->dev, r->sb));
    if (!log.ok()) {
      c->Problem(fmt::format("log: {}", log.status().message()));
      return Status::Ok();
    }
    if (Status s = (*log)->Close(); !s.ok()) {
      c->Problem(fmt::format("log: recovered, but the unmount record could not be written: {}", s.message()));
      return Status::Ok();
    }
    r->replayed = r->log_dirty;
    c->log_clean = true;
    // The log may have held a grow: check the geometry it left.
    return ReadSuperblock(c);
  }
  if (!r->log_dirty) return Status::Ok();
  c->Problem(fmt::format("the log holds {} committed transactions not yet replayed; run fsck.walfs "
                         "without -n or mount it",
                         rr->transactions));
  WALFS_ASSIGN_OR_RETURN(c->overlay, OverlayDevice::Create(c->dev));
  ro.log.device = c->overlay.get();
  ro.metadata = c->overlay.get();
  ro.dry_run = false;
  rr = journal::RecoverLog(ro);
  if (!rr.ok()) return Status::IoError(fmt::format("replaying the log in memory: {}", rr.status().message()));
  c->dev = c->overlay.get();
  r->replayed_in_memory = true;
  return ReadSuperblock(c);
}

}  // namespace walfs::fs::fsck
