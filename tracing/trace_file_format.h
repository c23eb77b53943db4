// The walfs trace file format (docs/trace_format.md has the grammar, a worked
// example and the alternatives rejected).  Constants only: the writer is
// trace_file_writer.{h,cc}, the reader trace_file_reader.{h,cc}.
//
//   file    := file-header section*
//   section := section-header payload           (catalogue | threads | records | unknown)
//
// Every integer is little-endian and fixed width, encoded field by field
// with base/coding.h.  Every header and every payload carries a masked
// CRC32C.  A reader skips section types it does not know, so new kinds of
// section need no version bump; a version bump means old readers must refuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tracing/record.h"

namespace walfs::tracing::trace_file {

// --- File header: 64 bytes at offset 0.
inline constexpr std::string_view kMagic = "WALFSTRC";
inline constexpr std::uint16_t kVersion = 1;

inline constexpr std::size_t kMagicOffset = 0;            // 8 bytes
inline constexpr std::size_t kVersionOffset = 8;          // u16
inline constexpr std::size_t kHeaderReservedOffset = 10;  // u16, written 0
inline constexpr std::size_t kFlagsOffset = 12;           // u32, kFlag* bits
inline constexpr std::size_t kClockOffset = 16;           // kClockNameSize bytes, NUL padded
inline constexpr std::size_t kClockNameSize = 16;
inline constexpr std::size_t kCreatedUnixNsOffset = 32;   // u64, CLOCK_REALTIME at creation
inline constexpr std::size_t kCreatedTraceNsOffset = 40;  // u64, the trace clock at creation
inline constexpr std::size_t kPidOffset = 48;             // u32, the traced process
inline constexpr std::size_t kHeaderPadOffset = 52;       // 8 bytes, written 0
inline constexpr std::size_t kHeaderCrcOffset = 60;       // u32, masked CRC32C of [0, 60)
inline constexpr std::size_t kFileHeaderSize = 64;
static_assert(kMagic.size() == kVersionOffset - kMagicOffset);
static_assert(kClockOffset + kClockNameSize == kCreatedUnixNsOffset);
static_assert(kHeaderPadOffset + 8 == kHeaderCrcOffset);
static_assert(kHeaderCrcOffset + 4 == kFileHeaderSize);

// Header flags.  Informational: readers ignore bits they do not know.
inline constexpr std::uint32_t kFlagOverwrite = 1u << 0;  // recorded in flight-recorder mode

// --- Section header: 16 bytes before every payload.
enum class SectionType : std::uint16_t {
  kCatalogue = 1,  // event definitions
  kThreads = 2,    // tid -> comm
  kRecords = 3,    // one chunk of records
};

inline constexpr std::size_t kSectionTypeOffset = 0;        // u16, a SectionType
inline constexpr std::size_t kSectionFlagsOffset = 2;       // u16, written 0, ignored
inline constexpr std::size_t kSectionLengthOffset = 4;      // u32, payload bytes
inline constexpr std::size_t kSectionPayloadCrcOffset = 8;  // u32, masked CRC32C of the payload
inline constexpr std::size_t kSectionHeaderCrcOffset = 12;  // u32, masked CRC32C of [0, 12)
inline constexpr std::size_t kSectionHeaderSize = 16;
static_assert(kSectionHeaderCrcOffset + 4 == kSectionHeaderSize);

// Larger payloads are corruption: a reader never allocates more than this
// for one section, whatever a hostile length says.
inline constexpr std::uint32_t kMaxSectionPayload = 16u << 20;

// --- Catalogue payload:
//   u32 count, then count times:
//     u16 id (!= 0), u8 EventKind, u8 nfields (<= kMaxFields),
//     string subsystem, string name, nfields times (u8 FieldKind, string name)
//   string := u16 length, length bytes (no NUL)
inline constexpr std::uint8_t kMaxEventKind = 3;  // EventKind::kCounter
inline constexpr std::uint8_t kMaxFieldKind = 3;  // FieldKind::kChars

// --- Threads payload:
//   u32 count, then count times: u32 tid, string comm

// --- Records payload: u32 count, u32 reserved (0), count records of 64 bytes.
inline constexpr std::size_t kChunkPrefixSize = 8;
inline constexpr std::size_t kRecordSize = 64;
inline constexpr std::size_t kRecordEventIdOffset = 0;     // u16
inline constexpr std::size_t kRecordCpuOffset = 2;         // u16
inline constexpr std::size_t kRecordTidOffset = 4;         // u32
inline constexpr std::size_t kRecordTimestampOffset = 8;   // u64
inline constexpr std::size_t kRecordFieldsOffset = 16;     // kMaxFields x u64
static_assert(kRecordFieldsOffset + 8 * kMaxFields == kRecordSize);
static_assert(sizeof(Record) == kRecordSize, "file records mirror ring records");

// A record with event id 0 is a lost marker: fields[0] = records lost,
// fields[1] = the ring's tid (equal to the tid word), the rest 0.
inline constexpr std::uint16_t kLostEventId = 0;

}  // namespace walfs::tracing::trace_file

namespace walfs::tracing {

// What a trace file's header says, decoded.
struct TraceFileInfo {
  std::uint16_t version = trace_file::kVersion;
  std::uint32_t flags = 0;              // trace_file::kFlag* bits
  std::string clock = "mono";          // ClockKindName() of the trace clock
  std::uint64_t created_unix_ns = 0;   // wall-clock time the file was created
  std::uint64_t created_trace_ns = 0;  // the trace clock at that moment
  std::uint32_t pid = 0;               // the traced process

  bool operator==(const TraceFileInfo&) const = default;
};

}  // namespace walfs::tracing
