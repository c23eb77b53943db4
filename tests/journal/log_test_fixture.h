// A small image for Log tests: metadata blocks first, then the log, on one
// device; and a thread-safe way to change a block through a transaction.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "journal/buf_item.h"
#include "journal/log.h"
#include "journal/transaction.h"

namespace walfs::journal::testing {

inline constexpr std::uint32_t kBlockSize = 4096;
inline constexpr std::uint32_t kLsnOffset = 8;       // where a block keeps its LSN
inline constexpr std::uint32_t kPayloadOffset = 16;  // bytes before are header
inline constexpr std::uint32_t kMetaBlocks = 32;
inline constexpr std::uint64_t kLogOffset = std::uint64_t{kMetaBlocks} * kBlockSize;

inline std::uint64_t ImageBytes(std::uint32_t log_sectors) {
  return kLogOffset + std::uint64_t{log_sectors} * kLogSectorSize;
}

inline LogOptions TestLogOptions(BlockDevice* dev, std::uint32_t log_sectors) {
  LogOptions o;
  o.device = dev;
  o.log_offset = kLogOffset;
  o.log_sectors = log_sectors;
  return o;
}

// The blocks a test changes, as BufLogItems of an open Log.
class Blocks {
 public:
  Blocks(Log* log, std::uint32_t count) {
    for (std::uint32_t i = 0; i < count; ++i) {
      auto b = std::make_unique<BufLogItem>(BufLogItemOptions{
          .device = log->metadata(),
          .blkno = i,
          .lsn_offset = kLsnOffset,
          .ail = &log->ail(),
          .on_error = [log](Status s) { log->Shutdown(s); }});
      b->Lock();
      EXPECT_TRUE(b->Read().ok());
      b->Unlock();
      items_.push_back(std::move(b));
    }
  }
  BufLogItem* operator[](std::size_t i) { return items_[i].get(); }
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<std::unique_ptr<BufLogItem>> items_;
};

// A log and its blocks, torn down in the order a crash allows: the log
// halts (letting go of the blocks), then the blocks go, then the log.
struct TestJournal {
  std::unique_ptr<Log> log;
  std::unique_ptr<Blocks> blocks;
  TestJournal(std::unique_ptr<Log> l, std::uint32_t nblocks) : log(std::move(l)) {
    if (log) blocks = std::make_unique<Blocks>(log.get(), nblocks);
  }
  ~TestJournal() {
    if (log) log->Halt();
    blocks.reset();
    log.reset();
  }
  BufLogItem* operator[](std::size_t i) { return (*blocks)[i]; }
  Log* operator->() { return log.get(); }
  Log* get() { return log.get(); }
};

// Buffer locks taken in loops and on conditions, which the static lock
// analysis cannot follow.
inline void LockBlock(BufLogItem* b) NO_THREAD_SAFETY_ANALYSIS { b->Lock(); }
inline void UnlockBlock(BufLogItem* b) NO_THREAD_SAFETY_ANALYSIS { b->Unlock(); }

// Writes `value` over bytes [first, first + len) of the block's payload in
// transaction `tx` (the caller holds the block's lock).
inline void Fill(Transaction* tx, BufLogItem* b, std::uint32_t first, std::uint32_t len,
                 std::uint8_t value) NO_THREAD_SAFETY_ANALYSIS {
  std::memset(b->data().data() + first, value, len);
  b->LogRange(first, first + len - 1);
  tx->Join(b);
}

// The payload bytes of block i on a device (everything but the LSN header).
inline std::string PayloadOnDisk(BlockDevice* dev, std::uint32_t i) {
  std::string block(kBlockSize, '\0');
  EXPECT_TRUE(dev->Read(std::uint64_t{i} * kBlockSize, block.data(), kBlockSize).ok());
  return block.substr(kPayloadOffset);
}

}  // namespace walfs::journal::testing
