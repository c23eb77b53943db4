// BufCache: the filesystem's metadata blocks in memory (XFS's buffer cache).
// Every cached block is a journal::BufLogItem, so the same object is what a
// transaction changes and logs, and what the AIL writes back.
//
//   WALFS_ASSIGN_OR_RETURN(BufRef agh, cache.Read(blkno, BlockType::kAgHeader));
//   agh->Lock();  ... change agh->data(), agh->LogRange(a, b), tx.Join(agh.get()) ...
//
// A BufRef keeps its buffer in the cache; the buffer lock is separate (a
// transaction takes it for as long as it changes the block).  Blocks are
// verified when read (a block that fails its checks is Corruption and is
// not cached).  A buffer may be evicted only when nothing refers to it and
// it has nothing the disk lacks: no reference, not pinned, not in the AIL,
// no dirty chunks, no writeback in flight.  Eviction is LRU over those, when
// the cache holds more than its capacity.
//
// Thread-safe.  The cache must be destroyed after the log is closed or
// halted (so no buffer is pinned or in the AIL).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/block_device.h"
#include "base/mutex.h"
#include "base/status.h"
#include "fs/format/block_types.h"
#include "fs/format/superblock_format.h"
#include "journal/buf_item.h"
#include "journal/log.h"

namespace walfs::fs {

class BufCache;

// A counted reference to a cached buffer.
class BufRef {
 public:
  BufRef() = default;
  BufRef(const BufRef& other);
  BufRef& operator=(const BufRef& other);
  BufRef(BufRef&& other) noexcept;
  BufRef& operator=(BufRef&& other) noexcept;
  ~BufRef();

  journal::BufLogItem* get() const { return item_; }
  journal::BufLogItem* operator->() const { return item_; }
  explicit operator bool() const { return item_ != nullptr; }

 private:
  friend class BufCache;
  BufRef(BufCache* cache, journal::BufLogItem* item) : cache_(cache), item_(item) {}
  void Reset();
  BufCache* cache_ = nullptr;
  journal::BufLogItem* item_ = nullptr;
};

// The bytes of a buffer whose lock the caller has, directly or through a
// transaction that holds the buffer (which the lock analysis cannot see).
inline char* HeldChars(const BufRef& b) NO_THREAD_SAFETY_ANALYSIS {
  return reinterpret_cast<char*>(b->data().data());
}

struct BufCacheStats {
  std::uint64_t buffers = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t verify_failures = 0;
};

class BufCache {
 public:
  struct Options {
    BlockDevice* device = nullptr;
    journal::Log* log = nullptr;
    const format::Superblock* sb = nullptr;
    std::size_t capacity = 8192;  // buffers kept when clean and unreferenced
    // Told of every block that fails its checks or cannot be read, and of
    // the damage its users find inside blocks (ReportDamage): the mounted
    // filesystem's ErrorRecorder.  Called on the reader's thread, with
    // whatever locks it holds; it must not wait on any of them.  Empty:
    // nobody is told.
    std::function<void(std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s)>
        on_damage = nullptr;
  };
  explicit BufCache(const Options& options);
  ~BufCache();
  BufCache(const BufCache&) = delete;
  BufCache& operator=(const BufCache&) = delete;

  // The buffer for `blkno`, read from the device and verified as `type` on
  // a miss.  InvalidArgument for a block outside the filesystem, Corruption
  // for one that fails its checks.
  Result<BufRef> Read(std::uint64_t blkno, format::BlockType type);
  // The buffer for a block being (re)initialised: not read, zero-filled on
  // a miss.  The caller fills and logs the whole block.
  Result<BufRef> Get(std::uint64_t blkno, format::BlockType type);

  BufCacheStats Stats() const;

  // Damage found in a block read through this cache, by whoever decodes
  // it (an inode, a B+tree's keys): passed to Options::on_damage.  `what`
  // is a few words ("inode decode"), `ino`/`blkno` 0 when not known.
  void ReportDamage(std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s) const;
  // ReportDamage, then `s`: for damage found inside a block that passed its
  // checks (a bitmap bit, a map record, a directory entry), so that it is
  // recorded in the superblock like a bad checksum is.
  //   return cache_->Damaged("AG bitmap", 0, blkno, Status::Corruption(...));
  Status Damaged(std::string_view what, std::uint64_t ino, std::uint64_t blkno, Status s) const;

 private:
  friend class BufRef;
  struct Entry {
    std::unique_ptr<journal::BufLogItem> item;
    format::BlockType type = format::BlockType::kRaw;
    std::uint32_t refs = 0;
    bool loaded = false;  // its bytes are the block's (read or initialised)
    std::list<std::uint64_t>::iterator lru;  // valid while refs == 0
  };

  Result<BufRef> Lookup(std::uint64_t blkno, format::BlockType type, bool read);
  Status Verify(std::uint64_t blkno, format::BlockType type, std::span<const std::byte> block) const;
  // A few words for a block of `type` that failed its checks with `s`.
  static std::string DamageWhat(format::BlockType type, const Status& s);
  void Unref(journal::BufLogItem* item);
  void EvictLocked() REQUIRES(mu_);
  static bool Evictable(const journal::BufLogItem& item);

  const Options options_;
  mutable Mutex mu_;
  std::unordered_map<std::uint64_t, Entry> map_ GUARDED_BY(mu_);
  std::list<std::uint64_t> lru_ GUARDED_BY(mu_);  // unreferenced buffers, oldest first
  BufCacheStats stats_ GUARDED_BY(mu_);
  CondVar loaded_cv_;  // a buffer finished loading
};

}  // namespace walfs::fs
