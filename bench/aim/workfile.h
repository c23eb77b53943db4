// The fserver workfile and how one user's job list is built from it.
//
// re-aim-7 reads a workfile of "<hits> <test>" lines.  For a run with J jobs
// per user (`-j`, default 100) each test gets a share of the list:
//
//   share_i = hits_i / sum(hits) * J
//   n_i     = floor(share_i) + 1   if frac(share_i) >= 0.5
//           = 1                    if 0 < share_i < 0.5         (every test runs)
//           = floor(share_i)       otherwise
//
// and the user's list holds n_i copies of test i, sum(n_i) jobs in all
// (driver.c runloop(), "round off to int, run each test at least once").
// So the list is rarely exactly J long: the whole fserver workfile (595
// hits) at J = 100 gives 101 jobs, the number; its 11 filesystem
// tests alone (235 hits) give 102.  Jobs per minute counts sum(n_i) per user.
//
//   Mix mix = BuildMix(SelectTests(/*with_cpu=*/false), 100);   // 102 jobs
//   std::vector<int> jobs = ShuffledJobs(mix, seed);            // test indices
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace walfs::bench::aim {

enum class TestKind { kFilesystem, kCpu };

// One line of a workfile.  `implemented` is false for the CPU tests walfs-aim
// does not reproduce (docs/aim.md lists them); they are never selected.
struct WorkfileLine {
  std::string_view name;
  int hits;
  TestKind kind;
  bool implemented;
};

// re-aim-7 data/workfile.fserver, all 31 lines in its order (595 hits).
std::span<const WorkfileLine> FserverWorkfile();

// The tests a run draws from: the filesystem tests, plus with `with_cpu` the
// CPU tests walfs-aim implements (the think time between file operations).
std::vector<WorkfileLine> SelectTests(bool with_cpu);

// re-aim's per-test job count for a test of `hits` out of `total_hits` in a
// list of `jobs` (the rounding rule above).
int RoundedShare(int hits, int total_hits, int jobs);

struct Mix {
  std::vector<WorkfileLine> tests;
  std::vector<int> counts;  // n_i, parallel to `tests`
  int jobs_per_user = 0;    // sum of counts
};

// Requires jobs >= 1 and a non-empty `tests` with positive hits.
Mix BuildMix(std::vector<WorkfileLine> tests, int jobs);

// One user's job list: counts[i] copies of index i, shuffled (Fisher-Yates)
// by a generator seeded with `seed`.  The same seed gives the same list.
std::vector<int> ShuffledJobs(const Mix& mix, std::uint64_t seed);

}  // namespace walfs::bench::aim
