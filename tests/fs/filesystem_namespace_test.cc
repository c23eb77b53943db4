// Specs of the Filesystem's namespace operations (fs/filesystem.h): the
// root of a fresh image, Mknod, Mkdir, Lookup, symlinks and Readlink, Link,
// Unlink and Rmdir, and ReadDir over a large directory resumed page by page.
// Rename has its own file (filesystem_rename_test.cc).
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fs/filesystem_fixture.h"

namespace walfs::fs {
namespace {

using testing::Err;
using testing::FilesystemTest;
using testing::Pattern;
using testing::SameBytes;

TEST_F(FilesystemTest, AFreshImageHasAnEmptyRoot) {
  struct stat st = Stat(root_);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_nlink, 2u);
  auto l = List(root_);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.at("."), root_);
  EXPECT_EQ(l.at(".."), root_);
  EXPECT_EQ(Ino(root_, ".."), root_);
}

TEST_F(FilesystemTest, MknodCreatesANodeThatLookupAndReadDirFind) {
  auto st = fs_->Mknod(caller_, root_, "file", S_IFREG | 0640, 0);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(S_ISREG(st->st_mode));
  EXPECT_EQ(st->st_mode & 07777, 0640u);
  EXPECT_EQ(st->st_nlink, 1u);
  EXPECT_EQ(st->st_uid, 1000u);
  EXPECT_EQ(st->st_gid, 1000u);
  EXPECT_EQ(st->st_size, 0);
  EXPECT_EQ(Ino(root_, "file"), st->st_ino);
  EXPECT_EQ(List(root_).at("file"), st->st_ino);
  // Mode 0 means a regular file; fifos, sockets and devices keep their type and rdev.
  EXPECT_TRUE(S_ISREG(Stat(Create(root_, "plain", 0644)).st_mode));
  auto fifo = fs_->Mknod(caller_, root_, "fifo", S_IFIFO | 0600, 0);
  ASSERT_TRUE(fifo.ok());
  EXPECT_TRUE(S_ISFIFO(fifo->st_mode));
  auto chr = fs_->Mknod(caller_, root_, "null", S_IFCHR | 0666, makedev(1, 3));
  ASSERT_TRUE(chr.ok());
  EXPECT_TRUE(S_ISCHR(Stat(chr->st_ino).st_mode));
  EXPECT_EQ(Stat(chr->st_ino).st_rdev, makedev(1, 3));
  auto sock = fs_->Mknod(caller_, root_, "sock", S_IFSOCK | 0600, 0);
  ASSERT_TRUE(sock.ok());
  EXPECT_TRUE(S_ISSOCK(sock->st_mode));
}

TEST_F(FilesystemTest, MknodRefusesBadNamesTypesAndExistingNames) {
  Create(root_, "taken");
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "taken", S_IFREG | 0644, 0)), EEXIST);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, root_, "taken", 0755)), EEXIST);
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "taken", "x")), EEXIST);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "d", S_IFDIR | 0755, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "l", S_IFLNK | 0777, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, ".", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "..", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, "a/b", S_IFREG, 0)), EINVAL);
  EXPECT_EQ(Err(fs_->Mknod(caller_, root_, std::string(256, 'n'), S_IFREG, 0)), ENAMETOOLONG);
  EXPECT_TRUE(fs_->Mknod(caller_, root_, std::string(255, 'n'), S_IFREG, 0).ok());
  const std::uint64_t file = Create(root_, "file");
  EXPECT_EQ(Err(fs_->Mknod(caller_, file, "child", S_IFREG, 0)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, file, "child", 0755)), ENOTDIR);
  EXPECT_EQ(Err(fs_->Lookup(file, "child")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Lookup(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Lookup(root_, std::string(256, 'n'))), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->GetAttr(file + 1)), ESTALE) << "a free inode is a stale handle";
  EXPECT_EQ(Err(fs_->GetAttr(3)), ESTALE) << "an inode number outside the inode space";
}

TEST_F(FilesystemTest, MkdirLinksTheNewDirectoryToItsParent) {
  const std::uint64_t a = Mkdir(root_, "a");
  struct stat st = Stat(a);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  const std::uint64_t b = Mkdir(a, "b");
  EXPECT_EQ(Stat(a).st_nlink, 3u);
  EXPECT_EQ(Ino(b, ".."), a);
  EXPECT_EQ(Ino(b, "."), b);
  auto l = List(b);
  EXPECT_EQ(l.at(".."), a);
  EXPECT_EQ(l.at("."), b);
  EXPECT_EQ(l.size(), 2u);
}

// XFS's inode64 rotor: a new directory goes to the next AG in turn, a file
// to its directory's AG, so processes working in their own directories
// allocate under different AG headers.
TEST_F(FilesystemTest, NewDirectoriesTakeTheAgsInTurnAndFilesStayWithTheirDirectory) {
  Make(64ull << 20, {.ag_count = 4});
  const format::Superblock& sb = fs_->superblock();
  auto ag_of = [&](std::uint64_t ino) { return (ino / sb.inodes_per_block() - sb.data_start()) / sb.ag_blocks; };
  std::set<std::uint64_t> ags;
  std::vector<std::uint64_t> dirs;
  for (int i = 0; i < 4; ++i) {
    dirs.push_back(Mkdir(root_, "d" + std::to_string(i)));
    ags.insert(ag_of(dirs.back()));
  }
  EXPECT_EQ(ags.size(), 4u) << "four directories in a row went to four AGs";
  for (const std::uint64_t d : dirs) {
    for (int f = 0; f < 3; ++f) EXPECT_EQ(ag_of(Create(d, "f" + std::to_string(f))), ag_of(d));
  }
  // A fifth directory starts the round again, below another directory too.
  EXPECT_EQ(ag_of(Mkdir(dirs[2], "sub")), ag_of(dirs[0]));
}

TEST_F(FilesystemTest, SymlinksKeepShortAndLongTargets) {
  const std::uint64_t free_before = FreeBlocks();
  const std::string short_target = "a/b/c";
  const std::string long_target = std::string(1000, 'x') + "/end";
  const std::string longest(4095, 'y');
  auto s = fs_->Symlink(caller_, root_, "short", short_target);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(S_ISLNK(s->st_mode));
  EXPECT_EQ(s->st_size, static_cast<off_t>(short_target.size()));
  auto l = fs_->Symlink(caller_, root_, "long", long_target);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto l2 = fs_->Symlink(caller_, root_, "longest", longest);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  EXPECT_EQ(*fs_->Readlink(s->st_ino), short_target);
  EXPECT_EQ(*fs_->Readlink(l->st_ino), long_target);
  EXPECT_EQ(*fs_->Readlink(l2->st_ino), longest);
  EXPECT_EQ(free_before - FreeBlocks(), 2u) << "one block per long target";
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "empty", "")), ENOENT);
  EXPECT_EQ(Err(fs_->Symlink(caller_, root_, "huge", std::string(4096, 'z'))), ENAMETOOLONG);
  EXPECT_EQ(Err(fs_->Readlink(Create(root_, "file"))), EINVAL);
  EXPECT_EQ(Err(fs_->Readlink(root_)), EINVAL);
  Remount();
  EXPECT_EQ(*fs_->Readlink(Ino(root_, "short")), short_target);
  EXPECT_EQ(*fs_->Readlink(Ino(root_, "long")), long_target);
  // Removing a long symlink gives its block back (once the kernel's
  // reference from its lookup goes).
  UnlinkAndForget(root_, "long");
  UnlinkAndForget(root_, "longest");
  EXPECT_EQ(FreeBlocks(), free_before);
}

TEST_F(FilesystemTest, SymlinkTargetsAroundTheInlineLimitReadBackAfterARemount) {
  // The data fork has kDataForkRoom (336) bytes; the xattr fork follows it.
  std::map<std::string, std::string> targets;
  for (std::size_t n : {1, 335, 336, 337, 352, 4095}) targets["l" + std::to_string(n)] = Pattern(n, n);
  for (auto& [name, t] : targets) {
    for (char& ch : t)
      if (ch == '\0') ch = 'z';  // a target is a C string
    auto st = fs_->Symlink(caller_, root_, name, t);
    ASSERT_TRUE(st.ok()) << name << ": " << st.status().ToString();
    ASSERT_TRUE(fs_->SetXattr(st->st_ino, "user.near", "the data fork", 0).ok()) << name;
  }
  Remount();
  for (const auto& [name, t] : targets) {
    const std::uint64_t ino = Ino(root_, name);
    auto got = fs_->Readlink(ino);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
    EXPECT_TRUE(SameBytes(*got, t)) << name;
    EXPECT_EQ(*fs_->GetXattr(ino, "user.near"), "the data fork") << name;
  }
}

TEST_F(FilesystemTest, LinkAddsANameAndUnlinkKeepsTheDataUntilTheLastOne) {
  const std::uint64_t f = Create(root_, "f");
  Write(f, 0, "hello");
  const std::uint64_t d = Mkdir(root_, "d");
  auto st = fs_->Link(f, d, "g");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->st_nlink, 2u);
  EXPECT_EQ(Ino(d, "g"), f);
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_FALSE(Exists(root_, "f"));
  EXPECT_EQ(Stat(f).st_nlink, 1u);
  EXPECT_TRUE(SameBytes(ReadAll(f), "hello"));
  ASSERT_TRUE(fs_->Unlink(d, "g").ok());
  EXPECT_EQ(Stat(f).st_nlink, 0u) << "unlinked but still referenced";
}

TEST_F(FilesystemTest, LinkRefusesDirectoriesExistingNamesAndNonDirectories) {
  const std::uint64_t f = Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  EXPECT_EQ(Err(fs_->Link(d, root_, "d2")), EPERM);
  EXPECT_EQ(Err(fs_->Link(f, root_, "d")), EEXIST);
  EXPECT_EQ(Err(fs_->Link(f, f, "x")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Link(f, root_, "")), EINVAL);
  EXPECT_EQ(Stat(f).st_nlink, 1u);
  // A file with no links left cannot get one back.
  ASSERT_TRUE(fs_->Unlink(root_, "f").ok());
  EXPECT_EQ(Err(fs_->Link(f, root_, "again")), ENOENT);
}

TEST_F(FilesystemTest, UnlinkAndRmdirRefuseTheWrongKindAndMissingNames) {
  Create(root_, "f");
  const std::uint64_t d = Mkdir(root_, "d");
  Create(d, "inside");
  EXPECT_EQ(Err(fs_->Unlink(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "missing")), ENOENT);
  EXPECT_EQ(Err(fs_->Unlink(root_, "d")), EISDIR);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "f")), ENOTDIR);
  EXPECT_EQ(Err(fs_->Rmdir(root_, "d")), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Rmdir(d, ".")), EINVAL);
  EXPECT_EQ(Err(fs_->Rmdir(d, "..")), ENOTEMPTY);
  EXPECT_EQ(Err(fs_->Unlink(Ino(root_, "f"), "x")), ENOTDIR);
  EXPECT_TRUE(Exists(root_, "d"));
  EXPECT_EQ(Stat(root_).st_nlink, 3u);
  ASSERT_TRUE(fs_->Unlink(d, "inside").ok());
  ASSERT_TRUE(fs_->Rmdir(root_, "d").ok());
  EXPECT_EQ(Stat(root_).st_nlink, 2u);
  EXPECT_FALSE(Exists(root_, "d"));
  // A removed directory still referenced takes no new entries.
  EXPECT_EQ(Err(fs_->Mknod(caller_, d, "late", S_IFREG | 0644, 0)), ENOENT);
  EXPECT_EQ(Err(fs_->Mkdir(caller_, d, "late", 0755)), ENOENT);
}

TEST_F(FilesystemTest, ALargeDirectoryListsEveryNameOnceAcrossResumedReadDirs) {
  const std::uint64_t d = Mkdir(root_, "big");
  std::set<std::string> names;
  for (int i = 0; i < 1500; ++i) {
    names.insert("entry-" + std::to_string(i));
    Create(d, "entry-" + std::to_string(i));
  }
  // Pages of 10, each resumed from the last entry's "next" cookie, while
  // names that existed throughout must each appear exactly once.
  std::multiset<std::string> seen;
  std::uint64_t off = 0;
  int page = 0;
  for (bool more = true; more; ++page) {
    int n = 0;
    more = false;
    Status s = fs_->ReadDir(d, off, [&](std::string_view name, std::uint64_t, std::uint32_t, std::uint64_t next) {
      if (n == 10) {
        more = true;
        return false;
      }
      seen.insert(std::string(name));
      off = next;
      ++n;
      return true;
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Churn between pages: new names and removals of names created here.
    Create(d, "churn-" + std::to_string(page));
    if (page % 2 == 1) {
      ASSERT_TRUE(fs_->Unlink(d, "churn-" + std::to_string(page - 1)).ok());
    }
    ASSERT_LT(page, 10000);
  }
  for (const std::string& n : names) EXPECT_EQ(seen.count(n), 1u) << n;
  EXPECT_EQ(seen.count("."), 1u);
  EXPECT_EQ(seen.count(".."), 1u);
  // Everything goes, then the directory.
  for (const std::string& n : names) ASSERT_TRUE(fs_->Unlink(d, n).ok()) << n;
  for (const auto& [n, ino] : List(d))
    if (n != "." && n != "..") {
      ASSERT_TRUE(fs_->Unlink(d, n).ok()) << n;
    }
  ASSERT_TRUE(fs_->Rmdir(root_, "big").ok());
}

}  // namespace
}  // namespace walfs::fs
