#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace walfs {

void CheckFailed(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "walfs: invariant violated at %s:%d: %s%s%s\n", file, line,
               expr, msg ? ": " : "", msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace walfs
