// fsck.walfs -L: what a damaged log holds that zeroing it loses, and the
// zeroing (xfs_repair -L's answer to a log recovery cannot replay).
//
//   WALFS_ASSIGN_OR_RETURN(std::string lost, DescribeLogLoss(dev, sb));
//   fmt::print("{}\n", lost);
//   WALFS_RETURN_IF_ERROR(ZeroLog(dev, sb));   // the log is now clean and empty
//
// Zeroing is not "write zeros": metadata blocks carry the LSNs of the
// changes they hold, and recovery skips a logged change whose block already
// carries an LSN at or past it.  A log restarted at cycle 1 would make every
// later recovery skip changes to blocks stamped by the old log.  So the new
// log starts two cycles past the highest record that still reads whole
// (xfs_repair -L formats the log with a cycle past the highest it found; a
// damaged sector's stamp is not a cycle the log used): one clean-unmount
// record at sector 0 of that cycle, every other sector stamped with the
// cycle before, as the log's stale-block clearing leaves them.
#pragma once

#include <string>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

// One line: what replaying the log could still have brought, and is lost;
// empty for a clean (or empty) log, which there is no reason to zero.
Result<std::string> DescribeLogLoss(BlockDevice* device, const format::Superblock& sb);

// Rewrites the log as a clean, empty log in a later cycle; durable on return.
Status ZeroLog(BlockDevice* device, const format::Superblock& sb);

}  // namespace walfs::fs
