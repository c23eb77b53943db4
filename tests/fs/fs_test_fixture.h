// A mounted-enough filesystem for fs unit tests: a fresh image on a memory
// device marked mounted, its log, the buffer cache and the allocators, torn
// down in the order a crash allows (Stop(true)) or cleanly (log closed,
// superblock counters stored, clean flag set).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/coding.h"
#include "fs/alloc.h"
#include "fs/format/ag_format.h"
#include "fs/buf_cache.h"
#include "fs/format/block_types.h"
#include "fs/fsck.h"
#include "fs/ialloc.h"
#include "fs/mkfs.h"
#include "fs/super.h"

namespace walfs::fs::testing {

// Every problem fsck reported, a line each (for assertion messages).
inline std::string FsckProblems(const FsckReport& r) {
  std::string s;
  for (const auto& p : r.problems) s += p.message + "\n";
  return s;
}

// True if some problem fsck reported mentions `what`.
inline bool FsckSays(const FsckReport& r, std::string_view what) {
  for (const auto& p : r.problems)
    if (p.message.find(what) != std::string::npos) return true;
  return false;
}

class FsFixture : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Stop(); }

  void Open() {
    if (!made_) {
      auto sb = MakeFilesystem(&dev_, {.ag_count = 2});
      ASSERT_TRUE(sb.ok()) << sb.status().ToString();
      sb_ = *sb;
      made_ = true;
    }
    const journal::LogOptions lo = LogOptionsFor(&dev_, sb_);
    // Read the superblock as a mount would: after a crash it is not clean.
    std::vector<std::byte> b(format::kSuperSize);
    ASSERT_TRUE(dev_.Read(0, b.data(), b.size()).ok());
    auto on_disk = format::DecodeSuperblock(b, dev_.size_bytes());
    ASSERT_TRUE(on_disk.ok()) << on_disk.status().ToString();
    sb_ = *on_disk;
    auto log = journal::Log::Open(lo);  // recovery first
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(log).value();
    ASSERT_TRUE(MarkMounted(&dev_, &sb_, 1).ok());
    cache_ = std::make_unique<BufCache>(BufCache::Options{&dev_, log_.get(), &sb_, 64});
    alloc_ = std::make_unique<Allocator>(cache_.get(), log_.get(), &sb_);
    ialloc_ = std::make_unique<InodeAllocator>(cache_.get(), alloc_.get(), &sb_);
  }
  // Clean unmount (or a crash with `crash`), in the order the objects allow.
  void Stop(bool crash = false) {
    if (!log_) return;
    if (crash)
      log_->Halt();
    else
      EXPECT_TRUE(log_->Close().ok());
    ialloc_.reset();
    alloc_.reset();
    cache_.reset();
    log_.reset();
    if (!crash) {
      EXPECT_TRUE(MarkUnmountedClean(&dev_, &sb_).ok());
    }
  }
  // An AG header field (a u32 at `offset`), as the cache holds it.
  std::uint32_t AgField(std::uint32_t agno, std::uint32_t offset) NO_THREAD_SAFETY_ANALYSIS {
    auto agh = cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader);
    EXPECT_TRUE(agh.ok());
    (*agh)->Lock();
    const std::uint32_t v = DecodeFixed32(reinterpret_cast<const char*>((*agh)->data().data()) + offset);
    (*agh)->Unlock();
    return v;
  }
  // The free blocks of both AGs, as their headers in the cache say.
  std::uint32_t FreeBlocks() {
    return AgField(0, format::kAgFreeBlocksOffset) + AgField(1, format::kAgFreeBlocksOffset);
  }
  FsckReport Fsck() {
    auto r = CheckImage(&dev_, {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }
  static std::string All(const FsckReport& r) { return FsckProblems(r); }

  MemoryDevice dev_{64ull << 20};
  bool made_ = false;
  format::Superblock sb_;
  std::unique_ptr<journal::Log> log_;
  std::unique_ptr<BufCache> cache_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<InodeAllocator> ialloc_;
};

}  // namespace walfs::fs::testing
