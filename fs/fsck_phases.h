// fsck's phases, in the order fs/fsck.cc runs them (what each checks and
// repairs: fs/fsck.h), each in a file of its own, sharing a Context
// (fs/fsck_context.h) -- as xfs_repair's phase1.c ... phase7.c and
// e2fsck's pass1.c ... pass5.c share their global state.  A phase reports
// what it finds in the context's report and repairs, with `repair`, what
// it may; an error Status is the check itself failing (I/O), not damage.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "fs/fsck_context.h"

namespace walfs::fs::fsck {

// --- The superblock (fs/fsck_superblock.cc) -------------------------------

// Reads the primary superblock into the report (opened); one that does not
// decode on the first read is replaced by the AG headers' copies, and with
// `repair` rebuilt from them.  Read again after the log is replayed (it may
// have held a grow).
Status ReadSuperblock(Context* c);
// AG `agno`'s header (in *b, verified) holds a copy of the superblock that
// describes this filesystem; with `repair` one that does not is rewritten.
Status CheckSuperCopy(Context* c, std::uint32_t agno, std::vector<std::byte>* b);
// The superblock's error record (damage a mount found) is a problem of its
// own, which ClearErrorRecord (fs/fsck.h) repairs once nothing else is left.
void CheckErrorRecord(Context* c);

// --- Phase 1, the log (fs/fsck_replay.cc) ---------------------------------

// Before the log is touched: with `repair` but not `zero_log`, a log
// recovery cannot replay stops the check (true: refused, nothing written);
// with `zero_log` such a log is zeroed (fs/fsck_log.h), saying what is lost.
Result<bool> RefuseOrZeroLog(Context* c);
// Brings the metadata up to date with the log: recovered and closed clean
// with `replay`, else replayed onto an in-memory overlay (c->dev).
Status CheckLog(Context* c);

// --- Phase 2, allocation groups and inodes --------------------------------

// fs/fsck_ags.cc: every AG's header, bitmap and inode-map blocks, and each
// chunk the maps list (ScanChunk); a damaged block is rebuilt with
// `repair`.  Then the chunks the maps lack, found from what names their
// inodes (fs/fsck_chunks.h), scanned, and with `repair` added to the map.
Status CheckAgsAndInodes(Context* c);
// fs/fsck_inodes.cc: chunk `rec` of AG `agno`: claimed, every inode
// decoded and checked against the map's free mask (*rec corrected from the
// inodes with `repair`), each in-use inode's forks walked and claimed, and
// recorded in c->inodes.
Status ScanChunk(Context* c, std::uint32_t agno, format::ImapRecord* rec);
// fs/fsck_btree_walk.cc: walks a B+tree from its root (read from disk,
// every node verified and claimed for `ino`), calling fn for each leaf
// record.  False if the tree is damaged (the problem is reported).
bool WalkTree(Context* c, std::uint64_t ino, const char* what, std::uint64_t root, std::uint8_t levels,
              const std::function<void(std::uint64_t key, std::string_view value)>& fn);
// fs/fsck_xattr.cc: the inode's xattr fork: its format, its tree, each
// name under its hash, and each POSIX ACL.
void CheckXattrFork(Context* c, std::uint64_t ino, const format::InodeCore& inode);
// fs/fsck_inodes.cc, with `repair`, after phase 5: the B+tree directories
// whose index cannot be read (c->empties) are emptied.
Status EmptyUnreadableDirectories(Context* c);

// --- Phase 3, block ownership (fs/fsck_space.cc) --------------------------

// Every AG's bitmap against what phase 2 claimed: leaks (freed with `repair`
// when every owner was read) and blocks owned but free (marked in use).
Status CheckBlockOwnership(Context* c);

// --- Phase 4, the directory tree (fs/fsck_tree.cc) ------------------------

// From the root: every entry names an in-use inode of its type, ".." is
// right, every directory is reached once; counts the links found.
void CheckTree(Context* c);
// With `clear_and_reconnect`, after phase 5: inline directories' entries
// naming inodes not in use (c->dangling) are dropped.
void DropDanglingEntries(Context* c);

// --- Phase 5, unlinked lists and link counts (fs/fsck_unlinked.cc) --------

// Each AG's unlinked list; then every in-use inode is reached or on a list,
// and one reached has the links found.
void CheckUnlinked(Context* c);
// With `repair`: each inode of c->relink gets the links found.
void SetFoundLinkCounts(Context* c);

// --- Phase 6, counters (fs/fsck_counters.cc) ------------------------------

// The AG headers' and the superblock's counters against what was counted;
// stored with `repair`, and after a crash the image marked clean.
Status CheckCounters(Context* c);

}  // namespace walfs::fs::fsck
