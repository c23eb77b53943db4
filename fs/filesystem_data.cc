// File data, truncation and freeing (docs/fs.md, "Data").  Data is written
// in place through the block device.  New blocks get their data (zeros
// around it) before the transaction that maps them commits, unwritten
// (fallocated) blocks before the transaction that marks them written, so no
// crash ever exposes a block's old contents; freed blocks stay busy until
// the checkpoint that freed them is on disk (Allocator).
#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/fs_op.h"

namespace walfs::fs {

using format::Extent;
using format::InodeCore;
using journal::TransType;

namespace {
constexpr std::uint64_t kMaxFileSize = std::uint64_t{1} << 50;  // 1 PiB
constexpr std::uint32_t kMaxAllocRun = 1024;                    // blocks per allocation step
constexpr std::uint32_t kUnmapPerStep = 2;                      // extents freed per truncate step
constexpr std::uint64_t kMapChangeBlocks = 2 * FileMap::kMaxLevels + 1;
std::uint64_t EndOf(const Extent& e) { return e.file_block + e.length; }

class ExclusiveLock {
 public:
  explicit ExclusiveLock(const InodeRef& ip) : ip_(ip) { ip_->rw.lock(); }
  ~ExclusiveLock() { ip_->rw.unlock(); }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  const InodeRef& ip_;
};
}  // namespace

Result<std::size_t> Filesystem::Read(std::uint64_t ino, std::uint64_t offset, std::size_t size, char* out) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (S_ISDIR(c.mode)) return Errno(EISDIR, "read of a directory");
  if (offset >= c.size || size == 0) return std::size_t{0};
  size = static_cast<std::size_t>(std::min<std::uint64_t>(size, c.size - offset));
  const std::uint64_t bs = sb_.block_size;
  WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over,
                         maps_->Overlapping(c, offset / bs, (offset + size + bs - 1) / bs));
  // Extents come in file order and do not overlap: holes and unwritten
  // extents read as zeros, the rest from the device; `out` is not cleared
  // first (the caller's buffer need not be initialised).
  const std::uint64_t end = offset + size;
  std::uint64_t pos = offset;
  for (const Extent& e : over) {
    const std::uint64_t from = std::max(offset, e.file_block * bs);
    const std::uint64_t to = std::min(end, EndOf(e) * bs);
    if (from >= to) continue;
    if (from > pos) std::memset(out + (pos - offset), 0, from - pos);
    if (e.unwritten)
      std::memset(out + (from - offset), 0, to - from);
    else
      WALFS_RETURN_IF_ERROR(device_->Read(e.disk_block * bs + (from - e.file_block * bs), out + (from - offset), to - from));
    pos = to;
  }
  if (pos < end) std::memset(out + (pos - offset), 0, end - pos);
  counters_.reads.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes_read.fetch_add(size, std::memory_order_relaxed);
  return size;
}

Result<std::size_t> Filesystem::WriteBlocks(const InodeRef& ip, std::uint64_t offset, const char* data,
                                            std::size_t size, NoSpaceWrite at_enospc) {
  const std::uint64_t bs = sb_.block_size;
  const std::uint64_t end_byte = offset + size;
  const std::uint64_t end = (end_byte + bs - 1) / bs;
  std::uint64_t pos = offset / bs;
  // File blocks this write mapped over holes, ascending and disjoint.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> mapped;
  // Running out of space part way: a short write (POSIX), the bytes of the
  // blocks already in place counting, and the caller's next write gets
  // ENOSPC; or, for a write that must be whole, ENOSPC after the blocks it
  // mapped are unmapped again (they hold its bytes, never anyone else's, so
  // a crash before that is safe too).  Blocks it only overwrote, or turned
  // from unwritten to written, keep its bytes, as after any failed write.
  // Runs with no transaction open (the write's own was dropped first).
  auto out_of_space = [&](Status s) -> Result<std::size_t> {
    if (s.ToErrno() != ENOSPC) return s;
    const std::uint64_t done = std::min(end_byte, pos * bs);
    if (at_enospc == NoSpaceWrite::kShort && done > offset) return static_cast<std::size_t>(done - offset);
    if (at_enospc == NoSpaceWrite::kWhole)
      for (const auto& [first, last] : mapped) WALFS_RETURN_IF_ERROR(UnmapRange(ip, first, last));
    return s;
  };
  // Blocks [from, to) as whole blocks: the caller's bytes, zeros elsewhere.
  // When the caller's bytes cover them exactly (every block-aligned write)
  // they are written as they are, without a zeroed copy.
  std::string pad;
  auto padded = [&](std::uint64_t from, std::uint64_t to) -> std::string_view {
    const std::uint64_t b0 = std::max(offset, from * bs), b1 = std::min(end_byte, to * bs);
    if (b0 == from * bs && b1 == to * bs) return {data + (b0 - offset), b1 - b0};
    pad.assign((to - from) * bs, '\0');
    std::memcpy(pad.data() + (b0 - from * bs), data + (b0 - offset), b1 - b0);
    return pad;
  };
  Status stop;  // ENOSPC part way
  while (pos < end) {
    WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over, maps_->Overlapping(ip->Core(), pos, end));
    if (!over.empty() && over.front().file_block <= pos) {
      const Extent e = over.front();
      const std::uint64_t run_end = std::min(end, EndOf(e));
      if (!e.unwritten) {
        const std::uint64_t b0 = std::max(offset, pos * bs), b1 = std::min(end_byte, run_end * bs);
        WALFS_RETURN_IF_ERROR(device_->Write(e.disk_block * bs + (b0 - e.file_block * bs), data + (b0 - offset), b1 - b0));
        ip->data_dirty.store(true, std::memory_order_relaxed);
      } else {
        // Zeros over a small unwritten remainder on either side (ext4's
        // extent_max_zeroout_kb), written with the data, so that the whole
        // of it turns written and joins its neighbours (FileMap::MarkState)
        // instead of splitting the extent: random writes into preallocated
        // space keep the map small.  Safe as the data is: on the device
        // before the conversion commits (the log write's preflush), and
        // until then the blocks read as zeros anyway.
        const auto [from, to] = ZeroOutRange(e, pos, run_end);
        const std::string_view buf = padded(from, to);
        WALFS_RETURN_IF_ERROR(device_->Write((e.disk_block + (from - e.file_block)) * bs, buf.data(), buf.size()));
        Op op(this);
        if (Status b = op.Begin(TransType::kWrite, kMapChangeBlocks); !b.ok()) {
          stop = b;
          break;
        }
        for (;;) {
          InodeCore c = ip->Core();
          WALFS_ASSIGN_OR_RETURN(bool done, maps_->MarkWritten(op.tx(), &c, from, to));
          StoreCore(ip, c);
          op.Dirty(ip);
          if (done) break;
          WALFS_RETURN_IF_ERROR(op.Roll());
        }
        WALFS_RETURN_IF_ERROR(op.Commit().status());
        counters_.unwritten_conversions.fetch_add(1, std::memory_order_relaxed);
        counters_.zeroout_blocks.fetch_add((to - from) - (run_end - pos), std::memory_order_relaxed);
      }
      pos = run_end;
      continue;
    }
    // A hole: allocate, write, then map.
    const std::uint64_t hole_end = over.empty() ? end : std::min(end, over.front().file_block);
    auto want = static_cast<std::uint32_t>(std::min<std::uint64_t>(hole_end - pos, kMaxAllocRun));
    WALFS_ASSIGN_OR_RETURN(const std::uint64_t goal, DataGoal(ip, pos));
    Op op(this);
    // Near a full filesystem a shorter run may still fit: halve until one
    // block does not.
    for (;;) {
      stop = op.Begin(TransType::kWrite, want + kMapChangeBlocks);
      if (stop.ok() || stop.ToErrno() != ENOSPC || want == 1) break;
      want = std::max<std::uint32_t>(1, want / 2);
    }
    if (!stop.ok()) break;
    Result<Extent> got = alloc_->Alloc(op.tx(), {.goal = goal, .min = 1, .want = want});
    if (!got.ok()) {  // the transaction is unchanged: dropping it cancels nothing
      stop = got.status().IsNoSpace() ? Errno(ENOSPC, got.status().message()) : got.status();
      break;
    }
    Extent e = *got;
    e.file_block = pos;
    const std::string_view buf = padded(pos, pos + e.length);
    if (Status w = device_->Write(e.disk_block * bs, buf.data(), buf.size()); !w.ok()) {
      // The data did not land: give the blocks back in the same transaction
      // (a dirty one cannot be cancelled without shutting the filesystem
      // down), so a failed data write is only the writer's EIO.
      WALFS_RETURN_IF_ERROR(alloc_->Free(op.tx(), e.disk_block, e.length));
      WALFS_RETURN_IF_ERROR(op.Commit().status());
      return w;
    }
    ip->data_dirty.store(true, std::memory_order_relaxed);
    InodeCore c = ip->Core();
    WALFS_RETURN_IF_ERROR(maps_->Map(op.tx(), &c, e));
    c.nblocks += e.length;
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    if (!mapped.empty() && mapped.back().second == pos)
      mapped.back().second = pos + e.length;
    else
      mapped.emplace_back(pos, pos + e.length);
    pos += e.length;
  }
  if (!stop.ok()) return out_of_space(stop);
  return size;
}

std::pair<std::uint64_t, std::uint64_t> Filesystem::ZeroOutRange(const Extent& e, std::uint64_t first,
                                                                 std::uint64_t end) const {
  // At most 1 MiB, whatever a library caller passed (the mount's option is
  // checked): the zeros and the data go out in one padded buffer.
  const std::uint64_t max = std::uint64_t{std::min<std::uint32_t>(options_.zeroout_kb, 1024)} * 1024 / sb_.block_size;
  std::uint64_t from = first, to = end;
  // As ext4_ext_convert_to_initialized: the tail if the rest of the extent
  // from the write's first block on (the write included) fits, then the
  // head if all of the extent up to the new end does (ext4 compares that
  // one with <).  So a write of the limit or more never zeroes, and a
  // 4 KiB write at most 7 blocks beside it with the default 32.
  if (EndOf(e) - first <= max) to = EndOf(e);
  if (to - e.file_block <= max) from = e.file_block;
  return {from, to};
}

Result<std::uint64_t> Filesystem::DataGoal(const InodeRef& ip, std::uint64_t pos) {
  if (pos > 0) {
    WALFS_ASSIGN_OR_RETURN(std::vector<Extent> left, maps_->Overlapping(ip->Core(), pos - 1, pos));
    if (!left.empty()) return left.front().disk_block + (pos - left.front().file_block);
  }
  return ip->ino / sb_.inodes_per_block();
}

Result<std::size_t> Filesystem::Write(std::uint64_t ino, std::uint64_t offset, const char* data, std::size_t size,
                                      NoSpaceWrite at_enospc) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  if (offset > kMaxFileSize || size > kMaxFileSize - offset) return Errno(EFBIG, "file too large");
  ExclusiveLock l(ip);
  if (!S_ISREG(ip->Core().mode)) return Errno(EINVAL, "write to a non-regular file");
  if (size == 0) return std::size_t{0};
  // Growing past a gap: blocks still mapped there (a truncate cut short by
  // a crash, whose size was logged before its unmapping) must read as zeros.
  if (const std::uint64_t old_size = ip->Core().size; offset > old_size)
    WALFS_RETURN_IF_ERROR(ZeroTail(ip, old_size, offset));
  WALFS_ASSIGN_OR_RETURN(size, WriteBlocks(ip, offset, data, size, at_enospc));  // may be short at ENOSPC
  // The size and timestamps, logged unless already current (an overwrite
  // within the same clock tick changes nothing the log must carry; its data
  // is on the device and fsync flushes it).
  InodeCore c = ip->Core();
  const format::Timestamp now = Now();
  if (offset + size > c.size || !(c.mtime == now) || !(c.ctime == now)) {
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kSetattr, 0));
    c = ip->Core();
    const bool grows = offset + size > c.size;
    c.size = std::max<std::uint64_t>(c.size, offset + size);
    c.mtime = c.ctime = now;
    StoreCore(ip, c);
    if (grows)
      op.Dirty(ip);
    else
      op.DirtyTimestamps(ip);  // fdatasync need not force it
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  counters_.writes.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes_written.fetch_add(size, std::memory_order_relaxed);
  return size;
}

Status Filesystem::Fsync(std::uint64_t ino, bool datasync) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  if (options_.read_only) return Status::Ok();
  // A directory's fsync is how programs ask for their renames, creates and
  // unlinks to be durable, often of entries in other directories than the
  // one they fsync (and with sync(2) never reaching a FUSE daemon, it is
  // the one call a shell script has): all of it, as syncfs would.
  if (S_ISDIR(ip->Core().mode)) {
    WALFS_RETURN_IF_ERROR(Sync());
    counters_.fsyncs.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }
  const bool data = ip->data_dirty.exchange(false);
  // The data writes that set data_dirty completed before this ticket: a
  // flush with a later one (the preflush of the log force's commit record,
  // issued after it) makes them durable, as XFS's fsync skips its cache
  // flush when the log force issued one.
  const std::uint64_t ticket = device_->FlushTicket();
  // fdatasync: up to the last change other than timestamps (an overwrite
  // in place only changes mtime and ctime).  Nothing newer than what is on
  // disk: no log write at all (the CIL's force returns at once).
  const std::uint64_t seq = datasync ? ip->datasync_seq.load() : ip->last_seq.load();
  Status s = seq != 0 ? log_->Force(seq) : Status::Ok();
  if (s.ok() && data) {
    if (device_->FlushedSince(ticket))
      counters_.fsync_flushes_covered.fetch_add(1, std::memory_order_relaxed);
    else
      s = device_->Flush();
  }
  if (!s.ok()) {
    if (data) ip->data_dirty.store(true);  // the next fsync must flush again
    return s;
  }
  counters_.fsyncs.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Filesystem::Sync() {
  if (options_.read_only) return Status::Ok();
  // A shut-down log writes nothing more: what was not on disk then is lost,
  // and saying OK would claim otherwise.
  WALFS_RETURN_IF_ERROR(CheckWritable());
  // Every data write completed before the call completed before this
  // ticket: a flush numbered after it covers them (the force's preflush, or
  // the flush below).  Taken before the force, so that the force's own
  // preflush counts.
  const std::uint64_t ticket = device_->FlushTicket();
  WALFS_RETURN_IF_ERROR(log_->Force(0));
  if (!device_->FlushedSince(ticket)) WALFS_RETURN_IF_ERROR(device_->Flush());
  counters_.syncs.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Filesystem::ZeroTail(const InodeRef& ip, std::uint64_t from, std::uint64_t to) {
  if (from >= to) return Status::Ok();
  const std::uint64_t bs = sb_.block_size;
  WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over, maps_->Overlapping(ip->Core(), from / bs, (to + bs - 1) / bs));
  for (const Extent& e : over) {
    if (e.unwritten) continue;
    const std::uint64_t b0 = std::max(from, e.file_block * bs), b1 = std::min(to, EndOf(e) * bs);
    if (b0 >= b1) continue;
    const std::string zeros(b1 - b0, '\0');
    WALFS_RETURN_IF_ERROR(device_->Write(e.disk_block * bs + (b0 - e.file_block * bs), zeros.data(), zeros.size()));
    ip->data_dirty.store(true, std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status Filesystem::UnmapRange(const InodeRef& ip, std::uint64_t first, std::uint64_t end) {
  for (;;) {
    Op op(this);
    // Cutting an extent in two may split a map leaf: from the freeing pool.
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kTruncate, kMapChangeBlocks, /*freeing=*/true));
    InodeCore c = ip->Core();
    std::vector<Extent> freed;
    WALFS_ASSIGN_OR_RETURN(bool done, maps_->Unmap(op.tx(), &c, first, end, kUnmapPerStep, &freed));
    for (const Extent& f : freed) {
      WALFS_RETURN_IF_ERROR(alloc_->Free(op.tx(), f.disk_block, f.length));
      c.nblocks -= std::min<std::uint64_t>(c.nblocks, f.length);
    }
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    if (done) return Status::Ok();
  }
}

Status Filesystem::Truncate(const InodeRef& ip, std::uint64_t size) {
  if (size > kMaxFileSize) return Errno(EFBIG, "file too large");
  const std::uint64_t bs = sb_.block_size;
  const InodeCore before = ip->Core();
  // Zeros past the new end in its last block, so a later extension reads
  // zeros there; then the size; then the blocks past it.
  if (size < before.size) WALFS_RETURN_IF_ERROR(ZeroTail(ip, size, std::min(before.size, (size + bs - 1) / bs * bs)));
  // Growing: whatever is still mapped past the old end (see Write) reads as
  // zeros before the new size says it is there.
  if (size > before.size) WALFS_RETURN_IF_ERROR(ZeroTail(ip, before.size, size));
  {
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kSetattr, 0));
    InodeCore c = ip->Core();
    c.size = size;
    c.mtime = c.ctime = Now();
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  if (size < before.size) WALFS_RETURN_IF_ERROR(UnmapRange(ip, (size + bs - 1) / bs, UINT64_MAX / 2));
  counters_.truncates.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Result<struct stat> Filesystem::SetAttr(std::uint64_t ino, const struct stat& attr, std::uint32_t mask) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  ExclusiveLock l(ip);
  if (mask & kSetSize) {
    const std::uint32_t mode = ip->Core().mode;
    if (S_ISDIR(mode)) return Errno(EISDIR, "truncate of a directory");
    if (!S_ISREG(mode)) return Errno(EINVAL, "truncate of a special file");
    if (attr.st_size < 0) return Errno(EINVAL, "negative size");
    WALFS_RETURN_IF_ERROR(Truncate(ip, static_cast<std::uint64_t>(attr.st_size)));
  }
  if (mask & ~kSetSize) {
    InodeCore c = ip->Core();
    // A chmod rewrites the access ACL (if any) in the same step.
    bool acl = false;
    if (mask & kSetMode) {
      WALFS_ASSIGN_OR_RETURN(acl, HasAccessAclLocked(ino, c));
    }
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(acl ? TransType::kXattr : TransType::kSetattr, acl ? XattrBlocks(4096) : 0));
    const format::Timestamp now = Now();
    if (mask & kSetMode) {
      c.mode = static_cast<std::uint16_t>((c.mode & S_IFMT) | (attr.st_mode & 07777));
      WALFS_RETURN_IF_ERROR(ChmodAclLocked(op, ino, &c));
    }
    if (mask & kSetUid) c.uid = attr.st_uid;
    if (mask & kSetGid) c.gid = attr.st_gid;
    if (mask & kSetAtimeNow) c.atime = now;
    else if (mask & kSetAtime) c.atime = {attr.st_atim.tv_sec, static_cast<std::uint32_t>(attr.st_atim.tv_nsec)};
    if (mask & kSetMtimeNow) c.mtime = now;
    else if (mask & kSetMtime) c.mtime = {attr.st_mtim.tv_sec, static_cast<std::uint32_t>(attr.st_mtim.tv_nsec)};
    c.ctime = (mask & kSetCtime) ? format::Timestamp{attr.st_ctim.tv_sec, static_cast<std::uint32_t>(attr.st_ctim.tv_nsec)} : now;
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  return StatOf(ip->Core());
}

Status Filesystem::Fallocate(std::uint64_t ino, int mode, std::uint64_t offset, std::uint64_t length) {
  WALFS_RETURN_IF_ERROR(CheckWritable());
  if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) return Errno(EOPNOTSUPP, "fallocate mode");
  if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE)) return Errno(EOPNOTSUPP, "punch with zero-range");
  if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) return Errno(EOPNOTSUPP, "punch without keep-size");
  if (length == 0) return Errno(EINVAL, "zero length");
  if (offset > kMaxFileSize || length > kMaxFileSize - offset) return Errno(EFBIG, "file too large");
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  ExclusiveLock l(ip);
  if (!S_ISREG(ip->Core().mode)) return Errno(S_ISDIR(ip->Core().mode) ? EISDIR : ENODEV, "fallocate of a non-regular file");
  const std::uint64_t bs = sb_.block_size;
  const std::uint64_t end_byte = offset + length;
  if (mode & FALLOC_FL_PUNCH_HOLE) {
    const std::uint64_t size = ip->Core().size;
    const std::uint64_t first_full = (offset + bs - 1) / bs, end_full = std::min(end_byte, std::max(size, end_byte)) / bs;
    // Partial blocks at the edges are zeroed in place; whole ones unmapped.
    if (first_full > end_full) {
      WALFS_RETURN_IF_ERROR(ZeroTail(ip, offset, end_byte));
    } else {
      WALFS_RETURN_IF_ERROR(ZeroTail(ip, offset, first_full * bs));
      WALFS_RETURN_IF_ERROR(ZeroTail(ip, end_full * bs, end_byte));
      if (first_full < end_full) WALFS_RETURN_IF_ERROR(UnmapRange(ip, first_full, end_full));
    }
  } else {
    WALFS_RETURN_IF_ERROR(Preallocate(ip, offset / bs, (end_byte + bs - 1) / bs));
    if (mode & FALLOC_FL_ZERO_RANGE) WALFS_RETURN_IF_ERROR(ZeroRange(ip, offset, end_byte));
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end_byte > ip->Core().size)
    WALFS_RETURN_IF_ERROR(ZeroTail(ip, ip->Core().size, end_byte));  // see Write
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kSetattr, 0));
  InodeCore c = ip->Core();
  if (!(mode & FALLOC_FL_KEEP_SIZE)) c.size = std::max(c.size, end_byte);
  c.mtime = c.ctime = Now();
  StoreCore(ip, c);
  op.Dirty(ip);
  return op.Commit().status();
}

Status Filesystem::Preallocate(const InodeRef& ip, std::uint64_t pos, std::uint64_t end) {
  while (pos < end) {
    WALFS_ASSIGN_OR_RETURN(std::vector<Extent> over, maps_->Overlapping(ip->Core(), pos, end));
    if (!over.empty() && over.front().file_block <= pos) {
      pos = EndOf(over.front());
      continue;
    }
    const std::uint64_t hole_end = over.empty() ? end : std::min(end, over.front().file_block);
    const auto want = static_cast<std::uint32_t>(std::min<std::uint64_t>(hole_end - pos, kMaxAllocRun));
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kWrite, want + kMapChangeBlocks));
    WALFS_ASSIGN_OR_RETURN(const std::uint64_t goal, DataGoal(ip, pos));
    Result<Extent> got = alloc_->Alloc(op.tx(), {.goal = goal, .min = 1, .want = want});
    if (!got.ok()) return got.status().IsNoSpace() ? Errno(ENOSPC, got.status().message()) : got.status();
    Extent e = *got;
    e.file_block = pos;
    e.unwritten = true;
    InodeCore c = ip->Core();
    WALFS_RETURN_IF_ERROR(maps_->Map(op.tx(), &c, e));
    c.nblocks += e.length;
    StoreCore(ip, c);
    op.Dirty(ip);
    WALFS_RETURN_IF_ERROR(op.Commit().status());
    pos += e.length;
  }
  return Status::Ok();
}

Status Filesystem::ZeroRange(const InodeRef& ip, std::uint64_t offset, std::uint64_t end_byte) {
  const std::uint64_t bs = sb_.block_size;
  const std::uint64_t first_full = (offset + bs - 1) / bs, end_full = end_byte / bs;
  if (first_full < end_full) {
    // Whole blocks turn unwritten, in one reservation taken before any
    // change, so an ENOSPC leaves the data as it was.  Only the extents cut
    // at the range's two edges grow the map; the pool kept for freeing may
    // pay for that, as XFS's unwritten conversions use its reserve pool.
    Op op(this);
    WALFS_RETURN_IF_ERROR(op.Begin(TransType::kWrite, 2 * kMapChangeBlocks, /*freeing=*/true));
    for (;;) {
      InodeCore c = ip->Core();
      WALFS_ASSIGN_OR_RETURN(bool done, maps_->MarkUnwritten(op.tx(), &c, first_full, end_full));
      StoreCore(ip, c);
      op.Dirty(ip);
      if (done) break;
      WALFS_RETURN_IF_ERROR(op.Roll());
    }
    WALFS_RETURN_IF_ERROR(op.Commit().status());
  }
  // The partial blocks at the edges are zeroed in place where they hold
  // data (the rest of the range is unwritten by now: Preallocate mapped its
  // holes).
  if (first_full >= end_full) return ZeroTail(ip, offset, end_byte);
  WALFS_RETURN_IF_ERROR(ZeroTail(ip, offset, first_full * bs));
  return ZeroTail(ip, end_full * bs, end_byte);
}

Result<std::uint64_t> Filesystem::Lseek(std::uint64_t ino, std::uint64_t offset, int whence) {
  WALFS_ASSIGN_OR_RETURN(InodeRef ip, Iget(ino));
  std::shared_lock l(ip->rw);
  const InodeCore c = ip->Core();
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return Errno(EINVAL, "lseek whence");
  if (offset >= c.size) return Errno(ENXIO, "offset past the end");
  const std::uint64_t bs = sb_.block_size;
  if (whence == SEEK_DATA) {
    WALFS_ASSIGN_OR_RETURN(std::optional<Extent> e, maps_->NextFrom(c, offset / bs));
    if (!e || e->file_block * bs >= c.size) return Errno(ENXIO, "no data past the offset");
    return std::max(offset, e->file_block * bs);
  }
  std::uint64_t pos = offset / bs;
  for (;;) {
    if (pos * bs >= c.size) return c.size;
    WALFS_ASSIGN_OR_RETURN(std::vector<Extent> cover, maps_->Overlapping(c, pos, pos + 1));
    if (cover.empty()) return std::max(offset, pos * bs);
    pos = EndOf(cover.front());
  }
}

Status Filesystem::Inactivate(const InodeRef& ip) {
  ExclusiveLock l(ip);
  const InodeCore c = ip->Core();
  // A lookup may have counted it again since the forget that brought us
  // here (the kernel can send a forget and a lookup of one inode together).
  if (c.nlink != 0 || c.free() || !icache_->Unused(ip)) return Status::Ok();
  if (c.format == format::ForkFormat::kExtents || c.format == format::ForkFormat::kBtree) {
    if (S_ISREG(c.mode) || S_ISLNK(c.mode)) {
      WALFS_RETURN_IF_ERROR(UnmapRange(ip, 0, UINT64_MAX / 2));
      for (bool done = false; !done;) {
        Op op(this);
        WALFS_RETURN_IF_ERROR(op.Begin(TransType::kTruncate, 0));
        InodeCore n = ip->Core();
        WALFS_ASSIGN_OR_RETURN(done, maps_->DestroySome(op.tx(), &n, 8));
        StoreCore(ip, n);
        op.Dirty(ip);
        WALFS_RETURN_IF_ERROR(op.Commit().status());
      }
    } else if (S_ISDIR(c.mode)) {
      Op op(this);
      WALFS_RETURN_IF_ERROR(op.Begin(TransType::kRemove, 0));
      InodeCore n = ip->Core();
      WALFS_RETURN_IF_ERROR(dirs_->Destroy(op.tx(), &n));
      StoreCore(ip, n);
      op.Dirty(ip);
      WALFS_RETURN_IF_ERROR(op.Commit().status());
    }
  }
  WALFS_RETURN_IF_ERROR(DestroyXattrs(ip));
  Op op(this);
  WALFS_RETURN_IF_ERROR(op.Begin(TransType::kRemove, 0));
  WALFS_RETURN_IF_ERROR(RemoveUnlinked(op, ip));
  WALFS_RETURN_IF_ERROR(ialloc_->Unpick(op.tx(), ip->ino));
  StoreCore(ip, format::FreeInode(ip->ino, c.generation));
  op.Dirty(ip);
  WALFS_RETURN_IF_ERROR(op.Commit().status());
  counters_.inactivated.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace walfs::fs
