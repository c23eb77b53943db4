// Specs of the assembled log: transactions through the CIL, checkpoints
// written by the log writer, forces, clean unmount, recovery after a crash,
// contention on a tiny log in every wake mode, and shutdown on I/O errors.
#include "journal/log.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_fault.h"
#include "base/block_device_memory.h"
#include "journal/log_head.h"
#include "journal/log_reader.h"
#include "journal/transaction.h"
#include "tests/journal/holding_device.h"
#include "tests/journal/log_test_fixture.h"
#include "tests/journal/space_test_util.h"

namespace walfs::journal {
namespace log_test {  // this file's own names (unity builds share one TU)
namespace {

namespace testing_util = walfs::journal::testing;

using testing::Blocks;
using testing::Fill;
using testing::ImageBytes;
using testing::kPayloadOffset;
using testing::PayloadOnDisk;
using testing::TestLogOptions;

constexpr std::uint32_t kSectors = 4096;  // 2 MiB log

std::unique_ptr<Log> OpenLog(BlockDevice* dev, std::uint32_t sectors = kSectors,
                             LogOptions extra = {}) {
  LogOptions o = TestLogOptions(dev, sectors);
  o.wake_mode = extra.wake_mode;
  if (extra.push_bytes) o.push_bytes = extra.push_bytes;
  if (extra.iclog_bytes != LogOptions{}.iclog_bytes) o.iclog_bytes = extra.iclog_bytes;
  if (extra.iclog_count != LogOptions{}.iclog_count) o.iclog_count = extra.iclog_count;
  o.push_interval_ns = extra.push_interval_ns;
  o.inline_force_io = extra.inline_force_io;
  auto log = Log::Open(o);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

// The crash: a copy of the image as it is now, before any clean unmount.
std::unique_ptr<MemoryDevice> CrashImage(MemoryDevice* dev) {
  auto copy = std::make_unique<MemoryDevice>(dev->size_bytes());
  std::string all(dev->size_bytes(), '\0');
  EXPECT_TRUE(dev->Read(0, all.data(), all.size()).ok());
  EXPECT_TRUE(copy->Write(0, all.data(), all.size()).ok());
  return copy;
}

// Makes the device hold writes from now on (until Open()).
void HoldNextWrites(testing::HoldingDevice* dev) { dev->Hold(); }

// One transaction that fills `len` payload bytes of block i with `value`.
Result<std::uint64_t> Change(Log* log, BufLogItem* b, std::uint8_t value,
                             std::uint32_t first = kPayloadOffset, std::uint32_t len = 100,
                             TransType type = TransType::kSetattr) {
  WALFS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(log, type));
  testing::LockBlock(b);
  Fill(&tx, b, first, len, value);
  Result<std::uint64_t> seq = tx.Commit();
  testing::UnlockBlock(b);
  return seq;
}

std::string Expected(std::uint8_t value, std::uint32_t first = kPayloadOffset,
                     std::uint32_t len = 100) {
  std::string p(testing::kBlockSize - kPayloadOffset, '\0');
  std::memset(p.data() + (first - kPayloadOffset), value, len);
  return p;
}

TEST(Log, FreshLogOpensEmptyAndClosesClean) {
  MemoryDevice dev(ImageBytes(kSectors));
  auto log = OpenLog(&dev);
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(log->recovery().position.empty);
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  auto again = OpenLog(&dev);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->recovery().position.clean);
  EXPECT_FALSE(again->recovery().replayed);
}

TEST(Log, CommittedAndClosedChangesAreOnDiskAndTheLogIsClean) {
  MemoryDevice dev(ImageBytes(kSectors));
  {
    testing::TestJournal log(OpenLog(&dev), 4);
    ASSERT_NE(log.get(), nullptr);
    auto& blocks = log;
    for (int round = 1; round <= 20; ++round)
      for (std::uint32_t i = 0; i < 4; ++i)
        ASSERT_TRUE(Change(log.get(), blocks[i], static_cast<std::uint8_t>(round * 4 + i)).ok());
    ASSERT_TRUE(log->Close().ok());
    const LogStats s = log->Stats();
    EXPECT_EQ(s.space.reserve_head.grant_bytes, 0);
    EXPECT_EQ(s.space.write_head.grant_bytes, 0);
    EXPECT_EQ(s.ail.items, 0u);
    EXPECT_GE(s.cil.committed, 1u);
    EXPECT_GT(s.cil.relogs, 0u);  // 20 changes to a block, fewer copies in the log
  }
  for (std::uint32_t i = 0; i < 4; ++i)
    EXPECT_TRUE(PayloadOnDisk(&dev, i) == Expected(static_cast<std::uint8_t>(80 + i))) << i;
  auto log = OpenLog(&dev);
  EXPECT_TRUE(log->recovery().position.clean);
}

TEST(Log, ForcedChangesSurviveACrashThroughRecovery) {
  MemoryDevice dev(ImageBytes(kSectors));
  std::unique_ptr<MemoryDevice> crashed;
  {
    testing::TestJournal log(OpenLog(&dev), 3);
    ASSERT_NE(log.get(), nullptr);
    auto& blocks = log;
    for (std::uint32_t i = 0; i < 3; ++i)
      ASSERT_TRUE(Change(log.get(), blocks[i], static_cast<std::uint8_t>(0x40 + i)).ok());
    ASSERT_TRUE(log->Force().ok());
    crashed = CrashImage(&dev);
  }
  auto log = OpenLog(crashed.get());
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(log->recovery().position.clean);
  for (std::uint32_t i = 0; i < 3; ++i)
    EXPECT_TRUE(PayloadOnDisk(crashed.get(), i) == Expected(static_cast<std::uint8_t>(0x40 + i)));
  ASSERT_TRUE(log->Close().ok());
}

// xfs_log_worker: a change nobody forces still reaches the log within the
// push interval, and survives a crash after it.
TEST(Log, AChangeNobodyForcesIsPushedOnceThePushIntervalPasses) {
  MemoryDevice dev(ImageBytes(kSectors));
  std::unique_ptr<MemoryDevice> crashed;
  {
    constexpr auto kInterval = std::chrono::milliseconds(200);
    testing::TestJournal log(
        OpenLog(&dev, kSectors, {.push_interval_ns = std::chrono::nanoseconds(kInterval).count()}), 1);
    ASSERT_NE(log.get(), nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::uint64_t> seq = Change(log.get(), log[0], 0x5a);
    ASSERT_TRUE(seq.ok());
    const std::uint64_t committed = log->cil().committed_seq();
    if (std::chrono::steady_clock::now() - t0 < kInterval) {  // else this thread was descheduled
      EXPECT_EQ(committed, 0u) << "pushed before the interval passed";
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (log->cil().committed_seq() < *seq && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GE(log->cil().committed_seq(), *seq) << "never pushed";
    EXPECT_EQ(log->cil().Stats().timed_pushes, 1u);
    EXPECT_EQ(log->cil().Stats().forces, 0u);
    crashed = CrashImage(&dev);
  }
  auto log = OpenLog(crashed.get());
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(log->recovery().position.clean);
  EXPECT_TRUE(PayloadOnDisk(crashed.get(), 0) == Expected(0x5a));
  ASSERT_TRUE(log->Close().ok());
}

TEST(Log, WithoutAPushIntervalAnUnforcedChangeStaysInTheCil) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 1);
  ASSERT_NE(log.get(), nullptr);
  ASSERT_TRUE(Change(log.get(), log[0], 0x5a).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(log->cil().committed_seq(), 0u);
  EXPECT_EQ(log->cil().Stats().timed_pushes, 0u);
}

TEST(Log, ConcurrentForcesShareOneCheckpoint) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 8);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  std::vector<std::uint64_t> seqs(8);
  for (std::uint32_t i = 0; i < 8; ++i) {
    auto seq = Change(log.get(), blocks[i], 1);
    ASSERT_TRUE(seq.ok());
    seqs[i] = *seq;
  }
  const CilStats before = log->cil().Stats();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (std::uint32_t i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { ok += log->Force(seqs[i]).ok() ? 1 : 0; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  const CilStats after = log->cil().Stats();
  EXPECT_EQ(after.pushes - before.pushes, 1u);  // eight forces, one checkpoint
  ASSERT_TRUE(log->Close().ok());
}

// A forcer that finds no push under way writes the checkpoint itself
// rather than asking the push thread and waiting to be told (two thread
// hand-offs on fsync's latency path); a second force of a sequence already
// on disk writes nothing.
TEST(Log, AForceWritesTheCheckpointOnTheForcersThread) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 1);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  auto seq = Change(log.get(), blocks[0], 7);
  ASSERT_TRUE(seq.ok());
  const CilStats before = log->cil().Stats();
  ASSERT_TRUE(log->Force(*seq).ok());
  const CilStats mid = log->cil().Stats();
  EXPECT_EQ(mid.pushes - before.pushes, 1u);
  EXPECT_EQ(mid.inline_pushes - before.inline_pushes, 1u);
  EXPECT_GE(mid.committed_seq, *seq);
  ASSERT_TRUE(log->Force(*seq).ok());
  const CilStats after = log->cil().Stats();
  EXPECT_EQ(after.pushes, mid.pushes);
  EXPECT_EQ(after.inline_pushes, mid.inline_pushes);
  ASSERT_TRUE(log->Close().ok());
}

// While a checkpoint's write is stuck, committers fill the next context up
// to twice the push threshold and then wait (the CIL cannot outgrow the
// log); the background push that follows lets them go.
TEST(Log, CommittersAreThrottledAtTwiceThePushThreshold) {
  MemoryDevice disk(ImageBytes(kSectors));
  testing::HoldingDevice dev(&disk);
  dev.Open();
  // The push thread's force through the device too, so that it stalls.
  testing::TestJournal log(OpenLog(&dev, kSectors, LogOptions{.push_bytes = 16 * 1024, .inline_force_io = false}), 8);
  ASSERT_NE(log.get(), nullptr);
  // Stall log I/O, then push a first checkpoint: the push thread waits for
  // its commit record.
  HoldNextWrites(&dev);
  ASSERT_TRUE(Change(log.get(), log[0], 1).ok());
  log->cil().PushAsync();
  ASSERT_TRUE(testing_util::Eventually([&] { return dev.held() > 0; }));
  std::atomic<int> commits{0};
  std::atomic<bool> finished{false};
  std::thread committer([&] {
    for (int n = 0; n < 200; ++n) {
      // Whole blocks: 4 KiB a commit, so 2 x 16 KiB is reached quickly.
      auto tx = Transaction::Begin(log.get(), TransType::kWrite);
      if (!tx.ok()) break;
      BufLogItem* b = log[static_cast<std::size_t>(n) % 8];
      testing::LockBlock(b);
      Fill(&*tx, b, kPayloadOffset, testing::kBlockSize - kPayloadOffset,
           static_cast<std::uint8_t>(n));
      auto seq = tx->Commit();
      testing::UnlockBlock(b);
      if (!seq.ok()) break;
      ++commits;
    }
    finished = true;
  });
  ASSERT_TRUE(testing_util::Eventually([&] { return log->cil().Stats().throttles > 0; }));
  const int stuck_at = commits.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(finished.load());
  EXPECT_EQ(commits.load(), stuck_at) << "a throttled committer went on";
  EXPECT_LE(log->cil().Stats().space_used, 3 * 16 * 1024);
  dev.Open();
  committer.join();
  EXPECT_EQ(commits.load(), 200);
  ASSERT_TRUE(log->Close().ok());
}

TEST(Log, ABodyLargerThanARecordIsSplitAndRecovered) {
  MemoryDevice dev(ImageBytes(kSectors));
  std::unique_ptr<MemoryDevice> crashed;
  {
    testing::TestJournal log(OpenLog(&dev, kSectors, LogOptions{.iclog_bytes = 16 * 1024}), 8);
    ASSERT_NE(log.get(), nullptr);
    auto& blocks = log;
    // Eight whole blocks in one transaction: 32 KiB of items, three records.
    auto tx = Transaction::Begin(log.get(), TransType::kRename);
    ASSERT_TRUE(tx.ok());
    for (std::uint32_t i = 0; i < 8; ++i) {
      testing::LockBlock(blocks[i]);
      Fill(&*tx, blocks[i], kPayloadOffset, testing::kBlockSize - kPayloadOffset,
           static_cast<std::uint8_t>(0x10 + i));
    }
    auto seq = tx->Commit();
    for (std::uint32_t i = 0; i < 8; ++i) testing::UnlockBlock(blocks[i]);
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    ASSERT_TRUE(log->Force(*seq).ok());
    EXPECT_GT(log->writer().Stats().split_ops, 0u);
    crashed = CrashImage(&dev);
  }
  auto log = OpenLog(crashed.get());
  ASSERT_NE(log, nullptr);
  for (std::uint32_t i = 0; i < 8; ++i)
    EXPECT_TRUE(PayloadOnDisk(crashed.get(), i) ==
              Expected(static_cast<std::uint8_t>(0x10 + i), kPayloadOffset,
                       testing::kBlockSize - kPayloadOffset));
}

TEST(Log, TheLogWrapsManyTimesAndStaysRecoverable) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 16);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  // ~2 MiB log, forces after every transaction of a whole block: each
  // checkpoint is a few records, so a few thousand wrap it several times.
  for (int n = 0; n < 1500; ++n) {
    auto tx = Transaction::Begin(log.get(), TransType::kWrite);
    ASSERT_TRUE(tx.ok()) << tx.status().ToString();
    BufLogItem* b = blocks[static_cast<std::size_t>(n) % 16];
    testing::LockBlock(b);
    Fill(&*tx, b, kPayloadOffset, 3000, static_cast<std::uint8_t>(n));
    auto seq = tx->Commit();
    testing::UnlockBlock(b);
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(log->Force(*seq).ok());
  }
  EXPECT_GE(CycleOf(log->writer().head()), 3u);
  const LogStats s = log->Stats();
  EXPECT_GT(s.writer.wrapped_records + s.writer.records, 0u);
  ASSERT_TRUE(log->Close().ok());
  auto again = OpenLog(&dev);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->recovery().position.clean);
  for (std::uint32_t i = 0; i < 16; ++i) {
    const int last = (1500 - 1) - ((1500 - 1 - static_cast<int>(i)) % 16);  // last n with n % 16 == i
    EXPECT_TRUE(PayloadOnDisk(&dev, i) ==
                Expected(static_cast<std::uint8_t>(last), kPayloadOffset, 3000))
        << "block " << i;
  }
}

class LogContention : public ::testing::TestWithParam<WakeMode> {};

// A log just big enough for the largest reservation three times over, and
// more committing threads than fit: grant-head sleeps, freed by checkpoints
// and the AIL pusher moving the tail.  Must never hang.
TEST_P(LogContention, ATinyLogMakesWritersSleepAndThePusherFreesThem) {
  const ReservationTable table{ReservationGeometry{}};
  // Just above the minimum (3 x the largest, mkdir's, reservation): at most
  // three of the eight threads' mkdir tickets fit at once.
  const auto sectors =
      static_cast<std::uint32_t>((table.MinLogBytes() + 16 * 1024) / kLogSectorSize + 64);
  ASSERT_GT(std::int64_t{sectors} * kLogSectorSize - 16 * 1024, table.MinLogBytes());
  MemoryDevice dev(ImageBytes(sectors));
  testing::TestJournal log(OpenLog(&dev, sectors,
                                   LogOptions{.wake_mode = GetParam(), .iclog_count = 4,
                                              .iclog_bytes = 16 * 1024}),
                           16);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  constexpr int kThreads = 8;
  const int per_thread = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < per_thread; ++n) {
        auto tx = Transaction::Begin(log.get(), TransType::kMkdir);
        if (!tx.ok()) {
          ++failures;
          return;
        }
        if (n == 0) {
          // The first three holders wait until the others sleep on the
          // reserve head, so the test does not depend on the scheduler.
          testing_util::Eventually(
              [&] { return log->space().Stats().reserve_head.sleeps > 0; });
        }
        // Two blocks, locked in order.
        const std::uint32_t a = static_cast<std::uint32_t>((t + n) % 16);
        const std::uint32_t b = static_cast<std::uint32_t>((t * 3 + n + 1) % 16);
        BufLogItem* lo = blocks[std::min(a, b)];
        BufLogItem* hi = blocks[std::max(a, b)];
        testing::LockBlock(lo);
        if (hi != lo) testing::LockBlock(hi);
        Fill(&*tx, lo, kPayloadOffset + 64 * static_cast<std::uint32_t>(t), 64,
             static_cast<std::uint8_t>(n));
        if (hi != lo) Fill(&*tx, hi, kPayloadOffset + 64 * static_cast<std::uint32_t>(t), 64,
                           static_cast<std::uint8_t>(n));
        if (!tx->Roll().ok()) ++failures;  // a rolling step, then the last one
        auto seq = tx->Commit();
        if (hi != lo) testing::UnlockBlock(hi);
        testing::UnlockBlock(lo);
        if (!seq.ok()) ++failures;
        if (n % 10 == 0 && !log->Force(*seq).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const LogStats s = log->Stats();
  EXPECT_GT(s.space.reserve_head.sleeps, 0u) << "the log was not small enough to contend";
  ASSERT_TRUE(log->Close().ok());
  const LogStats end = log->Stats();
  EXPECT_EQ(end.space.reserve_head.grant_bytes, 0);
  EXPECT_EQ(end.space.write_head.grant_bytes, 0);
  EXPECT_EQ(end.space.tail_space, 0);
}

INSTANTIATE_TEST_SUITE_P(AllWakeModes, LogContention,
                         ::testing::Values(WakeMode::kInline, WakeMode::kWaking,
                                           WakeMode::kWakeQueue),
                         [](const ::testing::TestParamInfo<WakeMode>& p) { return std::string(WakeModeName(p.param)); });

TEST(Log, AFailedLogWriteShutsTheLogDownAndWakesEveryone) {
  MemoryDevice disk(ImageBytes(kSectors));
  FaultDevice dev(&disk);
  testing::TestJournal log(OpenLog(&dev), 2);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  ASSERT_TRUE(Change(log.get(), blocks[0], 7).ok());
  dev.FailWritesFrom(1, EIO);
  Status forced = log->Force();
  EXPECT_FALSE(forced.ok());
  EXPECT_TRUE(log->IsShutdown());
  EXPECT_FALSE(Transaction::Begin(log.get(), TransType::kCreate).ok());
  EXPECT_FALSE(log->Force().ok());
  EXPECT_FALSE(log->Close().ok());
  // Aborted checkpoints unpin their items (from the completion thread, which
  // may still be running the failed record's callbacks when Force returns).
  EXPECT_TRUE(testing_util::Eventually([&] { return !blocks[0]->pinned(); }));
}

TEST(Log, AShutdownWakesAReservationWaiterWithTheError) {
  const ReservationTable table{ReservationGeometry{}};
  // Holds three mkdir reservations.
  const auto sectors =
      static_cast<std::uint32_t>((table.MinLogBytes() + 16 * 1024) / kLogSectorSize + 64);
  MemoryDevice disk(ImageBytes(sectors));
  FaultDevice dev(&disk);
  testing::TestJournal log(
      OpenLog(&dev, sectors, LogOptions{.iclog_count = 4, .iclog_bytes = 16 * 1024}), 1);
  ASSERT_NE(log.get(), nullptr);
  ASSERT_TRUE(Change(log.get(), log[0], 3).ok());  // committed, not yet forced
  std::vector<Transaction> held;
  while (true) {
    // Fill the log with live reservations, one at a time, until the next
    // one would have to wait.
    if (log->space().reserve_head().FreeBytes() < log->table().Get(TransType::kMkdir).unit_bytes *
                                                      std::int64_t{log->table().Get(TransType::kMkdir).log_count})
      break;
    auto tx = Transaction::Begin(log.get(), TransType::kMkdir);
    ASSERT_TRUE(tx.ok());
    held.push_back(std::move(tx).value());
  }
  ASSERT_FALSE(held.empty());
  // From here every write fails: the next checkpoint (pushed when the waiter
  // below goes to sleep and kicks the CIL and the AIL) cannot be written.
  dev.FailWritesFrom(1, EIO);
  std::atomic<bool> done{false};
  Status waiter_status;
  std::thread waiter([&] {
    auto tx = Transaction::Begin(log.get(), TransType::kMkdir);
    waiter_status = tx.status();
    done = true;
  });
  EXPECT_TRUE(testing_util::Eventually(
      [&] { return log->space().Stats().reserve_head.sleeps > 0 || done.load(); }));
  waiter.join();
  EXPECT_FALSE(waiter_status.ok());
  EXPECT_TRUE(log->IsShutdown());
}

TEST(Log, AFailedWritebackFailsCloseInsteadOfHanging) {
  MemoryDevice disk(ImageBytes(kSectors));
  FaultDevice dev(&disk);
  testing::TestJournal log(OpenLog(&dev), 2);
  ASSERT_NE(log.get(), nullptr);
  ASSERT_TRUE(Change(log.get(), log[0], 7).ok());
  ASSERT_TRUE(log->Force().ok());
  dev.FailWritesFrom(1, EIO);  // the block's writeback, and everything after
  Status closed = log->Close();
  EXPECT_FALSE(closed.ok());
  EXPECT_TRUE(log->IsShutdown());
}

TEST(Log, ACommitWithNothingToLogChargesNothing) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 1);
  ASSERT_NE(log.get(), nullptr);
  auto tx = Transaction::Begin(log.get(), TransType::kSetattr);
  ASSERT_TRUE(tx.ok());
  testing::LockBlock(log[0]);
  tx->Join(log[0]);  // joined, but nothing changed
  ASSERT_TRUE(tx->Commit().ok());
  testing::UnlockBlock(log[0]);
  ASSERT_TRUE(log->Close().ok());
  const LogStats s = log->Stats();
  EXPECT_EQ(s.space.reserve_head.grant_bytes, 0);
  EXPECT_EQ(s.space.write_head.grant_bytes, 0);
  EXPECT_EQ(s.cil.space_used, 0);
}

// The write-ahead rule holds after a shutdown too: a change whose
// checkpoint was aborted never reaches the disk in place.
TEST(Log, AfterAShutdownNothingIsWrittenBackInPlace) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 2);
  ASSERT_NE(log.get(), nullptr);
  ASSERT_TRUE(Change(log.get(), log[0], 0x11).ok());
  log->ail().Stop();  // keep block 0 in the AIL for now
  ASSERT_TRUE(log->Force().ok());
  ASSERT_TRUE(Change(log.get(), log[0], 0x22).ok());  // in the CIL only
  {
    auto tx = Transaction::Begin(log.get(), TransType::kSetattr);
    ASSERT_TRUE(tx.ok());
    testing::LockBlock(log[1]);
    Fill(&*tx, log[1], kPayloadOffset, 10, 1);
    tx->Cancel();  // a dirty cancel shuts the log down; the 0x22 checkpoint is aborted
    testing::UnlockBlock(log[1]);
  }
  ASSERT_TRUE(log->IsShutdown());
  log->ail().Start();
  log->ail().PushAll();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(PayloadOnDisk(&dev, 0) == Expected(0x22))
      << "a change that never reached the log was written in place";
}

TEST(Log, AClosedLogRefusesWorkInsteadOfHanging) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 1);
  ASSERT_TRUE(log->Close().ok());
  auto seq = Change(log.get(), log[0], 5);
  EXPECT_FALSE(seq.ok());
  EXPECT_FALSE(log->Force().ok());
}

TEST(Log, CancellingADirtyTransactionShutsTheLogDown) {
  MemoryDevice dev(ImageBytes(kSectors));
  testing::TestJournal log(OpenLog(&dev), 1);
  ASSERT_NE(log.get(), nullptr);
  auto& blocks = log;
  {
    auto tx = Transaction::Begin(log.get(), TransType::kSetattr);
    ASSERT_TRUE(tx.ok());
    tx->Cancel();  // clean: fine
  }
  EXPECT_FALSE(log->IsShutdown());
  {
    auto tx = Transaction::Begin(log.get(), TransType::kSetattr);
    ASSERT_TRUE(tx.ok());
    testing::LockBlock(blocks[0]);
    Fill(&*tx, blocks[0], kPayloadOffset, 10, 1);
    tx->Cancel();
    testing::UnlockBlock(blocks[0]);
  }
  EXPECT_TRUE(log->IsShutdown());
}

TEST(Log, RefusesADirtyLogWhenRecoveryIsOff) {
  MemoryDevice dev(ImageBytes(kSectors));
  {
    testing::TestJournal log(OpenLog(&dev), 1);
    ASSERT_NE(log.get(), nullptr);
    auto& blocks = log;
    ASSERT_TRUE(Change(log.get(), blocks[0], 9).ok());
    ASSERT_TRUE(log->Force().ok());
    log->ail().Stop();  // keep the change in the log only
  }
  LogOptions o = TestLogOptions(&dev, kSectors);
  o.recover = false;
  auto log = Log::Open(o);
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("needs recovery"), std::string_view::npos)
      << log.status().ToString();
}

TEST(Log, IgnoreLeavesADirtyLogUnreplayedAndUnwrittenAndSaysWhatItHolds) {
  MemoryDevice dev(ImageBytes(kSectors));
  {
    testing::TestJournal log(OpenLog(&dev), 1);
    ASSERT_NE(log.get(), nullptr);
    ASSERT_TRUE(Change(log.get(), log[0], 9).ok());
    ASSERT_TRUE(log->Force().ok());
    log->ail().Stop();  // keep the change in the log only
  }
  std::string before(ImageBytes(kSectors), '\0');
  ASSERT_TRUE(dev.Read(0, before.data(), before.size()).ok());
  LogOptions o = TestLogOptions(&dev, kSectors);
  o.ignore = true;
  auto log = Log::Open(o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_FALSE((*log)->recovery().replayed);
  EXPECT_NE((*log)->recovery().ignored.find("1 committed transactions"), std::string::npos)
      << (*log)->recovery().ignored;
  (*log)->Halt();
  log->reset();
  std::string after(before.size(), '\0');
  ASSERT_TRUE(dev.Read(0, after.data(), after.size()).ok());
  EXPECT_TRUE(before == after) << "an ignored log and the blocks it logged are left as they were";
}

TEST(Log, IgnoreOpensALogThatCannotBeReadAndSaysWhy) {
  MemoryDevice dev(ImageBytes(kSectors));
  {
    testing::TestJournal log(OpenLog(&dev), 1);
    ASSERT_NE(log.get(), nullptr);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(Change(log.get(), log[0], 9 + i).ok());
      ASSERT_TRUE(log->Force().ok());
    }
    log->ail().Stop();
  }
  // A flipped payload byte in the oldest record (not the head's: that one
  // would be a torn write, trimmed).
  const LogRegion region{&dev, testing::kLogOffset, kSectors};
  auto pos = FindLogPosition(region);
  ASSERT_TRUE(pos.ok());
  ASSERT_NE(pos->tail, pos->last_record) << "more than one record";
  auto rec = ReadRecordAt(region, SectorOf(pos->tail), CycleOf(pos->tail));
  ASSERT_TRUE(rec.ok());
  std::byte b;
  const std::uint64_t at = testing::kLogOffset + std::uint64_t{SectorOf(pos->tail)} * kLogSectorSize +
                           (rec->sectors > 1 ? kLogSectorSize + 8 : kRecordHeaderFixedSize + 4);
  ASSERT_TRUE(dev.Read(at, &b, 1).ok());
  b ^= std::byte{0x40};
  ASSERT_TRUE(dev.Write(at, &b, 1).ok());
  ASSERT_FALSE(Log::Open(TestLogOptions(&dev, kSectors)).ok()) << "recovery refuses it";
  LogOptions o = TestLogOptions(&dev, kSectors);
  o.ignore = true;
  auto log = Log::Open(o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_NE((*log)->recovery().ignored.find("cannot be read"), std::string::npos) << (*log)->recovery().ignored;
  (*log)->Halt();
}

TEST(Log, RejectsBadGeometry) {
  MemoryDevice dev(ImageBytes(kSectors));
  LogOptions o = TestLogOptions(&dev, kSectors);
  o.iclog_bytes = 1000;
  EXPECT_FALSE(Log::Open(o).ok());
  o = TestLogOptions(&dev, kSectors);
  o.iclog_count = 1;
  EXPECT_FALSE(Log::Open(o).ok());
  o = TestLogOptions(&dev, 64);  // far below the minimum log size
  EXPECT_FALSE(Log::Open(o).ok());
}

}  // namespace
}  // namespace log_test
}  // namespace walfs::journal
