#include "fs/format/btree_format.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"

namespace walfs::fs::format {

namespace {
// Block sizes a node may have (the superblock allows 1 KiB .. 32 KiB; u16
// offsets reach 64 KiB).
constexpr std::size_t kMinNodeSize = 512;
constexpr std::size_t kMaxNodeSize = 32768;

std::uint32_t SlotPos(std::uint32_t i) { return kBtreeHeaderSize + i * kBtreeSlotSize; }
std::uint32_t EntryPos(std::uint32_t i) { return kBtreeHeaderSize + i * kBtreeEntrySize; }
std::uint16_t Slot(std::span<const std::byte> b, std::uint32_t i) { return DecodeFixed16(AsChars(b) + SlotPos(i)); }
std::uint16_t Vlen(std::span<const std::byte> b, std::uint32_t off) { return DecodeFixed16(AsChars(b) + off + 8); }
std::uint32_t RecordSize(std::span<const std::byte> b, std::uint32_t off) {
  return kBtreeRecordHeaderSize + Vlen(b, off);
}
void SetNrecs(std::span<std::byte> b, std::uint16_t n) { EncodeFixed16(AsChars(b) + kBtreeNrecsOffset, n); }
void SetDataStart(std::span<std::byte> b, std::uint32_t d) {
  EncodeFixed16(AsChars(b) + kBtreeDataStartOffset, static_cast<std::uint16_t>(d));
}
constexpr std::pair<std::uint32_t, std::uint32_t> kHeaderRange{kBtreeLevelOffset, kBtreeHeaderSize - 1};

Status VerifyLeafBody(std::span<const std::byte> block, const BtreeNodeHeader& h,
                      const std::function<Status(std::string_view)>& bad) {
  const std::uint32_t size = static_cast<std::uint32_t>(block.size());
  const std::uint32_t slot_end = SlotPos(h.nrecs);
  if (slot_end > size) return bad(fmt::format("{} slots do not fit", h.nrecs));
  if (h.data_start < slot_end || h.data_start > size)
    return bad(fmt::format("data_start {} is outside [{}, {}]", h.data_start, slot_end, size));
  const std::uint32_t max_value = BtreeMaxValueSize(size);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;  // [offset, end) of each record
  spans.reserve(h.nrecs);
  for (std::uint32_t i = 0; i < h.nrecs; ++i) {
    const std::uint32_t off = Slot(block, i);
    if (off < h.data_start || off + kBtreeRecordHeaderSize > size)
      return bad(fmt::format("record {} at offset {} is outside [{}, {})", i, off, h.data_start, size));
    const std::uint32_t vlen = Vlen(block, off);
    if (vlen > max_value) return bad(fmt::format("record {} has a {}-byte value (at most {})", i, vlen, max_value));
    if (off + kBtreeRecordHeaderSize + vlen > size)
      return bad(fmt::format("record {} at offset {} with {} value bytes runs past the block", i, off, vlen));
    if (i > 0 && BtreeKey(block, i - 1) >= BtreeKey(block, i))
      return bad(fmt::format("key {} of record {} does not follow key {}", BtreeKey(block, i), i,
                             BtreeKey(block, i - 1)));
    spans.emplace_back(off, off + kBtreeRecordHeaderSize + vlen);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return bad(fmt::format("records at offsets {} and {} overlap", spans[i - 1].first, spans[i].first));
  return Status::Ok();
}

Status VerifyInternalBody(std::span<const std::byte> block, std::uint64_t blkno,
                          const BtreeNodeHeader& h,
                          const std::function<Status(std::string_view)>& bad) {
  if (EntryPos(h.nrecs) > block.size()) return bad(fmt::format("{} entries do not fit", h.nrecs));
  if (h.data_start != 0) return bad(fmt::format("data_start {} in an internal node", h.data_start));
  for (std::uint32_t i = 0; i < h.nrecs; ++i) {
    const std::uint64_t child = BtreeChild(block, i);
    if (child == 0 || child == blkno) return bad(fmt::format("entry {} points to block {}", i, child));
    if (i > 0 && BtreeKey(block, i - 1) >= BtreeKey(block, i))
      return bad(fmt::format("key {} of entry {} does not follow key {}", BtreeKey(block, i), i,
                             BtreeKey(block, i - 1)));
  }
  return Status::Ok();
}
}  // namespace

Status VerifyBtreeNode(std::span<const std::byte> block, std::uint64_t blkno, const Uuid& uuid) {
  if (block.size() < kMinNodeSize || block.size() > kMaxNodeSize)
    return Status::Corruption(fmt::format("B+tree node at block {}: {} bytes is not a node size",
                                          blkno, block.size()));
  const bool leaf = DecodeFixed32(AsChars(block)) == kBtreeLeafMagic;
  const std::uint32_t magic = leaf ? kBtreeLeafMagic : kBtreeNodeMagic;
  WALFS_RETURN_IF_ERROR(VerifyBlock(block, magic, blkno, uuid, leaf ? "B+tree leaf" : "B+tree node"));
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  const std::function<Status(std::string_view)> bad = [&](std::string_view why) {
    return Status::Corruption(fmt::format("B+tree {} at block {} (owner {}, level {}): {}",
                                          leaf ? "leaf" : "node", blkno, h.owner, h.level, why));
  };
  if (DecodeFixed16(AsChars(block) + kBtreePadOffset) != 0) return bad("the pad field is not zero");
  if (leaf != (h.level == 0)) return bad("the magic does not match the level");
  if (h.level > kBtreeMaxLevel) return bad(fmt::format("level is above {}", kBtreeMaxLevel));
  if (h.nrecs == 0) return bad("it is empty");
  return leaf ? VerifyLeafBody(block, h, bad) : VerifyInternalBody(block, blkno, h, bad);
}

BtreeNodeHeader DecodeBtreeNodeHeader(std::span<const std::byte> block) {
  WALFS_CHECK(block.size() >= kBtreeHeaderSize);
  const BlockHeader bh = DecodeBlockHeader(block);
  return BtreeNodeHeader{.magic = bh.magic,
                         .owner = bh.owner,
                         .level = DecodeFixed16(AsChars(block) + kBtreeLevelOffset),
                         .nrecs = DecodeFixed16(AsChars(block) + kBtreeNrecsOffset),
                         .data_start = DecodeFixed16(AsChars(block) + kBtreeDataStartOffset)};
}

std::uint64_t BtreeKey(std::span<const std::byte> block, std::uint32_t i) {
  if (DecodeFixed16(AsChars(block) + kBtreeLevelOffset) == 0) return DecodeFixed64(AsChars(block) + Slot(block, i));
  return DecodeFixed64(AsChars(block) + EntryPos(i));
}

std::string_view BtreeValue(std::span<const std::byte> block, std::uint32_t i) {
  const std::uint32_t off = Slot(block, i);
  return {AsChars(block) + off + kBtreeRecordHeaderSize, Vlen(block, off)};
}

std::uint64_t BtreeChild(std::span<const std::byte> block, std::uint32_t i) {
  return DecodeFixed64(AsChars(block) + EntryPos(i) + 8);
}

std::uint32_t BtreeLowerBound(std::span<const std::byte> block, std::uint64_t key) {
  std::uint32_t lo = 0, hi = DecodeFixed16(AsChars(block) + kBtreeNrecsOffset);
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (BtreeKey(block, mid) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

std::uint32_t BtreeLeafFree(std::span<const std::byte> block) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  std::uint32_t used = SlotPos(h.nrecs);
  for (std::uint32_t i = 0; i < h.nrecs; ++i) used += RecordSize(block, Slot(block, i));
  return static_cast<std::uint32_t>(block.size()) - used;
}

std::uint32_t BtreeLeafContiguousFree(std::span<const std::byte> block) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  return h.data_start - SlotPos(h.nrecs);
}

namespace {
// Writes a leaf body (bytes 48 onward): header, slots, records packed down
// from the end in key order, zeros between.
void EncodeLeafBody(std::span<std::byte> block,
                    std::span<const std::pair<std::uint64_t, std::string>> records) {
  char* p = AsChars(block);
  const auto size = static_cast<std::uint32_t>(block.size());
  WALFS_CHECK(records.size() <= 0xffff);
  std::memset(p + kBtreeLevelOffset, 0, size - kBtreeLevelOffset);
  std::uint32_t off = size;
  for (std::uint32_t i = 0; i < records.size(); ++i) {
    const auto& [key, value] = records[i];
    off -= kBtreeRecordHeaderSize + static_cast<std::uint32_t>(value.size());
    // Invariant: the records fit (the caller checked); slots stay below them.
    WALFS_CHECK(off >= SlotPos(static_cast<std::uint32_t>(records.size())) && off < size);
    EncodeFixed64(p + off, key);
    EncodeFixed16(p + off + 8, static_cast<std::uint16_t>(value.size()));
    std::memcpy(p + off + kBtreeRecordHeaderSize, value.data(), value.size());
    EncodeFixed16(p + SlotPos(i), static_cast<std::uint16_t>(off));
  }
  SetNrecs(block, static_cast<std::uint16_t>(records.size()));
  SetDataStart(block, off);
}

void InitHeader(std::span<std::byte> block, std::uint32_t magic, const BtreeNodeId& id) {
  WALFS_CHECK(block.size() >= kBtreeHeaderSize);
  std::memset(block.data(), 0, kBlockHeaderSize);
  EncodeBlockHeader(BlockHeader{magic, 0, id.blkno, id.owner, id.uuid}, block);
}
}  // namespace

void RewriteBtreeLeaf(std::span<std::byte> block,
                      std::span<const std::pair<std::uint64_t, std::string>> records) {
  WALFS_CHECK(block.size() >= kMinNodeSize && block.size() <= kMaxNodeSize);
  EncodeLeafBody(block, records);
}

void RewriteBtreeInternal(std::span<std::byte> block, std::uint16_t level,
                          std::span<const std::pair<std::uint64_t, std::uint64_t>> entries) {
  WALFS_CHECK(block.size() >= kMinNodeSize && block.size() <= kMaxNodeSize);
  WALFS_CHECK(level >= 1 && entries.size() <= BtreeNodeCapacity(static_cast<std::uint32_t>(block.size())));
  char* p = AsChars(block);
  std::memset(p + kBtreeLevelOffset, 0, block.size() - kBtreeLevelOffset);
  EncodeFixed16(p + kBtreeLevelOffset, level);
  SetNrecs(block, static_cast<std::uint16_t>(entries.size()));
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    EncodeFixed64(p + EntryPos(i), entries[i].first);
    EncodeFixed64(p + EntryPos(i) + 8, entries[i].second);
  }
}

void EncodeBtreeLeaf(std::span<std::byte> block, const BtreeNodeId& id,
                     std::span<const std::pair<std::uint64_t, std::string>> records) {
  InitHeader(block, kBtreeLeafMagic, id);
  RewriteBtreeLeaf(block, records);
}

void EncodeBtreeInternal(std::span<std::byte> block, const BtreeNodeId& id, std::uint16_t level,
                         std::span<const std::pair<std::uint64_t, std::uint64_t>> entries) {
  InitHeader(block, kBtreeNodeMagic, id);
  RewriteBtreeInternal(block, level, entries);
}

std::vector<std::pair<std::uint64_t, std::string>> BtreeLeafRecords(std::span<const std::byte> block) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  std::vector<std::pair<std::uint64_t, std::string>> out;
  out.reserve(h.nrecs + 1u);
  for (std::uint32_t i = 0; i < h.nrecs; ++i) out.emplace_back(BtreeKey(block, i), BtreeValue(block, i));
  return out;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> BtreeEntries(std::span<const std::byte> block) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  out.reserve(h.nrecs + 1u);
  for (std::uint32_t i = 0; i < h.nrecs; ++i) out.emplace_back(BtreeKey(block, i), BtreeChild(block, i));
  return out;
}

ByteRanges BtreeLeafInsert(std::span<std::byte> block, std::uint32_t i, std::uint64_t key,
                           std::string_view value) {
  const std::uint32_t cost = BtreeRecordCost(value.size());
  WALFS_CHECK(value.size() <= BtreeMaxValueSize(static_cast<std::uint32_t>(block.size())));
  WALFS_CHECK(BtreeLeafFree(block) >= cost);
  ByteRanges changed;
  if (BtreeLeafContiguousFree(block) < cost) {
    // Holes left by removals: pack the records again (the whole body changes).
    EncodeLeafBody(block, BtreeLeafRecords(block));
    changed.emplace_back(kBtreeLevelOffset, static_cast<std::uint32_t>(block.size()) - 1);
  }
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  WALFS_CHECK(i <= h.nrecs && h.data_start - SlotPos(h.nrecs) >= cost);
  char* p = AsChars(block);
  const std::uint32_t off = h.data_start - (cost - kBtreeSlotSize);
  EncodeFixed64(p + off, key);
  EncodeFixed16(p + off + 8, static_cast<std::uint16_t>(value.size()));
  std::memcpy(p + off + kBtreeRecordHeaderSize, value.data(), value.size());
  std::memmove(p + SlotPos(i + 1), p + SlotPos(i), (h.nrecs - i) * kBtreeSlotSize);
  EncodeFixed16(p + SlotPos(i), static_cast<std::uint16_t>(off));
  SetNrecs(block, static_cast<std::uint16_t>(h.nrecs + 1));
  SetDataStart(block, off);
  if (changed.empty()) {
    changed.push_back(kHeaderRange);
    changed.emplace_back(SlotPos(i), SlotPos(h.nrecs + 1) - 1);
    changed.emplace_back(off, off + cost - kBtreeSlotSize - 1);
  }
  return changed;
}

ByteRanges BtreeLeafRemove(std::span<std::byte> block, std::uint32_t i) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  WALFS_CHECK(i < h.nrecs);
  char* p = AsChars(block);
  const std::uint32_t off = Slot(block, i);
  // The lowest record's space returns to the contiguous run at once; any
  // other becomes a hole until the next compaction.
  if (off == h.data_start) SetDataStart(block, off + RecordSize(block, off));
  std::memmove(p + SlotPos(i), p + SlotPos(i + 1), (h.nrecs - i - 1) * kBtreeSlotSize);
  EncodeFixed16(p + SlotPos(h.nrecs - 1), 0);
  SetNrecs(block, static_cast<std::uint16_t>(h.nrecs - 1));
  return {kHeaderRange, {SlotPos(i), SlotPos(h.nrecs) - 1}};
}

ByteRanges BtreeLeafReplace(std::span<std::byte> block, std::uint32_t i, std::string_view value) {
  const std::uint32_t off = Slot(block, i);
  if (Vlen(block, off) == value.size()) {
    if (value.empty()) return {};
    std::memcpy(AsChars(block) + off + kBtreeRecordHeaderSize, value.data(), value.size());
    return {{off + kBtreeRecordHeaderSize,
             off + kBtreeRecordHeaderSize + static_cast<std::uint32_t>(value.size()) - 1}};
  }
  const std::uint64_t key = BtreeKey(block, i);
  ByteRanges changed = BtreeLeafRemove(block, i);
  ByteRanges more = BtreeLeafInsert(block, i, key, value);
  changed.insert(changed.end(), more.begin(), more.end());
  return changed;
}

ByteRanges BtreeNodeInsert(std::span<std::byte> block, std::uint32_t i, std::uint64_t key,
                           std::uint64_t child) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  WALFS_CHECK(h.level > 0 && i <= h.nrecs &&
              h.nrecs < BtreeNodeCapacity(static_cast<std::uint32_t>(block.size())));
  char* p = AsChars(block);
  std::memmove(p + EntryPos(i + 1), p + EntryPos(i), (h.nrecs - i) * kBtreeEntrySize);
  EncodeFixed64(p + EntryPos(i), key);
  EncodeFixed64(p + EntryPos(i) + 8, child);
  SetNrecs(block, static_cast<std::uint16_t>(h.nrecs + 1));
  return {kHeaderRange, {EntryPos(i), EntryPos(h.nrecs + 1) - 1}};
}

ByteRanges BtreeNodeRemove(std::span<std::byte> block, std::uint32_t i) {
  const BtreeNodeHeader h = DecodeBtreeNodeHeader(block);
  WALFS_CHECK(h.level > 0 && i < h.nrecs);
  char* p = AsChars(block);
  std::memmove(p + EntryPos(i), p + EntryPos(i + 1), (h.nrecs - i - 1) * kBtreeEntrySize);
  std::memset(p + EntryPos(h.nrecs - 1), 0, kBtreeEntrySize);
  SetNrecs(block, static_cast<std::uint16_t>(h.nrecs - 1));
  return {kHeaderRange, {EntryPos(i), EntryPos(h.nrecs) - 1}};
}

ByteRanges BtreeNodeSetKey(std::span<std::byte> block, std::uint32_t i, std::uint64_t key) {
  WALFS_CHECK(i < DecodeBtreeNodeHeader(block).nrecs);
  EncodeFixed64(AsChars(block) + EntryPos(i), key);
  return {{EntryPos(i), EntryPos(i) + 7}};
}

}  // namespace walfs::fs::format
