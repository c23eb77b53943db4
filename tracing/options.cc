#include "tracing/options.h"

#include <fmt/format.h>

namespace walfs::tracing {

namespace {
constexpr std::string_view kWakeup[] = {"immediate", "deferred"};
constexpr std::string_view kRecursion[] = {"safe", "fast", "context"};
constexpr std::string_view kClock[] = {"mono", "tsc"};

template <typename E, std::size_t N>
Result<E> Parse(std::string_view s, const std::string_view (&names)[N], std::string_view what) {
  std::string choices;
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
    choices += (i ? "|" : "");
    choices += names[i];
  }
  return Status::InvalidArgument(fmt::format("{} '{}' is not one of {}", what, s, choices));
}
}  // namespace

std::string_view WakeupModeName(WakeupMode m) { return kWakeup[static_cast<int>(m)]; }
std::string_view RecursionModeName(RecursionMode m) { return kRecursion[static_cast<int>(m)]; }
std::string_view ClockKindName(ClockKind c) { return kClock[static_cast<int>(c)]; }
Result<WakeupMode> ParseWakeupMode(std::string_view s) {
  return Parse<WakeupMode>(s, kWakeup, "wakeup mode");
}
Result<RecursionMode> ParseRecursionMode(std::string_view s) {
  return Parse<RecursionMode>(s, kRecursion, "recursion mode");
}
Result<ClockKind> ParseClockKind(std::string_view s) { return Parse<ClockKind>(s, kClock, "trace clock"); }

Status TracerOptions::Validate() const {
  if (buffer_size_kb < 4 || buffer_size_kb > (1u << 20))
    return Status::InvalidArgument(
        fmt::format("buffer_size_kb {} is outside 4..1048576", buffer_size_kb));
  if (wakeup_delay_us > 10'000'000)
    return Status::InvalidArgument(
        fmt::format("wakeup_delay_us {} is over 10 s", wakeup_delay_us));
  if (safety_timeout_ms > 3'600'000)
    return Status::InvalidArgument(
        fmt::format("safety_timeout_ms {} is over an hour", safety_timeout_ms));
  if (buffer_percent > 100)
    return Status::InvalidArgument(fmt::format("buffer_percent {} is over 100", buffer_percent));
  return Status::Ok();
}

}  // namespace walfs::tracing
