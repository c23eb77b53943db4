// The writeback cache (on by default) at a full disk: what a write that
// returned success is promised (mount/writeback_guard.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

constexpr size_t kChunk = 256 << 10;

// Writes kChunk blocks until write(2) fails or `limit` bytes are written;
// returns the bytes written and sets *err to the failure's errno (0: none).
size_t WriteUntilFull(int fd, size_t limit, int* err) {
  const std::vector<char> chunk(kChunk, 'w');
  size_t total = 0;
  *err = 0;
  while (total < limit) {
    const ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      *err = errno;
      break;
    }
    total += static_cast<size_t>(n);
  }
  return total;
}

// The default reserve (256 MiB) is more than a 64 MiB image has: every file
// opened for writing bypasses the cache, and write(2) reports the full disk.
class WritebackFullDisk : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "64m"}); }
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
};

TEST_F(WritebackFullDisk, WriteItselfGetsEnospcAndWhatItAcceptedSurvivesFsync) {
  ASSERT_EQ(StatValue(Root(), "writeback_cache"), 1) << "the writeback cache is the default";
  const int fd = open(Path("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  int err = 0;
  const size_t written = WriteUntilFull(fd, size_t{256} << 20, &err);
  EXPECT_EQ(err, ENOSPC) << "dd on a full disk must stop with ENOSPC, not run on into the cache";
  EXPECT_LT(written, size_t{64} << 20);
  EXPECT_SYS(fsync(fd)) << "everything write(2) accepted is on disk";
  struct stat st {};
  ASSERT_SYS(fstat(fd, &st));
  EXPECT_EQ(static_cast<size_t>(st.st_size), written);
  close(fd);
  EXPECT_EQ(StatValue(Root(), "writeback_lost"), 0);
  ASSERT_SYS(unlink(Path("big").c_str()));
}

// With no reserve a file opened on an empty disk keeps the cache: write(2)
// succeeds past the end of the space, and every fsync says the data is lost.
class WritebackNoReserve : public WritebackFullDisk {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "64m", .options = {"wb_reserve_mb=0"}}); }
};

TEST_F(WritebackNoReserve, AWriteBackThatFindsNoSpaceFailsEveryLaterFsyncUntilTruncated) {
  const int fd = open(Path("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  int err = 0;
  WriteUntilFull(fd, size_t{96} << 20, &err);
  ASSERT_EQ(err, 0) << "the kernel's cache took the writes";
  for (int i = 0; i < 3; ++i) {
    errno = 0;
    EXPECT_EQ(fsync(fd), -1) << "fsync " << i << " after a lost write-back succeeded";
    EXPECT_EQ(errno, ENOSPC) << "fsync " << i;
  }
  EXPECT_GT(StatValue(Root(), "writeback_lost"), 0);
  EXPECT_NE(ReadFile(Root() + "/.walfs/messages").find("write-back"), std::string::npos);
  ASSERT_SYS(ftruncate(fd, 0));
  EXPECT_SYS(fsync(fd)) << "an emptied file has nothing lost in it";
  close(fd);
  ASSERT_SYS(unlink(Path("big").c_str()));
}

}  // namespace
}  // namespace walfs::testing
