// The fserver job mix: re-aim's rounding, and one user's shuffled list.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/aim/tests_cpu.h"
#include "bench/aim/tests_fs.h"
#include "bench/aim/workfile.h"

namespace walfs::bench::aim {
namespace {

std::map<std::string, int> Counts(const Mix& mix) {
  std::map<std::string, int> out;
  for (std::size_t i = 0; i < mix.tests.size(); ++i) out[std::string(mix.tests[i].name)] = mix.counts[i];
  return out;
}

TEST(AimWorkfile, FserverHasThirtyOneTestsAndFiveHundredNinetyFiveHits) {
  const auto lines = FserverWorkfile();
  EXPECT_EQ(lines.size(), 31u);
  EXPECT_EQ(std::accumulate(lines.begin(), lines.end(), 0,
                            [](int sum, const WorkfileLine& l) { return sum + l.hits; }),
            595);
}

TEST(AimWorkfile, RoundingRoundsHalvesUpAndRunsEveryTestAtLeastOnce) {
  EXPECT_EQ(RoundedShare(5, 595, 100), 1);   // 0.84
  EXPECT_EQ(RoundedShare(10, 595, 100), 2);  // 1.68
  EXPECT_EQ(RoundedShare(20, 595, 100), 3);  // 3.36
  EXPECT_EQ(RoundedShare(30, 595, 100), 5);  // 5.04
  EXPECT_EQ(RoundedShare(40, 595, 100), 7);  // 6.72
  EXPECT_EQ(RoundedShare(1, 1000, 100), 1);  // 0.1: at least once
  EXPECT_EQ(RoundedShare(1, 4, 2), 1);       // exactly 0.5 rounds up
  EXPECT_EQ(RoundedShare(3, 4, 2), 2);       // 1.5
  EXPECT_EQ(RoundedShare(2, 4, 2), 1);       // exactly 1
  EXPECT_EQ(RoundedShare(4, 4, 100), 100);
}

TEST(AimWorkfile, WholeFserverMixAtOneHundredJobsIsOneHundredAndOne) {
  const Mix mix = BuildMix({FserverWorkfile().begin(), FserverWorkfile().end()}, 100);
  EXPECT_EQ(mix.jobs_per_user, 101);  // the "shuffled list of 101 jobs"
  const auto c = Counts(mix);
  EXPECT_EQ(c.at("creat_clo"), 3);
  EXPECT_EQ(c.at("disk_rw"), 5);
  EXPECT_EQ(c.at("sync_disk_rw"), 1);
  EXPECT_EQ(c.at("udp_test"), 7);
  EXPECT_EQ(c.at("jmp_test"), 2);
}

TEST(AimWorkfile, FilesystemMixFollowsTheFserverWeights) {
  const Mix mix = BuildMix(SelectTests(/*with_cpu=*/false), 100);
  // 235 hits: 20 -> 8.51 -> 9, 30 -> 12.77 -> 13, 5 -> 2.13 -> 2.
  const std::map<std::string, int> expected = {
      {"creat_clo", 9}, {"disk_cp", 13},  {"disk_rd", 13},      {"disk_rr", 13},
      {"disk_rw", 13},  {"disk_src", 13}, {"disk_wrt", 13},     {"link_test", 9},
      {"sync_disk_cp", 2}, {"sync_disk_rw", 2}, {"sync_disk_wrt", 2},
  };
  EXPECT_EQ(Counts(mix), expected);
  EXPECT_EQ(mix.jobs_per_user, 102);
}

TEST(AimWorkfile, SmallJobCountsStillRunEveryTest) {
  const Mix mix = BuildMix(SelectTests(false), 1);
  for (int c : mix.counts) EXPECT_EQ(c, 1);
  EXPECT_EQ(mix.jobs_per_user, 11);
}

TEST(AimWorkfile, SelectedTestsAllHaveRecipes) {
  const auto fs = SelectTests(false);
  EXPECT_EQ(fs.size(), 11u);
  for (const auto& t : fs) {
    EXPECT_EQ(t.kind, TestKind::kFilesystem);
    EXPECT_NE(FindFsTest(t.name), nullptr) << t.name;
  }
  const auto all = SelectTests(true);
  EXPECT_EQ(all.size(), 23u);  // 11 filesystem + 12 CPU tests
  for (const auto& t : all)
    EXPECT_TRUE(FindFsTest(t.name) != nullptr || FindCpuTest(t.name) != nullptr) << t.name;
  EXPECT_EQ(FindFsTest("udp_test"), nullptr);
  EXPECT_EQ(FindCpuTest("udp_test"), nullptr);
}

TEST(AimWorkfile, ShuffledJobsArePermutationOfTheCounts) {
  const Mix mix = BuildMix(SelectTests(false), 100);
  std::vector<int> jobs = ShuffledJobs(mix, 42);
  ASSERT_EQ(jobs.size(), 102u);
  std::vector<int> per_test(mix.tests.size());
  for (int j : jobs) ++per_test.at(static_cast<std::size_t>(j));
  EXPECT_EQ(per_test, mix.counts);
  std::vector<int> unshuffled;
  for (std::size_t i = 0; i < mix.counts.size(); ++i)
    unshuffled.insert(unshuffled.end(), static_cast<std::size_t>(mix.counts[i]), static_cast<int>(i));
  EXPECT_NE(jobs, unshuffled);
  EXPECT_TRUE(std::is_permutation(jobs.begin(), jobs.end(), unshuffled.begin()));
}

TEST(AimWorkfile, ShuffleIsDeterministicPerSeed) {
  const Mix mix = BuildMix(SelectTests(true), 100);
  EXPECT_EQ(ShuffledJobs(mix, 7), ShuffledJobs(mix, 7));
  EXPECT_NE(ShuffledJobs(mix, 7), ShuffledJobs(mix, 8));
}

}  // namespace
}  // namespace walfs::bench::aim
