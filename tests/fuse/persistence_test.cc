// Persistence: everything a test makes survives an unmount and a mount of
// the same image (with a clean fsck in between, see MountedFs::Remount), and
// a read-only mount refuses changes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace persistence_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr off_t kMiB = 1 << 20;

std::string Data(size_t len, int seed) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>(i * 7 + seed + (i >> 12));
  return s;
}

// The whole of a file read in 1 MiB pieces: how many bytes, where the
// first that is not zero is (or -1), and the bytes from there on.  Holding
// a 256 MiB file in one string, the spec spent 22 s of its 24 under TSan
// growing and scanning the string, not in walfs.
struct SparseRead {
  off_t bytes = 0;
  off_t first_nonzero = -1;
  std::string tail;
};

SparseRead ReadSparse(const std::string& path) {
  SparseRead r;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_NE(fd, -1) << path << ": " << strerrorname_np(errno);
  if (fd < 0) return r;
  const std::string zeros(kMiB, '\0');
  std::string buf(kMiB, '\0');
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) {
    const char* p = buf.data();
    if (r.first_nonzero >= 0) {
      r.tail.append(p, n);
    } else if (std::memcmp(p, zeros.data(), n) != 0) {  // one call, not a byte at a time
      ssize_t i = 0;
      while (p[i] == '\0') ++i;
      r.first_nonzero = r.bytes + i;
      r.tail.assign(p + i, n - i);
    }
    r.bytes += n;
  }
  EXPECT_EQ(n, 0) << path << ": " << strerrorname_np(errno);
  close(fd);
  return r;
}

class Persistence : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
  struct stat Stat(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(lstat(Path(rel).c_str(), &st), 0) << rel << ": " << strerrorname_np(errno);
    return st;
  }
};

TEST_F(Persistence, NamesDataLinksXattrsAndTimesSurviveARemount) {
  ASSERT_SYS(mkdir(Path("d").c_str(), 0750));
  ASSERT_SYS(mkdir(Path("d/sub").c_str(), 0755));
  WriteFile(Path("d/small"), "small file");
  WriteFile(Path("big"), Data(5 * kMiB + 17, 1));
  ASSERT_SYS(link(Path("d/small").c_str(), Path("hard").c_str()));
  ASSERT_SYS(symlink("d/small", Path("sym").c_str()));
  const std::string long_target(4000, 't');
  ASSERT_SYS(symlink(long_target.c_str(), Path("longsym").c_str()));
  ASSERT_SYS(setxattr(Path("d/small").c_str(), "user.k", "value", 5, 0));
  ASSERT_SYS(setxattr(Path("d").c_str(), "user.dir", "dv", 2, 0));
  ASSERT_SYS(mkfifo(Path("fifo").c_str(), 0600));
  const int fd = open(Path("sparse").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  ASSERT_EQ(pwrite(fd, "end", 3, 256 * kMiB), 3);
  close(fd);
  const timespec times[2] = {{1111111111, 111}, {1222222222, 222}};
  ASSERT_SYS(utimensat(AT_FDCWD, Path("big").c_str(), times, 0));
  ASSERT_SYS(chmod(Path("big").c_str(), 0604));
  if (geteuid() == 0) {
    ASSERT_SYS(chown(Path("big").c_str(), 4321, 8765));
  }
  const struct stat big0 = Stat("big");
  const struct stat d0 = Stat("d");
  const ino_t small_ino = InodeOf(Path("d/small"));

  Remount();
  if (HasFatalFailure()) return;

  EXPECT_EQ(Stat("d").st_mode, S_IFDIR | 0750u);
  EXPECT_EQ(Stat("d").st_nlink, 3u);
  EXPECT_EQ(Stat("d").st_ino, d0.st_ino);
  EXPECT_EQ(ReadFile(Path("d/small")), "small file");
  EXPECT_EQ(InodeOf(Path("hard")), small_ino);
  EXPECT_EQ(Stat("hard").st_nlink, 2u);
  // Before any read of "big": reading may update its atime.
  const struct stat big1 = Stat("big");
  EXPECT_EQ(big1.st_size, big0.st_size);
  EXPECT_EQ(big1.st_mode, S_IFREG | 0604u);
  EXPECT_EQ(big1.st_uid, big0.st_uid);
  EXPECT_EQ(big1.st_gid, big0.st_gid);
  EXPECT_EQ(big1.st_atim.tv_sec, times[0].tv_sec);
  EXPECT_EQ(big1.st_atim.tv_nsec, times[0].tv_nsec);
  EXPECT_EQ(big1.st_mtim.tv_sec, times[1].tv_sec);
  EXPECT_EQ(big1.st_mtim.tv_nsec, times[1].tv_nsec);
  EXPECT_EQ(big1.st_ctim.tv_sec, big0.st_ctim.tv_sec);
  EXPECT_EQ(big1.st_ctim.tv_nsec, big0.st_ctim.tv_nsec);
  EXPECT_TRUE(ReadFile(Path("big")) == Data(5 * kMiB + 17, 1)) << "big file data";
  char buf[PATH_MAX];
  ssize_t n = readlink(Path("sym").c_str(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n < 0 ? 0 : n), "d/small");
  n = readlink(Path("longsym").c_str(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n < 0 ? 0 : n), long_target);
  EXPECT_EQ(ReadFile(Path("sym")), "small file");
  n = getxattr(Path("d/small").c_str(), "user.k", buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n < 0 ? 0 : n), "value");
  n = getxattr(Path("d").c_str(), "user.dir", buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n < 0 ? 0 : n), "dv");
  EXPECT_TRUE(S_ISFIFO(Stat("fifo").st_mode));
  EXPECT_EQ(Stat("sparse").st_size, 256 * kMiB + 3);
  EXPECT_LE(Stat("sparse").st_blocks * 512, kMiB);
  const SparseRead sparse = ReadSparse(Path("sparse"));
  EXPECT_EQ(sparse.bytes, 256 * kMiB + 3);
  EXPECT_EQ(sparse.first_nonzero, 256 * kMiB);
  EXPECT_EQ(sparse.tail, "end");
}

TEST_F(Persistence, RemovalsAndRenamesSurviveARemount) {
  for (int i = 0; i < 100; ++i) WriteFile(Path("f" + std::to_string(i)), std::to_string(i));
  ASSERT_SYS(mkdir(Path("a").c_str(), 0755));
  ASSERT_SYS(mkdir(Path("a/b").c_str(), 0755));
  for (int i = 0; i < 100; i += 2) ASSERT_SYS(unlink(Path("f" + std::to_string(i)).c_str()));
  ASSERT_SYS(rename(Path("f1").c_str(), Path("a/b/moved").c_str()));
  ASSERT_SYS(rename(Path("a/b").c_str(), Path("b2").c_str()));
  ASSERT_SYS(truncate(Path("f3").c_str(), 0));

  Remount();
  if (HasFatalFailure()) return;

  EXPECT_EQ(ListDir(Path()).size(), 49u + 2u);  // f3..f99 odd, a, b2
  struct stat st {};
  EXPECT_ERRNO(ENOENT, stat(Path("f0").c_str(), &st));
  EXPECT_ERRNO(ENOENT, stat(Path("a/b").c_str(), &st));
  EXPECT_EQ(ReadFile(Path("b2/moved")), "1");
  EXPECT_EQ(ReadFile(Path("f99")), "99");
  EXPECT_EQ(ReadFile(Path("f3")), "");
  ASSERT_SYS(stat(Path("b2/..").c_str(), &st));
  EXPECT_EQ(st.st_ino, InodeOf(Path()));
  EXPECT_EQ(Stat("a").st_nlink, 2u);
}

TEST_F(Persistence, AFileUnlinkedWhileOpenIsGoneAfterARemountWithItsSpace) {
  struct statvfs sv0 {};
  ASSERT_SYS(statvfs(Path().c_str(), &sv0));
  const int fd = open(Path("f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_SYS(fd);
  const std::string d = Data(8 * kMiB, 3);
  ASSERT_EQ(write(fd, d.data(), d.size()), static_cast<ssize_t>(d.size()));
  ASSERT_SYS(unlink(Path("f").c_str()));
  close(fd);
  Remount();
  if (HasFatalFailure()) return;
  EXPECT_TRUE(ListDir(Path()).empty());
  struct statvfs sv1 {};
  ASSERT_SYS(statvfs(Path().c_str(), &sv1));
  EXPECT_GE((sv1.f_bfree + 64) * sv1.f_frsize, sv0.f_bfree * sv0.f_frsize)
      << "the unlinked file's blocks are free again";
}

TEST_F(Persistence, AReadOnlyMountRefusesChangesWithEROFS) {
  WriteFile(Path("f"), "ro");
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  Remount({"ro"});
  if (HasFatalFailure()) return;
  EXPECT_EQ(ReadFile(Path("f")), "ro");
  EXPECT_ERRNO(EROFS, open(Path("f").c_str(), O_WRONLY));
  EXPECT_ERRNO(EROFS, open(Path("g").c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_ERRNO(EROFS, mkdir(Path("e").c_str(), 0755));
  EXPECT_ERRNO(EROFS, unlink(Path("f").c_str()));
  EXPECT_ERRNO(EROFS, rmdir(Path("d").c_str()));
  EXPECT_ERRNO(EROFS, rename(Path("f").c_str(), Path("h").c_str()));
  EXPECT_ERRNO(EROFS, chmod(Path("f").c_str(), 0600));
  EXPECT_ERRNO(EROFS, setxattr(Path("f").c_str(), "user.x", "v", 1, 0));
  Remount();
}

}  // namespace
}  // namespace persistence_test
}  // namespace walfs::testing
