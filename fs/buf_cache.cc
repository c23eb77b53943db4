#include "fs/buf_cache.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/btree_format.h"
#include "fs/format/inode_format.h"

namespace walfs::fs {

using format::BlockType;

BufRef::BufRef(const BufRef& other) : cache_(other.cache_), item_(other.item_) {
  if (item_) {
    MutexLock l(&cache_->mu_);
    ++cache_->map_.at(item_->blkno()).refs;
  }
}

BufRef& BufRef::operator=(const BufRef& other) {
  if (this != &other) {
    BufRef copy(other);
    *this = std::move(copy);
  }
  return *this;
}

BufRef::BufRef(BufRef&& other) noexcept : cache_(other.cache_), item_(other.item_) {
  other.cache_ = nullptr;
  other.item_ = nullptr;
}

BufRef& BufRef::operator=(BufRef&& other) noexcept {
  if (this != &other) {
    Reset();
    cache_ = other.cache_;
    item_ = other.item_;
    other.cache_ = nullptr;
    other.item_ = nullptr;
  }
  return *this;
}

BufRef::~BufRef() { Reset(); }

void BufRef::Reset() {
  if (item_) cache_->Unref(item_);
  cache_ = nullptr;
  item_ = nullptr;
}

BufCache::BufCache(const Options& options) : options_(options) {
  WALFS_CHECK(options.device && options.log && options.sb);
}

BufCache::~BufCache() {
  MutexLock l(&mu_);
  for (const auto& [blkno, e] : map_)
    WALFS_CHECK_MSG(e.refs == 0, "destroying the buffer cache with buffers in use");
  // Item destructors wait for any writeback still in flight.
  map_.clear();
}

Result<BufRef> BufCache::Read(std::uint64_t blkno, BlockType type) { return Lookup(blkno, type, true); }
Result<BufRef> BufCache::Get(std::uint64_t blkno, BlockType type) { return Lookup(blkno, type, false); }

namespace {
// Where writeback stamps the LSN in a block of this kind.
std::uint32_t LsnOffsetOf(BlockType type) {
  return type == BlockType::kInodes                                 ? format::kInodeLsnOffset
         : type == BlockType::kRaw || type == BlockType::kSuper ? journal::kBufNoLsn
                                    : format::kHeaderLsnOffset;
}
}  // namespace

Result<BufRef> BufCache::Lookup(std::uint64_t blkno, BlockType type, bool read) {
  const format::Superblock& sb = *options_.sb;
  // Block 0 only as the superblock (walfs-growfs logs it).
  if (blkno >= sb.total_blocks || (blkno >= sb.log_start && blkno < sb.data_start()) ||
      (blkno == 0) != (type == BlockType::kSuper))
    return Status::InvalidArgument(fmt::format("block {} is not a metadata block of this filesystem "
                                               "({} blocks, log at {}+{})",
                                               blkno, sb.total_blocks, sb.log_start, sb.log_blocks));
  journal::BufLogItem* item = nullptr;
  bool retyped = true;  // a cached block taking a new kind (cleared on a miss)
  {
    MutexLock l(&mu_);
    auto it = map_.find(blkno);
    if (it != map_.end()) {
      // Someone else is loading it: wait for the outcome.
      while (it != map_.end() && !it->second.loaded) {
        loaded_cv_.Wait(&mu_);
        it = map_.find(blkno);
      }
    }
    if (it != map_.end()) {
      Entry& e = it->second;
      // A block is one kind of metadata at a time; reading it as another is
      // a caller bug or damage.  Get() is a freed block being set up again,
      // possibly as another kind: it takes the new kind below.
      if (e.type != type && read)
        return Status::Corruption(fmt::format("block {} is cached as {} but read as {}", blkno,
                                              format::BlockTypeName(e.type),
                                              format::BlockTypeName(type)));
      if (e.refs++ == 0) lru_.erase(e.lru);
      ++stats_.hits;
      item = e.item.get();
      if (e.type == type) return BufRef(this, item);
      e.type = type;
    } else {
      ++stats_.misses;
      Entry& e = map_[blkno];
      e.type = type;
      e.refs = 1;
      const auto t = static_cast<std::uint8_t>(type);
      e.item = std::make_unique<journal::BufLogItem>(journal::BufLogItemOptions{
          .device = options_.device,
          .blkno = blkno,
          .block_size = sb.block_size,
          .lsn_offset = LsnOffsetOf(type),
          .ail = &options_.log->ail(),
          .type = t,
          .seal = [t](std::span<std::byte> b) { format::SealMetadataBlock(t, b); },
          .on_error = [log = options_.log](Status s) { log->Shutdown(s); }});
      item = e.item.get();
      retyped = false;
    }
  }
  if (retyped) {
    const auto t = static_cast<std::uint8_t>(type);
    item->Lock();
    item->Retype(t, LsnOffsetOf(type), [t](std::span<std::byte> b) { format::SealMetadataBlock(t, b); });
    item->Unlock();
    return BufRef(this, item);
  }
  // Load outside the cache lock: other blocks stay available meanwhile.
  Status s;
  item->Lock();
  if (read) {
    s = item->Read();
    if (s.ok()) s = Verify(blkno, type, item->data());
  } else {
    std::fill(item->data().begin(), item->data().end(), std::byte{0});
  }
  item->Unlock();
  if (!s.ok()) {
    {
      MutexLock l(&mu_);
      if (s.IsCorruption()) ++stats_.verify_failures;
      map_.erase(blkno);
      loaded_cv_.SignalAll();
    }
    // Outside the cache lock: whoever is told may log a message.  Damage
    // only: an I/O error says nothing about the structure on disk (it may
    // pass, and fsck cannot repair a device); it is in the messages and
    // the device's counters instead.
    if (s.IsCorruption()) ReportDamage(DamageWhat(type, s), 0, blkno, s);
    return s;
  }
  MutexLock l(&mu_);
  map_.at(blkno).loaded = true;
  loaded_cv_.SignalAll();
  EvictLocked();
  return BufRef(this, item);
}

void BufCache::ReportDamage(std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s) const {
  if (options_.on_damage) options_.on_damage(what, ino, blkno, s);
}

Status BufCache::Damaged(std::string_view what, std::uint64_t ino, std::uint64_t blkno, Status s) const {
  ReportDamage(what, ino, blkno, s);
  return s;
}

std::string BufCache::DamageWhat(BlockType type, const Status& s) {
  std::string_view name = "metadata block";
  switch (type) {
    case BlockType::kSuper: name = "superblock"; break;
    case BlockType::kAgHeader: name = "AG header"; break;
    case BlockType::kBitmap: name = "AG bitmap block"; break;
    case BlockType::kImap: name = "AG inode map block"; break;
    case BlockType::kInodes: name = "inode block"; break;
    case BlockType::kDirectory: name = "directory block"; break;
    case BlockType::kExtents: name = "extent map block"; break;
    case BlockType::kXattr: name = "xattr block"; break;
    case BlockType::kRaw: break;
  }
  // The checksum is the most common finding, and the one worth naming.
  const bool crc = s.message().find("CRC") != std::string_view::npos;
  return fmt::format("{}{}", name, crc ? " CRC" : "");
}

Status BufCache::Verify(std::uint64_t blkno, BlockType type, std::span<const std::byte> block) const {
  const format::Superblock& sb = *options_.sb;
  if (type == BlockType::kSuper) return format::DecodeSuperblock(block).status();
  // Tree nodes: the whole node (its owner and level are the tree's to check).
  if (type == BlockType::kDirectory || type == BlockType::kExtents || type == BlockType::kXattr)
    return format::VerifyBtreeNode(block, blkno, sb.metadata_uuid());
  if (type != BlockType::kAgHeader && type != BlockType::kBitmap && type != BlockType::kImap)
    return Status::Ok();  // inode blocks: each inode is decoded (and checked) when used
  // The AG's own metadata: the full field checks, not only the header, so
  // that nothing downstream trusts an impossible count or record.
  if (blkno < sb.data_start())
    return Status::Corruption(fmt::format("block {} is not in an AG", blkno));
  const auto agno = static_cast<std::uint32_t>((blkno - sb.data_start()) / sb.ag_blocks);
  const std::uint64_t agblock = blkno - sb.AgStart(agno);
  switch (type) {
    case BlockType::kAgHeader:
      if (agblock != 0) break;
      return format::DecodeAgHeader(block, sb, agno).status();
    case BlockType::kBitmap:
      if (agblock < format::AgBitmapStart() || agblock >= format::AgImapStart(sb)) break;
      return format::VerifyBitmapBlock(block, sb, agno,
                                       static_cast<std::uint32_t>(agblock - format::AgBitmapStart()));
    case BlockType::kImap:
      if (agblock < format::AgImapStart(sb) || agblock >= format::AgFirstFree(sb)) break;
      return format::VerifyImapBlock(block, sb, agno,
                                     static_cast<std::uint32_t>(agblock - format::AgImapStart(sb)));
    default:
      break;
  }
  return Status::Corruption(fmt::format("block {} is not where a {} block lives", blkno,
                                        format::BlockTypeName(type)));
}

void BufCache::Unref(journal::BufLogItem* item) {
  MutexLock l(&mu_);
  Entry& e = map_.at(item->blkno());
  WALFS_CHECK(e.refs > 0);
  if (--e.refs == 0) e.lru = lru_.insert(lru_.end(), item->blkno());
  EvictLocked();
}

bool BufCache::Evictable(const journal::BufLogItem& item) {
  // Everything the disk lacks keeps a buffer: pinned (its checkpoint is not
  // on disk), in the AIL (not written back), dirty chunks, a write in flight.
  if (item.pinned() || item.ail_lsn() != journal::kNullLsn || item.flushing()) return false;
  const std::vector<std::uint32_t> dirty = item.dirty_map();
  return std::all_of(dirty.begin(), dirty.end(), [](std::uint32_t w) { return w == 0; });
}

void BufCache::EvictLocked() {
  // Look at a bounded number of the oldest candidates: buffers the disk
  // does not have yet stay, and are looked at again on a later call.
  constexpr int kMaxLook = 64;
  int looked = 0;
  auto it = lru_.begin();
  while (map_.size() > options_.capacity && it != lru_.end() && looked++ < kMaxLook) {
    auto m = map_.find(*it);
    if (m == map_.end() || !Evictable(*m->second.item)) {
      ++it;
      continue;
    }
    it = lru_.erase(it);
    map_.erase(m);
    ++stats_.evictions;
  }
}

BufCacheStats BufCache::Stats() const {
  MutexLock l(&mu_);
  BufCacheStats s = stats_;
  s.buffers = map_.size();
  return s;
}

}  // namespace walfs::fs
