// A log written record by record into a MemoryDevice, the way the log writer
// lays records out (consecutive, wrapping with cycle + 1), for tests of the
// readers.  Crash shapes are made by writing only part of a record.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "journal/log_format.h"
#include "journal/log_reader.h"
#include "journal/log_region.h"

namespace walfs::journal::testing {

class TestLog {
 public:
  explicit TestLog(std::uint32_t sectors)
      : device_(std::make_unique<MemoryDevice>(std::uint64_t{sectors} * kLogSectorSize + 4096)) {
    region_.device = device_.get();
    region_.offset = 4096;  // the log does not start at offset 0 of its device
    region_.sectors = sectors;
  }

  const LogRegion& region() const { return region_; }
  Lsn head() const { return head_; }
  Lsn tail() const { return tail_; }
  void set_tail(Lsn tail) { tail_ = tail; }

  // The on-disk bytes the next record with `payload` would have.
  std::string Encode(const std::string& payload, std::uint32_t flags = 0,
                     std::uint32_t num_ops = 1) const {
    RecordHeader h;
    h.cycle = CycleOf(head_);
    h.flags = flags;
    h.lsn = head_;
    h.prev_lsn = prev_;
    h.tail_lsn = tail_;
    h.num_ops = num_ops;
    std::string bytes = EncodeRecord(h, payload);
    const std::uint32_t k = static_cast<std::uint32_t>(bytes.size() / kLogSectorSize);
    if (SectorOf(head_) + k > region_.sectors) StampWrap(&bytes, region_.sectors - SectorOf(head_));
    return bytes;
  }

  // Writes the first `keep_sectors` sectors of the next record (all of it
  // by default) and advances the head past the whole record.
  Lsn Append(const std::string& payload, std::uint32_t flags = 0,
             std::uint32_t keep_sectors = UINT32_MAX) {
    std::string bytes = Encode(payload, flags);
    const auto k = static_cast<std::uint32_t>(bytes.size() / kLogSectorSize);
    if (keep_sectors < k) bytes.resize(std::size_t{keep_sectors} * kLogSectorSize);
    EXPECT_TRUE(region_.WriteSectors(SectorOf(head_), bytes).ok());
    const Lsn at = head_;
    prev_ = head_;
    head_ = AdvanceLsn(head_, k, region_.sectors);
    return at;
  }

  // Writes the next record without its first `skip_sectors` sectors and
  // advances the head past the whole record: the write of its first part
  // never landed (the first half of a record split across the end of the
  // log, which the writer issues as two writes).
  Lsn AppendWithout(const std::string& payload, std::uint32_t skip_sectors) {
    std::string bytes = Encode(payload);
    const auto k = static_cast<std::uint32_t>(bytes.size() / kLogSectorSize);
    EXPECT_LT(skip_sectors, k);
    bytes.erase(0, std::size_t{skip_sectors} * kLogSectorSize);
    EXPECT_TRUE(
        region_.WriteSectors((SectorOf(head_) + skip_sectors) % region_.sectors, bytes).ok());
    const Lsn at = head_;
    prev_ = head_;
    head_ = AdvanceLsn(head_, k, region_.sectors);
    return at;
  }

  // Writes a clean-unmount record: the log tail is the record itself (the
  // AIL is empty at unmount).
  Lsn AppendUnmount(std::uint32_t tid = 0xFFFF) {
    tail_ = head_;
    std::string p;
    AppendOp(&p, OpHeader{tid, 0, kOpUnmount, ItemType::kNone}, "");
    return Append(p, kRecordUnmount);
  }

  MemoryDevice* device() { return device_.get(); }

 private:
  std::unique_ptr<MemoryDevice> device_;
  LogRegion region_;
  Lsn head_ = MakeLsn(1, 0);
  Lsn tail_ = MakeLsn(1, 0);
  Lsn prev_ = kNullLsn;
};

// A payload of one op of `len` bytes for transaction `tid`.
inline std::string OneOp(std::uint32_t tid, std::size_t len, std::uint8_t flags = kOpStart | kOpCommit) {
  std::string p;
  AppendOp(&p, OpHeader{tid, static_cast<std::uint32_t>(len), flags, ItemType::kBuffer},
           std::string(len, static_cast<char>('A' + tid % 26)));
  return p;
}

// Appends the ops of transaction `tid` to a record payload: a START op if
// `ends` has kOpStart, one op per item, a COMMIT op if `ends` has kOpCommit.
// A transaction spread over records is written as pieces with ends = START,
// 0, ..., COMMIT.
inline void AppendTransaction(std::string* payload, std::uint32_t tid,
                              const std::vector<std::pair<ItemType, std::string>>& items,
                              std::uint8_t ends = kOpStart | kOpCommit) {
  if (ends & kOpStart) AppendOp(payload, OpHeader{tid, 0, kOpStart, ItemType::kNone}, "");
  for (const auto& [type, body] : items)
    AppendOp(payload, OpHeader{tid, static_cast<std::uint32_t>(body.size()), 0, type}, body);
  if (ends & kOpCommit) AppendOp(payload, OpHeader{tid, 0, kOpCommit, ItemType::kNone}, "");
}

}  // namespace walfs::journal::testing
