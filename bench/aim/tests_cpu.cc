#include "bench/aim/tests_cpu.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstring>
#include <utility>

namespace walfs::bench::aim {
namespace {

// Keeps the optimizer from folding a loop whose values never change (re-aim
// relied on 1990s compilers not noticing): the values pass through an empty
// asm statement every iteration, so each operation is really executed.
template <typename T>
inline void Opaque(T& v) {
  asm volatile("" : "+r"(v));
}

// add.c: d, d1, d2 cycle through x, -x and 0; twelve additions per loop.
template <typename T>
Status AddLoop(T v1, T v2, int loops) {
  T v = 0;
  for (int n = loops; n > 0; --n) {
    v += v1; v1 += v2; v1 += v2; v2 += v; v2 += v; v += v1;
    v += v1; v1 += v2; v1 += v2; v2 += v; v2 += v; v += v1;
    Opaque(v); Opaque(v1); Opaque(v2);
  }
  return Status::Ok();
}

// mul.c: all factors stay 1, v stays at its start value.
template <typename T>
Status MulLoop(T v, int loops) {
  T v1 = 1, v2 = 1;
  for (int n = loops; n > 0; --n) {
    v *= v1; v1 *= v2; v1 *= v2; v2 *= v1; v2 *= v1; v *= v2;
    v *= v1; v1 *= v2; v1 *= v2; v2 *= v1; v2 *= v1; v *= v2;
    Opaque(v); Opaque(v1); Opaque(v2);
  }
  return Status::Ok();
}

// div.c: all divisors stay 1.
template <typename T>
Status DivLoop(T v, int loops) {
  T v1 = 1, v2 = 1;
  for (int n = loops; n > 0; --n) {
    v /= v1; v /= v2; v1 /= v2; v2 /= v1; v /= v1; v /= v2;
    v1 /= v2; v2 /= v1; v /= v1; v /= v2; v1 /= v2; v2 /= v1;
    Opaque(v); Opaque(v1); Opaque(v2);
  }
  return Status::Ok();
}

std::jmp_buf jmp_target;

// dummy_function(): recurses `count` levels, then longjmp()s out of them all.
[[gnu::noinline]] void Descend(int count) {
  if (count < 0) return;  // never: keeps the compiler from calling this endless
  if (count == 0) std::longjmp(jmp_target, 1);
  Descend(count - 1);
  asm volatile("");  // no tail call: every level keeps its frame
}

// A static counter, not a local: locals changed between setjmp() and
// longjmp() would have to be volatile.
int jumps = 0;

Status JmpTest() {
  for (jumps = 0; jumps < 1000; ++jumps) {
    if (setjmp(jmp_target) == 0) Descend(10);
  }
  return Status::Ok();
}

volatile sig_atomic_t signals_caught = 0;

void CountSignal(int) { signals_caught = signals_caught + 1; }

Status SignalTest() {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = CountSignal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR2, &sa, &old) != 0) return Status::FromErrno(errno, "sigaction SIGUSR2");
  signals_caught = 0;
  const pid_t self = getpid();
  Status s;
  while (signals_caught < 1000) {
    if (kill(self, SIGUSR2) != 0) {
      s = Status::FromErrno(errno, "kill SIGUSR2");
      break;
    }
  }
  sigaction(SIGUSR2, &old, nullptr);
  return s;
}

// ram.c's copy sizes.
constexpr int kCopySizes[] = {
    1, 2, 3, 4, 5, 6,   7, 7, 7, 7, 7, 7,   8, 9, 11, 17, 33, 63,  7, 7, 7, 7, 7, 7,
    1, 2, 3, 4, 5, 6,   7, 7, 7, 7, 7, 7,   127, 256, 1001, 1200, 1492, 1500,
    1024, 2048, 3172, 4096, 8192, 512,      7, 7, 7, 7, 7, 7,   1, 2, 3, 4, 5, 6,
    7, 7, 7, 7, 7, 7,   8, 9, 11, 17, 33, 63,  7, 7, 7, 7, 7, 7,  1, 2, 3, 4, 5, 6,
    7, 7, 7, 7, 7, 7,
};

Status RamCopy() {
  static char a[8192 + sizeof(double)], b[8192 + sizeof(double)];
  constexpr int kCount = sizeof kCopySizes / sizeof kCopySizes[0];
  for (int n = 0; n < 64; ++n) {
    char* dst = &b[n % sizeof(double)];
    const char* src = &a[(n / sizeof(double)) % sizeof(double)];
    std::memcpy(dst, src, static_cast<std::size_t>(kCopySizes[n % kCount]));
    Opaque(dst);
  }
  return Status::Ok();
}

}  // namespace

CpuTestFn FindCpuTest(std::string_view name) {
  static constexpr std::pair<std::string_view, CpuTestFn> kTests[] = {
      {"add_int", [] { return AddLoop<int>(3, -3, 5'000'000); }},
      {"add_long", [] { return AddLoop<long>(3, -3, 5'000'000); }},
      {"add_short", [] { return AddLoop<short>(3, -3, 2'000'000); }},
      {"mul_int", [] { return MulLoop<int>(12345678, 20'000); }},
      {"mul_long", [] { return MulLoop<long>(12345678, 20'000); }},
      {"mul_short", [] { return MulLoop<short>(1234, 25'000); }},
      {"div_int", [] { return DivLoop<int>(1234578, 75'000); }},
      {"div_long", [] { return DivLoop<long>(1234578, 75'000); }},
      {"div_short", [] { return DivLoop<short>(1234, 75'000); }},
      {"jmp_test", JmpTest},
      {"signal_test", SignalTest},
      {"ram_copy", RamCopy},
  };
  for (const auto& [n, fn] : kTests)
    if (n == name) return fn;
  return nullptr;
}

}  // namespace walfs::bench::aim
