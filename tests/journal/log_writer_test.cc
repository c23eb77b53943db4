// Specs of the log writer on its own: records and their ops as recovery
// reads them back, iclog switching and waiting, LSN-ordered completion even
// when the device finishes out of order, group commit at the record level,
// the fund, and the refusal to pass the tail.
#include "journal/log_writer.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/log_transactions.h"
#include "tests/journal/holding_device.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace log_writer_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr std::uint32_t kSectors = 1024;  // 512 KiB
constexpr std::int64_t kLogBytes = std::int64_t{kSectors} * kLogSectorSize;

struct Fixture {
  explicit Fixture(BlockDevice* dev, std::uint32_t iclog_count = 4,
                   std::function<Lsn()> tail = {}, bool inline_force_io = true) {
    space = testing::MakeSpace(kLogBytes);
    LogWriterOptions o;
    o.region = LogRegion{dev, 0, kSectors};
    o.iclog_count = iclog_count;
    o.iclog_bytes = LogWriter::kMinIclogBytes;
    o.space = space.get();
    // No AIL here: unless a test says otherwise the tail stays at the start
    // of the log, so recovery reads everything written.
    o.tail_lsn = tail ? std::move(tail) : [] { return MakeLsn(1, 0); };
    o.on_error = [this](const Status& s) { error = s; };
    o.inline_force_io = inline_force_io;
    auto w = LogWriter::Create(o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    writer = std::move(w).value();
  }
  std::unique_ptr<LogSpace> space;
  std::unique_ptr<LogWriter> writer;
  Status error;
};

// One transaction of `items` bodies of `len` bytes each.
std::vector<std::string> Bodies(int items, std::size_t len, char c) {
  return std::vector<std::string>(static_cast<std::size_t>(items), std::string(len, c));
}
std::vector<LogOp> Ops(std::uint32_t tid, const std::vector<std::string>& bodies) {
  std::vector<LogOp> ops{{tid, kOpStart, ItemType::kNone, {}}};
  for (const std::string& b : bodies) ops.push_back({tid, 0, ItemType::kBuffer, b});
  ops.push_back({tid, kOpCommit, ItemType::kNone, {}});
  return ops;
}
// The ops point into the bodies: they must outlive them.
std::vector<LogOp> Ops(std::uint32_t tid, std::vector<std::string>&& bodies) = delete;

std::vector<CommittedTransaction> ReadBack(BlockDevice* dev) {
  LogRegion region{dev, 0, kSectors};
  auto pos = FindLogPosition(region);
  EXPECT_TRUE(pos.ok()) << pos.status().ToString();
  LogReader reader(region, pos->tail, pos->head);
  TransactionAssembler tx;
  LogRecordAt rec;
  while (reader.Next(&rec)) EXPECT_TRUE(tx.AddRecord(rec.lsn, rec.record.payload).ok());
  EXPECT_TRUE(reader.status().ok()) << reader.status().ToString();
  return tx.committed();
}

TEST(LogWriter, OpsComeBackAsRecoveryReadsThemEvenWhenSplitAcrossRecords) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  Fixture f(&dev);
  const auto small = Bodies(3, 100, 'a');
  const auto big = Bodies(2, 40000, 'b');  // each body spans three records
  auto ops1 = Ops(7, small);
  auto ops2 = Ops(8, big);
  ASSERT_TRUE(f.writer->Write(ops1, 1 << 20, true, {}).ok());
  ASSERT_TRUE(f.writer->Write(ops2, 1 << 20, true, {}).ok());
  ASSERT_TRUE(f.writer->ForceAll().ok());
  const auto committed = ReadBack(&dev);
  ASSERT_EQ(committed.size(), 2u);
  EXPECT_EQ(committed[0].tid, 7u);
  ASSERT_EQ(committed[0].items.size(), 3u);
  EXPECT_EQ(committed[1].tid, 8u);
  ASSERT_EQ(committed[1].items.size(), 2u);
  EXPECT_EQ(committed[1].items[1].body, big[1]);
  const LogWriterStats s = f.writer->Stats();
  EXPECT_GT(s.split_ops, 0u);
  EXPECT_EQ(s.overcommitted_bytes, 0u);
}

// Three transactions of a record each, durable ones; each callback adds
// its record's LSN to *done (under *mu).
void WriteThreeRecords(Fixture* f, std::mutex* mu, std::vector<Lsn>* done) {
  const auto body = Bodies(1, 15000, 'x');  // one record per write
  for (std::uint32_t tid = 1; tid <= 3; ++tid) {
    auto ops = Ops(tid, body);
    auto r = f->writer->Write(ops, 1 << 20, true, [mu, done](const Status& s, const WriteResult& res) {
      EXPECT_TRUE(s.ok());
      std::lock_guard<std::mutex> l(*mu);
      done->push_back(res.end_lsn);
    });
    ASSERT_TRUE(r.ok());
  }
}

TEST(LogWriter, CompletionsAreProcessedInLsnOrderWhateverOrderTheDeviceFinishes) {
  MemoryDevice mem(std::uint64_t{kSectors} * kLogSectorSize);
  testing::HoldingDevice dev(&mem);
  // Every record through the device, the forced one too, so that the
  // device can finish them newest first.
  Fixture f(&dev, /*iclog_count=*/4, {}, /*inline_force_io=*/false);
  std::mutex mu;
  std::vector<Lsn> done_order;
  WriteThreeRecords(&f, &mu, &done_order);
  // Get the last one out too, without waiting (the device holds everything).
  std::thread forcer([&] { EXPECT_TRUE(f.writer->ForceAll().ok()); });
  ASSERT_TRUE(testing::Eventually([&] { return dev.held() >= 3; }));
  dev.ReleaseAll();  // newest first
  forcer.join();
  ASSERT_EQ(done_order.size(), 3u);
  EXPECT_TRUE(std::is_sorted(done_order.begin(), done_order.end()));
  EXPECT_EQ(f.writer->durable_lsn(), done_order.back());
}

// fsync without hand-offs: the forcer writes the record it forces itself
// and processes its completion on its own thread -- but in LSN order still:
// with the records before it held by the device, its callback waits for
// theirs, and the force returns once all three are durable.
TEST(LogWriter, AForcerWritesItsRecordItselfAndItCompletesAfterTheRecordsBeforeIt) {
  MemoryDevice mem(std::uint64_t{kSectors} * kLogSectorSize);
  testing::HoldingDevice dev(&mem);
  Fixture f(&dev, /*iclog_count=*/4);
  std::mutex mu;
  std::vector<Lsn> done_order;
  WriteThreeRecords(&f, &mu, &done_order);
  std::atomic<bool> forced{false};
  std::thread forcer([&] {
    EXPECT_TRUE(f.writer->ForceAll().ok());
    forced = true;
  });
  // The first two records (switched out full by their writers) are held;
  // the third is the forcer's, written on its thread.
  ASSERT_TRUE(testing::Eventually([&] { return f.writer->Stats().inline_records == 1; }));
  EXPECT_EQ(dev.held(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_TRUE(done_order.empty()) << "a record completed before the records ahead of it";
  }
  EXPECT_FALSE(forced.load());
  dev.ReleaseAll();  // newest first
  forcer.join();
  ASSERT_EQ(done_order.size(), 3u);
  EXPECT_TRUE(std::is_sorted(done_order.begin(), done_order.end()));
  EXPECT_EQ(f.writer->durable_lsn(), done_order.back());
  EXPECT_EQ(f.writer->Stats().inline_records, 1u);
}

TEST(LogWriter, AWriterWaitsForAFreeIclogWhenAllAreInFlight) {
  MemoryDevice mem(std::uint64_t{kSectors} * kLogSectorSize);
  testing::HoldingDevice dev(&mem);
  Fixture f(&dev, /*iclog_count=*/2, {}, /*inline_force_io=*/false);
  const auto body = Bodies(1, 15000, 'y');
  auto ops = Ops(1, body);
  ASSERT_TRUE(f.writer->Write(ops, 1 << 20, true, {}).ok());
  std::thread forcer([&] { EXPECT_TRUE(f.writer->ForceAll().ok()); });
  ASSERT_TRUE(testing::Eventually([&] { return dev.held() >= 1; }));
  // Two more records' worth while both iclogs are busy: the writer waits.
  std::atomic<bool> written{false};
  std::thread writer([&] {
    const auto more_bodies = Bodies(2, 15000, 'z');

    auto more = Ops(2, more_bodies);
    EXPECT_TRUE(f.writer->Write(more, 1 << 20, true, {}).ok());
    written = true;
  });
  ASSERT_TRUE(testing::Eventually([&] { return f.writer->Stats().iclog_waits > 0; }));
  EXPECT_FALSE(written.load());
  while (!written.load()) {
    dev.ReleaseAll();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  writer.join();
  forcer.join();
  std::atomic<bool> forced{false};
  std::thread last([&] {
    EXPECT_TRUE(f.writer->ForceAll().ok());
    forced = true;
  });
  while (!forced.load()) {
    dev.ReleaseAll();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  last.join();
  EXPECT_EQ(ReadBack(&mem).size(), 2u);
}

// A force that switches out the iclog a multi-op Write is copying into must
// not strand it: the last reference to leave writes it.
TEST(LogWriter, AForceDuringAMultiOpWriteNeverStrandsAnIclog) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  std::atomic<Lsn> tail{MakeLsn(1, 0)};
  Fixture f(&dev, 4, [&] { return tail.load(); });
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread forcer([&] {
    while (!stop) (void)f.writer->ForceAll();
  });
  const int total = 3000;
  std::thread writer([&] {
    const auto bodies = Bodies(3, 3000, 'x');
    for (int i = 0; i < total && !stop; ++i) {
      auto ops = Ops(static_cast<std::uint32_t>(i + 1), bodies);
      // Nothing is written back here, so let the tail follow the head.
      auto r = f.writer->Write(ops, 20000, true, [&](const Status& s, const WriteResult& res) {
        if (s.ok()) tail.store(res.end_lsn);
      });
      if (!r.ok()) break;
      writes.fetch_add(1);
    }
  });
  const bool finished = testing::Eventually([&] { return writes.load() >= total; },
                                            std::chrono::seconds(60));
  EXPECT_TRUE(finished) << "writes stalled at " << writes.load();
  if (!finished) f.writer->Shutdown(Status::Shutdown("stalled"));
  stop = true;
  forcer.join();
  writer.join();
  EXPECT_TRUE(f.writer->ForceAll().ok());
}

TEST(LogWriter, ConcurrentForcesOfOneRecordShareItsWrite) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  Fixture f(&dev);
  const auto ops_bodies = Bodies(1, 100, 'q');

  auto ops = Ops(1, ops_bodies);
  auto r = f.writer->Write(ops, 1 << 20, true, {});
  ASSERT_TRUE(r.ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] { EXPECT_TRUE(f.writer->Force(r->end_lsn).ok()); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.writer->Stats().records, 1u);
}

TEST(LogWriter, TheFundPaysForEveryByteAndTheSurplusGoesBack) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  Fixture f(&dev);
  // Charge the grant heads as a ticket would, then hand it all over.
  const std::int64_t fund = 64 * 1024;
  f.space->ChargeUnreserved(fund);
  const auto ops_bodies = Bodies(2, 30000, 'f');

  auto ops = Ops(1, ops_bodies);
  ASSERT_TRUE(f.writer->Write(ops, fund, true, {}).ok());
  ASSERT_TRUE(f.writer->ForceAll().ok());
  f.writer->ReturnFund();
  const LogWriterStats s = f.writer->Stats();
  // What stays on the grant heads is exactly what went to disk.
  EXPECT_EQ(f.space->reserve_head().grant(), static_cast<std::int64_t>(s.record_bytes));
  EXPECT_EQ(f.space->write_head().grant(), static_cast<std::int64_t>(s.record_bytes));
  EXPECT_EQ(s.overcommitted_bytes, 0u);
}

TEST(LogWriter, AShortFundIsOvercommittedAndCounted) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  Fixture f(&dev);
  const auto ops_bodies = Bodies(1, 1000, 's');

  auto ops = Ops(1, ops_bodies);
  ASSERT_TRUE(f.writer->Write(ops, 0, true, {}).ok());
  ASSERT_TRUE(f.writer->ForceAll().ok());
  const LogWriterStats s = f.writer->Stats();
  EXPECT_EQ(static_cast<std::int64_t>(s.overcommitted_bytes), f.space->reserve_head().grant());
  EXPECT_EQ(s.overcommitted_bytes, s.record_bytes);
}

TEST(LogWriter, ARecordThatWouldPassTheTailShutsTheLogDown) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  // The tail stays at the start of the log forever: the writer must stop
  // before it laps it.
  Fixture f(&dev, 4, [] { return MakeLsn(1, 0); });
  Status last;
  for (int i = 0; i < 100 && last.ok(); ++i) {
    const auto ops_bodies = Bodies(1, 15000, 't');

    auto ops = Ops(static_cast<std::uint32_t>(i + 1), ops_bodies);
    auto r = f.writer->Write(ops, 1 << 20, true, {});
    last = r.ok() ? f.writer->ForceAll() : r.status();
  }
  EXPECT_FALSE(last.ok());
  EXPECT_NE(last.message().find("overrun"), std::string_view::npos) << last.ToString();
  EXPECT_FALSE(f.error.ok());
  // Nothing at the tail was overwritten: the first record is still there.
  LogRegion region{&dev, 0, kSectors};
  auto first = ReadRecordAt(region, 0, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->record.kind, DecodedRecord::Kind::kOk);
}

TEST(LogWriter, RejectsBadGeometry) {
  MemoryDevice dev(std::uint64_t{kSectors} * kLogSectorSize);
  auto space = testing::MakeSpace(kLogBytes);
  LogWriterOptions o;
  o.region = LogRegion{&dev, 0, kSectors};
  o.space = space.get();
  o.iclog_bytes = 1000;
  EXPECT_FALSE(LogWriter::Create(o).ok());
  o.iclog_bytes = 32 * 1024;
  o.iclog_count = 64;  // 2 MiB in flight on a 512 KiB log
  EXPECT_FALSE(LogWriter::Create(o).ok());
  o.iclog_count = 4;
  o.head = MakeLsn(1, kSectors);
  EXPECT_FALSE(LogWriter::Create(o).ok());
}

}  // namespace
}  // namespace log_writer_test
}  // namespace walfs::journal
