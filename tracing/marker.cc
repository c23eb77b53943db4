#include "tracing/marker.h"

#include "tracing/event.h"

namespace walfs::tracing {

namespace {
WALFS_TRACE_EVENT(kTraceMarker, "user", "marker", EventKind::kInstant, {"caller_pid"}, {"text", FieldKind::kChars},
                  {"text", FieldKind::kChars}, {"text", FieldKind::kChars}, {"text", FieldKind::kChars}, {"len"});
static_assert(kMarkerTextBytes == 4 * 8);
}  // namespace

std::size_t WriteMarker(std::uint32_t caller_pid, std::string_view text) {
  if (!Catalogue::Get().tracing_on()) return 0;
  if (text.size() > kMaxMarkerBytes) text = text.substr(0, kMaxMarkerBytes);
  std::size_t records = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    for (std::size_t at = 0; at < line.size(); at += kMarkerTextBytes) {
      std::uint64_t chars[4] = {};
      PackChars(line.substr(at, kMarkerTextBytes), chars, 4);
      kTraceMarker.Emit(caller_pid, chars[0], chars[1], chars[2], chars[3], line.size());
      ++records;
    }
  }
  return records;
}

}  // namespace walfs::tracing
