#include "journal/wake_mode.h"

#include <string>

namespace walfs::journal {

namespace {
constexpr std::string_view kWakeModeNames[] = {"inline", "waking", "wakeq"};
constexpr std::string_view kHeadLockNames[] = {"spin", "mutex"};

template <typename Enum, std::size_t N>
Result<Enum> ParseByName(std::string_view name, const std::string_view (&names)[N],
                         std::string_view what) {
  std::string choices;
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
    if (i > 0) choices += '|';
    choices += names[i];
  }
  return Status::InvalidArgument(std::string(what) + " '" + std::string(name) +
                                 "' is not one of " + choices);
}
}  // namespace

std::string_view WakeModeName(WakeMode mode) {
  return kWakeModeNames[static_cast<int>(mode)];
}

Result<WakeMode> ParseWakeMode(std::string_view name) {
  return ParseByName<WakeMode>(name, kWakeModeNames, "wake mode");
}

std::string_view HeadLockKindName(HeadLockKind kind) {
  return kHeadLockNames[static_cast<int>(kind)];
}

Result<HeadLockKind> ParseHeadLockKind(std::string_view name) {
  return ParseByName<HeadLockKind>(name, kHeadLockNames, "head lock");
}

}  // namespace walfs::journal
