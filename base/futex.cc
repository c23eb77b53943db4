#include "base/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace walfs {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "futex word must be a plain 32-bit integer");

void FutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
               std::int64_t timeout_ns) {
  timespec ts;
  timespec* tsp = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1'000'000'000;
    ts.tv_nsec = timeout_ns % 1'000'000'000;
    tsp = &ts;
  }
  // EAGAIN (value changed), EINTR and ETIMEDOUT all mean "re-check".
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE,
          expected, tsp, nullptr, 0);
}

int FutexWake(std::atomic<std::uint32_t>* word, int count) {
  long r = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word),
                   FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
  return r < 0 ? 0 : static_cast<int>(r);
}

}  // namespace walfs
