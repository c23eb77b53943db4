// Specs of the Filesystem's attributes (fs/filesystem.h): SetAttr of the
// mode, owners and times, the group a new node takes from a setgid
// directory, and extended attributes (create, replace, list, remove, their
// limits, a tree of many, and a directory's through its conversion to a
// tree).  A size change through SetAttr is in filesystem_data_test.cc.
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::Pattern;

TEST_F(FilesystemTest, SetAttrChangesModeOwnersAndTimes) {
  const std::uint64_t f = Create(root_, "f");
  struct stat a {};
  a.st_mode = S_IFDIR | 0600;  // the type bits are ignored
  a.st_uid = 7;
  a.st_gid = 8;
  a.st_atim = {1000, 5};
  a.st_mtim = {2000, 6};
  auto st = fs_->SetAttr(f, a, kSetMode | kSetUid | kSetGid | kSetAtime | kSetMtime);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_mode, static_cast<mode_t>(S_IFREG | 0600));
  EXPECT_EQ(st->st_uid, 7u);
  EXPECT_EQ(st->st_gid, 8u);
  EXPECT_EQ(st->st_atim.tv_sec, 1000);
  EXPECT_EQ(st->st_atim.tv_nsec, 5);
  EXPECT_EQ(st->st_mtim.tv_sec, 2000);
  EXPECT_EQ(st->st_mtim.tv_nsec, 6);
  Remount();
  struct stat again = Stat(f);
  EXPECT_EQ(again.st_mode, static_cast<mode_t>(S_IFREG | 0600));
  EXPECT_EQ(again.st_uid, 7u);
  EXPECT_EQ(again.st_mtim.tv_sec, 2000);
}

TEST_F(FilesystemTest, ANewDirectoryInheritsTheSetgidGroup) {
  const std::uint64_t a = Mkdir(root_, "a");
  struct stat attr {};
  attr.st_mode = 02775;
  attr.st_gid = 4242;
  ASSERT_TRUE(fs_->SetAttr(a, attr, kSetMode | kSetGid).ok());
  const std::uint64_t sub = Mkdir(a, "sub");
  EXPECT_EQ(Stat(sub).st_gid, 4242u);
  EXPECT_TRUE(Stat(sub).st_mode & S_ISGID);
  EXPECT_EQ(Stat(Create(a, "f")).st_gid, 4242u);
}

TEST_F(FilesystemTest, XattrsAreCreatedReplacedListedAndRemoved) {
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.a")), ENODATA);
  EXPECT_TRUE(fs_->ListXattr(f)->empty());
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "one", XATTR_CREATE).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "one");
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.a", "two", XATTR_CREATE)), EEXIST);
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "one");
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.b", "x", XATTR_REPLACE)), ENODATA);
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.b")), ENODATA);
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "three", XATTR_REPLACE).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "three");
  ASSERT_TRUE(fs_->SetXattr(f, "user.a", "", 0).ok());
  EXPECT_EQ(*fs_->GetXattr(f, "user.a"), "");
  ASSERT_TRUE(fs_->SetXattr(f, "user.b", std::string(1000, 'b'), 0).ok());
  ASSERT_TRUE(fs_->SetXattr(f, "trusted.c", "c", 0).ok());
  auto names = fs_->ListXattr(f);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(std::set<std::string>(names->begin(), names->end()),
            (std::set<std::string>{"user.a", "user.b", "trusted.c"}));
  ASSERT_TRUE(fs_->RemoveXattr(f, "user.a").ok());
  EXPECT_EQ(Err(fs_->RemoveXattr(f, "user.a")), ENODATA);
  EXPECT_EQ(Err(fs_->GetXattr(f, "user.a")), ENODATA);
  Remount();
  EXPECT_EQ(*fs_->GetXattr(f, "user.b"), std::string(1000, 'b'));
  ASSERT_TRUE(fs_->RemoveXattr(f, "user.b").ok());
  ASSERT_TRUE(fs_->RemoveXattr(f, "trusted.c").ok());
  EXPECT_TRUE(fs_->ListXattr(f)->empty());
}

TEST_F(FilesystemTest, XattrNamesAndValuesHaveLimits) {
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->SetXattr(f, "", "v", 0)), ERANGE);
  EXPECT_EQ(Err(fs_->SetXattr(f, std::string(XATTR_NAME_MAX + 1, 'n'), "v", 0)), ERANGE);
  EXPECT_EQ(Err(fs_->GetXattr(f, "")), ERANGE);
  EXPECT_EQ(Err(fs_->RemoveXattr(f, "")), ERANGE);
  EXPECT_EQ(Err(fs_->SetXattr(f, "user.big", std::string(XATTR_SIZE_MAX + 1, 'v'), 0)), E2BIG);
  EXPECT_TRUE(fs_->SetXattr(f, std::string(XATTR_NAME_MAX, 'n'), "v", 0).ok());
}

TEST_F(FilesystemTest, ManyXattrsGrowATreeAndUnlinkingTheFileFreesIt) {
  const std::uint64_t free_before = FreeBlocks();
  const std::uint64_t f = Create(root_, "f");
  for (int i = 0; i < 300; ++i)
    ASSERT_TRUE(fs_->SetXattr(f, "user.attr" + std::to_string(i), Pattern(100, i), 0).ok()) << i;
  EXPECT_GT(free_before - FreeBlocks(), 3u);
  for (int i = 0; i < 300; i += 37) EXPECT_EQ(*fs_->GetXattr(f, "user.attr" + std::to_string(i)), Pattern(100, i));
  EXPECT_EQ(fs_->ListXattr(f)->size(), 300u);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  fs_->Forget(f, 1);
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(FilesystemTest, XattrsOnADirectorySurviveItsConversionToATree) {
  const std::uint64_t d = Mkdir(root_, "d");
  ASSERT_TRUE(fs_->SetXattr(d, "user.tag", "kept", 0).ok());
  for (int i = 0; i < 200; ++i) Create(d, "child-" + std::to_string(i));
  EXPECT_EQ(*fs_->GetXattr(d, "user.tag"), "kept");
  ASSERT_TRUE(fs_->SetXattr(d, "user.more", "also", 0).ok());
  EXPECT_EQ(Ino(d, "child-150"), Ino(d, "child-150"));
  Remount();
  EXPECT_EQ(*fs_->GetXattr(d, "user.tag"), "kept");
  EXPECT_EQ(*fs_->GetXattr(d, "user.more"), "also");
  EXPECT_EQ(List(d).size(), 202u);
}

}  // namespace
}  // namespace walfs::fs
