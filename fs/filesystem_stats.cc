// What a mounted filesystem reports of itself: statfs(2)'s numbers
// (StatFs, AvailableBytes), and the counters of every component as
// `.walfs/stats` shows them (StatsText; docs/stats.md lists each).
#include "fs/filesystem.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_types.h"

namespace walfs::fs {

std::uint64_t Filesystem::AvailableBytes() const {
  const std::int64_t free_now = std::max<std::int64_t>(0, alloc_->FreeTotal());
  const std::int64_t avail = std::max<std::int64_t>(0, free_now - reserved_blocks_.load() - kFreeingPool);
  return static_cast<std::uint64_t>(avail) * sb_.block_size;
}

Result<struct statvfs> Filesystem::StatFs() NO_THREAD_SAFETY_ANALYSIS {
  struct statvfs st {};
  st.f_bsize = sb_.block_size;
  st.f_frsize = sb_.block_size;
  st.f_blocks = sb_.total_blocks - sb_.data_start();
  const std::int64_t free_now = std::max<std::int64_t>(0, alloc_->FreeTotal());
  st.f_bfree = static_cast<fsblkcnt_t>(free_now);
  st.f_bavail = static_cast<fsblkcnt_t>(std::max<std::int64_t>(0, free_now - reserved_blocks_.load() - kFreeingPool));
  std::uint64_t icount = 0, ifree = 0;
  for (std::uint32_t agno = 0; agno < sb_.ag_count; ++agno) {
    WALFS_ASSIGN_OR_RETURN(BufRef agh, cache_->Read(sb_.AgStart(agno), format::BlockType::kAgHeader));
    agh->Lock();
    const format::AgHeader h = format::PeekAgHeader(agh->data());
    agh->Unlock();
    icount += h.icount;
    ifree += std::min(h.ifree, h.icount);
  }
  // Inodes come in chunks from free space: what is free can still become inodes.
  const std::uint64_t possible = ifree + static_cast<std::uint64_t>(free_now) / sb_.blocks_per_chunk() * sb_.inodes_per_chunk;
  st.f_files = icount - ifree + possible;
  st.f_ffree = possible;
  st.f_favail = possible;
  st.f_namemax = format::kMaxNameLen;
  st.f_fsid = DecodeFixed64(reinterpret_cast<const char*>(sb_.uuid.data()));
  return st;
}

Status Filesystem::SetWakeMode(journal::WakeMode mode) {
  log_->space().set_wake_mode(mode);
  return Status::Ok();
}

journal::WakeMode Filesystem::wake_mode() const { return log_->space().wake_mode(); }

std::string Filesystem::StatsText() const {
  std::string out;
  const journal::LogStats ls = log_->Stats();
  out += fmt::format("log_head {}\nlog_durable {}\nlog_tail {}\nlog_shutdown {}\n", journal::LsnString(ls.head),
                     journal::LsnString(ls.durable), journal::LsnString(ls.tail), ls.shutdown ? 1 : 0);
  out += fmt::format("log_bytes {}\ntail_space_bytes {}\nwake_mode {}\nlive_tickets {}\n", ls.space.log_bytes,
                     ls.space.tail_space, journal::WakeModeName(ls.space.wake_mode), ls.space.live_tickets);
  for (const journal::GrantHeadStats* h : {&ls.space.reserve_head, &ls.space.write_head}) {
    out += fmt::format(
        "{0}_grant_bytes {1}\n{0}_free_bytes {2}\n{0}_queued {3}\n{0}_sleeps {4}\n{0}_wake_passes {5}\n"
        "{0}_wakes_issued {6}\n{0}_wake_syscalls {7}\n{0}_duplicate_wakes {8}\n"
        "{0}_duplicate_wakes_avoided {9}\n{0}_useful_wakes {10}\n{0}_futile_wakes {11}\n"
        "{0}_signals_under_lock {12}\n{0}_signals_after_unlock {13}\n",
        h->name, h->grant_bytes, h->free_bytes, h->queued, h->sleeps, h->wake_passes, h->wakes_issued,
        h->wake_syscalls, h->duplicate_wakes, h->duplicate_wakes_avoided, h->useful_wakes,
        h->futile_wakes, h->signals_under_lock, h->signals_after_unlock);
  }
  out += fmt::format("ail_items {}\nail_tail {}\nail_target {}\nail_pushes {}\nail_tail_moves {}\nail_log_forces {}\n",
                     ls.ail.items, journal::LsnString(ls.ail.tail), journal::LsnString(ls.ail.target), ls.ail.pushes,
                     ls.ail.tail_moves, ls.ail.log_forces);
  out += fmt::format("cil_commits {}\ncil_pushes {}\ncil_forces {}\ncil_forced_pushes {}\ncil_empty_forces {}\n",
                     ls.cil.commits, ls.cil.pushes, ls.cil.forces, ls.cil.forced_pushes, ls.cil.empty_forces);
  out += fmt::format("cil_background_pushes {}\ncil_timed_pushes {}\ncil_seq {}\ncil_items {}\ncil_committed_seq {}\n"
                     "cil_written_seq {}\n",
                     ls.cil.background_pushes, ls.cil.timed_pushes, ls.cil.seq, ls.cil.items, ls.cil.committed_seq,
                     ls.cil.written_seq);
  out += fmt::format(
      "cil_lazy_pushes {}\ncil_lazy_written {}\ncil_lazy_p50_us {}\ncil_lazy_p99_us {}\ncil_lazy_max_us {}\n"
      "cil_kick_flushes {}\n",
      ls.cil.lazy_pushes, ls.cil.lazy_written, ls.cil.lazy_p50_ns / 1000, ls.cil.lazy_p99_ns / 1000,
      ls.cil.lazy_max_ns / 1000, ls.cil.kick_flushes);
  out += fmt::format("log_records {}\nlog_preflushes {}\nlog_forces {}\n", ls.writer.records, ls.writer.preflushes,
                     ls.writer.forces);
  out += fmt::format("log_force_waits {}\nlog_force_wait_p50_us {}\nlog_force_wait_p99_us {}\nlog_force_wait_max_us {}\n",
                     ls.writer.force_waits, ls.writer.force_wait_p50_ns / 1000, ls.writer.force_wait_p99_ns / 1000,
                     ls.writer.force_wait_max_ns / 1000);
  out += fmt::format("log_written {}\nlog_record_bytes {}\nlog_lazy_records {}\nlog_span_preflushes {}\nlog_flushes {}\n",
                     journal::LsnString(ls.writer.written), ls.writer.record_bytes, ls.writer.lazy_records,
                     ls.writer.span_preflushes, ls.writer.flushes);
  const BlockDeviceStats ds = device_->stats();
  out += fmt::format("dev_reads {}\ndev_writes {}\ndev_flushes {}\ndev_fua_writes {}\ndev_preflush_writes {}\n",
                     ds.reads, ds.writes, ds.flushes, ds.fua_writes, ds.preflush_writes);
  const AllocStats as = alloc_->Stats();
  out += fmt::format("free_blocks {}\nreserved_blocks {}\nallocs {}\nfrees {}\nbusy_forces {}\n",
                     alloc_->FreeTotal(), reserved_blocks_.load(), as.allocs, as.frees, as.busy_forces);
  out += fmt::format("trims {}\ntrimmed_bytes {}\ntrim_busy_skips {}\ndev_discards {}\n", counters_.trims.load(),
                     counters_.trimmed_bytes.load(), as.trim_busy_skips, ds.discards);
  out += fmt::format("online_discards {}\nonline_discard_blocks {}\nonline_discard_errors {}\n", as.online_discards,
                     as.online_discard_blocks, as.online_discard_errors);
  const BufCacheStats bs = cache_->Stats();
  out += fmt::format("buffers {}\nbuffer_hits {}\nbuffer_misses {}\ninodes_cached {}\n", bs.buffers, bs.hits,
                     bs.misses, icache_->size());
  const auto& c = counters_;
  out += fmt::format(
      "creates {}\nremoves {}\nrenames {}\nwrites {}\nreads {}\nfsyncs {}\nbytes_written {}\n"
      "bytes_read {}\ntruncates {}\ninactivated {}\nfsync_flushes_covered {}\nsyncs {}\n",
      c.creates.load(), c.removes.load(), c.renames.load(), c.writes.load(), c.reads.load(),
      c.fsyncs.load(), c.bytes_written.load(), c.bytes_read.load(), c.truncates.load(),
      c.inactivated.load(), c.fsync_flushes_covered.load(), c.syncs.load());
  out += fmt::format("ag_header_waits {}\nag_header_wait_us {}\n", c.ag_header.waits.load(),
                     c.ag_header.wait_ns.load() / 1000);
  out += fmt::format("unwritten_conversions {}\nzeroout_blocks {}\n", c.unwritten_conversions.load(),
                     c.zeroout_blocks.load());
  return out;
}
}  // namespace walfs::fs
