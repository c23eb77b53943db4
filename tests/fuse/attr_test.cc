// Attributes: mode, ownership, size, and the three times -- set explicitly
// and changed as side effects of other operations.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Attr : public MountedFs {
 protected:
  struct stat Stat(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(lstat(Path(rel).c_str(), &st), 0) << rel << ": " << strerrorname_np(errno);
    return st;
  }
  static bool Same(const timespec& a, const timespec& b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
  }
  static bool After(const timespec& a, const timespec& b) {
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
  }
  // Coarse kernel clocks tick every few ms; wait so a new time differs.
  static void Tick() { usleep(20 * 1000); }
};

TEST_F(Attr, NewFilesAndDirectoriesHaveTheRequestedModeAndTheCallersIds) {
  const mode_t old = umask(0);
  WriteFile(Path("f"), "x", 0640);
  ASSERT_SYS(mkdir(Path("d").c_str(), 0751));
  umask(old);
  const struct stat f = Stat("f");
  EXPECT_EQ(f.st_mode, S_IFREG | 0640u);
  EXPECT_EQ(f.st_uid, geteuid());
  EXPECT_EQ(f.st_gid, getegid());
  EXPECT_EQ(f.st_size, 1);
  EXPECT_EQ(Stat("d").st_mode, S_IFDIR | 0751u);
  EXPECT_EQ(Stat("f").st_ino, f.st_ino) << "inode numbers are stable";
}

TEST_F(Attr, ChmodSetsEveryModeBitIncludingSpecialOnes) {
  WriteFile(Path("f"), "x");
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  for (mode_t m : {0000u, 0777u, 04755u, 02755u, 0600u}) {
    ASSERT_SYS(chmod(Path("f").c_str(), m));
    EXPECT_EQ(Stat("f").st_mode, S_IFREG | m) << std::oct << m;
  }
  ASSERT_SYS(chmod(Path("d").c_str(), 01777));
  EXPECT_EQ(Stat("d").st_mode, S_IFDIR | 01777u);
  const int fd = open(Path("f").c_str(), O_RDONLY);
  ASSERT_SYS(fd);
  ASSERT_SYS(fchmod(fd, 0444));
  close(fd);
  EXPECT_EQ(Stat("f").st_mode, S_IFREG | 0444u);
}

TEST_F(Attr, ChownChangesOwnerAndGroupAndMinusOneKeepsEither) {
  if (geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  WriteFile(Path("f"), "x");
  ASSERT_SYS(chown(Path("f").c_str(), 1234, 5678));
  EXPECT_EQ(Stat("f").st_uid, 1234u);
  EXPECT_EQ(Stat("f").st_gid, 5678u);
  ASSERT_SYS(chown(Path("f").c_str(), -1, 42));
  EXPECT_EQ(Stat("f").st_uid, 1234u);
  EXPECT_EQ(Stat("f").st_gid, 42u);
  ASSERT_SYS(chown(Path("f").c_str(), 7, -1));
  EXPECT_EQ(Stat("f").st_uid, 7u);
  EXPECT_EQ(Stat("f").st_gid, 42u);
  ASSERT_SYS(symlink("f", Path("s").c_str()));
  ASSERT_SYS(lchown(Path("s").c_str(), 99, 98));
  EXPECT_EQ(Stat("s").st_uid, 99u);
  EXPECT_EQ(Stat("f").st_uid, 7u) << "lchown does not follow the link";
}

TEST_F(Attr, UtimensatSetsExplicitNanosecondTimes) {
  WriteFile(Path("f"), "x");
  const timespec times[2] = {{1000000000, 123456789}, {1500000000, 987654321}};
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), times, 0));
  const struct stat st = Stat("f");
  EXPECT_TRUE(Same(st.st_atim, times[0])) << st.st_atim.tv_sec << "." << st.st_atim.tv_nsec;
  EXPECT_TRUE(Same(st.st_mtim, times[1])) << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
  // Before 1970 and far after 2038.
  const timespec odd[2] = {{-100, 5}, {4102444800, 1}};
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), odd, 0));
  EXPECT_TRUE(Same(Stat("f").st_atim, odd[0]));
  EXPECT_TRUE(Same(Stat("f").st_mtim, odd[1]));
}

TEST_F(Attr, UtimeOmitKeepsATimeAndUtimeNowSetsTheClock) {
  WriteFile(Path("f"), "x");
  const timespec set[2] = {{1000000000, 1}, {1000000000, 2}};
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), set, 0));
  const timespec now_mtime[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  timespec before;
  clock_gettime(CLOCK_REALTIME, &before);
  before.tv_sec -= 1;  // the kernel's coarse clock may lag the fine one
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), now_mtime, 0));
  struct stat st = Stat("f");
  EXPECT_TRUE(Same(st.st_atim, set[0])) << "UTIME_OMIT leaves atime";
  EXPECT_TRUE(After(st.st_mtim, before)) << "UTIME_NOW sets mtime to now";
  const timespec now_atime[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), now_atime, 0));
  const struct stat st2 = Stat("f");
  EXPECT_TRUE(After(st2.st_atim, before));
  EXPECT_TRUE(Same(st2.st_mtim, st.st_mtim));
  ASSERT_SYS(utimensat(AT_FDCWD, Path("f").c_str(), nullptr, 0));
  EXPECT_TRUE(After(Stat("f").st_mtim, before));
}

TEST_F(Attr, WritesAndTruncatesChangeMtimeAndCtime) {
  WriteFile(Path("f"), "x");
  const struct stat s0 = Stat("f");
  Tick();
  const int fd = open(Path("f").c_str(), O_WRONLY);
  ASSERT_SYS(fd);
  ASSERT_EQ(pwrite(fd, "y", 1, 10), 1);
  close(fd);
  const struct stat s1 = Stat("f");
  EXPECT_TRUE(After(s1.st_mtim, s0.st_mtim)) << "write sets mtime";
  EXPECT_TRUE(After(s1.st_ctim, s0.st_ctim)) << "write sets ctime";
  EXPECT_EQ(s1.st_size, 11);
  Tick();
  ASSERT_SYS(truncate(Path("f").c_str(), 3));
  const struct stat s2 = Stat("f");
  EXPECT_TRUE(After(s2.st_mtim, s1.st_mtim)) << "truncate sets mtime";
  EXPECT_EQ(s2.st_size, 3);
}

TEST_F(Attr, ChmodAndLinkChangeCtimeButNotMtime) {
  WriteFile(Path("f"), "x");
  const struct stat s0 = Stat("f");
  Tick();
  ASSERT_SYS(chmod(Path("f").c_str(), 0600));
  const struct stat s1 = Stat("f");
  EXPECT_TRUE(After(s1.st_ctim, s0.st_ctim));
  EXPECT_TRUE(Same(s1.st_mtim, s0.st_mtim));
  Tick();
  ASSERT_SYS(link(Path("f").c_str(), Path("g").c_str()));
  const struct stat s2 = Stat("f");
  EXPECT_TRUE(After(s2.st_ctim, s1.st_ctim)) << "link changes ctime";
  EXPECT_TRUE(Same(s2.st_mtim, s0.st_mtim));
}

TEST_F(Attr, CreatingAndRemovingEntriesChangesTheDirectorysTimes) {
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  const struct stat d0 = Stat("d");
  Tick();
  WriteFile(Path("d/f"), "x");
  const struct stat d1 = Stat("d");
  EXPECT_TRUE(After(d1.st_mtim, d0.st_mtim)) << "create";
  EXPECT_TRUE(After(d1.st_ctim, d0.st_ctim));
  Tick();
  ASSERT_SYS(rename(Path("d/f").c_str(), Path("d/g").c_str()));
  const struct stat d2 = Stat("d");
  EXPECT_TRUE(After(d2.st_mtim, d1.st_mtim)) << "rename";
  Tick();
  ASSERT_SYS(unlink(Path("d/g").c_str()));
  EXPECT_TRUE(After(Stat("d").st_mtim, d2.st_mtim)) << "unlink";
}

TEST_F(Attr, StBlocksCountsAllocatedSpace) {
  WriteFile(Path("f"), std::string(100 * 1024, 'b'));
  const int fd = open(Path("f").c_str(), O_RDONLY);
  ASSERT_SYS(fd);
  ASSERT_SYS(fsync(fd));
  close(fd);
  const struct stat st = Stat("f");
  EXPECT_GE(st.st_blocks * 512, 100 * 1024);
  EXPECT_LE(st.st_blocks * 512, 200 * 1024);
  EXPECT_GT(st.st_blksize, 0);
}

}  // namespace
}  // namespace walfs::testing
