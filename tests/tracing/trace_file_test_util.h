// Helpers for the trace file specs: a hand-made catalogue and entries that
// do not depend on the live Catalogue (so a file's bytes are the same in
// every run), buffer round trips, and byte-level surgery on sections.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/coding.h"
#include "base/crc32c.h"
#include "tracing/trace_file.h"

namespace walfs::tracing::testing {

using namespace trace_file;  // NOLINT: format constants, for the specs

inline EventTable MakeTable() {
  EventTable t;
  EXPECT_TRUE(t.Add({1, "journal", "grant_sleep", EventKind::kInstant,
                     {{"tid", FieldKind::kU64}, {"need", FieldKind::kU64}}})
                  .ok());
  EXPECT_TRUE(t.Add({2, "fs", "write_enter", EventKind::kBegin, {{"ino", FieldKind::kHex}}}).ok());
  EXPECT_TRUE(t.Add({3, "fs", "write_exit", EventKind::kEnd, {{"ret", FieldKind::kI64}}}).ok());
  return t;
}

inline TraceFileInfo MakeInfo() {
  TraceFileInfo info;
  info.flags = kFlagOverwrite;
  info.clock = "mono";
  info.created_unix_ns = 1'700'000'000'000'000'000ull;
  info.created_trace_ns = 5'000'000'000ull;
  info.pid = 4242;
  return info;
}

inline TraceEntry Rec(std::uint16_t id, std::uint32_t tid, const char* comm, std::uint64_t ts,
               std::uint64_t f0 = 0, std::uint64_t f1 = 0) {
  TraceEntry e;
  e.record.event_id = id;
  e.record.cpu = static_cast<std::uint16_t>(tid % 4);
  e.record.tid = tid;
  e.record.timestamp = ts;
  e.record.fields[0] = f0;
  e.record.fields[1] = f1;
  e.tid = tid;
  e.comm = std::make_shared<const std::string>(comm);
  return e;
}

inline TraceEntry Lost(std::uint32_t tid, const char* comm, std::uint64_t count,
                       std::uint64_t ts) {
  TraceEntry e;
  e.type = TraceEntry::Type::kLost;
  e.lost = count;
  e.tid = tid;
  e.record.timestamp = ts;
  e.comm = std::make_shared<const std::string>(comm);
  return e;
}

inline std::vector<TraceEntry> MakeEntries() {
  return {
      Lost(100, "walfs-fuse", 17, 0),
      Rec(1, 100, "walfs-fuse", 5'000'001'000, 7, 4096),
      Rec(2, 101, "walfs-log", 5'000'002'000, 0xdeadbeef),
      Rec(3, 101, "walfs-log", 5'000'003'000, static_cast<std::uint64_t>(-5)),
      Rec(1, 100, "walfs-fuse", 5'000'004'000, 8, 8192),
      Lost(101, "walfs-log", 3, 5'000'005'000),
      Rec(1, 101, "walfs-log", 5'000'006'000, 9, 1),
  };
}

inline std::string WriteToBuffer(const std::vector<TraceEntry>& entries,
                                 std::size_t chunk_records) {
  std::string buf;
  auto w = TraceFileWriter::ToBuffer(&buf, MakeInfo(), chunk_records);
  EXPECT_TRUE(w->AddEvents(MakeTable()).ok());
  for (const TraceEntry& e : entries) EXPECT_TRUE(w->Append(e).ok());
  EXPECT_TRUE(w->Close().ok());
  return buf;
}

inline Result<TraceFileContents> ReadBuffer(std::string bytes) {
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileReader> r,
                         TraceFileReader::FromBuffer(std::move(bytes)));
  return ReadAllTraceEntries(r.get());
}

inline void ExpectSameEntry(const TraceEntry& a, const TraceEntry& b, std::size_t i) {
  SCOPED_TRACE("entry " + std::to_string(i));
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.lost, b.lost);
  EXPECT_EQ(a.tid, b.tid);
  ASSERT_EQ(a.comm == nullptr, b.comm == nullptr);
  if (a.comm) {
    EXPECT_EQ(*a.comm, *b.comm);
  }
  EXPECT_EQ(a.record.event_id, b.record.event_id);
  EXPECT_EQ(a.record.cpu, b.record.cpu);
  EXPECT_EQ(a.record.tid, b.record.tid);
  EXPECT_EQ(a.record.timestamp, b.record.timestamp);
  for (int f = 0; f < kMaxFields; ++f) EXPECT_EQ(a.record.fields[f], b.record.fields[f]);
}

inline void ExpectSameEntries(const std::vector<TraceEntry>& got,
                              const std::vector<TraceEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ExpectSameEntry(got[i], want[i], i);
}

// Offsets where each section starts, walking the section headers.
inline std::vector<std::size_t> SectionOffsets(const std::string& file) {
  std::vector<std::size_t> out;
  for (std::size_t at = kFileHeaderSize; at + kSectionHeaderSize <= file.size();) {
    out.push_back(at);
    at += kSectionHeaderSize + DecodeFixed32(file.data() + at + kSectionLengthOffset);
  }
  return out;
}

inline std::string Section(std::uint16_t type, const std::string& payload) {
  std::string h(kSectionHeaderSize, '\0');
  EncodeFixed16(h.data() + kSectionTypeOffset, type);
  EncodeFixed32(h.data() + kSectionLengthOffset, static_cast<std::uint32_t>(payload.size()));
  EncodeFixed32(h.data() + kSectionPayloadCrcOffset,
                crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
  EncodeFixed32(h.data() + kSectionHeaderCrcOffset,
                crc32c::Mask(crc32c::Value(h.data(), kSectionHeaderCrcOffset)));
  return h + payload;
}

inline std::string HeaderOnly() {
  std::string buf;
  EXPECT_TRUE(TraceFileWriter::ToBuffer(&buf, MakeInfo())->Close().ok());
  return buf;
}

// Unique per process: test binaries of several builds may run at once.
inline std::string TempPath(const char* what) {
  return ::testing::TempDir() + "walfs_trace_file_test_" + what + "_" +
         std::to_string(::getpid()) + ".wtrace";
}

inline void ExpectCorruption(const Result<TraceFileContents>& r, const std::string& what) {
  ASSERT_FALSE(r.ok()) << "expected corruption: " << what;
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find(what), std::string_view::npos) << r.status().ToString();
}

}  // namespace walfs::tracing::testing
