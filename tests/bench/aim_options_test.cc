// walfs-aim's command line: load levels, sizes, and every usage error.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/aim/options.h"

namespace walfs::bench::aim {
namespace {

Result<ParsedArgs> Parse(std::vector<std::string> args) { return ParseArgs(args); }

TEST(AimOptions, DefaultsAreReAimsFiveUserRun) {
  auto p = Parse({"/tmp"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const Options& o = p->options;
  EXPECT_EQ(o.dirs, std::vector<std::string>{"/tmp"});
  EXPECT_EQ(o.LoadLevels(), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(o.jobs, 100);
  EXPECT_FALSE(o.with_cpu);
  EXPECT_FALSE(o.sync_calls);
  EXPECT_EQ(o.filesize_kib, 10);
  EXPECT_EQ(o.poolsize_kib, 1024);
}

TEST(AimOptions, LevelsStepFromStartToEnd) {
  auto p = Parse({"a", "b", "-s", "2", "-e", "10", "-i", "4", "-j", "20", "--with-cpu"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->options.dirs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p->options.LoadLevels(), (std::vector<int>{2, 6, 10}));
  EXPECT_EQ(p->options.jobs, 20);
  EXPECT_TRUE(p->options.with_cpu);
}

TEST(AimOptions, QuickRunsFourSmallLevelsUnlessTold) {
  auto p = Parse({"/tmp", "--quick"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->options.LoadLevels(), (std::vector<int>{1, 2, 3, 4}));
  p = Parse({"/tmp", "--quick", "-e", "2"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->options.LoadLevels(), (std::vector<int>{1, 2}));
}

TEST(AimOptions, SizesTakeReAimsSuffixes) {
  EXPECT_EQ(*ParseSizeKib("10K"), 10);
  EXPECT_EQ(*ParseSizeKib("10k"), 10);
  EXPECT_EQ(*ParseSizeKib("1M"), 1024);
  EXPECT_EQ(*ParseSizeKib("2G"), 2 * 1024 * 1024);
  EXPECT_EQ(*ParseSizeKib("64"), 64);
  for (const char* bad : {"", "K", "10X", "-1K", "1.5M", "99999999999K"})
    EXPECT_FALSE(ParseSizeKib(bad).ok()) << bad;
  auto p = Parse({"/tmp", "--filesize", "4K", "--poolsize", "0"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->options.filesize_kib, 4);
  EXPECT_EQ(p->options.poolsize_kib, 0);
}

TEST(AimOptions, HelpIsNotAnError) {
  auto p = Parse({"--help"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
  EXPECT_NE(p->help_text.find("--with-cpu"), std::string::npos);
}

TEST(AimOptions, UsageErrorsAreInvalidArgument) {
  const std::vector<std::vector<std::string>> bad = {
      {},                                      // no DIR
      {"/tmp", "-s", "0"},                     // no users
      {"/tmp", "-s", "3", "-e", "2"},          // backwards ("Cannot run backwards")
      {"/tmp", "-i", "0"},
      {"/tmp", "-j", "0"},
      {"/tmp", "-j", "many"},
      {"/tmp", "-e", "100000"},
      {"/tmp", "--reps", "0"},
      {"/tmp", "--filesize", "10X"},
      {"/tmp", "--filesize", "0", "--poolsize", "0"},  // files of no blocks
      {"/tmp", "--fs-only", "--with-cpu"},
      {"/tmp", "--no-such-flag"},
  };
  for (const auto& args : bad) {
    auto p = Parse(args);
    ASSERT_FALSE(p.ok()) << ::testing::PrintToString(args);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(p.status().message().empty());
  }
}

TEST(AimOptions, AnUnknownOptionIsNamedBeforeAMissingDir) {
  // `walfs-aim --bogus` said "DIR is required": CLI11 checks required
  // arguments first, but the mistake on that command line is --bogus.
  auto p = Parse({"--bogus"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not expected: --bogus"), std::string::npos) << p.status().message();
  p = Parse({});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("DIR is required"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace walfs::bench::aim
