// B+tree nodes (docs/disk_format.md, "B+trees"): the blocks of directory
// indexes, extent maps and xattr trees (BlockType kDirectory, kExtents,
// kXattr).  Every node starts with the block header, then:
//
//   48 level u16 (0: leaf)   50 nrecs u16   52 data_start u16 (leaves; 0 in
//   internal nodes)          54 pad u16 (zero)
//
// Leaf ("BTLF"), a slotted page: nrecs u16 record offsets from byte 56,
// sorted by the key of the record they point to; the records themselves
// (key u64, vlen u16, value[vlen]) packed downwards from the block's end,
// in any order, all at or above data_start.  Erasing a record leaves a hole
// that a later compaction reclaims.
//
// Internal node ("BTND"): nrecs (key u64, child u64) entries from byte 56,
// keys strictly ascending.  Every key in child i's subtree is >= key i and
// < key i+1 (or the node's own upper bound); key 0 is the lowest key of the
// node's subtree when it was last set, so it may be lower than the real one.
//
// VerifyBtreeNode checks everything a hostile image could break; the
// accessors below assume a node that passed it (the buffer cache verifies
// every node it reads) or that this code built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "fs/format/block_header.h"

namespace walfs::fs::format {

inline constexpr std::uint32_t kBtreeLeafMagic = 0x464c5442;  // "BTLF"
inline constexpr std::uint32_t kBtreeNodeMagic = 0x444e5442;  // "BTND"
inline constexpr std::uint32_t kBtreeLevelOffset = 48;
inline constexpr std::uint32_t kBtreeNrecsOffset = 50;
inline constexpr std::uint32_t kBtreeDataStartOffset = 52;
inline constexpr std::uint32_t kBtreePadOffset = 54;
inline constexpr std::uint32_t kBtreeHeaderSize = 56;
inline constexpr std::uint32_t kBtreeSlotSize = 2;          // a leaf's record offset
inline constexpr std::uint32_t kBtreeRecordHeaderSize = 10;  // key u64, vlen u16
inline constexpr std::uint32_t kBtreeEntrySize = 16;         // key u64, child u64
// A sanity bound far above any real tree (Btree::Options::max_levels is
// checked against it): a larger level is corruption.
inline constexpr std::uint16_t kBtreeMaxLevel = 48;
static_assert(kBtreeHeaderSize == kBlockHeaderSize + 8);

// The largest value a leaf of this block size stores: three of the largest
// records always fit in one leaf, so a split always yields two leaves that
// fit.
inline std::uint32_t BtreeMaxValueSize(std::uint32_t block_size) {
  return (block_size - kBtreeHeaderSize) / 3 - kBtreeSlotSize - kBtreeRecordHeaderSize;
}
// The bytes a record of this value length takes in a leaf, slot included.
inline std::uint32_t BtreeRecordCost(std::size_t vlen) {
  return static_cast<std::uint32_t>(kBtreeSlotSize + kBtreeRecordHeaderSize + vlen);
}
inline std::uint32_t BtreeLeafSpace(std::uint32_t block_size) { return block_size - kBtreeHeaderSize; }
inline std::uint32_t BtreeNodeCapacity(std::uint32_t block_size) {
  return (block_size - kBtreeHeaderSize) / kBtreeEntrySize;
}

struct BtreeNodeHeader {
  std::uint32_t magic = 0;
  std::uint64_t owner = 0;
  std::uint16_t level = 0;
  std::uint16_t nrecs = 0;
  std::uint16_t data_start = 0;
};

// The full check of a node at `blkno`: block header (magic BTLF or BTND,
// CRC, blkno, uuid), level and magic agree, nrecs fits the block, leaf
// offsets in range, records inside the block and not overlapping, keys
// strictly ascending, value lengths at most BtreeMaxValueSize, internal
// children non-zero and not the node itself, no empty node.  Corruption
// with a reason otherwise.
Status VerifyBtreeNode(std::span<const std::byte> block, std::uint64_t blkno, const Uuid& uuid);

// ---- Reading a verified node ----
BtreeNodeHeader DecodeBtreeNodeHeader(std::span<const std::byte> block);
// The key of record (leaf) or entry (internal node) i.
std::uint64_t BtreeKey(std::span<const std::byte> block, std::uint32_t i);
std::string_view BtreeValue(std::span<const std::byte> block, std::uint32_t i);  // leaves
std::uint64_t BtreeChild(std::span<const std::byte> block, std::uint32_t i);      // internal
// The first index whose key is >= key (nrecs if none).
std::uint32_t BtreeLowerBound(std::span<const std::byte> block, std::uint64_t key);
// A leaf's free bytes: all of them, and the contiguous run between the
// slot array and data_start (what an insert can use without compacting).
std::uint32_t BtreeLeafFree(std::span<const std::byte> block);
std::uint32_t BtreeLeafContiguousFree(std::span<const std::byte> block);

// ---- Building and changing nodes ----
// Each change returns the byte ranges [first, last] it wrote, for LogRange.
using ByteRanges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

struct BtreeNodeId {
  std::uint64_t blkno = 0;
  std::uint64_t owner = 0;
  Uuid uuid{};
};
// A new node over the whole of `block`: block header (lsn 0, crc left for
// sealing), node header, then a leaf of `records` (ascending keys, fitting:
// slots, records packed from the end, zeros between) or an internal node
// of `entries` (ascending keys, at most BtreeNodeCapacity).
void EncodeBtreeLeaf(std::span<std::byte> block, const BtreeNodeId& id,
                     std::span<const std::pair<std::uint64_t, std::string>> records);
void EncodeBtreeInternal(std::span<std::byte> block, const BtreeNodeId& id, std::uint16_t level,
                         std::span<const std::pair<std::uint64_t, std::uint64_t>> entries);
// The same over bytes [48, end) of an existing node, keeping its block
// header (its LSN stamp in particular).
void RewriteBtreeLeaf(std::span<std::byte> block,
                      std::span<const std::pair<std::uint64_t, std::string>> records);
void RewriteBtreeInternal(std::span<std::byte> block, std::uint16_t level,
                          std::span<const std::pair<std::uint64_t, std::uint64_t>> entries);
// A node's records or entries as owned copies (for a split or a rewrite).
std::vector<std::pair<std::uint64_t, std::string>> BtreeLeafRecords(std::span<const std::byte> block);
std::vector<std::pair<std::uint64_t, std::uint64_t>> BtreeEntries(std::span<const std::byte> block);

// Inserts a record at slot i (the caller keeps keys ascending) when
// BtreeLeafFree >= BtreeRecordCost(value.size()); compacts the leaf first
// if the contiguous space is too short.
ByteRanges BtreeLeafInsert(std::span<std::byte> block, std::uint32_t i, std::uint64_t key,
                           std::string_view value);
// Removes record i (its bytes become a hole).  The leaf may become empty:
// the caller frees it.
ByteRanges BtreeLeafRemove(std::span<std::byte> block, std::uint32_t i);
// Replaces record i's value when BtreeLeafFree + the old record's cost is
// enough for the new one.
ByteRanges BtreeLeafReplace(std::span<std::byte> block, std::uint32_t i, std::string_view value);
// Internal nodes: insert an entry at i (nrecs < capacity), remove entry i,
// or lower entry i's key.
ByteRanges BtreeNodeInsert(std::span<std::byte> block, std::uint32_t i, std::uint64_t key,
                           std::uint64_t child);
ByteRanges BtreeNodeRemove(std::span<std::byte> block, std::uint32_t i);
ByteRanges BtreeNodeSetKey(std::span<std::byte> block, std::uint32_t i, std::uint64_t key);

}  // namespace walfs::fs::format
