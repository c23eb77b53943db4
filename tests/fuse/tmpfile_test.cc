// O_TMPFILE (the kernel's FUSE_TMPFILE, which libfuse 3.14 does not know:
// mount/session_io.h hands it to the create handler): an unnamed regular
// file that linkat can name later, freed at its last close if it never is,
// and reclaimed by recovery after a crash.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class Tmpfile : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
  unsigned long long FreeBytes() {
    struct statvfs v {};
    EXPECT_EQ(statvfs(Root().c_str(), &v), 0);
    return static_cast<unsigned long long>(v.f_bfree) * v.f_frsize;
  }
  // An O_TMPFILE holding `bytes` bytes (fsynced), or -1.
  int Unnamed(size_t bytes) {
    const int fd = open(Path("").c_str(), O_TMPFILE | O_RDWR, 0640);
    if (fd < 0) return -1;
    const std::vector<char> data(bytes, 't');
    if (write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()) || fsync(fd) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
};

TEST_F(Tmpfile, AnUnnamedFileIsNamedByLinkatAndSurvivesARemount) {
  const int fd = open(Path("").c_str(), O_TMPFILE | O_RDWR, 0640);
  ASSERT_GE(fd, 0) << "O_TMPFILE: " << strerror(errno);
  ASSERT_EQ(write(fd, "unnamed", 7), 7);
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(ListDir(Path("")).empty()) << "an O_TMPFILE has no name";
  ASSERT_SYS(linkat(fd, "", AT_FDCWD, Path("named").c_str(), AT_EMPTY_PATH));
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_nlink, 1u);
  ASSERT_SYS(fsync(fd));
  close(fd);
  EXPECT_EQ(ReadFile(Path("named")), "unnamed");
  ASSERT_NO_FATAL_FAILURE(Remount());
  EXPECT_EQ(ReadFile(Path("named")), "unnamed");
}

TEST_F(Tmpfile, TheUmaskAppliesAsToAnyCreate) {
  const mode_t old = umask(077);
  const int fd = open(Path("").c_str(), O_TMPFILE | O_RDWR, 0666);
  umask(old);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  close(fd);
}

TEST_F(Tmpfile, ANamedTmpfileThatIsUnlinkedAgainCannotBeLinked) {
  const int fd = Unnamed(10);
  ASSERT_GE(fd, 0);
  ASSERT_SYS(linkat(fd, "", AT_FDCWD, Path("a").c_str(), AT_EMPTY_PATH));
  ASSERT_SYS(unlink(Path("a").c_str()));
  EXPECT_ERRNO(ENOENT, linkat(fd, "", AT_FDCWD, Path("b").c_str(), AT_EMPTY_PATH));
  close(fd);
}

TEST_F(Tmpfile, ANeverNamedTmpfileIsFreedAtItsLastClose) {
  const unsigned long long before = FreeBytes();
  const int fd = Unnamed(8 << 20);
  ASSERT_GE(fd, 0);
  EXPECT_LT(FreeBytes(), before - (7ull << 20));
  close(fd);
  for (int i = 0; i < 50 && FreeBytes() < before - (1ull << 20); ++i) usleep(100'000);  // FORGET is asynchronous
  EXPECT_GE(FreeBytes(), before - (1ull << 20));
}

TEST_F(Tmpfile, ATmpfileOpenWhenTheDaemonDiesIsReclaimedByRecovery) {
  const unsigned long long before = FreeBytes();
  const int fd = Unnamed(8 << 20);
  ASSERT_GE(fd, 0);
  KillDaemon();
  close(fd);
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_GE(FreeBytes(), before - (1ull << 20)) << "the unlinked list gave the blocks back";
  ASSERT_NO_FATAL_FAILURE(Remount());  // fsck -n clean
}

}  // namespace
}  // namespace walfs::testing
