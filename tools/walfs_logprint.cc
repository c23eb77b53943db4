// walfs-logprint: prints a walfs log the way xfs_logprint prints an XFS one:
// where the head and tail are, then every record from the tail to the head
// with its ops, or (-t) the transactions they make up.
//
//   walfs-logprint LOG                 records and ops, tail to head
//   walfs-logprint -a LOG              every record the log region still holds, the
//                                      checkpointed ones before the tail too
//   walfs-logprint -t LOG              transactional view: committed transactions
//   walfs-logprint -c LOG              continue past a bad record
//   walfs-logprint --offset B --sectors N IMAGE   a log region inside a larger file
//
// LOG is a walfs image (its superblock says where the log is) or a raw log
// (a file holding just the log region); --offset/--sectors select the
// region in any file.  A file that is not a walfs image is taken for a log
// only if its last record before the head is a walfs log record: random
// bytes, zeros or another filesystem are refused (exit 1), not printed as
// an empty log.  Exit status: 0 the log reads cleanly, 1 it holds
// corruption (reported, and with -c printed around) or the file is neither a
// walfs image nor a walfs log, 2 bad usage or the file cannot be opened.
//
// Each buffer item is named by the kind of block it logs (inodes, directory,
// extents or xattr B+tree node, AG header, bitmap, inode map) with the
// inodes or AG it belongs to, as far as the logged bytes and the image's
// geometry tell.
//
// Like xfsprogs' logprint it links the journal library and parses nothing
// itself.  It opens the file read-only, so it prints an image its user may
// not write (mode 0444, `chattr +i`, read-only media).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "base/coding.h"
#include "fs/format/block_header.h"
#include "fs/format/block_types.h"
#include "fs/format/superblock_format.h"
#include "journal/buf_log_format.h"
#include "journal/log.h"
#include "journal/log_format.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_transactions.h"
#include "tools/cli.h"

namespace walfs::journal {
namespace {

constexpr int kExitOk = 0, kExitCorrupt = 1, kExitUsage = 2;

using fs::format::BlockType;
using fs::format::Superblock;

bool ChunkLogged(const BufLogFormat& b, std::uint32_t chunk) {
  return chunk / 32 < b.chunk_map.size() && (b.chunk_map[chunk / 32] >> (chunk % 32) & 1) != 0;
}

// The kind of block a buffer item logs and whose it is: the inodes whose
// bytes it holds (an inode chunk block), or the owner its block header names
// when the header was logged (an AG for AG metadata, an inode for B+tree
// nodes), and the AG the block lies in when the image's geometry is known.
std::string DescribeBlock(const BufLogFormat& b, const std::optional<Superblock>& sb) {
  const auto type = static_cast<BlockType>(b.type);
  std::string out(fs::format::BlockTypeName(type));
  if (type == BlockType::kInodes) {
    const std::uint32_t inode_size = sb ? sb->inode_size : fs::format::kInodeSize;
    const std::uint32_t per_block = b.block_size / inode_size;
    const std::uint32_t chunks_per_inode = std::max<std::uint32_t>(1, inode_size / kBufChunkSize);
    std::string inos;
    for (std::uint32_t slot = 0; slot < per_block; ++slot) {
      bool logged = false;
      for (std::uint32_t c = 0; c < chunks_per_inode; ++c) logged = logged || ChunkLogged(b, slot * chunks_per_inode + c);
      if (logged) inos += fmt::format("{}{}", inos.empty() ? "" : ",", b.blkno * per_block + slot);
    }
    if (!inos.empty()) out += " " + inos;
  } else if (type != BlockType::kRaw && ChunkLogged(b, 0) && b.data.size() >= fs::format::kBlockHeaderSize) {
    const fs::format::BlockHeader h = fs::format::DecodeBlockHeader(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(b.data.data()), fs::format::kBlockHeaderSize));
    const bool ag_owned = type == BlockType::kAgHeader || type == BlockType::kBitmap || type == BlockType::kImap;
    out += fmt::format(" of {} {}", ag_owned ? "AG" : "inode", h.owner);
  }
  if (sb && b.blkno >= sb->data_start() && sb->ag_blocks > 0)
    out += fmt::format(" (AG {})", (b.blkno - sb->data_start()) / sb->ag_blocks);
  return out;
}

// What an item body says, as far as this tool understands it.
std::string DescribeItem(ItemType type, std::string_view body, const std::optional<Superblock>& sb) {
  switch (type) {
    case ItemType::kTransHeader:
      if (body.size() >= 16)
        return fmt::format("checkpoint seq {}  items {}  item bytes {}", DecodeFixed64(body.data()),
                           DecodeFixed32(body.data() + 8), DecodeFixed32(body.data() + 12));
      return fmt::format("short header ({} bytes)", body.size());
    case ItemType::kBuffer: {
      Result<BufLogFormat> b = DecodeBufLog(body);
      if (!b.ok()) return fmt::format("undecodable: {}", b.status().message());
      std::uint32_t chunks = 0;
      for (std::uint32_t w : b->chunk_map) chunks += static_cast<std::uint32_t>(__builtin_popcount(w));
      return fmt::format("blkno {}  block {}  {}{} chunks, {} bytes  {}", b->blkno, b->block_size,
                         b->cancelled() ? "CANCEL  " : "", chunks, b->data.size(), DescribeBlock(*b, sb));
    }
    default:
      return "";
  }
}

void PrintRecord(const LogRecordAt& rec, const std::optional<Superblock>& sb, std::string_view note = {}) {
  const RecordHeader& h = rec.record.header;
  fmt::print("{:=<78}\n", "");
  fmt::print("cycle: {}  lsn: {}  prev: {}  tail: {}  len: {}  ops: {}  sectors: {}{}{}\n", h.cycle,
             LsnString(h.lsn), LsnString(h.prev_lsn), LsnString(h.tail_lsn), h.len, h.num_ops,
             rec.sectors, (h.flags & kRecordUnmount) ? "  UNMOUNT" : "", note);
  OpReader ops(rec.record.payload);
  OpHeader op;
  std::string_view body;
  for (int i = 0; ops.Next(&op, &body); ++i) {
    // A split body (CONTINUE/WAS_CONT) is only whole in the -t view.
    const bool whole = (op.flags & (kOpContinue | kOpWasCont)) == 0;
    fmt::print("  op {:>3}: tid {:<10} len {:<6} flags {:<20} type {}  {}\n", i, op.tid, op.len,
               OpFlagsString(op.flags), ItemTypeName(op.type),
               whole ? DescribeItem(op.type, body, sb) : "");
  }
  if (!ops.error().empty()) fmt::print("  ops: {}\n", ops.error());
}

// Whether a region that is not an image's log is a walfs log: the search
// for the head found a last record, and it reads back as a whole, valid
// record (FindLogPosition alone takes any bytes for a log written in some
// cycle).
bool HoldsALogRecord(const LogRegion& region, const LogPosition& pos) {
  if (pos.empty || pos.last_record == kNullLsn) return false;
  Result<LogRecordAt> rec = ReadRecordAt(region, SectorOf(pos.last_record), CycleOf(pos.last_record));
  return rec.ok() && rec->record.kind == DecodedRecord::Kind::kOk;
}

// -a: every record the region still holds, in the order of the region.  A
// sector before the head was written in the head's cycle, one at or after
// it in the cycle before; a record is found by its header, whatever lies
// between (the remains of records the head has overwritten) is skipped.
int PrintWholeLog(const LogRegion& region, const LogPosition& pos, const std::optional<Superblock>& sb) {
  const auto abs = [&](Lsn l) { return std::uint64_t{CycleOf(l)} * region.sectors + SectorOf(l); };
  std::uint64_t active = 0, checkpointed = 0;
  for (std::uint32_t s = 0; s < region.sectors;) {
    const std::uint32_t cycle = s < SectorOf(pos.head) ? CycleOf(pos.head) : CycleOf(pos.head) - 1;
    if (cycle == 0) break;  // the first cycle has not reached here yet
    Result<LogRecordAt> rec = ReadRecordAt(region, s, cycle);
    if (!rec.ok()) {
      fmt::print(stderr, "walfs-logprint: reading sector {}: {}\n", s, rec.status().message());
      return kExitCorrupt;
    }
    if (rec->record.kind != DecodedRecord::Kind::kOk) {
      ++s;
      continue;
    }
    const bool is_active = abs(rec->lsn) >= abs(pos.tail) && abs(rec->lsn) < abs(pos.head);
    PrintRecord(*rec, sb, is_active ? "" : "  [checkpointed: before the tail]");
    ++(is_active ? active : checkpointed);
    s += rec->sectors;
  }
  fmt::print("{:=<78}\n", "");
  fmt::print("{} records in the log region: {} between tail and head, {} checkpointed before the tail\n",
             active + checkpointed, active, checkpointed);
  return kExitOk;
}

int Run(const std::string& path, std::uint64_t offset, std::uint32_t sectors, bool transactional,
        bool keep_going, bool all) {
  // Read-only, as xfs_logprint: it works on an image nobody may write.
  auto dev = FileDevice::Open(path, {.read_only = true});
  if (!dev.ok()) {
    fmt::print(stderr, "walfs-logprint: {}: {}\n", path, dev.status().message());
    return kExitUsage;
  }
  // An image names its own log; a raw log is the whole file.
  bool image = false;
  std::optional<Superblock> image_sb;
  if (offset == 0 && sectors == 0 && (*dev)->size_bytes() >= fs::format::kSuperSize) {
    std::vector<std::byte> block(fs::format::kSuperSize);
    if ((*dev)->Read(0, block.data(), block.size()).ok()) {
      auto sb = fs::format::DecodeSuperblock(block, (*dev)->size_bytes());
      if (sb.ok()) {
        offset = sb->log_offset();
        sectors = sb->log_sectors();
        image = true;
        image_sb = *sb;
        fmt::print("image: walfs {}, {}\n", fs::format::UuidString(sb->uuid),
                   sb->clean() ? "clean" : "not cleanly unmounted");
      } else if (std::to_integer<std::uint8_t>(block[0]) == 'W' &&
                 std::to_integer<std::uint8_t>(block[1]) == 'L') {
        fmt::print(stderr, "walfs-logprint: {}: {}\n", path, sb.status().message());
        return kExitCorrupt;
      }
    }
  }
  LogRegion region{dev->get(), offset,
                   sectors ? sectors
                           : static_cast<std::uint32_t>(((*dev)->size_bytes() - offset) / kLogSectorSize)};
  if (Status s = region.Validate(); !s.ok()) {
    fmt::print(stderr, "walfs-logprint: {}: {}\n", path, s.message());
    return kExitUsage;
  }
  Result<LogPosition> pos = FindLogPosition(region, RecoveryWindowSectors(region.sectors));
  if (!pos.ok()) {
    fmt::print(stderr, "walfs-logprint: {}: {}\n", path, pos.status().message());
    return kExitCorrupt;
  }
  if (!image && !HoldsALogRecord(region, *pos)) {
    fmt::print(stderr,
               "walfs-logprint: {}: neither a walfs image nor a walfs log (no walfs log record{}); "
               "--offset and --sectors select a log inside a larger file\n",
               path, offset || sectors ? " in the region given" : "");
    return kExitCorrupt;
  }
  fmt::print("log: {}, {} sectors ({} KiB) at offset {}\n", path, region.sectors,
             std::uint64_t{region.sectors} * kLogSectorSize / 1024, region.offset);
  fmt::print("{}\n", LogPositionString(*pos));
  if (pos->empty) return kExitOk;
  if (all) return PrintWholeLog(region, *pos, image_sb);

  int rc = kExitOk;
  TransactionAssembler tx;
  std::uint64_t records = 0;
  const auto abs = [&](Lsn l) { return std::uint64_t{CycleOf(l)} * region.sectors + SectorOf(l); };
  Lsn from = pos->tail;
  for (bool done = false; !done;) {
    LogReader reader(region, from, pos->head);
    LogRecordAt rec;
    while (reader.Next(&rec)) {
      ++records;
      if (!transactional) PrintRecord(rec, image_sb);
      if (Status s = tx.AddRecord(rec.lsn, rec.record.payload); !s.ok()) {
        fmt::print("** {}\n", s.ToString());
        rc = kExitCorrupt;
        if (!keep_going) return rc;
      }
    }
    if (reader.status().ok()) break;
    fmt::print("** {}\n", reader.status().ToString());
    rc = kExitCorrupt;
    if (!keep_going) return rc;
    // -c: look for the next good record after the bad one, sector by sector.
    done = true;
    for (Lsn p = AdvanceLsn(reader.position(), 1, region.sectors); abs(p) < abs(pos->head);
         p = AdvanceLsn(p, 1, region.sectors)) {
      Result<LogRecordAt> probe = ReadRecordAt(region, SectorOf(p), CycleOf(p));
      if (probe.ok() && probe->record.kind == DecodedRecord::Kind::kOk) {
        fmt::print("** resuming at {}\n", LsnString(p));
        from = p;
        done = false;
        break;
      }
    }
  }
  if (transactional) {
    for (const CommittedTransaction& t : tx.committed()) {
      fmt::print("{:=<78}\n", "");
      fmt::print("transaction tid {}  start {}  commit {}  items {}\n", t.tid,
                 LsnString(t.start_lsn), LsnString(t.commit_lsn), t.items.size());
      for (std::size_t i = 0; i < t.items.size(); ++i)
        fmt::print("  item {:>3}: {} ({} bytes)  {}\n", i, ItemTypeName(t.items[i].type),
                   t.items[i].body.size(), DescribeItem(t.items[i].type, t.items[i].body, image_sb));
    }
  }
  fmt::print("{:=<78}\n", "");
  fmt::print("{} records, {} committed transactions, {} uncommitted, {} orphan ops, {} unmount "
             "ops\n",
             records, tx.committed().size(), tx.open(), tx.orphan_ops(), tx.unmount_ops());
  return rc;
}

}  // namespace
}  // namespace walfs::journal

int main(int argc, char** argv) {
  CLI::App app{"walfs-logprint: print a walfs log, records or transactions", "walfs-logprint"};
  walfs::cli::AddVersion(app, "walfs-logprint");
  std::string path;
  std::uint64_t offset = 0;
  std::uint32_t sectors = 0;
  bool transactional = false, keep_going = false, all = false;
  app.add_option("LOG", path, "A walfs image, a raw log file, or any file with --offset/--sectors")->required();
  app.add_flag("-t,--transactions", transactional, "Print committed transactions, not records");
  app.add_flag("-c,--continue", keep_going, "Continue past bad records");
  auto* a = app.add_flag("-a,--all", all,
                         "Print every record the log region holds, those before the tail (checkpointed) too");
  app.add_option("--offset", offset, "Byte offset of the log region in the file");
  app.add_option("--sectors", sectors, "Log size in 512-byte sectors (default: to end of file)");
  a->excludes("-t");
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  return walfs::journal::Run(path, offset, sectors, transactional, keep_going, all);
}
