// Specs of finding the head and tail of the log after a crash, and of
// reading records from the tail to the head.
#include "journal/log_head.h"

#include <gtest/gtest.h>

#include "journal/log_reader.h"
#include "tests/journal/log_test_util.h"

namespace walfs::journal {
namespace {

using testing::OneOp;
using testing::TestLog;

std::vector<Lsn> ReadAll(const LogRegion& region, Lsn from, Lsn to, Status* status = nullptr) {
  LogReader reader(region, from, to);
  LogRecordAt rec;
  std::vector<Lsn> out;
  while (reader.Next(&rec)) out.push_back(rec.lsn);
  if (status) *status = reader.status();
  return out;
}

TEST(LogHead, ANeverWrittenLogIsEmpty) {
  TestLog log(256);
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->empty);
  EXPECT_EQ(p->head, MakeLsn(1, 0));
}

TEST(LogHead, TheHeadFollowsTheLastRecordAndItNamesTheTail) {
  TestLog log(256);
  std::vector<Lsn> written;
  for (std::uint32_t i = 0; i < 5; ++i) written.push_back(log.Append(OneOp(i, 700)));
  log.set_tail(written[2]);
  written.push_back(log.Append(OneOp(9, 10)));
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->empty);
  EXPECT_EQ(p->head, log.head());
  EXPECT_EQ(p->last_record, written.back());
  EXPECT_EQ(p->tail, written[2]);
  EXPECT_FALSE(p->clean);
  EXPECT_EQ(ReadAll(log.region(), p->tail, p->head),
            std::vector<Lsn>(written.begin() + 2, written.end()));
}

TEST(LogHead, AnUnmountRecordAtTheHeadMeansClean) {
  TestLog log(256);
  log.Append(OneOp(1, 100));
  std::string unmount;
  AppendOp(&unmount, OpHeader{2, 0, kOpUnmount, ItemType::kNone}, "");
  log.set_tail(log.head());
  log.Append(unmount, kRecordUnmount);
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->clean);
}

// The log wraps several times; records cross its end, and the head is found
// wherever the current pass stopped.
TEST(LogHead, TheHeadIsFoundAfterTheLogWrapsRecordsAcrossItsEnd) {
  TestLog log(64);
  std::vector<Lsn> written;
  for (std::uint32_t i = 0; i < 40; ++i) {
    written.push_back(log.Append(OneOp(i, 1500)));  // 4 sectors + header
    // Keep the tail three records back, as a working log would.
    if (written.size() > 3) log.set_tail(written[written.size() - 3]);
    Result<LogPosition> p = FindLogPosition(log.region(), 8);
    ASSERT_TRUE(p.ok()) << i << ": " << p.status().ToString();
    ASSERT_EQ(p->head, log.head()) << "after record " << i;
    ASSERT_EQ(p->last_record, written.back());
    Status s;
    std::vector<Lsn> got = ReadAll(log.region(), p->tail, p->head, &s);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(got.back(), written.back());
  }
  EXPECT_GE(CycleOf(log.head()), 3u);
}

TEST(LogHead, AHeadExactlyAtTheEndOfTheLogStartsTheNextCycle) {
  TestLog log(60);
  // Records of exactly 6 sectors: ten of them fill the 60-sector log.
  for (std::uint32_t i = 0; i < 10; ++i) log.Append(OneOp(i, 2100));
  ASSERT_EQ(log.head(), MakeLsn(2, 0));
  Result<LogPosition> p = FindLogPosition(log.region(), 8);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->head, MakeLsn(2, 0));
}

TEST(LogHead, ARecordCutShortByTheCrashIsDroppedFromTheHead) {
  TestLog log(256);
  log.Append(OneOp(1, 600));
  const Lsn last_good = log.Append(OneOp(2, 600));
  const Lsn torn = log.Append(OneOp(3, 3000), 0, 3);  // 3 of its 7 sectors landed
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->head, torn);
  EXPECT_EQ(p->last_record, last_good);
  EXPECT_EQ(p->trimmed_records, 1u);
}

TEST(LogHead, AnUnwrittenHoleBeforeTheHeadMovesTheHeadBack) {
  TestLog log(256);
  log.Append(OneOp(1, 600));
  const Lsn hole = log.Append(OneOp(2, 600), 0, 0);  // its write never happened
  log.Append(OneOp(3, 600));                          // a later iclog completed
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->head, hole);
  EXPECT_GT(p->hole_sectors, 0u);
}

TEST(LogHead, ABadCrcInTheInFlightWindowIsTheEndOfTheLog) {
  TestLog log(256);
  const Lsn good = log.Append(OneOp(1, 600));
  const Lsn bad = log.Append(OneOp(2, 600));
  // Damage a payload byte (not its stamped first word) of the last record.
  std::string sector = *log.region().ReadSectors(SectorOf(bad) + 1, 1);
  sector[100] = static_cast<char>(sector[100] ^ 0x40);
  ASSERT_TRUE(log.region().WriteSectors(SectorOf(bad) + 1, sector).ok());
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->head, bad);
  EXPECT_EQ(p->last_record, good);
}

TEST(LogHead, ABadRecordBeforeTheWindowIsCorruptionForTheReader) {
  TestLog log(256);
  const Lsn first = log.Append(OneOp(1, 600));
  for (std::uint32_t i = 2; i < 6; ++i) log.Append(OneOp(i, 600));
  std::string sector = *log.region().ReadSectors(SectorOf(first) + 1, 1);
  sector[100] = static_cast<char>(sector[100] ^ 0x40);
  ASSERT_TRUE(log.region().WriteSectors(SectorOf(first) + 1, sector).ok());
  Result<LogPosition> p = FindLogPosition(log.region(), 4);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Status s;
  std::vector<Lsn> got = ReadAll(log.region(), first, p->head, &s);
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("CRC"), std::string_view::npos);
}

TEST(LogHead, AReaderRefusesATailAheadOfTheHead) {
  TestLog log(64);
  log.Append(OneOp(1, 100));
  Status s;
  ReadAll(log.region(), MakeLsn(5, 0), log.head(), &s);
  EXPECT_TRUE(s.IsCorruption());
}

TEST(LogHead, ARegionThatDoesNotFitItsDeviceIsRefused) {
  TestLog log(64);
  LogRegion r = log.region();
  r.sectors = 1u << 20;
  EXPECT_EQ(FindLogPosition(r).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace walfs::journal

namespace walfs::journal {
namespace {

// A nearly full log: the last complete record (2:4) names tail 1:8, but the
// record after it (2:8) reused 1:8's first sector before the crash tore it.
// The tail moves to the first whole record after the reused sectors.
TEST(LogHeadTail, ATailReusedByATornWriteMovesToTheNextWholeRecord) {
  testing::TestLog log(64);
  for (int i = 0; i < 16; ++i) log.Append(testing::OneOp(static_cast<std::uint32_t>(i + 1), 1200));
  ASSERT_EQ(log.head(), MakeLsn(2, 0));
  log.set_tail(MakeLsn(1, 8));
  log.Append(testing::OneOp(20, 1200));
  log.Append(testing::OneOp(21, 1200));
  log.Append(testing::OneOp(22, 1200), 0, /*keep_sectors=*/1);
  auto pos = FindLogPosition(log.region(), /*max_inflight_sectors=*/8);
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  EXPECT_EQ(pos->head, MakeLsn(2, 8));
  EXPECT_EQ(pos->tail, MakeLsn(1, 12));
  EXPECT_EQ(pos->tail_skipped_sectors, 4u);
  LogReader reader(log.region(), pos->tail, pos->head);
  LogRecordAt rec;
  int records = 0;
  while (reader.Next(&rec)) ++records;
  EXPECT_TRUE(reader.status().ok()) << reader.status().ToString();
  EXPECT_EQ(records, 15);  // 1:12 .. 1:60, then 2:0 and 2:4
}

TEST(LogHeadTail, AnIntactTailIsKept) {
  testing::TestLog log(64);
  for (int i = 0; i < 16; ++i) log.Append(testing::OneOp(static_cast<std::uint32_t>(i + 1), 1200));
  log.set_tail(MakeLsn(1, 8));
  log.Append(testing::OneOp(20, 1200));
  log.Append(testing::OneOp(21, 1200));
  auto pos = FindLogPosition(log.region(), 8);
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  EXPECT_EQ(pos->tail, MakeLsn(1, 8));
  EXPECT_EQ(pos->tail_skipped_sectors, 0u);
}

TEST(LogHeadTail, DamageBeyondTheWindowIsStillCorruption) {
  testing::TestLog log(64);
  for (int i = 0; i < 16; ++i) log.Append(testing::OneOp(static_cast<std::uint32_t>(i + 1), 1200));
  log.set_tail(MakeLsn(1, 8));
  log.Append(testing::OneOp(20, 1200));
  log.Append(testing::OneOp(21, 1200));
  // Corrupt the record at 1:20, well past anything a torn write could reach.
  std::string sector = *log.region().ReadSectors(21, 1);
  sector[100] ^= 1;
  ASSERT_TRUE(log.region().WriteSectors(21, sector).ok());
  auto pos = FindLogPosition(log.region(), 8);
  ASSERT_TRUE(pos.ok());
  LogReader reader(log.region(), pos->tail, pos->head);
  LogRecordAt rec;
  while (reader.Next(&rec)) {
  }
  EXPECT_FALSE(reader.status().ok());
}

}  // namespace
}  // namespace walfs::journal

namespace walfs::journal {
namespace {

// Crash shapes around the physical end of the log.  The writer issues a
// record split across the end as two writes, and records are in flight in
// several iclogs at once, so the in-flight window before the head can
// straddle the end: its first part is the end of the previous pass.  Each
// shape is built in the first pass (the end never written before: cycle 0)
// and in the second (the end still carrying cycle 1 under cycle 2).
constexpr std::uint32_t kWrapLogSectors = 64;
constexpr std::uint32_t kWrapWindow = 16;

// 3-sector records, and a 6-sector one that is split across the end.
std::string Small(std::uint32_t tid) { return testing::OneOp(tid, 900); }
std::string Split(std::uint32_t tid) { return testing::OneOp(tid, 2500); }

// Appends small records, the tail three records back, until the next
// Split() record would cross the end of the log in pass `pass`.
std::vector<Lsn> FillToTheEnd(testing::TestLog* log, std::uint32_t pass) {
  const auto split_sectors =
      static_cast<std::uint32_t>(log->Encode(Split(0)).size() / kLogSectorSize);
  std::vector<Lsn> written;
  for (std::uint32_t tid = 1;; ++tid) {
    const Lsn h = log->head();
    if (CycleOf(h) == pass && SectorOf(h) + split_sectors > kWrapLogSectors) break;
    written.push_back(log->Append(Small(tid)));
    if (written.size() > 3) log->set_tail(written[written.size() - 3]);
  }
  EXPECT_GT(SectorOf(log->head()) + split_sectors, kWrapLogSectors);
  return written;
}

// The head is `head`, the last record `last`, and the tail reads up to the
// head without error.
void ExpectLogEndsAt(const testing::TestLog& log, Lsn head, Lsn last, std::uint32_t pass) {
  Result<LogPosition> p = FindLogPosition(log.region(), kWrapWindow);
  ASSERT_TRUE(p.ok()) << "pass " << pass << ": " << p.status().ToString();
  EXPECT_EQ(p->head, head) << "pass " << pass << ": " << LogPositionString(*p);
  EXPECT_EQ(p->last_record, last) << "pass " << pass;
  Status s;
  std::vector<Lsn> got = ReadAll(log.region(), p->tail, p->head, &s);
  ASSERT_TRUE(s.ok()) << "pass " << pass << ": " << s.ToString();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), last) << "pass " << pass;
}

// The second half (sectors 0.. in the next cycle) landed, the first half
// did not: the cycle drop is just past the second half, and the hole is at
// the end of the log, in the previous pass.  This is the crash that failed
// recovery ("log record at 1:1031: not a record") before the window was
// scanned across the end.
TEST(LogHeadWrap, ARecordSplitAcrossTheEndWithoutItsFirstHalfEndsTheLogBeforeIt) {
  for (std::uint32_t pass : {1u, 2u}) {
    testing::TestLog log(kWrapLogSectors);
    const std::vector<Lsn> written = FillToTheEnd(&log, pass);
    const Lsn split = log.AppendWithout(Split(90), kWrapLogSectors - SectorOf(log.head()));
    log.Append(Small(91));  // a later iclog landed too
    ExpectLogEndsAt(log, split, written.back(), pass);
    Result<LogPosition> p = FindLogPosition(log.region(), kWrapWindow);
    ASSERT_TRUE(p.ok());
    EXPECT_GT(p->hole_sectors, 0u);
  }
}

// The first half landed, the second did not: the record is torn, and the
// log ends at its start.
TEST(LogHeadWrap, ARecordSplitAcrossTheEndWithoutItsSecondHalfIsTorn) {
  for (std::uint32_t pass : {1u, 2u}) {
    testing::TestLog log(kWrapLogSectors);
    const std::vector<Lsn> written = FillToTheEnd(&log, pass);
    const Lsn split = log.Append(Split(90), 0, kWrapLogSectors - SectorOf(log.head()));
    log.Append(Small(91));  // a later iclog landed too
    ExpectLogEndsAt(log, split, written.back(), pass);
    Result<LogPosition> p = FindLogPosition(log.region(), kWrapWindow);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->trimmed_records, 1u);
  }
}

// A record just before the end never landed; the one split across the end
// and one after it did.  The window, scanned across the end, finds the hole.
TEST(LogHeadWrap, AHoleBeforeTheEndWithWholeRecordsAfterTheWrapMovesTheHeadBackToIt) {
  for (std::uint32_t pass : {1u, 2u}) {
    testing::TestLog log(kWrapLogSectors);
    const std::vector<Lsn> written = FillToTheEnd(&log, pass);
    const Lsn hole = log.Append(Small(90), 0, /*keep_sectors=*/0);
    const Lsn split = log.Append(Split(91));
    ASSERT_NE(CycleOf(split), CycleOf(log.head()));  // it does cross the end
    log.Append(Small(92));
    ExpectLogEndsAt(log, hole, written.back(), pass);
  }
}

// A record whose header sector is gone but whose other sectors carry the
// right cycle (the first word of a payload sector is its cycle): in the
// window the log ends before it; further back it is corruption.
TEST(LogHead, ALastRecordWithoutItsHeaderEndsTheLogOnlyInTheWindow) {
  testing::TestLog log(256);
  log.Append(testing::OneOp(1, 600));
  const Lsn good = log.Append(testing::OneOp(2, 600));
  const Lsn headless = log.Append(testing::OneOp(3, 1500));
  std::string sector(kLogSectorSize, '\0');
  sector[0] = 1;  // cycle 1, as a payload sector carries it
  ASSERT_TRUE(log.region().WriteSectors(SectorOf(headless), sector).ok());
  Result<LogPosition> p = FindLogPosition(log.region());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->head, headless);
  EXPECT_EQ(p->last_record, good);
  EXPECT_GT(p->hole_sectors, 0u);
  // A window of 2 sectors: the headless record started before it.
  Result<LogPosition> narrow = FindLogPosition(log.region(), 2);
  EXPECT_TRUE(narrow.status().IsCorruption()) << narrow.status().ToString();
}

}  // namespace
}  // namespace walfs::journal
