// Specs of the on-disk log record format (LevelDB log_test style: build
// records, damage bytes on purpose, check what the decoder says).
#include "journal/log_format.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "base/coding.h"

namespace walfs::journal {
namespace {

using Kind = DecodedRecord::Kind;

std::string Payload(std::size_t ops, std::size_t body_len, std::uint32_t tid = 7) {
  std::string p;
  for (std::size_t i = 0; i < ops; ++i) {
    std::string body(body_len, static_cast<char>('a' + i % 26));
    const std::uint8_t flags = i == 0 ? kOpStart : (i + 1 == ops ? kOpCommit : 0);
    AppendOp(&p, OpHeader{tid, static_cast<std::uint32_t>(body.size()), flags, ItemType::kBuffer},
             body);
  }
  return p;
}

RecordHeader Header(std::uint32_t cycle = 3) {
  RecordHeader h;
  h.cycle = cycle;
  h.lsn = MakeLsn(cycle, 64);
  h.prev_lsn = MakeLsn(cycle, 8);
  h.tail_lsn = MakeLsn(cycle - 1, 900);
  h.num_ops = 4;
  return h;
}

TEST(LogFormat, LsnPacksCycleAndSector) {
  const Lsn lsn = MakeLsn(5, 1234);
  EXPECT_EQ(CycleOf(lsn), 5u);
  EXPECT_EQ(SectorOf(lsn), 1234u);
  EXPECT_EQ(LsnString(lsn), "5:1234");
  EXPECT_LT(MakeLsn(1, 99999), MakeLsn(2, 0));
}

TEST(LogFormat, ARecordRoundTrips) {
  const std::string payload = Payload(4, 300);
  const std::string disk = EncodeRecord(Header(), payload);
  EXPECT_EQ(disk.size(), RecordBytes(payload.size()));
  EXPECT_EQ(disk.size() % kLogSectorSize, 0u);
  DecodedRecord r = DecodeRecord(disk);
  ASSERT_EQ(r.kind, Kind::kOk) << r.reason;
  EXPECT_EQ(r.payload, payload);
  EXPECT_EQ(r.bytes, disk.size());
  EXPECT_EQ(r.header.lsn, Header().lsn);
  EXPECT_EQ(r.header.prev_lsn, Header().prev_lsn);
  EXPECT_EQ(r.header.tail_lsn, Header().tail_lsn);
  EXPECT_EQ(r.header.len, payload.size());
  EXPECT_EQ(r.header.num_ops, 4u);
}

TEST(LogFormat, EmptyAndMaximalPayloadsRoundTrip) {
  for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{511}, std::size_t{512},
                          kMaxRecordPayload}) {
    std::string payload(len, 'x');
    DecodedRecord r = DecodeRecord(EncodeRecord(Header(), payload));
    ASSERT_EQ(r.kind, Kind::kOk) << len << ": " << r.reason;
    EXPECT_EQ(r.payload, payload);
  }
}

TEST(LogFormat, EverySectorCarriesTheCycleOnDisk) {
  const std::string disk = EncodeRecord(Header(9), Payload(3, 700));
  for (std::size_t off = 0; off < disk.size(); off += kLogSectorSize)
    EXPECT_EQ(SectorCycle(std::string_view(disk).substr(off, kLogSectorSize)), 9u) << off;
  EXPECT_EQ(SectorCycle(std::string(kLogSectorSize, '\0')), 0u);
}

TEST(LogFormat, ASectorFromAnotherCycleMeansTornRecord) {
  std::string disk = EncodeRecord(Header(4), Payload(4, 600));
  // The last sector still holds what the previous pass of the log wrote.
  EncodeFixed32(disk.data() + disk.size() - kLogSectorSize, 3);
  DecodedRecord r = DecodeRecord(disk);
  EXPECT_EQ(r.kind, Kind::kTorn) << r.reason;
}

TEST(LogFormat, ARecordCutShortIsTruncated) {
  const std::string disk = EncodeRecord(Header(), Payload(2, 900));
  for (std::size_t len = 4; len < disk.size(); ++len) {
    DecodedRecord r = DecodeRecord(std::string_view(disk).substr(0, len));
    ASSERT_EQ(r.kind, Kind::kTruncated) << len;
  }
  EXPECT_EQ(DecodeRecord("").kind, Kind::kNotARecord);
  EXPECT_EQ(DecodeRecord(std::string(kLogSectorSize, '\0')).kind, Kind::kNotARecord);
}

// Flipping any single bit anywhere in the record never yields a record that
// decodes as valid with different contents.
TEST(LogFormat, EveryBitFlipIsDetected) {
  const std::string payload = Payload(3, 200);
  const std::string disk = EncodeRecord(Header(), payload);
  for (std::size_t byte = 0; byte < disk.size(); ++byte) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = disk;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      DecodedRecord r = DecodeRecord(bad);
      if (r.kind == Kind::kOk) {
        // Only bytes outside the checked content may change harmlessly: the
        // reserved header bytes and the padding's cycle_data slots.
        EXPECT_EQ(r.payload, payload) << "byte " << byte;
      }
    }
  }
}

TEST(LogFormat, HeaderFieldsAreValidated) {
  std::string disk = EncodeRecord(Header(), Payload(1, 10));
  std::string v = disk;
  EncodeFixed16(v.data() + 8, 2);
  EXPECT_EQ(DecodeRecord(v).kind, Kind::kCorrupt);
  std::string len = disk;
  EncodeFixed32(len.data() + 40, kMaxRecordPayload + 1);
  EXPECT_EQ(DecodeRecord(len).kind, Kind::kCorrupt);
  std::string crc = disk;
  crc[48] = static_cast<char>(crc[48] ^ 1);
  DecodedRecord r = DecodeRecord(crc);
  EXPECT_EQ(r.kind, Kind::kCorrupt);
  EXPECT_NE(r.reason.find("CRC"), std::string::npos);
}

TEST(LogFormat, OpsAreReadBackInOrderWithTheirFlags) {
  DecodedRecord r = DecodeRecord(EncodeRecord(Header(), Payload(4, 50, 42)));
  ASSERT_EQ(r.kind, Kind::kOk);
  OpReader ops(r.payload);
  OpHeader op;
  std::string_view body;
  int n = 0;
  while (ops.Next(&op, &body)) {
    EXPECT_EQ(op.tid, 42u);
    EXPECT_EQ(op.type, ItemType::kBuffer);
    EXPECT_EQ(body, std::string(50, static_cast<char>('a' + n)));
    if (n == 0) {
      EXPECT_EQ(op.flags, kOpStart);
    } else if (n == 3) {
      EXPECT_EQ(op.flags, kOpCommit);
    }
    ++n;
  }
  EXPECT_EQ(n, 4);
  EXPECT_TRUE(ops.error().empty());
  EXPECT_EQ(OpFlagsString(kOpStart | kOpCommit), "START|COMMIT");
  EXPECT_EQ(ItemTypeName(static_cast<ItemType>(200)), "skippable");
}

TEST(LogFormat, AMalformedOpStopsTheReaderWithAReason) {
  std::string p = Payload(2, 20);
  EncodeFixed32(p.data() + 4, 1000);  // first op claims more than there is
  OpReader ops(p);
  OpHeader op;
  std::string_view body;
  EXPECT_FALSE(ops.Next(&op, &body));
  EXPECT_NE(ops.error().find("claims"), std::string::npos);
  OpReader cut(std::string_view(Payload(1, 5)).substr(0, 7));
  EXPECT_FALSE(cut.Next(&op, &body));
  EXPECT_FALSE(cut.error().empty());
}

TEST(LogFormat, RandomGarbageNeverDecodesAsARecord) {
  std::mt19937 rng(11);
  std::string junk(4096, '\0');
  for (int i = 0; i < 2000; ++i) {
    for (char& c : junk) c = static_cast<char>(rng());
    EncodeFixed32(junk.data(), kRecordMagic);  // even with the magic in place
    EXPECT_NE(DecodeRecord(junk).kind, Kind::kOk);
  }
}

}  // namespace
}  // namespace walfs::journal
