// Record: one traced event as it sits in a ring and in a trace file's
// record section — fixed size, binary, formatted only by readers.
//
//   event_id   which EventDef (Catalogue id; 0 is never a valid event)
//   cpu        the CPU the writer ran on
//   tid        the writer's kernel thread id
//   timestamp  trace clock (ns for the monotonic clock, cycles for TSC)
//   fields     up to kMaxFields 64-bit values, meaning given by the EventDef
//
// Fixed-size records keep the commit path branch-free and make overwrite
// mode simple: a reader that is lapped loses whole records, never half of
// one.  An event with more than kMaxFields fields does not compile, so there
// is no "too big" case to count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace walfs::tracing {

inline constexpr int kMaxFields = 6;
inline constexpr std::size_t kRecordWords = 8;  // 64 bytes

struct Record {
  std::uint16_t event_id = 0;
  std::uint16_t cpu = 0;
  std::uint32_t tid = 0;
  std::uint64_t timestamp = 0;
  std::uint64_t fields[kMaxFields] = {};
};
static_assert(sizeof(Record) == kRecordWords * 8, "a record is one cache line");

}  // namespace walfs::tracing
