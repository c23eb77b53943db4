// Thin wrappers over futex(2) on a 32-bit atomic, process-private.
#pragma once

#include <atomic>
#include <cstdint>

namespace walfs {

// Sleeps while *word == expected.  Returns on a wake, a signal, a timeout
// (timeout_ns < 0 waits forever) or at once if *word != expected: callers
// always re-check their condition.
void FutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
               std::int64_t timeout_ns = -1);

// Wakes up to `count` threads sleeping on `word`; returns how many woke.
int FutexWake(std::atomic<std::uint32_t>* word, int count);

}  // namespace walfs
