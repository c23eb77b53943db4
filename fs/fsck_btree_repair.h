// fsck -y's repair of a B+tree (extent map, directory index, xattr tree;
// fs/fsck.h) with a node that does not verify, as xfs_repair rebuilds a
// damaged btree from the records it can still read:
//
//   SalvagedTree t = SalvageTree(dev, sb, ino, root);
//   if (t.damaged) {
//     KeepSoundExtents(dev, sb, t.blocks, claimed, &t.records, &dropped);  // or KeepSoundEntries, KeepWholeXattrs
//     WALFS_ASSIGN_OR_RETURN(BtreeRoot r, WriteTree(dev, sb, ino, t.blocks, t.records));
//     ...store r (and the counts) in the inode...
//   }
//
// What is kept: every record of every node that verifies; of a node whose
// CRC alone is wrong (it verifies once resealed, and names the right owner
// and level) the records the checks below let through, marked `suspect`
// (the damage may sit inside one of them).  A node that does not verify
// even resealed is dropped with what lies below it.  The tree is then
// written again, densely packed, into the blocks of the nodes that were
// read whole (never more blocks than before: a subset of records packed in
// key order needs no more leaves, nor internal nodes, than the old tree
// had); the blocks it no longer uses, and those of dropped nodes, are
// leaks that the next pass frees.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/block_device.h"
#include "base/status.h"
#include "fs/btree.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fsck.h"

namespace walfs::fs {

struct SalvagedRecord {
  std::uint64_t key = 0;
  std::string value;
  bool suspect = false;  // from a node whose CRC alone was wrong
};

struct SalvagedTree {
  bool damaged = false;                // a node did not verify, or was unreachable
  std::vector<SalvagedRecord> records;  // ascending keys
  std::vector<std::uint64_t> blocks;    // nodes read whole (resealed or not): reusable
  std::uint64_t dropped_nodes = 0, resealed_nodes = 0, dropped_records = 0;
  std::string first_damage;            // the first node's reason, for the message
};

// Walks the tree from `root` (nothing written).  Records out of key order
// or outside their parent's key range are dropped.
Result<SalvagedTree> SalvageTree(BlockDevice* dev, const format::Superblock& sb, std::uint64_t owner,
                                 const BtreeRoot& root);

// Extent-map records: of every record, one that is not a 16-byte extent
// filed under its file block, or overlaps the one before; of a suspect
// record, also one whose blocks lie outside the data area, overlap a
// trusted record's, the tree's own nodes (`tree_blocks`) or blocks the
// check has seen claimed (`claimed`: other files scanned so far), or are free in
// the bitmap (a flipped byte in a disk address must not hand a file
// another file's blocks or garbage).  Each dropped one counts in *dropped.
Status KeepSoundExtents(BlockDevice* dev, const format::Superblock& sb, const std::vector<std::uint64_t>& tree_blocks,
                        const std::function<bool(std::uint64_t)>& claimed, std::vector<SalvagedRecord>* records,
                        std::uint64_t* dropped);
// Xattr records: only whole values -- chunk 0 with a name filed under its
// hash, then every chunk up to the total length it states.
void KeepWholeXattrs(std::vector<SalvagedRecord>* records, std::uint64_t* dropped);

// Directory-index records of directory `dir`: those that are an entry
// (inode u64, file type u8, name) filed under its name's hash; of a suspect
// one, also only one naming an in-use inode of the type it says (a
// directory: one whose parent is `dir`).
Status KeepSoundEntries(BlockDevice* dev, const format::Superblock& sb, std::uint64_t dir,
                        std::vector<SalvagedRecord>* records, std::uint64_t* dropped);

// Writes `records` (ascending keys) as a tree owned by `owner` into
// `blocks`; the empty root when there are none.  An error if they do not
// fit (nothing is written then).
Result<BtreeRoot> WriteTree(BlockDevice* dev, const format::Superblock& sb, std::uint64_t owner,
                            std::vector<std::uint64_t> blocks, const std::vector<SalvagedRecord>& records);

// The whole repair for one in-use inode: its extent map (a non-directory's
// B+tree data fork), directory index (a directory's) and xattr tree, each
// salvaged, filtered and written again when a node does not verify; *inode
// is changed to match (root, extent and block counts; a directory left
// without entries becomes an empty inline one; an xattr fork left empty is
// removed) for the caller to write back.  `claimed`: blocks other owners
// claim (KeepSoundExtents).  One repaired problem per tree rebuilt, saying
// what was kept and what was lost; an unrepaired one if it could not be.
Result<std::vector<FsckProblem>> RepairInodeTrees(BlockDevice* dev, const format::Superblock& sb, std::uint64_t ino,
                                                  format::InodeCore* inode,
                                                  const std::function<bool(std::uint64_t)>& claimed);

}  // namespace walfs::fs
