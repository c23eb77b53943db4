// MNT/.walfs/messages holds what an administrator must see (I/O errors,
// corruption, shutdown), not the answers POSIX callers expect and handle:
// ENXIO from SEEK_DATA past the end, ENOENT, EEXIST, ENODATA, ENOSPC.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class MessageLog : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "64m", .options = {}}); }
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
  std::string Log() { return ReadFile(Root() + "/.walfs/messages"); }
};

TEST_F(MessageLog, AnswersThatAreNotFailuresStayOutOfTheMessageLog) {
  const std::string before = Log();
  WriteFile(Path("f"), "data");
  const int fd = open(Path("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_ERRNO(ENXIO, lseek(fd, 1 << 20, SEEK_DATA));
  EXPECT_ERRNO(ENXIO, lseek(fd, 1 << 20, SEEK_HOLE));
  close(fd);
  EXPECT_ERRNO(ENOENT, open(Path("missing").c_str(), O_RDONLY));
  EXPECT_ERRNO(EEXIST, mkdir(Path("f").c_str(), 0755));
  char v[8];
  EXPECT_ERRNO(ENODATA, getxattr(Path("f").c_str(), "user.none", v, sizeof v));

  // Fill the image: ENOSPC is the caller's answer, not the filesystem failing.
  const int big = open(Path("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(big, 0);
  const std::vector<char> chunk(1 << 20, 'x');
  int err = 0;
  for (int i = 0; i < 256 && err == 0; ++i)
    if (write(big, chunk.data(), chunk.size()) < 0) err = errno;
  EXPECT_EQ(err, ENOSPC);
  close(big);
  ASSERT_SYS(unlink(Path("big").c_str()));

  const std::string after = Log();
  ASSERT_GE(after.size(), before.size());
  const std::string added = after.substr(before.size());
  EXPECT_EQ(added.find("error"), std::string::npos) << "new messages:\n" << added;
  EXPECT_EQ(added.find("IoError"), std::string::npos) << "new messages:\n" << added;
}

}  // namespace
}  // namespace walfs::testing
