// disk_src's tree: shape, hard links, and the dirlist it is searched by.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "aim_test_dir.h"
#include "bench/aim/fakeh.h"

namespace walfs::bench::aim {
namespace {

TEST(AimFakeh, DirlistListsFiftySevenStatsAndFortyThreeCreates) {
  Result<Dirlist> d = ParseDirlist(FakehDirlist(), 123);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->stat_paths.size(), 57u);
  EXPECT_EQ(d->creat_paths.size(), 43u);
  const FakehShape shape = ExpectedFakehShape();
  EXPECT_EQ(shape.stat_paths, 57);
  EXPECT_EQ(shape.creat_paths, 43);
  EXPECT_EQ(shape.linked_names, 314);
  EXPECT_EQ(shape.max_depth, 6);
}

TEST(AimFakeh, CreatNamesCarryTheLastFiveDigitsOfThePid) {
  Result<Dirlist> d = ParseDirlist("./x\ns ./a/fake04\nc ./a/notexist1\nnot a line\n", 4200123);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->creat_paths.size(), 1u);
  EXPECT_EQ(d->creat_paths[0], "./a/notexist100123");
  EXPECT_EQ(d->stat_paths, std::vector<std::string>{"./a/fake04"});
}

TEST(AimFakeh, TooLongAListIsCorruption) {
  std::string text;
  for (int i = 0; i < 76; ++i) text += "s ./fake04\n";
  EXPECT_TRUE(ParseDirlist(text, 1).status().IsCorruption());
}

TEST(AimFakeh, TreeIsManyHardLinksToOneInode) {
  TempDir dir;
  ASSERT_TRUE(CreateFakeh(dir.fd()).ok());
  const std::string root = dir.path() + "/fakeh";
  struct stat first;
  ASSERT_EQ(stat((root + "/fake00").c_str(), &first), 0);
  EXPECT_EQ(first.st_nlink, 314u);
  int names = 0, max_depth = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const std::string rel = std::filesystem::relative(e.path(), root).string();
    if (e.is_directory()) {
      max_depth = std::max(max_depth, static_cast<int>(std::count(rel.begin(), rel.end(), '/')) + 1);
      continue;
    }
    if (rel == "dirlist") continue;
    struct stat st;
    ASSERT_EQ(stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_ino, first.st_ino) << rel;
    ++names;
  }
  EXPECT_EQ(names, 314);
  EXPECT_EQ(max_depth, 6);

  Result<Dirlist> d = ParseDirlist(FakehDirlist(), getpid());
  ASSERT_TRUE(d.ok());
  for (const std::string& p : d->stat_paths) {
    struct stat st;
    ASSERT_EQ(stat((root + "/" + p).c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_ino, first.st_ino);
  }
  for (const std::string& p : d->creat_paths) {
    EXPECT_FALSE(std::filesystem::exists(root + "/" + p)) << p;
    EXPECT_TRUE(std::filesystem::is_directory(std::filesystem::path(root + "/" + p).parent_path())) << p;
  }
}

TEST(AimFakeh, CreatingItTwiceFails) {
  TempDir dir;
  ASSERT_TRUE(CreateFakeh(dir.fd()).ok());
  EXPECT_EQ(CreateFakeh(dir.fd()).code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace walfs::bench::aim
