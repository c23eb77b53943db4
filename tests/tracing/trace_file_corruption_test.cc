// Specs of the trace file format, part 2: every check the reader makes.  Bad
// bytes are reported as Corruption, a torn tail is the end of the file, and
// no input crashes the reader (docs/trace_format.md, "Reading").
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tracing/trace_file_test_util.h"

namespace walfs::tracing {
namespace {

using namespace testing;  // NOLINT: trace_file_test_util.h

TEST(TraceFileReader, BadMagicIsCorruption) {
  std::string f = WriteToBuffer(MakeEntries(), 4);
  f[3] = 'X';
  ExpectCorruption(ReadBuffer(f), "bad magic");
  ExpectCorruption(ReadBuffer(""), "bad magic");
  ExpectCorruption(ReadBuffer("#!/bin/sh\necho not a trace\n"), "bad magic");
}

TEST(TraceFileReader, AnUnknownVersionIsCorruptionEvenWithAGoodCrc) {
  std::string f = WriteToBuffer(MakeEntries(), 4);
  EncodeFixed16(f.data() + kVersionOffset, kVersion + 1);
  EncodeFixed32(f.data() + kHeaderCrcOffset,
                crc32c::Mask(crc32c::Value(f.data(), kHeaderCrcOffset)));
  ExpectCorruption(ReadBuffer(f), "version 2 is not supported");
}

TEST(TraceFileReader, AFlippedByteInTheFileHeaderFailsItsCrc) {
  std::string f = WriteToBuffer(MakeEntries(), 4);
  f[kClockOffset] ^= 0x20;
  ExpectCorruption(ReadBuffer(f), "header CRC mismatch");
}

TEST(TraceFileReader, AFlippedByteInASectionHeaderFailsItsCrc) {
  std::string f = WriteToBuffer(MakeEntries(), 4);
  const std::size_t at = SectionOffsets(f)[0];
  f[at + kSectionLengthOffset] ^= 0x01;
  ExpectCorruption(ReadBuffer(f), "section header at offset 64: CRC mismatch");
}

TEST(TraceFileReader, AFlippedByteInTheCatalogueThreadsOrAChunkFailsThePayloadCrc) {
  const std::string good = WriteToBuffer(MakeEntries(), 4);
  const std::vector<std::size_t> sections = SectionOffsets(good);
  ASSERT_GE(sections.size(), 3u);  // catalogue, threads, records...
  for (std::size_t at : sections) {
    SCOPED_TRACE("section at " + std::to_string(at));
    std::string f = good;
    f[at + kSectionHeaderSize + 5] ^= 0x40;
    ExpectCorruption(ReadBuffer(f), "payload CRC mismatch");
  }
}

TEST(TraceFileReader, EveryFlippedByteAnywhereIsDetected) {
  const std::string good = WriteToBuffer(MakeEntries(), 3);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string f = good;
    f[i] ^= 0x01;
    Result<TraceFileContents> got = ReadBuffer(f);
    ASSERT_FALSE(got.ok()) << "flip at byte " << i << " went unnoticed";
    ASSERT_TRUE(got.status().IsCorruption()) << i << ": " << got.status().ToString();
  }
}

TEST(TraceFileReader, TruncationAtEveryOffsetIsCorruptionInTheHeaderElseAPrefixOfTheRecords) {
  const std::vector<TraceEntry> entries = MakeEntries();
  const std::string good = WriteToBuffer(entries, 2);
  std::vector<std::size_t> boundaries = SectionOffsets(good);
  boundaries.push_back(good.size());
  for (std::size_t n = 0; n <= good.size(); ++n) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " bytes");
    Result<TraceFileContents> got = ReadBuffer(good.substr(0, n));
    if (n < kFileHeaderSize) {
      ASSERT_FALSE(got.ok());
      EXPECT_TRUE(got.status().IsCorruption());
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const bool at_boundary =
        n == kFileHeaderSize ||
        std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
    EXPECT_EQ(got->torn_tail, !at_boundary);
    ASSERT_LE(got->entries.size(), entries.size());
    const auto end = entries.begin() + static_cast<std::ptrdiff_t>(got->entries.size());
    ExpectSameEntries(got->entries, std::vector<TraceEntry>(entries.begin(), end));
  }
  EXPECT_EQ(ReadBuffer(good)->entries.size(), entries.size());
}

TEST(TraceFileReader, ASectionLongerThanTheLimitIsCorruptionNotAnAllocation) {
  std::string f = HeaderOnly();
  std::string h(kSectionHeaderSize, '\0');
  EncodeFixed16(h.data() + kSectionTypeOffset, static_cast<std::uint16_t>(SectionType::kRecords));
  EncodeFixed32(h.data() + kSectionLengthOffset, 0xfffffff0u);
  EncodeFixed32(h.data() + kSectionHeaderCrcOffset,
                crc32c::Mask(crc32c::Value(h.data(), kSectionHeaderCrcOffset)));
  ExpectCorruption(ReadBuffer(f + h), "is over the limit");
}

TEST(TraceFileReader, SectionsOfUnknownTypeAreSkipped) {
  const std::string good = WriteToBuffer(MakeEntries(), 3);
  const std::size_t second = SectionOffsets(good)[1];
  std::string f = good.substr(0, second) + Section(77, "from a newer writer") + good.substr(second);
  auto reader = TraceFileReader::FromBuffer(f);
  ASSERT_TRUE(reader.ok());
  Result<TraceFileContents> got = ReadAllTraceEntries(reader->get());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameEntries(got->entries, MakeEntries());
  EXPECT_EQ((*reader)->skipped_sections(), 1u);
}

TEST(TraceFileReader, AChunkWhoseLengthDisagreesWithItsCountIsCorruption) {
  std::string payload;
  PutFixed32(&payload, 2);  // says two records
  PutFixed32(&payload, 0);
  payload.append(kRecordSize, '\0');  // holds one
  ExpectCorruption(ReadBuffer(HeaderOnly() + Section(3, payload)), "cannot hold 2 records");
}

TEST(TraceFileReader, ACatalogueEntryThatDoesNotParseIsCorruption) {
  auto catalogue = [](std::uint16_t id, std::uint8_t kind, std::uint8_t nfields) {
    std::string p;
    PutFixed32(&p, 1);
    PutFixed16(&p, id);
    p.push_back(static_cast<char>(kind));
    p.push_back(static_cast<char>(nfields));
    PutFixed16(&p, 2);
    p += "fs";
    PutFixed16(&p, 4);
    p += "sync";
    for (int i = 0; i < nfields; ++i) {
      p.push_back(0);
      PutFixed16(&p, 1);
      p += "x";
    }
    return Section(1, p);
  };
  ASSERT_TRUE(ReadBuffer(HeaderOnly() + catalogue(1, 0, 2)).ok());
  ExpectCorruption(ReadBuffer(HeaderOnly() + catalogue(0, 0, 0)), "id 0 is reserved");
  ExpectCorruption(ReadBuffer(HeaderOnly() + catalogue(1, 9, 0)), "unknown kind 9");
  ExpectCorruption(ReadBuffer(HeaderOnly() + catalogue(1, 0, 7)), "has 7 fields");
  ExpectCorruption(ReadBuffer(HeaderOnly() + catalogue(1, 0, 0) + catalogue(1, 1, 0)),
                   "trace event id 1 is both");
  const std::string well_formed = catalogue(1, 0, 0).substr(kSectionHeaderSize);
  // Claim a longer name than the payload holds, with CRCs that match.
  std::string payload = well_formed;
  EncodeFixed16(payload.data() + 4 + 4 + 2 + 2, 200);
  ExpectCorruption(ReadBuffer(HeaderOnly() + Section(1, payload)), "catalogue entry 0 truncated");
  ExpectCorruption(ReadBuffer(HeaderOnly() + Section(1, well_formed + "x")),
                   "catalogue has trailing bytes");
}

TEST(TraceFileReader, AfterCorruptionEveryReadReturnsTheSameError) {
  std::string f = WriteToBuffer(MakeEntries(), 2);
  f[SectionOffsets(f)[3] + kSectionHeaderSize + 1] ^= 1;  // the second chunk
  auto reader = TraceFileReader::FromBuffer(f);
  ASSERT_TRUE(reader.ok());
  std::vector<TraceEntry> chunk;
  ASSERT_TRUE((*reader)->ReadChunk(&chunk).ok());
  EXPECT_EQ(chunk.size(), 2u) << "the chunk before the damage reads";
  Status first = (*reader)->ReadChunk(&chunk);
  EXPECT_TRUE(first.IsCorruption());
  EXPECT_TRUE(chunk.empty());
  Status again = (*reader)->ReadChunk(&chunk);
  EXPECT_EQ(again.ToString(), first.ToString());
}

TEST(TraceFileReader, RandomMutationsNeverCrashTheReader) {
  const std::string good = WriteToBuffer(MakeEntries(), 2);
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string f = good;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % f.size();
      switch (rng() % 3) {
        case 0: f[at] = static_cast<char>(rng()); break;
        case 1: f.erase(at, 1 + rng() % 16); break;
        default: f.insert(at, std::string(1 + rng() % 16, static_cast<char>(rng()))); break;
      }
      if (f.empty()) f = "W";
    }
    Result<TraceFileContents> got = ReadBuffer(f);
    if (!got.ok()) {
      EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
    }
  }
}

}  // namespace
}  // namespace walfs::tracing
