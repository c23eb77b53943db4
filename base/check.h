// WALFS_CHECK: a broken internal invariant aborts with a message, in every
// build type (STYLE.md rule 8).  Bad data on disk is never CHECKed: it is
// reported through Status.
#pragma once

namespace walfs {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr,
                              const char* msg);
}  // namespace walfs

#define WALFS_CHECK(cond)                                               \
  do {                                                                  \
    if (__builtin_expect(!(cond), 0))                                   \
      ::walfs::CheckFailed(__FILE__, __LINE__, #cond, nullptr);         \
  } while (0)

#define WALFS_CHECK_MSG(cond, msg)                                      \
  do {                                                                  \
    if (__builtin_expect(!(cond), 0))                                   \
      ::walfs::CheckFailed(__FILE__, __LINE__, #cond, (msg));           \
  } while (0)
