// Specs of the Filesystem's Rename (fs/filesystem.h): within and across
// directories, over files and directories (link counts and ".."), the
// refusals (bad flags and names, a directory into its own subtree, a
// non-empty target), RENAME_NOREPLACE, RENAME_EXCHANGE and RENAME_WHITEOUT.
// A rename on a full filesystem is in filesystem_space_test.cc.
#include <dirent.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <cstdint>
#include <ios>
#include <map>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::kBs;
using testing::Pattern;
using testing::SameBytes;

TEST_F(FilesystemTest, RenameWithinADirectoryMovesTheName) {
  const std::uint64_t f = Create(root_, "a");
  Write(f, 0, "data");
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_FALSE(Exists(root_, "a"));
  EXPECT_EQ(Ino(root_, "b"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), "data"));
  EXPECT_EQ(Stat(f).st_nlink, 1u);
}

TEST_F(FilesystemTest, RenameOverAnExistingFileFreesTheTargetWhenItsLastLinkGoes) {
  const std::uint64_t a = Create(root_, "a");
  Write(a, 0, "new");
  const std::uint64_t free_before = FreeBlocks();
  const std::uint64_t b = Create(root_, "b");
  Write(b, 0, Pattern(8 * kBs, 1));
  EXPECT_EQ(free_before - FreeBlocks(), 8u);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_FALSE(Exists(root_, "a"));
  EXPECT_EQ(Stat(b).st_nlink, 0u);
  EXPECT_TRUE(SameBytes(Read(b, 0, 10), Pattern(10, 1))) << "still readable while referenced";
  fs_->Forget(b, 1);  // the kernel's reference from the create
  EXPECT_EQ(FreeBlocks(), free_before);
  EXPECT_EQ(Err(fs_->GetAttr(b)), ESTALE);
}

TEST_F(FilesystemTest, RenameOverAnotherLinkOfTheSameFileDoesNothing) {
  const std::uint64_t f = Create(root_, "a");
  ASSERT_TRUE(fs_->Link(f, root_, "b").ok());
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "a"), f);
  EXPECT_EQ(Ino(root_, "b"), f);
  EXPECT_EQ(Stat(f).st_nlink, 2u);
}

TEST_F(FilesystemTest, RenameNoreplaceRefusesAnExistingTarget) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_NOREPLACE)), EEXIST);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "c", RENAME_NOREPLACE).ok());
  EXPECT_EQ(Ino(root_, "c"), a);
}

TEST_F(FilesystemTest, RenameRefusesBadFlagsNamesAndMissingSources) {
  Create(root_, "a");
  const std::uint64_t f = Create(root_, "f");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_NOREPLACE | RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", 1u << 10)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "missing", root_, "b", 0)), ENOENT);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, ".", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "x/y", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, std::string(256, 'q'), 0)), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->Rename(f, "a", root_, "b", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", f, "b", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "nothere", RENAME_EXCHANGE)), ENOENT);
  EXPECT_TRUE(Exists(root_, "a"));
}

TEST_F(FilesystemTest, RenameOfADirectoryOverAFileIsENOTDIRAndTheReverseEISDIR) {
  Mkdir(root_, "d");
  Create(root_, "f");
  EXPECT_EQ(Err(fs_->Rename(root_, "d", root_, "f", 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rename(root_, "f", root_, "d", 0)), EISDIR);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameOfADirectoryOverANonEmptyDirectoryIsENOTEMPTY) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(root_, "b");
  Create(b, "inside");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", 0)), ENOTEMPTY);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
}

TEST_F(FilesystemTest, RenameOfADirectoryOverAnEmptyOneReplacesItAndFixesLinkCounts) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(root_, "b");
  Create(a, "child");
  EXPECT_EQ(Stat(root_).st_nlink, 4u);
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", 0).ok());
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  EXPECT_EQ(Stat(b).st_nlink, 0u);
  fs_->Forget(b, 1);
  EXPECT_EQ(Err(fs_->GetAttr(b)), ESTALE);
  // Across parents: the replaced directory's ".." goes, the moved one's comes.
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(p, "q");
  ASSERT_TRUE(fs_->Rename(root_, "b", p, "q", 0).ok());
  EXPECT_EQ(Ino(p, "q"), a);
  EXPECT_EQ(Ino(a, ".."), p);
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);  // "p" only
  fs_->Forget(q, 1);
}

TEST_F(FilesystemTest, RenameOfADirectoryAcrossParentsMovesDotDotAndLinkCounts) {
  const std::uint64_t src = Mkdir(root_, "src");
  const std::uint64_t dst = Mkdir(root_, "dst");
  const std::uint64_t d = Mkdir(src, "d");
  Create(d, "file");
  EXPECT_EQ(Stat(src).st_nlink, 3u);
  EXPECT_EQ(Stat(dst).st_nlink, 2u);
  ASSERT_TRUE(fs_->Rename(src, "d", dst, "moved", 0).ok());
  EXPECT_EQ(Stat(src).st_nlink, 2u);
  EXPECT_EQ(Stat(dst).st_nlink, 3u);
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  EXPECT_EQ(Ino(d, ".."), dst);
  EXPECT_EQ(List(d).at(".."), dst);
  EXPECT_FALSE(Exists(src, "d"));
  EXPECT_TRUE(Exists(d, "file"));
  Remount();
  EXPECT_EQ(Ino(d, ".."), dst);
  EXPECT_EQ(Stat(dst).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameOfAFileAcrossParentsLeavesLinkCountsAlone) {
  const std::uint64_t src = Mkdir(root_, "src");
  const std::uint64_t dst = Mkdir(root_, "dst");
  const std::uint64_t f = Create(src, "f");
  ASSERT_TRUE(fs_->Rename(src, "f", dst, "g", 0).ok());
  EXPECT_EQ(Ino(dst, "g"), f);
  EXPECT_EQ(Stat(src).st_nlink, 2u);
  EXPECT_EQ(Stat(dst).st_nlink, 2u);
}

TEST_F(FilesystemTest, RenameOfADirectoryIntoItsOwnSubtreeIsEINVAL) {
  const std::uint64_t a = Mkdir(root_, "a");
  const std::uint64_t b = Mkdir(a, "b");
  const std::uint64_t c = Mkdir(b, "c");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", c, "a", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", a, "self", 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(a, "b", c, "x", 0)), EINVAL);
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(b, ".."), a);
  // Exchanging a directory with something inside it is refused the same way.
  Create(c, "leaf");
  EXPECT_EQ(Err(fs_->Rename(root_, "a", c, "leaf", RENAME_EXCHANGE)), EINVAL);
  const std::uint64_t x = Mkdir(c, "x");
  EXPECT_EQ(Err(fs_->Rename(c, "x", root_, "a", RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Ino(c, "x"), x);
}

TEST_F(FilesystemTest, RenameExchangeSwapsTwoFiles) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(root_, "a"), b);
  EXPECT_EQ(Ino(root_, "b"), a);
  EXPECT_EQ(Stat(a).st_nlink, 1u);
  EXPECT_EQ(Stat(b).st_nlink, 1u);
}

TEST_F(FilesystemTest, RenameExchangeOfAFileAndADirectoryAcrossParentsFixesLinkCountsAndDotDot) {
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(root_, "q");
  const std::uint64_t d = Mkdir(p, "d");
  const std::uint64_t f = Create(q, "f");
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(q).st_nlink, 2u);
  ASSERT_TRUE(fs_->Rename(p, "d", q, "f", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(p, "d"), f);
  EXPECT_EQ(Ino(q, "f"), d);
  EXPECT_EQ(Ino(d, ".."), q);
  EXPECT_EQ(Stat(p).st_nlink, 2u);
  EXPECT_EQ(Stat(q).st_nlink, 3u);
  // The directory entries carry the right types.
  std::map<std::string, std::uint32_t> types;
  ASSERT_TRUE(fs_->ReadDir(q, 0, [&](std::string_view n, std::uint64_t, std::uint32_t t, std::uint64_t) {
    types[std::string(n)] = t;
    return true;
  }).ok());
  EXPECT_EQ(types.at("f"), static_cast<std::uint32_t>(DT_DIR));
}

TEST_F(FilesystemTest, RenameExchangeOfTwoDirectoriesAcrossParentsSwapsDotDot) {
  const std::uint64_t p = Mkdir(root_, "p");
  const std::uint64_t q = Mkdir(root_, "q");
  const std::uint64_t a = Mkdir(p, "a");
  const std::uint64_t b = Mkdir(q, "b");
  ASSERT_TRUE(fs_->Rename(p, "a", q, "b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Ino(p, "a"), b);
  EXPECT_EQ(Ino(q, "b"), a);
  EXPECT_EQ(Ino(a, ".."), q);
  EXPECT_EQ(Ino(b, ".."), p);
  EXPECT_EQ(Stat(p).st_nlink, 3u);
  EXPECT_EQ(Stat(q).st_nlink, 3u);
}

TEST_F(FilesystemTest, RenameIntoABigDirectoryAndOutAgain) {
  const std::uint64_t big = Mkdir(root_, "big");
  for (int i = 0; i < 300; ++i) Create(big, "n" + std::to_string(i));
  const std::uint64_t d = Mkdir(root_, "d");
  ASSERT_TRUE(fs_->Rename(root_, "d", big, "d", 0).ok());
  EXPECT_EQ(Ino(d, ".."), big);
  EXPECT_EQ(Stat(big).st_nlink, 3u);
  ASSERT_TRUE(fs_->Rename(big, "n7", root_, "n7", 0).ok());
  ASSERT_TRUE(fs_->Rename(big, "d", root_, "d", 0).ok());
  EXPECT_EQ(Ino(d, ".."), root_);
  EXPECT_EQ(Stat(big).st_nlink, 2u);
  EXPECT_EQ(List(big).size(), 2u + 299u);
}

// RENAME_WHITEOUT (overlayfs asks for it on its upper layer): the old name
// becomes a whiteout -- a 0/0 character device owned by the caller -- in
// the rename's own transaction.
TEST_F(FilesystemTest, RenameWhiteoutLeavesAZeroZeroCharacterDeviceOwnedByTheCallerAtTheOldName) {
  const std::uint64_t f = Create(root_, "a");
  Write(f, 0, "data");
  const std::uint64_t d = Mkdir(root_, "d");
  const Caller who{1234, 5678};
  ASSERT_TRUE(fs_->Rename(root_, "a", d, "b", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(d, "b"), f);
  EXPECT_TRUE(SameBytes(ReadAll(f), "data"));
  auto expect_whiteout = [&](std::uint64_t dir, const std::string& name) {
    const std::uint64_t w = Ino(dir, name);
    ASSERT_NE(w, 0u);
    const struct stat st = Stat(w);
    EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFCHR)) << name << ": mode " << std::oct << st.st_mode;
    EXPECT_EQ(st.st_rdev, 0u);
    EXPECT_EQ(st.st_uid, who.uid);
    EXPECT_EQ(st.st_gid, who.gid);
    EXPECT_EQ(st.st_nlink, 1u);
    std::map<std::string, std::uint32_t> types;
    ASSERT_TRUE(fs_->ReadDir(dir, 0, [&](std::string_view n, std::uint64_t, std::uint32_t t, std::uint64_t) {
      types[std::string(n)] = t;
      return true;
    }).ok());
    EXPECT_EQ(types[name], static_cast<std::uint32_t>(DT_CHR));
  };
  expect_whiteout(root_, "a");
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  // Over an existing target in the same directory: the target goes, as in
  // any rename.
  const std::uint64_t x = Create(d, "x");
  const std::uint64_t y = Create(d, "y");
  ASSERT_TRUE(fs_->Rename(d, "x", d, "y", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(d, "y"), x);
  EXPECT_EQ(Stat(y).st_nlink, 0u);
  fs_->Forget(y, 1);
  expect_whiteout(d, "x");
  // A directory moved out leaves one too, and its old parent loses the link.
  const std::uint64_t sub = Mkdir(d, "sub");
  ASSERT_TRUE(fs_->Rename(d, "sub", root_, "sub", RENAME_WHITEOUT, who).ok());
  EXPECT_EQ(Ino(sub, ".."), root_);
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  expect_whiteout(d, "sub");
  Remount();
  expect_whiteout(root_, "a");
  expect_whiteout(d, "x");
  expect_whiteout(d, "sub");
  EXPECT_EQ(Ino(d, "b"), f);
}

TEST_F(FilesystemTest, ARefusedRenameWhiteoutLeavesNoInodeBehind) {
  const std::uint64_t a = Create(root_, "a");
  const std::uint64_t b = Create(root_, "b");
  const std::uint64_t d = Mkdir(root_, "d");
  Create(d, "inside");
  const std::uint64_t e = Mkdir(root_, "e");
  const std::uint64_t inodes = StatFs().f_ffree;
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_WHITEOUT | RENAME_EXCHANGE)), EINVAL);
  EXPECT_EQ(Err(fs_->Rename(root_, "a", root_, "b", RENAME_WHITEOUT | RENAME_NOREPLACE)), EEXIST);
  EXPECT_EQ(Err(fs_->Rename(root_, "missing", root_, "z", RENAME_WHITEOUT)), ENOENT);
  EXPECT_EQ(Err(fs_->Rename(root_, "e", root_, "d", RENAME_WHITEOUT)), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Rename(root_, "d", d, "self", RENAME_WHITEOUT)), EINVAL);
  ASSERT_TRUE(fs_->Link(a, root_, "a2").ok());
  ASSERT_TRUE(fs_->Rename(root_, "a", root_, "a2", RENAME_WHITEOUT).ok()) << "two names of one file: nothing to do";
  EXPECT_EQ(StatFs().f_ffree, inodes) << "every whiteout made for a refused rename was freed";
  EXPECT_EQ(Ino(root_, "a"), a);
  EXPECT_EQ(Ino(root_, "b"), b);
  EXPECT_EQ(Ino(root_, "e"), e);
}

}  // namespace
}  // namespace walfs::fs
