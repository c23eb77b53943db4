// fsck's shared state: what one pass of the checker (fs/fsck.h) knows,
// handed from phase to phase (fs/fsck_phases.h), and the few helpers every
// phase uses to read, claim, report and repair.
//
//   fsck::Context c(device, options, &report);
//   WALFS_RETURN_IF_ERROR(fsck::ReadSuperblock(&c));
//   c.Phase(2);
//   c.Claim(blkno, 1, "AG 0 metadata");      // reports a block claimed twice
//   c.Problem("...");                        // left for a person
//   c.Repaired(problem, "rewritten");        // an earlier problem, now repaired
//
// What the phases fill in, in order: the superblock and the log (the
// report's `sb`, `dev` moved to an overlay by -n over a dirty log); per AG
// what its header says and what the scan counted (`ags`); every in-use
// inode with what the tree and the unlinked lists need (`inodes`); which
// blocks something owns (`claimed`); and the repairs to make once the whole
// image is known: offline ones (`empties`, `dangling`, `relink`) and those
// made through a mount (`drops`, `orphans`; fs/fsck.cc).  A Context lives
// for one pass; CheckImage starts a new one for each pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/block_device.h"
#include "base/block_device_overlay.h"
#include "base/status.h"
#include "fs/format/ag_format.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fsck.h"

namespace walfs::fs::fsck {

// One allocation group: its header as read, and what the scan counts.
struct AgState {
  bool header_ok = false;
  format::AgHeader header;
  std::uint32_t free_inodes = 0;   // counted
  std::uint32_t chunks = 0;        // counted
  std::uint32_t free_blocks = 0;   // counted from the bitmap
  // Bitmap and inode-map blocks on disk (uninit_ag: the header's counts;
  // the rest are an empty AG's and are not read).
  std::uint32_t bitmap_on_disk = 0, imap_on_disk = 0;
  // With `repair`, a header that does not verify is rebuilt
  // (fs/fsck_ag_repair.h): the problem that says so, and the old
  // unlinked head, kept if it still leads to a sound list.
  bool rebuild_header = false;
  std::size_t header_problem = 0;
  std::uint64_t salvaged_head = 0;
};

// One in-use inode, as phase 2 read it, and what phases 4 and 5 find.
struct InodeInfo {
  std::uint16_t mode = 0;
  std::uint32_t nlink = 0;
  std::uint64_t parent = 0;  // directories in local format
  std::vector<format::DirEntry> entries;
  bool entries_known = false;
  std::uint64_t next_unlinked = 0;
  std::uint32_t links_found = 0;  // entries naming it (and "." / ".." for directories)
  bool reached = false;
  bool local_dir = false;  // a directory whose entries are inline in the inode
};

// An entry of a B+tree directory naming an inode not in use, dropped
// through a mount (walfs has no offline B+tree editor).
struct Drop {
  std::uint64_t dir;
  std::string name;
  std::size_t problem;
};

struct Context {
  Context(BlockDevice* device, const FsckOptions& o, FsckReport* r) : dev(device), options(o), report(r) {}

  const format::Superblock& sb() const { return report->sb; }

  // A problem left for a person.
  void Problem(std::string message);
  // A problem found earlier, now repaired: `how` is appended to it.
  void Repaired(std::size_t problem, std::string_view how);
  // Reads block `blkno` of the device checked into *b (resized to a block).
  Status ReadBlock(std::uint64_t blkno, std::vector<std::byte>* b);
  // Reads inode `ino`, lets `change` edit it, and writes its block back.
  Status RewriteInode(std::uint64_t ino, const std::function<Status(format::InodeCore*)>& change);
  // Marks `count` blocks from `blkno` owned by `who`; a block past the end
  // of the filesystem (the rest are then left) or claimed already is a
  // problem.
  void Claim(std::uint64_t blkno, std::uint32_t count, const std::string& who);

  // Progress (FsckOptions::progress): phase `phase` starts, and is `done`
  // (0 to 1) along.
  static constexpr int kPhases = 6;
  void Phase(int phase) const;
  void Advance(int phase, double done) const;

  BlockDevice* dev;  // the device checked: the image, or with -n and a dirty log `overlay`
  std::unique_ptr<OverlayDevice> overlay;
  const FsckOptions options;
  // Where problems go.  CheckImage moves it to the report that merges the
  // passes (fs/fsck.cc), the problem indices below with it.
  FsckReport* report;

  // The superblock phase and phase 1.
  bool primary_from_copy = false;  // the primary did not decode; report->sb is the copies'
  bool log_was_clean = false;      // nothing to recover when the check began
  bool log_clean = false;  // the log is (now) clean: counters may be stored, the image marked clean

  // Phase 2 on: per AG, every in-use inode, and which blocks are owned.
  std::vector<AgState> ags;
  std::unordered_map<std::uint64_t, InodeInfo> inodes;
  std::vector<bool> claimed;
  // Every owner was read without trouble: a block owned by nothing is a
  // leak, freed with `repair` (phase 3).
  bool claims_complete = false;
  std::uint64_t chunks_scanned = 0;   // progress of phase 2
  std::uint64_t expected_chunks = 1;  // from the superblock's inode count

  // Repairs made offline once the tree and the link counts are checked:
  // B+tree directories to empty (phase 2 finds them), per inline directory
  // its entries that name inodes not in use (name, problem index; phase 4),
  // and inodes whose link count is wrong (ino, problem; phase 5).
  std::vector<std::uint64_t> empties;
  std::map<std::uint64_t, std::vector<std::pair<std::string, std::size_t>>> dangling;
  std::vector<std::pair<std::uint64_t, std::size_t>> relink;
  // For the repairs through a mount (fs/fsck.cc): entries of B+tree
  // directories naming inodes not in use, inodes to reconnect (ino,
  // problem), and the other problems those repairs and the next pass take
  // care of (inodes that come back with a reconnected directory, leaks).
  std::vector<Drop> drops;
  std::vector<std::pair<std::uint64_t, std::size_t>> orphans;
  std::set<std::size_t> mount_repairable;
};

}  // namespace walfs::fs::fsck
