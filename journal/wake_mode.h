// The run-time switches of the reservation core: how grant-head waiters are
// woken (WakeMode) and which lock guards a grant head (HeadLockKind).  Each
// enum has a string table so traces, stats, options and benches print names.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace walfs::journal {

enum class WakeMode : std::uint8_t {
  // Upstream XFS: the waker signals every fitting waiter with the head lock
  // held, and again on every later wake pass until the waiter has run.
  kInline = 0,
  // The waker marks a ticket WAKING when it signals it and skips WAKING
  // tickets; the waiter clears the flag under the lock before it sleeps again.
  kWaking = 1,
  // kWaking plus a wake queue: signals are collected under the lock and
  // issued after it is dropped.  The default.
  kWakeQueue = 2,
};
inline constexpr WakeMode kAllWakeModes[] = {WakeMode::kInline, WakeMode::kWaking,
                                             WakeMode::kWakeQueue};

// "inline", "waking", "wakeq".
std::string_view WakeModeName(WakeMode mode);
Result<WakeMode> ParseWakeMode(std::string_view name);

enum class HeadLockKind : std::uint8_t {
  kSpin = 0,   // test-and-test-and-set spinlock (the kernel's lock, minus
               // preemption control)
  kMutex = 1,  // adaptive: spins briefly, then sleeps on a futex.  The default.
};
inline constexpr HeadLockKind kAllHeadLockKinds[] = {HeadLockKind::kSpin,
                                                     HeadLockKind::kMutex};

// "spin", "mutex".
std::string_view HeadLockKindName(HeadLockKind kind);
Result<HeadLockKind> ParseHeadLockKind(std::string_view name);

}  // namespace walfs::journal
