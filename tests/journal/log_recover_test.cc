// Specs of log recovery: committed transactions are replayed in commit
// order and nothing else is; blocks that already carry a change, and
// versions a later cancel record supersedes, are skipped; a corrupt log
// fails with the device untouched; replay is idempotent, also after a crash
// among its own writes.
#include "journal/log_recover.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_fault.h"
#include "base/block_device_memory.h"
#include "journal/buf_log_format.h"
#include "journal/journal_events.h"
#include "tests/journal/log_test_util.h"
#include "tracing/reader.h"
#include "tracing/tracer.h"

namespace walfs::journal {
namespace log_recover_test {  // this file's own names (unity builds share one TU)
namespace {

using testing::AppendTransaction;
using testing::TestLog;

constexpr std::uint32_t kBlock = 4096;
constexpr std::uint32_t kStamp = 8;  // where the blocks of these tests keep their LSN

using Items = std::vector<std::pair<ItemType, std::string>>;

// A buffer body logging bytes [first, last] of block `blkno` as `fill`
// (the whole chunks holding them).
std::string Buf(std::uint64_t blkno, std::uint32_t first, std::uint32_t last, char fill,
                std::uint32_t lsn_offset = kStamp) {
  BufLogFormat f;
  f.blkno = blkno;
  f.block_size = kBlock;
  f.lsn_offset = lsn_offset;
  f.chunk_map.assign(BufMapWords(kBlock), 0);
  SetChunks(&f.chunk_map, first, last);
  f.data.assign(std::size_t{CountChunks(f.chunk_map)} * kBufChunkSize, fill);
  return EncodeBufLog(f);
}

std::string Cancel(std::uint64_t blkno) {
  BufLogFormat f;
  f.flags = kBufCancel;
  f.blkno = blkno;
  f.block_size = kBlock;
  f.chunk_map.assign(BufMapWords(kBlock), 0);
  return EncodeBufLog(f);
}

// One record holding whole transactions.
std::string Tx(std::uint32_t tid, const Items& items) {
  std::string p;
  AppendTransaction(&p, tid, items);
  return p;
}

Items B(std::string body) { return {{ItemType::kBuffer, std::move(body)}}; }

class RecoverTest : public ::testing::Test {
 protected:
  RecoverOptions Options(BlockDevice* metadata = nullptr) {
    RecoverOptions o;
    o.log = log_.region();
    o.metadata = metadata != nullptr ? metadata : &meta_;
    o.max_inflight_sectors = 8;
    return o;
  }
  RecoverReport Recover(BlockDevice* metadata = nullptr) {
    Result<RecoverReport> r = RecoverLog(Options(metadata));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : RecoverReport{};
  }
  std::vector<std::byte> BlockOf(std::uint64_t blkno, MemoryDevice* dev = nullptr) {
    const std::vector<std::byte> all = (dev != nullptr ? dev : &meta_)->Contents();
    return {all.begin() + static_cast<std::ptrdiff_t>(blkno * kBlock),
            all.begin() + static_cast<std::ptrdiff_t>((blkno + 1) * kBlock)};
  }
  char At(std::uint64_t blkno, std::uint32_t byte) {
    return static_cast<char>(BlockOf(blkno)[byte]);
  }
  Lsn StampOf(std::uint64_t blkno) { return BufStampedLsn(BlockOf(blkno), kStamp); }
  // Writes `lsn` as block blkno's on-disk stamp, as a writeback would have.
  void StampOnDisk(std::uint64_t blkno, Lsn lsn) {
    std::vector<std::byte> b = BlockOf(blkno);
    StampBufLsn(b, kStamp, lsn);
    ASSERT_TRUE(meta_.Write(blkno * kBlock, b.data(), kBlock).ok());
  }

  TestLog log_{256};
  MemoryDevice meta_{32 * kBlock};
};

TEST_F(RecoverTest, AnEmptyLogReplaysNothing) {
  RecoverReport r = Recover();
  EXPECT_TRUE(r.position.empty);
  EXPECT_FALSE(r.replayed);
  EXPECT_EQ(meta_.stats().writes, 0u);
}

TEST_F(RecoverTest, CommittedTransactionsAreReplayedInCommitOrder) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  log_.Append(Tx(2, {{ItemType::kTransHeader, "th"},
                     {ItemType::kBuffer, Buf(1, 0, 0, 'b')},
                     {ItemType::kBuffer, Buf(2, 4000, 4095, 'c')}}));
  // Tid 3 starts before tid 4 but commits after it: its change wins.
  std::string p;
  AppendTransaction(&p, 3, B(Buf(3, 200, 200, 'x')), kOpStart);
  AppendTransaction(&p, 4, B(Buf(3, 200, 200, 'y')));
  log_.Append(p);
  std::string q = Tx(5, {});
  AppendTransaction(&q, 3, {}, kOpCommit);
  log_.Append(q);

  RecoverReport r = Recover();
  EXPECT_TRUE(r.replayed);
  EXPECT_EQ(r.records, 4u);
  EXPECT_EQ(r.transactions, 5u);
  EXPECT_EQ(r.buffers_replayed, 5u);
  EXPECT_EQ(r.blocks_written, 3u);
  EXPECT_EQ(At(1, 0), 'b');
  EXPECT_EQ(At(1, 127), 'b');
  EXPECT_EQ(At(1, 128), 0);
  EXPECT_EQ(At(2, 3968), 'c');
  EXPECT_EQ(At(2, 4095), 'c');
  EXPECT_EQ(At(3, 200), 'x');
  // Each block carries the start LSN of the last transaction replayed into it.
  EXPECT_EQ(StampOf(1), MakeLsn(1, 2));
  EXPECT_EQ(StampOf(3), MakeLsn(1, 4));
  EXPECT_GE(meta_.flush_count(), 1u);
}

TEST_F(RecoverTest, UncommittedTransactionsAndATornTailAreDropped) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  std::string open;
  AppendTransaction(&open, 2, B(Buf(2, 0, 0, 'b')), kOpStart);  // never commits
  log_.Append(open);
  // A record cut short by the crash: only its header sector landed.
  log_.Append(Tx(3, B(Buf(3, 0, 1000, 'c'))), 0, /*keep_sectors=*/1);

  RecoverReport r = Recover();
  EXPECT_EQ(r.position.trimmed_records, 1u);
  EXPECT_EQ(r.transactions, 1u);
  EXPECT_EQ(r.dropped_open, 1u);
  EXPECT_EQ(At(1, 0), 'a');
  EXPECT_EQ(At(2, 0), 0);
  EXPECT_EQ(At(3, 0), 0);
}

TEST_F(RecoverTest, ABlockWhoseStampIsAtOrPastTheTransactionIsSkipped) {
  const Lsn t1 = log_.Append(Tx(1, {{ItemType::kBuffer, Buf(1, 300, 300, 'a')},
                                    {ItemType::kBuffer, Buf(2, 300, 300, 'a')},
                                    {ItemType::kBuffer, Buf(3, 300, 300, 'a')}}));
  const Lsn t2 = log_.Append(Tx(2, {{ItemType::kBuffer, Buf(1, 300, 300, 'b')},
                                    {ItemType::kBuffer, Buf(2, 300, 300, 'b')},
                                    {ItemType::kBuffer, Buf(3, 300, 300, 'b')},
                                    {ItemType::kBuffer, Buf(4, 300, 300, 'b', kBufNoLsn)}}));
  StampOnDisk(1, t2);  // written back after t2: has both
  StampOnDisk(2, t1);  // written back after t1 only
  StampOnDisk(3, MakeLsn(1, 0) - 1);  // older than the whole log
  StampOnDisk(4, MakeLsn(9, 9));      // carries no stamp: the body says so

  RecoverReport r = Recover();
  EXPECT_EQ(r.buffers_skipped_newer, 3u);  // block 1 twice, block 2 once
  EXPECT_EQ(r.buffers_replayed, 4u);      // block 2 once, block 3 twice, block 4
  EXPECT_EQ(At(1, 300), 0);
  EXPECT_EQ(StampOf(1), t2);
  EXPECT_EQ(At(2, 300), 'b');
  EXPECT_EQ(StampOf(2), t2);
  EXPECT_EQ(At(3, 300), 'b');
  EXPECT_EQ(StampOf(3), t2);
  EXPECT_EQ(At(4, 300), 'b');
  EXPECT_EQ(StampOf(4), MakeLsn(9, 9));  // untouched outside the logged chunk
}

TEST_F(RecoverTest, TwoTransactionsStartingInOneRecordAreBothReplayed) {
  // Both start at the same LSN; the second must not be skipped because the
  // first stamped that LSN into the block during this replay.
  std::string p;
  AppendTransaction(&p, 1, B(Buf(1, 0, 0, 'a')));
  AppendTransaction(&p, 2, B(Buf(1, 500, 500, 'b')));
  log_.Append(p);
  RecoverReport r = Recover();
  EXPECT_EQ(r.buffers_replayed, 2u);
  EXPECT_EQ(At(1, 0), 'a');
  EXPECT_EQ(At(1, 500), 'b');
}

TEST_F(RecoverTest, ACancelRecordSupersedesEarlierVersionsOnly) {
  log_.Append(Tx(1, {{ItemType::kBuffer, Buf(5, 0, 0, 'a')},
                     {ItemType::kBuffer, Buf(6, 0, 0, 'a')}}));
  log_.Append(Tx(2, {{ItemType::kBuffer, Cancel(5)}, {ItemType::kBuffer, Cancel(6)}}));
  log_.Append(Tx(3, B(Buf(6, 200, 200, 'n'))));  // block 6 reused after it was freed
  RecoverReport r = Recover();
  EXPECT_EQ(r.cancel_records, 2u);
  EXPECT_EQ(r.buffers_cancelled, 2u);
  EXPECT_EQ(r.buffers_replayed, 1u);
  EXPECT_EQ(BlockOf(5), std::vector<std::byte>(kBlock));  // never written
  EXPECT_EQ(At(6, 0), 0);
  EXPECT_EQ(At(6, 200), 'n');
  EXPECT_EQ(r.blocks_written, 1u);
}

TEST_F(RecoverTest, ACleanLogReplaysNothing) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  log_.AppendUnmount();
  RecoverReport r = Recover();
  EXPECT_TRUE(r.position.clean);
  EXPECT_FALSE(r.replayed);
  EXPECT_EQ(meta_.stats().writes, 0u);
  EXPECT_NE(RecoverReportString(r).find("nothing to replay"), std::string::npos);
}

TEST_F(RecoverTest, ACorruptRecordBetweenTailAndHeadFailsWithTheDeviceUntouched) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  const Lsn bad = log_.Append(Tx(2, B(Buf(2, 0, 0, 'b'))));
  log_.Append(Tx(3, B(Buf(3, 0, 0, 'c'))));
  // Flip a payload byte of the middle record: its CRC no longer matches.
  const std::uint64_t at = log_.region().offset + (SectorOf(bad) + 1) * kLogSectorSize + 40;
  char byte;
  ASSERT_TRUE(log_.device()->Read(at, &byte, 1).ok());
  byte ^= 0x10;
  ASSERT_TRUE(log_.device()->Write(at, &byte, 1).ok());

  const std::vector<std::byte> before = meta_.Contents();
  Result<RecoverReport> r = RecoverLog(Options());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("CRC"), std::string_view::npos) << r.status().message();
  EXPECT_EQ(meta_.Contents(), before);
  EXPECT_EQ(meta_.stats().writes, 0u);
}

TEST_F(RecoverTest, ACorruptBufferBodyFailsBeforeAnythingIsWritten) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  std::string body = Buf(2, 0, 0, 'b');
  body[0] ^= 1;  // the record's CRC covers it, so only the body decoder sees it
  log_.Append(Tx(2, B(body)));
  Result<RecoverReport> r = RecoverLog(Options());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("transaction 2"), std::string_view::npos);
  EXPECT_NE(r.status().message().find("magic"), std::string_view::npos);
  EXPECT_EQ(meta_.stats().writes, 0u);
}

TEST_F(RecoverTest, ABlockBeyondTheDeviceIsCorruption) {
  log_.Append(Tx(1, B(Buf(1000, 0, 0, 'a'))));
  Result<RecoverReport> r = RecoverLog(Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("beyond"), std::string_view::npos);
}

TEST_F(RecoverTest, RecoveringTwiceLeavesTheSameImage) {
  log_.Append(Tx(1, {{ItemType::kBuffer, Buf(1, 0, 300, 'a')},
                     {ItemType::kBuffer, Buf(2, 0, 0, 'a', kBufNoLsn)}}));
  log_.Append(Tx(2, {{ItemType::kBuffer, Buf(1, 200, 200, 'b')},
                     {ItemType::kBuffer, Buf(2, 0, 0, 'b', kBufNoLsn)}}));
  log_.Append(Tx(3, B(Buf(3, 4095, 4095, 'c'))));
  Recover();
  const std::vector<std::byte> once = meta_.Contents();
  RecoverReport again = Recover();
  EXPECT_EQ(meta_.Contents(), once);
  EXPECT_EQ(again.buffers_skipped_newer, 3u);  // blocks 1 and 3 carry their stamps now
}

TEST_F(RecoverTest, ACrashAmongTheBlockWritesIsRepairedByRecoveringAgain) {
  log_.Append(Tx(1, {{ItemType::kBuffer, Buf(1, 0, 0, 'a')},
                     {ItemType::kBuffer, Buf(2, 0, 0, 'a')},
                     {ItemType::kBuffer, Buf(3, 0, 0, 'a', kBufNoLsn)}}));
  log_.Append(Tx(2, {{ItemType::kBuffer, Buf(2, 130, 130, 'b')},
                     {ItemType::kBuffer, Buf(3, 0, 0, 'b', kBufNoLsn)}}));
  MemoryDevice reference(meta_.Contents());
  Recover(&reference);

  for (std::uint64_t fail_at = 1; fail_at <= 3; ++fail_at) {
    SCOPED_TRACE(fail_at);
    MemoryDevice disk(std::vector<std::byte>(32 * kBlock));
    FaultDevice faulty(&disk);
    faulty.FailNthWrite(fail_at);
    Result<RecoverReport> crashed = RecoverLog(Options(&faulty));
    ASSERT_FALSE(crashed.ok());
    EXPECT_EQ(crashed.status().code(), StatusCode::kIoError);
    Recover(&disk);
    EXPECT_EQ(disk.Contents(), reference.Contents());
  }
}

TEST_F(RecoverTest, ADryRunDecidesEverythingAndWritesNothing) {
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  log_.Append(Tx(2, B(Cancel(1))));
  log_.Append(Tx(3, B(Buf(2, 0, 0, 'b'))));
  RecoverOptions o = Options();
  o.dry_run = true;
  Result<RecoverReport> dry = RecoverLog(o);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(meta_.stats().writes, 0u);
  EXPECT_EQ(meta_.flush_count(), 0u);
  RecoverReport real = Recover();
  EXPECT_EQ(dry->buffers_replayed, real.buffers_replayed);
  EXPECT_EQ(dry->buffers_cancelled, real.buffers_cancelled);
  EXPECT_EQ(dry->blocks_written, real.blocks_written);
  EXPECT_EQ(real.blocks_written, 1u);
}

TEST_F(RecoverTest, TheLogDeviceHoldsTheMetadataByDefault) {
  log_.Append(Tx(1, B(Buf(0, 0, 0, 'm'))));  // block 0 sits before the log region
  RecoverOptions o = Options();
  o.metadata = nullptr;
  ASSERT_TRUE(RecoverLog(o).ok());
  char c;
  ASSERT_TRUE(log_.device()->Read(0, &c, 1).ok());
  EXPECT_EQ(c, 'm');
}

TEST(RecoverWrap, ALogThatWrapsIsReplayedFromItsTail) {
  TestLog log(64);
  MemoryDevice meta(8 * kBlock);
  std::map<std::uint64_t, char> want;  // block -> byte 0 after recovery
  // 25 two-sector records fill sectors 0-49 of cycle 1.
  for (std::uint32_t i = 0; i < 25; ++i) {
    std::string p;
    AppendTransaction(&p, i, B(Buf(1 + i % 3, 0, 0, static_cast<char>('a' + i))));
    if (i == 24) AppendTransaction(&p, 99, B(Buf(4, 0, 0, 'o')), kOpStart);  // straddles the tail
    log.Append(p);
  }
  log.set_tail(log.head());  // everything so far is on disk
  std::string commit99;
  AppendTransaction(&commit99, 99, {}, kOpCommit);
  for (std::uint32_t i = 25; i < 34; ++i) {
    std::string p = i == 25 ? commit99 : "";
    // Record 31 is bigger and runs past the end of the log into cycle 2.
    const std::uint32_t last = i == 31 ? 700 : 0;
    AppendTransaction(&p, i, B(Buf(1 + i % 3, 0, last, static_cast<char>('a' + i))));
    want[1 + i % 3] = static_cast<char>('a' + i);
    log.Append(p);
  }
  ASSERT_EQ(CycleOf(log.head()), 2u);

  Result<RecoverReport> r = RecoverLog({.log = log.region(), .metadata = &meta,
                                        .max_inflight_sectors = 8});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->position.head, log.head());
  EXPECT_EQ(r->position.tail, MakeLsn(1, 50));
  EXPECT_EQ(r->records, 9u);
  EXPECT_EQ(r->transactions, 9u);
  EXPECT_EQ(r->orphan_ops, 1u);  // tid 99's COMMIT: its START is before the tail
  const std::vector<std::byte> image = meta.Contents();
  for (const auto& [blkno, c] : want)
    EXPECT_EQ(static_cast<char>(image[blkno * kBlock]), c) << "block " << blkno;
  EXPECT_EQ(static_cast<char>(image[4 * kBlock]), 0);
  // Record 31 (block 2) is the one that wrapped; its last chunk was after the wrap.
  EXPECT_EQ(static_cast<char>(image[2 * kBlock + 700]), static_cast<char>('a' + 31));
}

TEST_F(RecoverTest, RecoveryIsTracedAndReported) {
  tracing::Tracer::Get().ResetForTesting();
  ASSERT_TRUE(tracing::Catalogue::Get().SetSubsystemEnabled("journal", true).ok());
  log_.Append(Tx(1, B(Buf(1, 0, 0, 'a'))));
  log_.Append(Tx(2, B(Cancel(1))));
  log_.Append(Tx(3, B(Buf(2, 0, 0, 'b'))));
  RecoverReport r = Recover();
  std::map<std::string, int> n;
  tracing::TraceReader reader(&tracing::Tracer::Get());
  for (;;) {
    auto got = reader.Read(4096, 0);
    if (!got.ok()) break;
    for (const auto& e : *got) {
      if (e.type != tracing::TraceEntry::Type::kRecord) continue;
      const tracing::EventDef* def = tracing::Catalogue::Get().ById(e.record.event_id);
      if (def != nullptr && def->subsystem() == "journal") ++n[std::string(def->name())];
    }
  }
  EXPECT_EQ(n["recover_start"], 1);
  EXPECT_EQ(n["recover_pass"], 3);
  EXPECT_EQ(n["recover_buffer"], 2);
  EXPECT_EQ(n["recover_done"], 1);
  ASSERT_TRUE(tracing::Catalogue::Get().SetSubsystemEnabled("journal", false).ok());
  tracing::Tracer::Get().ResetForTesting();

  const std::string s = RecoverReportString(r);
  EXPECT_NE(s.find("3 transaction(s)"), std::string::npos) << s;
  EXPECT_NE(s.find("1 replayed"), std::string::npos) << s;
  EXPECT_NE(s.find("1 cancelled by 1 cancel record(s)"), std::string::npos) << s;
  EXPECT_EQ(ReplayActionName(ReplayAction::kSkippedNewer), "skipped_newer");
}

}  // namespace
}  // namespace log_recover_test
}  // namespace walfs::journal
