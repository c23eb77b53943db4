// walfs-growfs through a real mount: `walfs-growfs MNT SIZE` extends the
// image file and statfs shows the new size at once, files written past the
// old size survive a remount (whose fsck -n must be clean), `-n` and a
// non-root caller change nothing, and a smaller size is refused.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace growfs_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr unsigned long long kMiB = 1 << 20;

// `command` run by /bin/sh as uid/gid `id`: its exit status.
int RunAs(uid_t id, const std::string& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(id) != 0 || setuid(id) != 0) _exit(100);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(101);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

unsigned long long TotalBytes(const std::string& path) {
  struct statvfs sv {};
  EXPECT_EQ(statvfs(path.c_str(), &sv), 0) << strerrorname_np(errno);
  return static_cast<unsigned long long>(sv.f_blocks) * sv.f_frsize;
}

class Growfs : public MountedFs {
 protected:
  static void SetUpTestSuite() { MountSuite({.image_size = "32m", .options = {}}); }
  std::string Growfs_(const std::string& args) { return BinDir() + "/walfs-growfs " + args; }
};

TEST_F(Growfs, GrowingTheMountExtendsTheImageAndStatfsAndTheSpaceKeepsAcrossARemount) {
  WALFS_REQUIRE_WALFS();
  if (getuid() != 0) GTEST_SKIP() << "growing needs root";
  const unsigned long long before = TotalBytes(Root());

  const ToolRun query = RunTool(Growfs_("-n " + Root()));
  ASSERT_EQ(query.exit_code, 0) << query.out;
  EXPECT_NE(query.out.find("agcount="), std::string::npos) << query.out;
  EXPECT_EQ(TotalBytes(Root()), before) << "-n changed the size";

  const ToolRun shrink = RunTool(Growfs_(Root() + " 16m"));
  EXPECT_EQ(shrink.exit_code, 1) << shrink.out;
  EXPECT_NE(shrink.out.find("cannot shrink"), std::string::npos) << shrink.out;

  const std::string said = Path("nobody.out");  // made writable for nobody
  const int out_fd = open(said.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  ASSERT_GE(out_fd, 0) << strerrorname_np(errno);
  EXPECT_EQ(fchmod(out_fd, 0666), 0);
  close(out_fd);
  EXPECT_EQ(RunAs(65534, Growfs_(Root() + " 64m") + " >" + said + " 2>&1"), 1);
  EXPECT_EQ(TotalBytes(Root()), before) << "a non-root caller grew it";
  const ToolRun out = RunTool("cat " + said);
  EXPECT_NE(out.out.find("only root"), std::string::npos) << out.out;
  unlink(said.c_str());

  const ToolRun grown = RunTool(Growfs_(Root() + " 96m"));
  ASSERT_EQ(grown.exit_code, 0) << grown.out;
  EXPECT_NE(grown.out.find("data blocks changed from"), std::string::npos) << grown.out;
  struct stat st {};
  ASSERT_EQ(stat(ImagePath().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(96 * kMiB)) << "the image file was not extended";
  EXPECT_EQ(TotalBytes(Root()), before + 64 * kMiB);

  // More than the old filesystem held: the new AGs take it.
  const int fd = open(Path("big").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerrorname_np(errno);
  const std::string buf(kMiB, 'g');
  for (unsigned long long off = 0; off < 48 * kMiB; off += kMiB)
    ASSERT_EQ(pwrite(fd, buf.data(), buf.size(), static_cast<off_t>(off)), static_cast<ssize_t>(buf.size()))
        << strerrorname_np(errno);
  EXPECT_EQ(fsync(fd), 0);
  close(fd);

  Remount();  // fsck -n in between must be clean
  EXPECT_EQ(TotalBytes(Root()), before + 64 * kMiB);
  ASSERT_EQ(stat(Path("big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(48 * kMiB));
  // `walfs grow` is the same program.
  const ToolRun again = RunTool(BinDir() + "/walfs grow " + Root());
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("unchanged"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace growfs_test
}  // namespace walfs::testing
