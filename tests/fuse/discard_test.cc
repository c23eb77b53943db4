// Discard through a real mount (docs/fs.md, "Discard"): util-linux's
// `fstrim -v MNT` sends FITRIM to the mount's root directory and the image
// file gets its freed blocks' space back; non-root callers get EPERM, a
// range past the end EINVAL, other ioctls ENOTTY; with -o discard the image
// shrinks back by itself once a delete is on disk.  Each suite's teardown
// unmounts and runs fsck.walfs -n, which must find the image clean.
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace discard_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr off_t kMiB = 1 << 20;
constexpr off_t kFileBytes = 128 * kMiB;
// What the image may keep beyond its size before the write: metadata the
// write and the delete dirtied (inodes, maps, bitmaps, log records).
constexpr off_t kSlackBytes = 8 * kMiB;

// The image file's allocated bytes (st_blocks).
off_t ImageBytes(const std::string& image) {
  struct stat st {};
  EXPECT_EQ(stat(image.c_str(), &st), 0) << strerrorname_np(errno);
  return static_cast<off_t>(st.st_blocks) * 512;
}

unsigned long long FreeBytes(const std::string& path) {
  struct statvfs sv {};
  EXPECT_EQ(statvfs(path.c_str(), &sv), 0) << strerrorname_np(errno);
  return static_cast<unsigned long long>(sv.f_bfree) * sv.f_frsize;
}

// Writes `bytes` of a byte that is not zero (so the image file really
// allocates them) and fsyncs.
void WriteData(const std::string& path, off_t bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerrorname_np(errno);
  const std::string buf(kMiB, 'd');
  for (off_t off = 0; off < bytes; off += kMiB)
    ASSERT_EQ(pwrite(fd, buf.data(), buf.size(), off), static_cast<ssize_t>(buf.size())) << strerrorname_np(errno);
  EXPECT_EQ(fsync(fd), 0) << strerrorname_np(errno);
  close(fd);
}

// FITRIM on `path` as uid/gid `id` in a child process: the errno, 0 on success.
int FitrimAs(const std::string& path, uid_t id) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(id) != 0 || setuid(id) != 0) _exit(100);
    const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) _exit(101);
    fstrim_range range{.start = 0, .len = ~0ull, .minlen = 0};
    _exit(ioctl(fd, FITRIM, &range) == 0 ? 0 : errno);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class Discard : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "512m", .options = {}}); }

  // Unlinks `path` and waits until its space is back in statfs (the kernel
  // sends the FORGET that frees it a little after the unlink).
  void RemoveAndWait(const std::string& path, unsigned long long free_before) {
    ASSERT_EQ(unlink(path.c_str()), 0) << strerrorname_np(errno);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (FreeBytes(Root()) + 4 * kMiB < free_before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_GE(FreeBytes(Root()) + 4 * kMiB, free_before) << "the deleted file's space did not come back";
  }
};

TEST_F(Discard, FstrimGivesADeletedFilesSpaceBackToTheImageFile) {
  WALFS_REQUIRE_WALFS();
  if (getuid() != 0) GTEST_SKIP() << "FITRIM needs root";
  // Trim first so that the image holds only what is in use.
  ToolRun first = RunTool("fstrim " + Root());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const unsigned long long free_before = FreeBytes(Root());
  const off_t before = ImageBytes(ImagePath());
  WriteData(Path("big"), kFileBytes);
  const off_t written = ImageBytes(ImagePath());
  ASSERT_GE(written, before + kFileBytes) << "the image file did not grow by the file's data";
  RemoveAndWait(Path("big"), free_before);
  EXPECT_GE(ImageBytes(ImagePath()), before + kFileBytes) << "a delete alone gives nothing back";

  const ToolRun r = RunTool("fstrim -v " + Root());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // "MNT: 128.2 MiB (134479872 bytes) trimmed"
  const std::size_t open_paren = r.out.find(" (");
  ASSERT_NE(open_paren, std::string::npos) << r.out;
  const unsigned long long trimmed = std::stoull(r.out.substr(open_paren + 2));
  EXPECT_GE(trimmed, static_cast<unsigned long long>(kFileBytes)) << r.out;
  EXPECT_NE(r.out.find("trimmed"), std::string::npos) << r.out;
  const off_t after = ImageBytes(ImagePath());
  EXPECT_LE(after, before + kSlackBytes) << "before the write " << before << ", after it " << written;
  EXPECT_GE(StatValue(Root(), "trims"), 2);
}

TEST_F(Discard, ARangeBeyondTheFilesystemIsEINVALAndOneRunningPastItsEndIsCut) {
  WALFS_REQUIRE_WALFS();
  if (getuid() != 0) GTEST_SKIP() << "FITRIM needs root";
  struct stat image {};
  ASSERT_EQ(stat(ImagePath().c_str(), &image), 0);
  const auto size = static_cast<unsigned long long>(image.st_size);  // the filesystem's size
  const ToolRun beyond = RunTool("fstrim -v -o " + std::to_string(size + 4096) + " " + Root());
  EXPECT_NE(beyond.exit_code, 0) << beyond.out;
  EXPECT_NE(beyond.out.find("Invalid argument"), std::string::npos) << beyond.out;
  const ToolRun tail = RunTool("fstrim -v -o " + std::to_string(size - kMiB) + " -l 1G " + Root());
  EXPECT_EQ(tail.exit_code, 0) << tail.out;
}

TEST_F(Discard, FitrimAsNonRootIsEPERM) {
  WALFS_REQUIRE_WALFS();
  if (getuid() != 0) GTEST_SKIP() << "needs root to switch to another user";
  EXPECT_EQ(FitrimAs(Root(), 65534), EPERM);
  EXPECT_EQ(FitrimAs(Root(), 0), 0);
}

TEST_F(Discard, OtherIoctlsAreENOTTY) {
  WALFS_REQUIRE_WALFS();
  const int fd = open(Root().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0) << strerrorname_np(errno);
  int value = 0;
  EXPECT_ERRNO(ENOTTY, ioctl(fd, _IOR('X', 200, int), &value));
  close(fd);
}

// -o discard: the space of a deleted file goes back to the image file by
// itself once the delete is on disk (here forced by an fsync of the
// directory, as `commit=` would do within seconds).
class OnlineDiscard : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "256m", .options = {"discard"}}); }
};

TEST_F(OnlineDiscard, ADeletedFilesSpaceGoesBackToTheImageFileOnceTheDeleteIsOnDisk) {
  WALFS_REQUIRE_WALFS();
  const std::string image = ImagePath();
  const unsigned long long free_before = FreeBytes(Root());
  const off_t before = ImageBytes(image);
  WriteData(Path("big"), 32 * kMiB);
  ASSERT_GE(ImageBytes(image), before + 32 * kMiB);
  ASSERT_EQ(unlink(Path("big").c_str()), 0) << strerrorname_np(errno);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  off_t now = ImageBytes(image);
  while (now > before + kSlackBytes && std::chrono::steady_clock::now() < deadline) {
    // The kernel's FORGET frees the blocks; a directory fsync forces the log.
    if (FreeBytes(Root()) + 4 * kMiB >= free_before) {
      const int dir = open(Path().c_str(), O_RDONLY | O_DIRECTORY);
      if (dir >= 0) {
        fsync(dir);
        close(dir);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = ImageBytes(image);
  }
  EXPECT_LE(now, before + kSlackBytes) << "the image kept the deleted file's blocks (before: " << before << ")";
  EXPECT_GE(StatValue(Root(), "online_discard_blocks"), 32 * kMiB / 4096);
}

}  // namespace
}  // namespace discard_test
}  // namespace walfs::testing
