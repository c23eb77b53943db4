// libFuzzer target for EventFilter::Parse (the text written to a mount's
// events/<subsystem>/<event>/filter): any bytes either parse into a filter
// whose text parses again to the same text and evaluates without fault, or
// are refused with InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "tracing/event.h"
#include "tracing/event_filter.h"

namespace {
WALFS_TRACE_EVENT(kFuzzEvent, "fuzz", "event", walfs::tracing::EventKind::kInstant, {"caller_pid"}, {"ino"},
                  {"name", walfs::tracing::FieldKind::kChars}, {"len"});
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using walfs::tracing::EventFilter;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto f = EventFilter::Parse(text, kFuzzEvent);
  if (!f.ok()) {
    WALFS_CHECK(f.status().code() == walfs::StatusCode::kInvalidArgument);
    return 0;
  }
  auto again = EventFilter::Parse((*f)->text(), kFuzzEvent);
  WALFS_CHECK(again.ok() && (*again)->text() == (*f)->text());
  const std::uint64_t values[walfs::tracing::kMaxFields] = {1, 2, 3, 4, 5, 6};
  WALFS_CHECK((*f)->Matches(values, 7) == (*again)->Matches(values, 7));
  return 0;
}
