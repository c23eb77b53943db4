// NamespaceOracle: which sets of names a crash image may show.
//
// walfs logs every namespace change (create, symlink, mkdir, link, unlink,
// rmdir, rename, exchange) as one transaction, and recovery replays a prefix
// of the log's transactions in commit order.  So after any crash the tree's
// names are exactly the names right after some operation k of the
// (single-threaded) workload, where
//  - k is at or after every operation an fsync that had returned forced:
//    fsync forces the log up to the fsynced inode's last transaction, and
//    with it every earlier one (XFS's xfs_log_force_seq), so the last
//    operation before the fsync that surely logged that inode -- a write
//    that grew it, a truncate that changed its size, an xattr change, a
//    create, link, unlink or rename of it, or of an entry of the fsynced
//    directory -- and all before it are durable (an overwrite within the
//    file may log nothing: Filesystem::Write skips a timestamp already
//    current);
//  - operation k began before the crash point.
// This is rename atomicity -- a renamed-over name holds the old file or the
// new one, never nothing, never both names -- and more: no later namespace
// change is ever seen without every earlier one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "crash/history.h"

namespace walfs::crash {

class NamespaceOracle {
 public:
  explicit NamespaceOracle(const History& h);

  // nullopt when `got` is allowed after a crash at `limit` (writes
  // [0, limit) may have landed) where the fsyncs that returned by `moment`
  // are durable; else why not, against the closest allowed state.
  std::optional<std::string> Check(const Namespace& got, std::size_t limit, std::size_t moment) const;

 private:
  std::string Diff(const Namespace& got, const NamespaceState& want) const;

  const History& h_;
  // For each fsync in h_.log: its index and the last operation before it
  // that logged the inode it forced (-1: none).
  std::vector<std::pair<std::size_t, std::ptrdiff_t>> forced_;
};

}  // namespace walfs::crash
