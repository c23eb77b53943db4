#include "journal/log_recover.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "journal/buf_log_format.h"
#include "journal/journal_events.h"
#include "journal/log_reader.h"
#include "journal/log_transactions.h"

namespace walfs::journal {

std::string_view ReplayActionName(ReplayAction a) {
  switch (a) {
    case ReplayAction::kReplayed: return "replayed";
    case ReplayAction::kSkippedNewer: return "skipped_newer";
    case ReplayAction::kCancelled: return "cancelled";
  }
  return "?";
}

namespace {

// One logged version of a block, at its place in the log.
struct BufferVersion {
  std::size_t tx = 0;         // index into the committed transactions
  std::uint64_t ordinal = 0;  // position among all items, in commit order
  BufLogFormat f;
};

struct CachedBlock {
  std::uint32_t block_size = 0;
  std::vector<std::byte> original;  // as read from the device
  std::vector<std::byte> bytes;     // with the replayed versions applied
  Lsn max_lsn = kNullLsn;           // newest start LSN replayed into it
  bool changed = false;
  std::uint8_t type = 0;            // of the last version applied, for the seal hook
};

struct Replay {
  std::vector<BufferVersion> versions;           // in commit order
  std::map<std::uint64_t, std::uint64_t> cancel;  // blkno -> ordinal of its last cancel
  std::map<std::uint64_t, CachedBlock> blocks;    // blkno -> block
};

// Reads the records from tail to head and reassembles the transactions.
Status ReadTransactions(const RecoverOptions& o, const LogPosition& pos, TransactionAssembler* tx,
                        RecoverReport* r) {
  LogReader reader(o.log, pos.tail, pos.head);
  LogRecordAt rec;
  while (reader.Next(&rec)) {
    ++r->records;
    WALFS_RETURN_IF_ERROR(tx->AddRecord(rec.lsn, rec.record.payload));
  }
  if (!reader.status().ok())
    return Status::Corruption(fmt::format("log recovery, reading tail {} to head {}: {}",
                                          LsnString(pos.tail), LsnString(pos.head),
                                          reader.status().message()));
  r->transactions = tx->committed().size();
  r->dropped_open = tx->open();
  r->orphan_ops = tx->orphan_ops();
  r->skipped_ops = tx->skipped_ops();
  return Status::Ok();
}

// Pass 1: decode every buffer body, check it fits the device, and note the
// last cancel record of each block.
Status Pass1(const std::vector<CommittedTransaction>& txs, const BlockDevice& metadata,
             Replay* rp, RecoverReport* r) {
  std::map<std::uint64_t, std::uint32_t> sizes;
  std::uint64_t ordinal = 0;
  for (std::size_t t = 0; t < txs.size(); ++t) {
    for (std::size_t i = 0; i < txs[t].items.size(); ++i, ++ordinal) {
      const LoggedItem& item = txs[t].items[i];
      if (item.type != ItemType::kBuffer) continue;  // kTransHeader: nothing to replay
      const auto where = [&] {
        return fmt::format("log recovery: transaction {} (start {}, commit {}) item {}",
                           txs[t].tid, LsnString(txs[t].start_lsn), LsnString(txs[t].commit_lsn), i);
      };
      Result<BufLogFormat> f = DecodeBufLog(item.body);
      if (!f.ok()) return Status::Corruption(fmt::format("{}: {}", where(), f.status().message()));
      if (f->byte_offset() + f->block_size > metadata.size_bytes())
        return Status::Corruption(fmt::format("{}: block {} ({} bytes) lies beyond the {}-byte device",
                                              where(), f->blkno, f->block_size,
                                              metadata.size_bytes()));
      auto [it, fresh] = sizes.emplace(f->blkno, f->block_size);
      if (!fresh && it->second != f->block_size)
        return Status::Corruption(fmt::format("{}: block {} logged as {} bytes, earlier as {}",
                                              where(), f->blkno, f->block_size, it->second));
      if (f->cancelled()) {
        ++r->cancel_records;
        rp->cancel[f->blkno] = ordinal;
      }
      rp->versions.push_back(BufferVersion{t, ordinal, std::move(f).value()});
    }
  }
  return Status::Ok();
}

// Pass 2: replay into the block cache, in commit order.
Status Pass2(const std::vector<CommittedTransaction>& txs, BlockDevice* metadata,
             const RecoverOptions& o, Replay* rp, RecoverReport* r) {
  for (const BufferVersion& v : rp->versions) {
    const BufLogFormat& f = v.f;
    if (f.cancelled()) continue;
    const Lsn start = txs[v.tx].start_lsn;
    auto action = ReplayAction::kReplayed;
    if (auto c = rp->cancel.find(f.blkno); c != rp->cancel.end() && c->second > v.ordinal) {
      action = ReplayAction::kCancelled;  // freed later: this version must not reach the disk
      ++r->buffers_cancelled;
    } else {
      auto [it, fresh] = rp->blocks.try_emplace(f.blkno);
      CachedBlock& b = it->second;
      if (fresh) {
        b.block_size = f.block_size;
        b.original.resize(f.block_size);
        WALFS_RETURN_IF_ERROR(metadata->Read(f.byte_offset(), b.original.data(), f.block_size));
        b.bytes = b.original;
      }
      // Decided on the stamp the block had on disk, not on one this replay
      // wrote: two transactions may start in the same record.
      const bool stamped = f.lsn_offset != kBufNoLsn &&
                           (!o.stamp_valid || o.stamp_valid(f.type, f.blkno, b.original));
      if (stamped && BufStampedLsn(b.original, f.lsn_offset) >= start) {
        action = ReplayAction::kSkippedNewer;
        ++r->buffers_skipped_newer;
      } else {
        WALFS_RETURN_IF_ERROR(ApplyBufLog(f, b.bytes));
        // The stamp only grows, even if commit order is not start order,
        // so that a second recovery skips everything this one replayed.
        b.max_lsn = std::max(b.max_lsn, start);
        StampBufLsn(b.bytes, f.lsn_offset, b.max_lsn);
        b.changed = true;
        b.type = f.type;
        ++r->buffers_replayed;
      }
    }
    WALFS_TRACE(kTraceRecoverBuffer, f.blkno, start, static_cast<std::uint64_t>(action));
  }
  // Blocks of different sizes could overlap; which write would land last
  // is then a matter of order, so refuse rather than guess.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [offset, end)
  for (const auto& [blkno, b] : rp->blocks)
    if (b.changed) ranges.emplace_back(blkno * b.block_size, (blkno + 1) * b.block_size);
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return Status::Corruption(fmt::format("log recovery: logged blocks overlap at byte {}",
                                            ranges[i].first));
  r->blocks_written = ranges.size();
  return Status::Ok();
}

}  // namespace

Result<RecoverReport> RecoverLog(const RecoverOptions& o) {
  BlockDevice* metadata = o.metadata != nullptr ? o.metadata : o.log.device;
  WALFS_RETURN_IF_ERROR(o.log.Validate());
  WALFS_ASSIGN_OR_RETURN(const LogPosition pos, FindLogPosition(o.log, o.max_inflight_sectors));
  RecoverReport r;
  r.position = pos;
  WALFS_TRACE(kTraceRecoverStart, pos.head, pos.tail, pos.empty, pos.clean, o.dry_run);
  if (pos.empty || pos.clean) {
    WALFS_TRACE(kTraceRecoverDone, 0, 0, 0, 0, o.dry_run);
    return r;
  }
  r.replayed = true;

  TransactionAssembler tx;
  WALFS_RETURN_IF_ERROR(ReadTransactions(o, pos, &tx, &r));
  WALFS_TRACE(kTraceRecoverPass, 0, r.records, r.transactions, r.dropped_open);
  Replay rp;
  WALFS_RETURN_IF_ERROR(Pass1(tx.committed(), *metadata, &rp, &r));
  WALFS_TRACE(kTraceRecoverPass, 1, r.records, r.transactions, rp.versions.size());
  WALFS_RETURN_IF_ERROR(Pass2(tx.committed(), metadata, o, &rp, &r));
  WALFS_TRACE(kTraceRecoverPass, 2, r.records, r.transactions, r.blocks_written);

  // Everything is decided; only now does the device change.  Each block is
  // written whole, so a crash among these writes leaves every block either
  // as it was or as replayed, and a second recovery ends in the same image.
  if (!o.dry_run && r.blocks_written > 0) {
    for (auto& [blkno, b] : rp.blocks) {
      if (!b.changed) continue;
      if (o.seal) o.seal(b.type, b.bytes);
      WALFS_RETURN_IF_ERROR(metadata->Write(blkno * b.block_size, b.bytes.data(), b.block_size));
    }
    WALFS_RETURN_IF_ERROR(metadata->Flush());
  }
  WALFS_TRACE(kTraceRecoverDone, r.buffers_replayed, r.buffers_skipped_newer, r.buffers_cancelled,
              r.blocks_written, o.dry_run);
  return r;
}

std::string RecoverReportString(const RecoverReport& r) {
  if (!r.replayed)
    return fmt::format("{}: nothing to replay", LogPositionString(r.position));
  return fmt::format(
      "{}: {} record(s), {} transaction(s) ({} uncommitted dropped, {} orphan op(s), {} skipped "
      "op(s)); buffers: {} replayed, {} already on disk, {} cancelled by {} cancel record(s); "
      "{} block(s) written",
      LogPositionString(r.position), r.records, r.transactions, r.dropped_open, r.orphan_ops,
      r.skipped_ops, r.buffers_replayed, r.buffers_skipped_newer, r.buffers_cancelled,
      r.cancel_records, r.blocks_written);
}

}  // namespace walfs::journal
