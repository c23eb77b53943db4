#include "bench/aim/workfile.h"

#include <random>
#include <utility>

#include "base/check.h"

namespace walfs::bench::aim {
namespace {

constexpr TestKind kFs = TestKind::kFilesystem;
constexpr TestKind kCpu = TestKind::kCpu;

// "@(#) workfile.fserver:1.3 1/22/96", unchanged from AIM.  The CPU tests
// marked false need sources walfs-aim does not carry (docs/aim.md).
constexpr WorkfileLine kFserver[] = {
    {"add_int", 20, kCpu, true},       {"add_long", 20, kCpu, true},
    {"add_short", 20, kCpu, true},     {"creat_clo", 20, kFs, true},
    {"dir_rtns_1", 20, kCpu, false},   {"disk_cp", 30, kFs, true},
    {"disk_rd", 30, kFs, true},        {"disk_rr", 30, kFs, true},
    {"disk_rw", 30, kFs, true},        {"disk_src", 30, kFs, true},
    {"disk_wrt", 30, kFs, true},       {"div_int", 10, kCpu, true},
    {"div_long", 10, kCpu, true},      {"div_short", 10, kCpu, true},
    {"jmp_test", 10, kCpu, true},      {"link_test", 20, kFs, true},
    {"mem_rtns_1", 40, kCpu, false},   {"mem_rtns_2", 10, kCpu, false},
    {"misc_rtns_1", 20, kCpu, false},  {"mul_int", 10, kCpu, true},
    {"mul_long", 10, kCpu, true},      {"mul_short", 10, kCpu, true},
    {"ram_copy", 20, kCpu, true},      {"signal_test", 10, kCpu, true},
    {"sort_rtns_1", 30, kCpu, false},  {"string_rtns", 30, kCpu, false},
    {"sync_disk_cp", 5, kFs, true},    {"sync_disk_rw", 5, kFs, true},
    {"sync_disk_wrt", 5, kFs, true},   {"tcp_test", 10, kCpu, false},
    {"udp_test", 40, kCpu, false},
};

}  // namespace

std::span<const WorkfileLine> FserverWorkfile() { return kFserver; }

std::vector<WorkfileLine> SelectTests(bool with_cpu) {
  std::vector<WorkfileLine> out;
  for (const WorkfileLine& line : kFserver) {
    if (!line.implemented) continue;
    if (line.kind == TestKind::kCpu && !with_cpu) continue;
    out.push_back(line);
  }
  return out;
}

int RoundedShare(int hits, int total_hits, int jobs) {
  WALFS_CHECK(hits > 0 && total_hits >= hits && jobs >= 1);
  // Exact rational arithmetic instead of re-aim's double: share = hits*jobs /
  // total, and the fraction compares against 1/2 without rounding error.
  const std::int64_t num = std::int64_t{hits} * jobs;
  const std::int64_t whole = num / total_hits;
  const std::int64_t rem = num % total_hits;
  if (2 * rem >= total_hits) return static_cast<int>(whole + 1);
  if (rem != 0 && whole == 0) return 1;
  return static_cast<int>(whole);
}

Mix BuildMix(std::vector<WorkfileLine> tests, int jobs) {
  WALFS_CHECK_MSG(!tests.empty() && jobs >= 1, "a mix needs tests and jobs");
  int total = 0;
  for (const WorkfileLine& t : tests) {
    WALFS_CHECK(t.hits > 0);
    total += t.hits;
  }
  Mix mix;
  mix.tests = std::move(tests);
  for (const WorkfileLine& t : mix.tests) {
    mix.counts.push_back(RoundedShare(t.hits, total, jobs));
    mix.jobs_per_user += mix.counts.back();
  }
  return mix;
}

std::vector<int> ShuffledJobs(const Mix& mix, std::uint64_t seed) {
  std::vector<int> jobs;
  jobs.reserve(static_cast<std::size_t>(mix.jobs_per_user));
  for (std::size_t i = 0; i < mix.counts.size(); ++i)
    jobs.insert(jobs.end(), static_cast<std::size_t>(mix.counts[i]), static_cast<int>(i));
  // Fisher-Yates with our own index draw: std::shuffle's use of the engine
  // is unspecified, and the list must not change between standard libraries.
  std::mt19937_64 rng(seed);
  for (std::size_t i = jobs.size(); i > 1; --i) std::swap(jobs[i - 1], jobs[rng() % i]);
  return jobs;
}

}  // namespace walfs::bench::aim
