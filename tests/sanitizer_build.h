// Which sanitizer this build runs under, for the randomized campaigns that
// run fewer rounds there.  The gcc CI job (no sanitizer) runs every
// campaign's full count; ASan and TSan make each round several times dearer
// and find their bugs in the first rounds as well as in the last, so they
// run a smaller count (scripts/test.sh's header lists them).  An explicit
// count from the environment (WALFS_FS_CRASH_SEEDS, ...) wins everywhere.
//
//   const int seeds = walfs::testing::ForBuild({.full = 40, .address = 12, .thread = 6});
#pragma once

namespace walfs::testing {

enum class Sanitizer { kNone, kAddress, kThread };

#if defined(__SANITIZE_THREAD__)
inline constexpr Sanitizer kSanitizer = Sanitizer::kThread;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr Sanitizer kSanitizer = Sanitizer::kAddress;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr Sanitizer kSanitizer = Sanitizer::kThread;
#elif __has_feature(address_sanitizer)
inline constexpr Sanitizer kSanitizer = Sanitizer::kAddress;
#else
inline constexpr Sanitizer kSanitizer = Sanitizer::kNone;
#endif
#else
inline constexpr Sanitizer kSanitizer = Sanitizer::kNone;
#endif

struct Counts {
  int full;     // no sanitizer (the gcc job; a local clang build)
  int address;  // address,undefined
  int thread;
};

// The count for this build.
constexpr int ForBuild(Counts c) {
  switch (kSanitizer) {
    case Sanitizer::kAddress:
      return c.address;
    case Sanitizer::kThread:
      return c.thread;
    case Sanitizer::kNone:
      break;
  }
  return c.full;
}

}  // namespace walfs::testing
