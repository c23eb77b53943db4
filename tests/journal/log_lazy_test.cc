// Specs of the CIL's lazy push (CilOptions::lazy_push_ns): a change nobody
// forces is written to the device within the delay without a flush, so a
// killed daemon (whose device, or image file's page cache, outlives it)
// loses nothing; its items stay pinned until a flush covers their
// checkpoint, so the AIL never writes metadata in place before the log
// records describing it are durable (a power cut); and a force after a lazy
// write still flushes.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "journal/log.h"
#include "journal/log_reader.h"
#include "journal/transaction.h"
#include "tests/journal/log_test_fixture.h"

namespace walfs::journal {
namespace log_lazy_test {  // this file's own names (unity builds share one TU)
namespace {

using testing::Fill;
using testing::ImageBytes;
using testing::kLogOffset;
using testing::kPayloadOffset;
using testing::PayloadOnDisk;
using testing::TestJournal;

constexpr std::uint32_t kSectors = 4096;
constexpr auto kDelay = std::chrono::milliseconds(2);

std::unique_ptr<Log> OpenLazyLog(BlockDevice* dev, std::int64_t lazy_ns) {
  LogOptions o = testing::TestLogOptions(dev, kSectors);
  o.lazy_push_ns = lazy_ns;
  auto log = Log::Open(o);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

std::int64_t Ns(std::chrono::nanoseconds d) { return d.count(); }

Result<std::uint64_t> Change(Log* log, BufLogItem* b, std::uint8_t value) {
  WALFS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(log, TransType::kSetattr));
  testing::LockBlock(b);
  Fill(&tx, b, kPayloadOffset, 100, value);
  Result<std::uint64_t> seq = tx.Commit();
  testing::UnlockBlock(b);
  return seq;
}

std::string Expected(std::uint8_t value) {
  std::string p(testing::kBlockSize - kPayloadOffset, '\0');
  std::memset(p.data(), value, 100);
  return p;
}

// Waits (up to 10 s, for a loaded machine) for the log writer to have
// written everything pushed so far and for `n` lazy pushes.
bool WaitLazyPushes(Log* log, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const LogStats s = log->Stats();
    if (s.cil.lazy_written >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::unique_ptr<MemoryDevice> Copy(MemoryDevice* dev) {
  auto copy = std::make_unique<MemoryDevice>(dev->size_bytes());
  const std::vector<std::byte> all = dev->Contents();
  EXPECT_TRUE(copy->Write(0, all.data(), all.size()).ok());
  return copy;
}

TEST(LogLazyPush, AChangeNobodyForcesIsWrittenWithinTheDelayWithoutAFlush) {
  MemoryDevice dev(ImageBytes(kSectors));
  std::unique_ptr<MemoryDevice> killed;
  {
    TestJournal log(OpenLazyLog(&dev, Ns(kDelay)), 1);
    ASSERT_NE(log.get(), nullptr);
    const std::uint64_t flushes = dev.flush_count();
    const BlockDeviceStats before = dev.stats();
    ASSERT_TRUE(Change(log.get(), log[0], 0x6b).ok());
    ASSERT_TRUE(WaitLazyPushes(log.get(), 1)) << "not written within 10 s of a 2 ms delay";
    const LogStats s = log->Stats();
    EXPECT_EQ(s.cil.lazy_pushes, 1u);
    EXPECT_EQ(s.cil.forces, 0u);
    EXPECT_EQ(dev.flush_count(), flushes + 1)
        << "a lazy commit record is preceded by one flush (what it exposes is stable first), no more";
    EXPECT_EQ(dev.stats().fua_writes, before.fua_writes) << "the lazy write was FUA";
    EXPECT_GT(dev.stats().writes, before.writes);
    EXPECT_EQ(s.writer.lazy_records, s.writer.records);
    EXPECT_GE(s.writer.written, s.writer.durable);
    EXPECT_EQ(log->cil().committed_seq(), 0u) << "a lazily written checkpoint counted as durable";
    EXPECT_GT(s.cil.lazy_max_ns, 0);
    // The daemon dies here: what the device holds is what the next mount sees.
    killed = Copy(&dev);
  }
  auto log = OpenLazyLog(killed.get(), 0);
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(log->recovery().position.clean);
  EXPECT_TRUE(PayloadOnDisk(killed.get(), 0) == Expected(0x6b)) << "the lazily written change was lost";
  ASSERT_TRUE(log->Close().ok());
}

TEST(LogLazyPush, WithoutTheLazyPushAnUnforcedChangeIsNotWritten) {
  MemoryDevice dev(ImageBytes(kSectors));
  TestJournal log(OpenLazyLog(&dev, 0), 1);
  ASSERT_NE(log.get(), nullptr);
  const BlockDeviceStats before = dev.stats();
  ASSERT_TRUE(Change(log.get(), log[0], 0x6b).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(dev.stats().writes, before.writes);
  EXPECT_EQ(log->Stats().cil.lazy_pushes, 0u);
}

TEST(LogLazyPush, CommitsWithinTheDelayShareOneLogWrite) {
  MemoryDevice dev(ImageBytes(kSectors));
  // A delay long enough that 50 commits on this thread fit in it.
  TestJournal log(OpenLazyLog(&dev, Ns(std::chrono::milliseconds(200))), 4);
  ASSERT_NE(log.get(), nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(Change(log.get(), log[i % 4], static_cast<std::uint8_t>(i)).ok());
  if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(150))
    GTEST_SKIP() << "50 commits took longer than the delay (a loaded machine)";
  ASSERT_TRUE(WaitLazyPushes(log.get(), 1));
  const LogStats s = log->Stats();
  EXPECT_EQ(s.cil.lazy_pushes, 1u);
  EXPECT_EQ(s.cil.pushes, 1u);
  EXPECT_EQ(s.writer.records, 1u);
}

// The write-ahead rule for a power cut: a lazily written checkpoint's items
// stay pinned; the AIL, pushing everything, forces the log -- a device flush
// -- before it writes any of them in place.
TEST(LogLazyPush, TheAilWritesBackALazyCheckpointsItemsOnlyAfterAFlushCoversThem) {
  MemoryDevice disk(ImageBytes(kSectors));
  auto rec = std::move(RecordingDevice::Create(&disk)).value();
  {
    TestJournal log(OpenLazyLog(rec.get(), Ns(kDelay)), 1);
    ASSERT_NE(log.get(), nullptr);
    ASSERT_TRUE(Change(log.get(), log[0], 0x6c).ok());
    ASSERT_TRUE(WaitLazyPushes(log.get(), 1));
    EXPECT_TRUE(log[0]->pinned()) << "a lazily written item is unpinned";
    EXPECT_EQ(log->Stats().ail.items, 0u);
    log->ail().PushAll();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(log[0]->pinned());
    EXPECT_TRUE(PayloadOnDisk(&disk, 0) != Expected(0x6c)) << "written in place before any flush";
    // Write everything back, as unmount does.
    ASSERT_TRUE(log->Close().ok());
    EXPECT_TRUE(PayloadOnDisk(&disk, 0) == Expected(0x6c));
  }
  // In the recording: the in-place write of block 0 comes after a flush
  // issued once every log write before it had completed.
  const std::vector<RecordedOp> ops = rec->ops();
  std::size_t inplace = SIZE_MAX;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == RecordedOp::Kind::kWrite && ops[i].offset < kLogOffset) {
      inplace = i;
      break;
    }
  ASSERT_NE(inplace, SIZE_MAX) << "block 0 was never written in place";
  std::size_t last_log_write = SIZE_MAX;
  for (std::size_t i = 0; i < inplace; ++i)
    if (ops[i].kind == RecordedOp::Kind::kWrite) last_log_write = i;
  ASSERT_NE(last_log_write, SIZE_MAX);
  EXPECT_FALSE(ops[last_log_write].fua) << "the checkpoint was not written lazily";
  bool covered = false;
  for (std::size_t f = last_log_write + 1; f < inplace; ++f)
    if (ops[f].kind == RecordedOp::Kind::kFlush && ops[last_log_write].completed_before <= f &&
        ops[f].completed_before <= inplace)
      covered = true;
  EXPECT_TRUE(covered) << "metadata written in place before its log record was flushed";
}

TEST(LogLazyPush, AForceOfALazilyWrittenCheckpointFlushesTheDevice) {
  MemoryDevice dev(ImageBytes(kSectors));
  TestJournal log(OpenLazyLog(&dev, Ns(kDelay)), 1);
  ASSERT_NE(log.get(), nullptr);
  Result<std::uint64_t> seq = Change(log.get(), log[0], 0x6d);
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(WaitLazyPushes(log.get(), 1));
  const std::uint64_t flushes = dev.flush_count();
  const std::uint64_t records = log->Stats().writer.records;
  ASSERT_TRUE(log->Force(*seq).ok());
  const LogStats s = log->Stats();
  EXPECT_GT(dev.flush_count(), flushes) << "the force returned without flushing";
  EXPECT_EQ(s.writer.records, records) << "the record was written again instead of flushed";
  EXPECT_EQ(s.writer.flushes, 1u);
  EXPECT_GE(log->cil().committed_seq(), *seq);
  EXPECT_EQ(s.writer.durable, s.writer.written);
  // Durable now: a second force has nothing to do.
  ASSERT_TRUE(log->Force(*seq).ok());
  EXPECT_EQ(log->Stats().writer.flushes, 1u);
}

// commit= still bounds what a power cut loses: a lazily written checkpoint
// is made durable one push interval after its first commit, though the
// context it came from is long gone.
TEST(LogLazyPush, TheTimedPushMakesALazilyWrittenCheckpointDurable) {
  MemoryDevice dev(ImageBytes(kSectors));
  LogOptions o = testing::TestLogOptions(&dev, kSectors);
  o.lazy_push_ns = Ns(kDelay);
  o.push_interval_ns = Ns(std::chrono::milliseconds(100));
  auto opened = Log::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  TestJournal log(std::move(opened).value(), 1);
  Result<std::uint64_t> seq = Change(log.get(), log[0], 0x6e);
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(WaitLazyPushes(log.get(), 1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (log->cil().committed_seq() < *seq && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(log->cil().committed_seq(), *seq) << "lazily written, never made durable";
  const LogStats s = log->Stats();
  EXPECT_EQ(s.cil.timed_pushes, 1u);
  EXPECT_EQ(s.cil.kick_flushes, 1u);
  EXPECT_EQ(s.cil.forces, 0u);
  EXPECT_EQ(s.writer.flushes, 1u);
}

// Lazy records do not pile up unflushed: past the window recovery searches
// for holes (less one record) beyond the stable head, a record gets a
// preflush, so the records a power cut may lose all lie in that window.
TEST(LogLazyPush, UnflushedRecordsNeverSpanMoreThanTheRecoveryWindow) {
  MemoryDevice dev(ImageBytes(kSectors));
  LogOptions o = testing::TestLogOptions(&dev, kSectors);
  o.lazy_push_ns = Ns(std::chrono::microseconds(100));
  o.iclog_count = 2;
  o.iclog_bytes = 16 * 1024;
  auto opened = Log::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  TestJournal log(std::move(opened).value(), 4);
  const std::uint32_t window = RecoveryWindowSectors(kSectors);
  // A durable record first, so the stable head is somewhere.
  Result<std::uint64_t> seq = Change(log.get(), log[0], 1);
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE(log->Force(*seq).ok());
  std::uint64_t max_span = 0;
  for (int i = 0; i < 1500; ++i) {
    ASSERT_TRUE(Change(log.get(), log[i % 4], static_cast<std::uint8_t>(i)).ok());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const LogStats s = log->Stats();
    ASSERT_NE(s.writer.durable, kNullLsn);
    if (s.writer.written > s.writer.durable)
      max_span = std::max<std::uint64_t>(max_span, SectorsBetween(s.writer.durable, s.writer.written, kSectors));
  }
  const LogStats s = log->Stats();
  EXPECT_GT(s.cil.lazy_pushes, 20u);
  // Each lazy commit record carries a preflush (the data it exposes is
  // stable first), which covers the lazy records before it; the span
  // preflush is left for records that hold no commit (a checkpoint larger
  // than an in-core buffer).
  EXPECT_GT(s.writer.preflushes, 20u) << "1500 lazy records and never a preflush";
  EXPECT_GT(max_span, 0u) << "every record was durable: nothing was measured";
  EXPECT_LE(max_span, window);
}

}  // namespace
}  // namespace log_lazy_test
}  // namespace walfs::journal
