// Names: create, unlink, rename (every replacement rule, and
// RENAME_WHITEOUT), link, symlink, mknod, and name length -- with the errno
// Linux gives for each refusal.
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>

#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Namespace : public MountedFs {
 protected:
  struct stat Lstat(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(lstat(Path(rel).c_str(), &st), 0) << rel << ": " << strerrorname_np(errno);
    return st;
  }
  void Touch(const std::string& rel) { WriteFile(Path(rel), rel); }
  void Mkdir(const std::string& rel) { ASSERT_SYS(mkdir(Path(rel).c_str(), 0755)); }
  int Rename(const std::string& from, const std::string& to, unsigned flags = 0) {
    return renameat2(AT_FDCWD, Path(from).c_str(), AT_FDCWD, Path(to).c_str(), flags);
  }
};

TEST_F(Namespace, CreateExclusiveOfAnExistingNameIsEEXIST) {
  const std::string p = Path("f");
  const int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  ASSERT_SYS(fd);
  close(fd);
  EXPECT_ERRNO(EEXIST, open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644));
  const int again = open(p.c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_SYS(again);
  close(again);
  Mkdir("d");
  EXPECT_ERRNO(EEXIST, open(Path("d").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644));
}

TEST_F(Namespace, OpenTruncEmptiesTheFile) {
  WriteFile(Path("f"), "some bytes");
  const int fd = open(Path("f").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_SYS(fd);
  close(fd);
  EXPECT_EQ(Lstat("f").st_size, 0);
  EXPECT_EQ(ReadFile(Path("f")), "");
}

TEST_F(Namespace, LookupsOfMissingNamesAndThroughFilesFail) {
  Touch("f");
  EXPECT_ERRNO(ENOENT, open(Path("missing").c_str(), O_RDONLY));
  EXPECT_ERRNO(ENOENT, open(Path("nodir/f").c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_ERRNO(ENOTDIR, open(Path("f/x").c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_ERRNO(ENOTDIR, mkdir(Path("f/x").c_str(), 0755));
  EXPECT_ERRNO(ENOTDIR, open(Path("f").c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_ERRNO(ENOENT, unlink(Path("missing").c_str()));
}

TEST_F(Namespace, UnlinkOfADirectoryIsEISDIR) {
  Mkdir("d");
  EXPECT_ERRNO(EISDIR, unlink(Path("d").c_str()));
  struct stat st {};
  EXPECT_SYS(stat(Path("d").c_str(), &st));
}

TEST_F(Namespace, UnlinkRemovesTheNameAndTheLastLinkTheFile) {
  Touch("f");
  ASSERT_SYS(unlink(Path("f").c_str()));
  struct stat st {};
  EXPECT_ERRNO(ENOENT, lstat(Path("f").c_str(), &st));
  EXPECT_TRUE(ListDir(Path()).empty());
}

TEST_F(Namespace, RenameFileOverFileReplacesTheTarget) {
  WriteFile(Path("a"), "from a");
  WriteFile(Path("b"), "from b");
  const ino_t a = InodeOf(Path("a"));
  ASSERT_SYS(Rename("a", "b"));
  EXPECT_EQ(InodeOf(Path("b")), a);
  EXPECT_EQ(ReadFile(Path("b")), "from a");
  struct stat st {};
  EXPECT_ERRNO(ENOENT, lstat(Path("a").c_str(), &st));
  EXPECT_EQ(ListDir(Path()), std::vector<std::string>{"b"});
}

TEST_F(Namespace, RenameIntoAnotherDirectoryMovesTheName) {
  Mkdir("d");
  WriteFile(Path("a"), "data");
  ASSERT_SYS(Rename("a", "d/a2"));
  EXPECT_EQ(ReadFile(Path("d/a2")), "data");
  EXPECT_EQ(ListDir(Path()), std::vector<std::string>{"d"});
}

TEST_F(Namespace, RenameDirOverEmptyDirReplacesIt) {
  Mkdir("a");
  Touch("a/inside");
  Mkdir("b");
  const ino_t a = InodeOf(Path("a"));
  const nlink_t parent_links = Lstat("").st_nlink;
  ASSERT_SYS(Rename("a", "b"));
  EXPECT_EQ(InodeOf(Path("b")), a);
  EXPECT_EQ(ListDir(Path("b")), std::vector<std::string>{"inside"});
  EXPECT_EQ(Lstat("").st_nlink, parent_links - 1) << "the replaced dir's .. is gone";
}

TEST_F(Namespace, RenameDirOverNonEmptyDirIsENOTEMPTY) {
  Mkdir("a");
  Mkdir("b");
  Touch("b/x");
  EXPECT_ERRNO(ENOTEMPTY, Rename("a", "b"));
  EXPECT_EQ(ListDir(Path("b")), std::vector<std::string>{"x"});
}

TEST_F(Namespace, RenameFileOverDirIsEISDIR) {
  Touch("f");
  Mkdir("d");
  EXPECT_ERRNO(EISDIR, Rename("f", "d"));
}

TEST_F(Namespace, RenameDirOverFileIsENOTDIR) {
  Mkdir("d");
  Touch("f");
  EXPECT_ERRNO(ENOTDIR, Rename("d", "f"));
}

TEST_F(Namespace, RenameDirIntoItsOwnSubtreeIsEINVAL) {
  Mkdir("d");
  Mkdir("d/sub");
  EXPECT_ERRNO(EINVAL, Rename("d", "d/sub/d"));
  EXPECT_ERRNO(EINVAL, Rename("d", "d/x"));
}

TEST_F(Namespace, RenameNoReplaceOfAnExistingTargetIsEEXIST) {
  Touch("a");
  Touch("b");
  EXPECT_ERRNO(EEXIST, Rename("a", "b", RENAME_NOREPLACE));
  ASSERT_SYS(Rename("a", "c", RENAME_NOREPLACE));
  EXPECT_EQ(ReadFile(Path("c")), "a");
}

TEST_F(Namespace, RenameExchangeSwapsAFileAndADirectory) {
  Mkdir("p");
  Mkdir("q");
  Touch("p/f");
  Mkdir("q/d");
  const ino_t f = InodeOf(Path("p/f"));
  const ino_t d = InodeOf(Path("q/d"));
  const nlink_t p_links = Lstat("p").st_nlink;
  const nlink_t q_links = Lstat("q").st_nlink;
  ASSERT_SYS(Rename("p/f", "q/d", RENAME_EXCHANGE));
  EXPECT_EQ(InodeOf(Path("p/f")), d);
  EXPECT_EQ(InodeOf(Path("q/d")), f);
  EXPECT_TRUE(S_ISDIR(Lstat("p/f").st_mode));
  EXPECT_TRUE(S_ISREG(Lstat("q/d").st_mode));
  EXPECT_EQ(ReadFile(Path("q/d")), "p/f");
  struct stat dotdot {};
  ASSERT_SYS(stat(Path("p/f/..").c_str(), &dotdot));
  EXPECT_EQ(dotdot.st_ino, InodeOf(Path("p"))) << "the moved dir's .. points at its new parent";
  EXPECT_EQ(Lstat("p").st_nlink, p_links + 1);
  EXPECT_EQ(Lstat("q").st_nlink, q_links - 1);
  EXPECT_ERRNO(ENOENT, Rename("p/f", "q/missing", RENAME_EXCHANGE));
}

// RENAME_WHITEOUT, which overlayfs needs from its upper layer: the source
// moves and its old name becomes a whiteout, a 0/0 character device owned by
// whoever renamed.  Run on a thread whose fsuid/fsgid are 65534 and that
// keeps CAP_MKNOD (the VFS asks for it), so the owner is the caller's, not
// the daemon's.
TEST_F(Namespace, RenameWhiteoutMovesTheFileAndLeavesAZeroZeroCharDeviceOwnedByTheCaller) {
  ASSERT_SYS(chmod(Path().c_str(), 0777));
  WriteFile(Path("a"), "payload");
  WriteFile(Path("over"), "replaced");
  const ino_t a = InodeOf(Path("a"));
  int rc = -1, err = 0;
  std::thread([&] {
    setfsgid(65534);
    setfsuid(65534);
    // Changing the fsuid from 0 drops the file capabilities; CAP_MKNOD is
    // still permitted, so raise it again for this thread.
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) == 0) {
      data[CAP_TO_INDEX(CAP_MKNOD)].effective |= CAP_TO_MASK(CAP_MKNOD);
      syscall(SYS_capset, &hdr, data);
    }
    rc = Rename("a", "b", RENAME_WHITEOUT);
    err = errno;
    if (rc == 0) {
      rc = Rename("b", "over", RENAME_WHITEOUT);
      err = errno;
    }
  }).join();
  ASSERT_EQ(rc, 0) << strerrorname_np(err);
  EXPECT_EQ(InodeOf(Path("over")), a);
  EXPECT_EQ(ReadFile(Path("over")), "payload");
  for (const char* name : {"a", "b"}) {
    const struct stat st = Lstat(name);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << name << ": mode " << std::oct << st.st_mode;
    EXPECT_EQ(st.st_mode & 07777, 0u) << name;
    EXPECT_EQ(st.st_rdev, makedev(0, 0)) << name;
    EXPECT_EQ(st.st_uid, 65534u) << name;
    EXPECT_EQ(st.st_gid, 65534u) << name;
    EXPECT_EQ(st.st_nlink, 1u) << name;
  }
  EXPECT_ERRNO(EINVAL, Rename("over", "a", RENAME_WHITEOUT | RENAME_EXCHANGE));
  EXPECT_ERRNO(EEXIST, Rename("over", "a", RENAME_WHITEOUT | RENAME_NOREPLACE));
  EXPECT_EQ(ListDir(Path()).size(), 3u);
}

TEST_F(Namespace, RenameToItselfIsANoOp) {
  WriteFile(Path("f"), "keep");
  ASSERT_SYS(Rename("f", "f"));
  EXPECT_EQ(ReadFile(Path("f")), "keep");
  // Two links to one inode: POSIX says rename does nothing and succeeds.
  ASSERT_SYS(link(Path("f").c_str(), Path("g").c_str()));
  ASSERT_SYS(Rename("f", "g"));
  EXPECT_EQ(ReadFile(Path("f")), "keep");
  EXPECT_EQ(ReadFile(Path("g")), "keep");
  EXPECT_EQ(Lstat("f").st_nlink, 2u);
  Mkdir("d");
  ASSERT_SYS(Rename("d", "d"));
  EXPECT_TRUE(S_ISDIR(Lstat("d").st_mode));
}

TEST_F(Namespace, MovingADirectoryUpdatesItsDotDotAndBothParentsLinkCounts) {
  Mkdir("a");
  Mkdir("b");
  Mkdir("a/x");
  ASSERT_EQ(Lstat("a").st_nlink, 3u);
  ASSERT_EQ(Lstat("b").st_nlink, 2u);
  ASSERT_SYS(Rename("a/x", "b/x"));
  struct stat dotdot {};
  ASSERT_SYS(stat(Path("b/x/..").c_str(), &dotdot));
  EXPECT_EQ(dotdot.st_ino, InodeOf(Path("b")));
  EXPECT_EQ(Lstat("a").st_nlink, 2u);
  EXPECT_EQ(Lstat("b").st_nlink, 3u);
  // Through an fd opened before the move, too.
  const int fd = open(Path("b/x").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_SYS(fd);
  ASSERT_SYS(Rename("b/x", "a/y"));
  ASSERT_SYS(fstatat(fd, "..", &dotdot, 0));
  EXPECT_EQ(dotdot.st_ino, InodeOf(Path("a")));
  close(fd);
}

TEST_F(Namespace, HardLinksCountAndShareData) {
  Mkdir("other");
  WriteFile(Path("f"), "shared");
  ASSERT_EQ(Lstat("f").st_nlink, 1u);
  ASSERT_SYS(link(Path("f").c_str(), Path("g").c_str()));
  ASSERT_SYS(link(Path("f").c_str(), Path("other/h").c_str()));
  EXPECT_EQ(Lstat("f").st_nlink, 3u);
  EXPECT_EQ(InodeOf(Path("other/h")), InodeOf(Path("f")));
  WriteFile(Path("other/h"), "changed");
  EXPECT_EQ(ReadFile(Path("g")), "changed");
  EXPECT_ERRNO(EEXIST, link(Path("f").c_str(), Path("g").c_str()));
  EXPECT_ERRNO(ENOENT, link(Path("missing").c_str(), Path("m2").c_str()));
  ASSERT_SYS(unlink(Path("f").c_str()));
  EXPECT_EQ(Lstat("g").st_nlink, 2u);
  ASSERT_SYS(unlink(Path("g").c_str()));
  EXPECT_EQ(Lstat("other/h").st_nlink, 1u);
  EXPECT_EQ(ReadFile(Path("other/h")), "changed");
}

TEST_F(Namespace, HardLinkToADirectoryIsEPERM) {
  Mkdir("d");
  EXPECT_ERRNO(EPERM, link(Path("d").c_str(), Path("d2").c_str()));
}

TEST_F(Namespace, DirectoryLinkCountIsTwoPlusSubdirectories) {
  Mkdir("d");
  EXPECT_EQ(Lstat("d").st_nlink, 2u);
  for (const char* s : {"d/a", "d/b", "d/c"}) Mkdir(s);
  Touch("d/file");
  EXPECT_EQ(Lstat("d").st_nlink, 5u);
  ASSERT_SYS(rmdir(Path("d/b").c_str()));
  EXPECT_EQ(Lstat("d").st_nlink, 4u);
}

TEST_F(Namespace, SymlinksStoreShortAndLongTargets) {
  const std::string shortt = "target";
  const std::string longt = std::string(3999, 'x') + "y";  // 4000 bytes
  ASSERT_SYS(symlink(shortt.c_str(), Path("s").c_str()));
  ASSERT_SYS(symlink(longt.c_str(), Path("l").c_str()));
  for (const auto& [name, target] : {std::pair{"s", shortt}, std::pair{"l", longt}}) {
    char buf[PATH_MAX];
    const ssize_t n = readlink(Path(name).c_str(), buf, sizeof(buf));
    ASSERT_EQ(n, static_cast<ssize_t>(target.size())) << name;
    EXPECT_EQ(std::string(buf, n), target);
    const struct stat st = Lstat(name);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_EQ(st.st_size, static_cast<off_t>(target.size()));
  }
  EXPECT_ERRNO(EEXIST, symlink("x", Path("s").c_str()));
  char buf[16];
  Touch("f");
  EXPECT_ERRNO(EINVAL, readlink(Path("f").c_str(), buf, sizeof(buf)));
}

TEST_F(Namespace, SymlinksAreFollowedAndDanglingOnesAreENOENT) {
  WriteFile(Path("f"), "via link");
  ASSERT_SYS(symlink("f", Path("s").c_str()));
  EXPECT_EQ(ReadFile(Path("s")), "via link");
  ASSERT_SYS(symlink("nowhere", Path("dangling").c_str()));
  EXPECT_ERRNO(ENOENT, open(Path("dangling").c_str(), O_RDONLY));
  ASSERT_SYS(unlink(Path("s").c_str()));
  EXPECT_EQ(ReadFile(Path("f")), "via link");
}

TEST_F(Namespace, MknodMakesFifosSocketsAndDevices) {
  ASSERT_SYS(mkfifo(Path("fifo").c_str(), 0644));
  ASSERT_SYS(mknod(Path("sock").c_str(), S_IFSOCK | 0644, 0));
  EXPECT_TRUE(S_ISFIFO(Lstat("fifo").st_mode));
  EXPECT_TRUE(S_ISSOCK(Lstat("sock").st_mode));
  EXPECT_EQ(Lstat("fifo").st_mode & 07777, 0644u);
  if (geteuid() != 0) GTEST_SKIP() << "device nodes need root";
  ASSERT_SYS(mknod(Path("chr").c_str(), S_IFCHR | 0600, makedev(1, 3)));
  ASSERT_SYS(mknod(Path("blk").c_str(), S_IFBLK | 0600, makedev(7, 200)));
  EXPECT_TRUE(S_ISCHR(Lstat("chr").st_mode));
  EXPECT_EQ(Lstat("chr").st_rdev, makedev(1, 3));
  EXPECT_TRUE(S_ISBLK(Lstat("blk").st_mode));
  EXPECT_EQ(Lstat("blk").st_rdev, makedev(7, 200));
  EXPECT_ERRNO(EEXIST, mknod(Path("chr").c_str(), S_IFCHR | 0600, makedev(1, 3)));
}

TEST_F(Namespace, NamesOf255BytesWorkAnd256AreENAMETOOLONG) {
  const std::string ok(255, 'n');
  const std::string too_long(256, 'n');
  WriteFile(Path(ok), "max");
  EXPECT_EQ(ReadFile(Path(ok)), "max");
  ASSERT_SYS(mkdir(Path(std::string(255, 'd')).c_str(), 0755));
  ASSERT_SYS(symlink("t", Path(std::string(255, 's')).c_str()));
  EXPECT_EQ(ListDir(Path()).size(), 3u);
  EXPECT_ERRNO(ENAMETOOLONG, open(Path(too_long).c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_ERRNO(ENAMETOOLONG, mkdir(Path(too_long).c_str(), 0755));
  struct stat st {};
  EXPECT_ERRNO(ENAMETOOLONG, lstat(Path(too_long).c_str(), &st));
  EXPECT_ERRNO(ENAMETOOLONG, rename(Path(ok).c_str(), Path(too_long).c_str()));
}

}  // namespace
}  // namespace walfs::testing
