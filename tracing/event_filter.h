// EventFilter: a per-event predicate on a record's fields, checked before the
// record is written (tracefs's events/<subsystem>/<event>/filter), so a
// filtered-out event costs no ring space and loses nothing else:
//
//   echo 'caller_pid == 4711 && ino == 12' > .walfs/events/fs/write_enter/filter
//   echo 'common_pid != 99 || need >= 65536' > .walfs/events/journal/grant_sleep/filter
//   echo 0 > .../filter                                   # no filter
//
// Grammar: terms `FIELD OP NUMBER` joined by && and ||, && binding tighter
// (no parentheses); OP one of == != < <= > >=; NUMBER decimal or 0x hex;
// FIELD one of the event's numeric fields, or common_pid (the thread that
// records).  String fields cannot be compared.
//
// A filter is immutable once parsed; the Catalogue keeps every distinct
// filter text it installed for the life of the process (events outlive
// main(), and a thread may still be evaluating the filter being replaced),
// so memory grows only with the number of distinct filter texts written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tracing/record.h"

namespace walfs::tracing {

class EventDef;

class EventFilter {
 public:
  // InvalidArgument saying what is wrong (an unknown field, a bad number,
  // a missing operator) for text that does not parse against `event`.
  static Result<std::unique_ptr<EventFilter>> Parse(std::string_view text, const EventDef& event);

  // Whether a record of these field values, written by thread `tid`, passes.
  bool Matches(const std::uint64_t* values, std::uint32_t tid) const;
  // The text it was parsed from, normalised (single spaces).
  const std::string& text() const { return text_; }

 private:
  enum class Op : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
  struct Term {
    int field = -1;  // index in the record's fields; -1: common_pid
    Op op = Op::kEq;
    std::uint64_t value = 0;
  };
  std::vector<std::vector<Term>> any_of_;  // OR of ANDs
  std::string text_;
};

}  // namespace walfs::tracing
