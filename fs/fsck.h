// Checking an image (fsck.walfs): everything the format lets a checker
// cross-check, reported one problem a line.
//
//   FsckReport r = CheckImage(dev, {.repair = false});
//   for (const FsckProblem& p : r.problems) fmt::print("{}\n", p.message);
//
// What is checked, in order (docs/disk_format.md):
//   1. the superblock decodes and fits the device -- one that does not is
//      rebuilt (-y, -p) from the copies in the AG headers, or (-n) its
//      copies' geometry is checked against (fs/super_copy.h); each AG
//      header's copy must agree with a sound superblock -- and a log a mount would
//      recover is recovered first and closed with an unmount record, as a
//      mount and its clean unmount leave it.  Without `replay` (fsck -n) a
//      dirty log is reported, replayed onto an in-memory overlay of the
//      device, and the image is checked as the log would leave it, with
//      nothing written;
//      With `repair` but not `zero_log` (fsck -y, -p), a log recovery
//      cannot replay stops the check before anything is written: repairing
//      the metadata as last written back would lose what the log holds,
//      and a `-o ro,norecovery` mount could still copy it out (xfs_repair
//      refuses a dirty log the same way).  Exit 4: a problem left for a
//      person, who chooses -L;
//   2. each AG: header, bitmap and inode map blocks verify;
//   3. each inode chunk the map lists, and each it does not but something
//      names (a directory entry, an unlinked list: fs/fsck_chunks.h, a map
//      written back less often than the chunks): every inode decodes; the
//      map's free mask agrees with which inodes are in use (the inodes are
//      the truth both ways); every B+tree an inode roots is walked
//      (nodes verified, owned, in key order), and each directory entry and
//      each xattr name sits under its name's hash, and each POSIX ACL
//      (system.posix_acl_*) decodes, a default one only on a directory;
//   4. block ownership: AG metadata, inode chunks and every extent of every
//      inode claim blocks; a block claimed twice, claimed but free in the
//      bitmap, or in use in the bitmap but claimed by nothing is reported;
//   5. the directory tree from the root: entries point at in-use inodes of
//      the type they say, ".." is right, every directory is reached once;
//      link counts match the entries (a directory has 2 + its subdirectories);
//      in-use inodes nothing reaches are reported unless on an unlinked list;
//   6. the AG unlinked lists: in-use inodes with no links, no cycles;
//   0. a superblock error record (damage a mount found) is a problem of
//      its own, and makes a preen check an image marked clean;
//   7. counters: AG free blocks, inode and free inode counts, and (for a
//      clean image) the superblock's lazy counters.
// With `repair` (fsck -y, -p), what is safe is repaired: counters that
// disagree rewritten from what was counted; blocks owned by nothing freed
// (only when every owner was read); blocks something owns that the bitmap
// calls free marked in use; inode-map records corrected from the inodes
// (the inode is the truth: one in use that the map calls free would be
// handed out again), and chunks the map lacks added to it; link counts set
// to the links found; an AG's own blocks that do not verify are rebuilt
// (fs/fsck_ag_repair.h): the header from the superblock's geometry and the
// counts (its unlinked list kept only if it is sound), a bitmap block's
// header and CRC (its bits corrected as above), an inode-map block from
// its records that check out.  With
// `clear_and_reconnect` too (fsck -y, -L; not preen), what changes which
// files there are: an inode whose CRC alone is wrong gets it recomputed,
// one that does not read is cleared; a B+tree with a node that does not
// verify (extent map, directory index, xattr tree) is rebuilt from the
// records that still read (fs/fsck_btree_repair.h); entries naming inodes
// not in use are dropped; a directory whose entries cannot be read is
// emptied; inodes no
// directory names are linked into /lost+found as "#INO" -- the last two
// through an in-process mount, so the filesystem's own transactions make
// them (Filesystem::RepairDropEntry, RepairReconnect), once the
// allocation maps agree with the inodes.  The check then runs again while
// a pass repairs something (at most six passes), as e2fsck restarts; the
// report keeps every repair and the last pass's verdict.  Everything else
// is reported for a person.  After a crash (the superblock not clean) a check with
// `replay` stores the counted counters in the superblock and marks it
// clean, as a clean unmount does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

// Where a check is: phase `phase` of `phases`, named `name`, and how much of
// it is done (0 to 1; estimated from the superblock's inode count while
// inodes are scanned).  Six phases: 1 log (item 1 above), 2 allocation
// groups and inodes (2-3), 3 block ownership (4), 4 directory tree (5),
// 5 unlinked lists (6), 6 counters (7).
struct FsckProgress {
  int phase = 0;
  int phases = 0;
  std::string_view name;
  double done = 0;
};

struct FsckOptions {
  bool replay = true;   // replay a dirty log first (fsck without -n)
  bool repair = false;  // the safe repairs (-y, -p; above); needs `replay`
  // The repairs that clear, drop and reconnect (-y, -L; above); needs `repair`.
  bool clear_and_reconnect = false;
  // Stop after the log when the image is marked clean and its log is
  // clean (fsck -p without -f, as e2fsck preens a clean filesystem).
  bool skip_if_clean = false;
  // fsck -L: a log recovery cannot replay is rewritten as a clean, empty
  // one first (fs/fsck_log.h), losing what it holds; one it can replay is
  // recovered as usual.  Then the check (and with `repair`, repairs).
  // Needs `replay`.
  bool zero_log = false;
  // Called at the start of each phase (done 0) and as it advances; never
  // after CheckImage returns.  Empty: no progress reported.
  std::function<void(const FsckProgress&)> progress = nullptr;
};

struct FsckProblem {
  std::string message;
  bool repaired = false;
};

struct FsckReport {
  bool opened = false;          // the superblock decoded
  format::Superblock sb;
  bool log_dirty = false;       // the log held committed transactions to replay
  std::uint64_t log_transactions = 0;  // how many (0 for a clean log)
  bool replayed = false;        // replayed onto the image, the log closed clean
  bool replayed_in_memory = false;  // -n: replayed onto an overlay, the image untouched
  // -y or -p without -L over a log recovery cannot replay: refused, nothing
  // checked and nothing written (the one problem says why and what to do).
  bool log_unreplayable = false;
  bool marked_clean = false;    // the superblock's counters stored and its clean flag set
  bool skipped = false;         // skip_if_clean: the image was clean, nothing past the log checked
  std::uint64_t inodes_in_use = 0;
  std::uint64_t directories = 0;
  std::uint64_t blocks_in_use = 0;
  std::vector<FsckProblem> problems;
  // The superblock's error record (damage a mount found), and which
  // problem reports it; cleared by a repair that leaves nothing else.
  format::ErrorRecord recorded_errors;
  std::size_t errors_problem = SIZE_MAX;

  std::size_t unrepaired() const;
  // e2fsck's exit codes: 0 clean, 1 errors fixed, 4 errors left, 8 the check
  // could not run (e.g. not a walfs image, I/O error).
  int ExitCode() const;
};

Result<FsckReport> CheckImage(BlockDevice* device, const FsckOptions& options);
// With `repair`, CheckImage ends here: when the superblock had an error
// record and every other problem was repaired (or there was none), the
// record is zeroed in place, as e2fsck clears s_error_count once it has
// checked the filesystem.  Otherwise it stays, for the next check.
Status ClearErrorRecord(BlockDevice* device, FsckReport* r);

}  // namespace walfs::fs
