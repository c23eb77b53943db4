// The on-disk log format: records, op headers and cycle stamping.  The full
// description, with a grammar and a worked example, is docs/log_format.md.
// Dependency-free but for the coding helpers; the log writer, the log reader,
// recovery and walfs-logprint all parse through this file and nowhere else.
//
//   log      := record*                       (circular; LSN = cycle:sector)
//   record   := header-sector payload-sector*
//   payload  := op*                           (padded with zeros to a sector)
//   op       := op-header body                (body is op-header.len bytes)
//
// Every sector of a record carries the record's cycle number in its first 4
// bytes on disk; the bytes it displaces are kept in the header's cycle_data
// array and put back when the record is read.  A sector whose first word is
// not the record's cycle was not written with it: the record is torn (a
// crash during its write), which recovery treats as the end of the log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "journal/lsn.h"

namespace walfs::journal {

inline constexpr std::uint32_t kLogSectorSize = 512;
inline constexpr std::uint32_t kRecordMagic = 0x524c4157;  // "WALR" little-endian
inline constexpr std::uint16_t kLogFormatVersion = 1;

// Record header sector layout (little-endian):
//   0  magic u32          4  cycle u32        8  version u16   10 header_size u16
//   12 flags u32          16 lsn u64          24 prev_lsn u64  32 tail_lsn u64
//   40 len u32            44 num_ops u32      48 crc u32       52 reserved[12]
//   64 cycle_data u32 × kMaxPayloadSectors
inline constexpr std::size_t kRecordHeaderFixedSize = 64;
inline constexpr std::size_t kMaxPayloadSectors = (kLogSectorSize - kRecordHeaderFixedSize) / 4;
inline constexpr std::size_t kMaxRecordPayload = kMaxPayloadSectors * kLogSectorSize;  // 56 KiB

enum RecordFlags : std::uint32_t {
  kRecordUnmount = 1u << 0,  // the record holds a clean-unmount op
};

struct RecordHeader {
  std::uint32_t cycle = 0;
  std::uint32_t flags = 0;
  Lsn lsn = kNullLsn;       // where this record starts
  Lsn prev_lsn = kNullLsn;  // the record before it
  Lsn tail_lsn = kNullLsn;  // the log tail when it was written
  std::uint32_t len = 0;    // payload bytes, before padding
  std::uint32_t num_ops = 0;
};

// Op header: 12 bytes, then `len` bytes of body.
//   0 tid u32   4 len u32   8 flags u8   9 type u8   10 reserved u16
inline constexpr std::size_t kOpHeaderSize = 12;

enum OpFlags : std::uint8_t {
  kOpStart = 1u << 0,     // first op of a transaction
  kOpCommit = 1u << 1,    // last op: the transaction is complete
  kOpContinue = 1u << 2,  // the body continues in the next record
  kOpWasCont = 1u << 3,   // this body continues one from the previous record
  kOpUnmount = 1u << 4,   // the clean-unmount op
};

// What an op's body holds.  Types below kFirstSkippableType must be
// understood by a reader; a reader that meets an unknown one refuses the
// log.  Types from kFirstSkippableType on may be skipped by readers that do
// not know them (room for new item types that old readers can ignore).
enum class ItemType : std::uint8_t {
  kNone = 0,         // start, commit and unmount ops carry no body
  kTransHeader = 1,  // transaction header: type, item count
  kBuffer = 2,       // a logged metadata buffer (buffer log item)
  kFirstSkippableType = 128,
};

struct OpHeader {
  std::uint32_t tid = 0;
  std::uint32_t len = 0;
  std::uint8_t flags = 0;
  ItemType type = ItemType::kNone;
};

// Writes an op header's kOpHeaderSize bytes at dst.
void EncodeOpHeader(char* dst, const OpHeader& op);

// Appends one op to a record payload under construction.
void AppendOp(std::string* payload, const OpHeader& op, std::string_view body);

// Builds the on-disk bytes of one record: the header sector and the payload
// padded to whole sectors, every sector stamped with the cycle and the CRC32C
// computed.  header.len is set from payload; payload must not exceed
// kMaxRecordPayload.
std::string EncodeRecord(RecordHeader header, std::string_view payload);

// A record that does not fit before the physical end of the log continues at
// its start: the sectors written after the wrap belong to the next pass over
// the log, so they carry cycle + 1 (as XFS's xlog_sync stamps them).  This
// re-stamps sectors [first_sector_after_wrap, end) of an encoded record
// (sector 0 is the header, which always precedes the wrap).
void StampWrap(std::string* record, std::size_t first_sector_after_wrap);

// How many bytes a record with `payload_len` bytes of payload occupies.
constexpr std::size_t RecordBytes(std::size_t payload_len) {
  return kLogSectorSize * (1 + (payload_len + kLogSectorSize - 1) / kLogSectorSize);
}

// Result of reading the record at the start of a buffer.
struct DecodedRecord {
  enum class Kind {
    kOk,
    kNotARecord,  // no record magic: not a header sector (or never written)
    kTruncated,   // the buffer ends before the record does
    kTorn,        // a payload sector does not carry the record's cycle
    kCorrupt,     // bad version, impossible length, CRC mismatch
  };
  Kind kind = Kind::kNotARecord;
  std::string reason;      // for everything but kOk
  RecordHeader header;     // valid from kTruncated on (magic matched)
  std::string payload;     // kOk: unstamped, unpadded
  std::size_t bytes = 0;   // kOk: on-disk size of the record
};

std::string_view DecodedRecordKindName(DecodedRecord::Kind kind);

// Parses the record that starts at data[0].  Never reads past data.size().
// `wrap_at`: the record sector index from which sectors carry cycle + 1
// (the record wrapped there; see StampWrap); SIZE_MAX for none.
DecodedRecord DecodeRecord(std::string_view data, std::size_t wrap_at = SIZE_MAX);

// The cycle stamped in a sector (its first 4 bytes; for a header sector the
// cycle field), as the head search reads it.  0 for a never-written sector.
std::uint32_t SectorCycle(std::string_view sector);

// Iterates the ops of a decoded payload.
class OpReader {
 public:
  explicit OpReader(std::string_view payload) : rest_(payload) {}
  // The next op and its body; false at the end or on a malformed op (then
  // error() is non-empty).
  bool Next(OpHeader* op, std::string_view* body);
  const std::string& error() const { return error_; }

 private:
  std::string_view rest_;
  std::string error_;
};

std::string OpFlagsString(std::uint8_t flags);      // "START|COMMIT"
std::string_view ItemTypeName(ItemType type);         // "buffer"

}  // namespace walfs::journal
