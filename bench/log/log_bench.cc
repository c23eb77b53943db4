// log_bench: the on-disk log under fsync-style load.  Each of N threads runs
// transactions that change one metadata block of its own and force the log
// for each (as fsync does), against a file-backed image with the io_uring
// engine and with the pread/pwrite fallback, side by side.  Reported per
// (engine, threads): commits/s, log MB/s, log writes, the group-commit
// factor (transactions per log write: concurrent forces sharing one
// checkpoint and one record), and p50/p99 force latency.
//
// Cells are interleaved within each repetition so machine noise spreads
// over the variants; the table shows medians and the min-max spread.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "base/clock.h"
#include "base/histogram.h"
#include "base/report.h"
#include "journal/buf_item.h"
#include "journal/log.h"
#include "journal/transaction.h"
#include "tools/cli.h"

namespace walfs::bench {
namespace {

using journal::BufLogItem;
using journal::Log;
using journal::Transaction;
using journal::TransType;

constexpr std::uint32_t kBlockSize = 4096;
constexpr std::uint32_t kChange = 256;  // bytes each transaction changes

struct Options {
  std::vector<int> threads{1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> engines{"io_uring", "sync"};
  // inline: the forcer writes the record it forces (the default);
  // device: through the device's threads, as before it.
  std::vector<std::string> force_io{"inline", "device"};
  double seconds = 2.0;
  int reps = 3;
  int log_mib = 64;
  bool direct = false;
  bool quick = false;
  std::string dir = "/var/tmp";
  std::string json_path, csv_path;
};

struct CellResult {
  double commits_per_s = 0;
  double log_mb_per_s = 0;
  std::uint64_t commits = 0;
  std::uint64_t log_writes = 0;
  std::uint64_t checkpoints = 0;
  double force_p50_us = 0;
  double force_p99_us = 0;
  std::string device;
};

Result<CellResult> RunCell(const Options& o, const std::string& engine, const std::string& force_io,
                           int threads) {
  const std::string path = fmt::format("{}/walfs_log_bench.{}.img", o.dir, ::getpid());
  const std::uint32_t meta_blocks = 64 + static_cast<std::uint32_t>(threads);
  const std::uint64_t log_offset = std::uint64_t{meta_blocks} * kBlockSize;
  const auto log_sectors = static_cast<std::uint32_t>(static_cast<std::uint64_t>(o.log_mib) << 20 >> 9);
  ::unlink(path.c_str());
  FileDeviceOptions fo;
  WALFS_ASSIGN_OR_RETURN(fo.engine, ParseIoEngine(engine));
  fo.create = true;
  fo.direct_io = o.direct;
  fo.size_bytes = log_offset + std::uint64_t{log_sectors} * 512;
  auto dev_or = FileDevice::Open(path, fo);
  ::unlink(path.c_str());  // the open fd keeps it until the cell ends
  WALFS_RETURN_IF_ERROR(dev_or.status());
  std::unique_ptr<FileDevice> dev = std::move(dev_or).value();
  CellResult r;
  r.device = dev->Describe();

  journal::LogOptions lo;
  lo.device = dev.get();
  lo.log_offset = log_offset;
  lo.log_sectors = log_sectors;
  lo.inline_force_io = force_io == "inline";
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<Log> log, Log::Open(lo));
  std::vector<std::unique_ptr<BufLogItem>> blocks;
  for (int t = 0; t < threads; ++t) {
    blocks.push_back(std::make_unique<BufLogItem>(journal::BufLogItemOptions{
        .device = dev.get(),
        .blkno = static_cast<std::uint64_t>(t),
        .lsn_offset = 0,
        .ail = &log->ail(),
        .on_error = [l = log.get()](Status s) { l->Shutdown(s); }}));
  }
  const journal::LogStats before = log->Stats();
  Histogram force_ns;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> commits{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  const std::int64_t t0 = MonotonicNanos();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      BufLogItem* b = blocks[static_cast<std::size_t>(t)].get();
      std::uint8_t value = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        auto tx = Transaction::Begin(log.get(), TransType::kSetattr);
        if (!tx.ok()) {
          failed = true;
          return;
        }
        b->Lock();
        std::memset(b->data().data() + 64, ++value, kChange);
        b->LogRange(64, 64 + kChange - 1);
        tx->Join(b);
        auto seq = tx->Commit();
        b->Unlock();
        if (!seq.ok()) {
          failed = true;
          return;
        }
        const std::int64_t f0 = MonotonicNanos();
        if (!log->Force(*seq).ok()) {
          failed = true;
          return;
        }
        force_ns.Record(MonotonicNanos() - f0);
        commits.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& w : workers) w.join();
  const double secs = static_cast<double>(MonotonicNanos() - t0) / 1e9;
  const journal::LogStats after = log->Stats();
  if (failed) return Status::Internal(fmt::format("the log failed: {}", log->status().ToString()));
  WALFS_RETURN_IF_ERROR(log->Close());
  log.reset();
  blocks.clear();
  r.commits = commits.load();
  r.commits_per_s = static_cast<double>(r.commits) / secs;
  r.log_writes = after.writer.records - before.writer.records;
  r.checkpoints = after.cil.pushes - before.cil.pushes;
  r.log_mb_per_s =
      static_cast<double>(after.writer.record_bytes - before.writer.record_bytes) / secs / 1e6;
  r.force_p50_us = static_cast<double>(force_ns.Percentile(0.5)) / 1e3;
  r.force_p99_us = static_cast<double>(force_ns.Percentile(0.99)) / 1e3;
  return r;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"log_bench: commits/s, log MB/s, group commit and force latency of the walfs log",
               "log_bench"};
  cli::AddVersion(app, "log_bench");
  app.add_option("--threads", o.threads, "committing threads per cell")->check(cli::AtLeast(1));
  app.add_option("--engines", o.engines, "io_uring and/or sync (the pread/pwrite fallback)")
      ->check(CLI::IsMember({"io_uring", "sync"}));
  app.add_option("--force-io", o.force_io,
                 "inline (the forcer writes its record) and/or device (through the device's threads)")
      ->check(CLI::IsMember({"inline", "device"}));
  app.add_option("--seconds", o.seconds, "run time per cell")->check(cli::Positive());
  app.add_option("--reps", o.reps, "repetitions (medians are reported)")->check(cli::AtLeast(1));
  app.add_option("--log-mib", o.log_mib, "log size in MiB")->check(cli::AtLeast(1));
  app.add_option("--dir", o.dir, "directory for the image file (its filesystem is what is measured)");
  app.add_flag("--direct", o.direct, "open the image with O_DIRECT");
  app.add_flag("--quick", o.quick, "a short run: 1, 4 and 16 threads, 0.5 s cells, one repetition");
  app.add_option("--json", o.json_path, "write the table as JSON (one object per row)");
  app.add_option("--csv", o.csv_path, "write the table as CSV");
  if (auto code = cli::Parse(app, argc, argv)) return *code;
  if (o.quick) {
    o.threads = {1, 4, 16};
    o.seconds = 0.5;
    o.reps = 1;
  }
  struct Acc {
    std::vector<double> cps, mbps, factor, p50, p99, writes;
    std::string device;
  };
  std::map<std::tuple<std::string, std::string, int>, Acc> acc;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int threads : o.threads) {
      for (const std::string& engine : o.engines) {
        for (const std::string& fio : o.force_io) {
          Result<CellResult> r = RunCell(o, engine, fio, threads);
          if (!r.ok()) {
            fmt::print(stderr, "log_bench: {} threads, {}, force_io {}: {}\n", threads, engine, fio,
                       r.status().ToString());
            return 1;
          }
          Acc& a = acc[{engine, fio, threads}];
          a.cps.push_back(r->commits_per_s);
          a.mbps.push_back(r->log_mb_per_s);
          a.writes.push_back(static_cast<double>(r->log_writes));
          a.factor.push_back(r->log_writes ? static_cast<double>(r->commits) /
                                                 static_cast<double>(r->log_writes)
                                           : 0.0);
          a.p50.push_back(r->force_p50_us);
          a.p99.push_back(r->force_p99_us);
          a.device = r->device;
          fmt::print(stderr, "  rep {} {:>8} {:>6} {:>2} threads: {:.0f} commits/s\n", rep + 1, engine, fio,
                     threads, r->commits_per_s);
        }
      }
    }
  }
  for (const std::string& engine : o.engines) {
    auto it = acc.find({engine, o.force_io.front(), o.threads.front()});
    if (it != acc.end()) fmt::print("device ({}): {}\n", engine, it->second.device);
  }
  // vs_sync: against the sync engine with the same force_io; vs_device:
  // against force_io=device with the same engine.
  Report report({"engine", "force_io", "threads", "commits_per_s", "spread", "vs_sync", "vs_device",
                 "log_mb_per_s", "log_writes_per_s", "tx_per_log_write", "force_p50_us", "force_p99_us"});
  for (int threads : o.threads) {
    for (const std::string& engine : o.engines) {
      for (const std::string& fio : o.force_io) {
        const Acc& a = acc[{engine, fio, threads}];
        const double cps = Median(a.cps);
        const auto [mn, mx] = std::minmax_element(a.cps.begin(), a.cps.end());
        const auto sync = acc.find({"sync", fio, threads});
        const double base = sync != acc.end() ? Median(sync->second.cps) : 0.0;
        const auto device = acc.find({engine, "device", threads});
        const double dbase = device != acc.end() ? Median(device->second.cps) : 0.0;
        report.AddRow({Cell(engine), Cell(fio), Cell(threads), Cell(cps, 0),
                       Cell(fmt::format("{:.0f}-{:.0f}", *mn, *mx)), Cell(base > 0 ? cps / base : 0.0, 2),
                       Cell(dbase > 0 ? cps / dbase : 0.0, 2), Cell(Median(a.mbps), 2),
                       Cell(Median(a.writes) / o.seconds, 0), Cell(Median(a.factor), 2),
                       Cell(Median(a.p50), 1), Cell(Median(a.p99), 1)});
      }
    }
  }
  report.Print(stdout, fmt::format("log_bench: {} s cells, medians of {} run(s), image in {}",
                                   o.seconds, o.reps, o.dir));
  if (!o.json_path.empty()) {
    Status s = report.WriteJson(o.json_path);
    if (!s.ok()) fmt::print(stderr, "log_bench: {}\n", s.ToString());
  }
  if (!o.csv_path.empty()) {
    Status s = report.WriteCsv(o.csv_path);
    if (!s.ok()) fmt::print(stderr, "log_bench: {}\n", s.ToString());
  }
  return 0;
}

}  // namespace
}  // namespace walfs::bench

int main(int argc, char** argv) { return walfs::bench::Main(argc, argv); }
