// Permission checks: a forked child drops to uid/gid 65534 (nobody) and
// touches files root made.  Mounted with allow_other so another user may
// enter the mount at all; the mode bits must do the rest.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace permission_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr uid_t kNobody = 65534;

class Permission : public MountedFs {
 public:
  static void SetUpTestSuite() {
    MountConfig c;
    c.options = {"allow_other"};
    MountSuite(c);
  }

 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (geteuid() != 0) GTEST_SKIP() << "switching to another user needs root";
  }

  // Runs `body` as nobody; `body` reports each mismatch through `fail`.
  // Returns what it reported, one line each.
  std::string AsNobody(const std::function<void(const std::function<void(std::string)>&)>& body) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return "pipe failed";
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      auto fail = [&](std::string line) {
        line += "\n";
        (void)!write(pipefd[1], line.data(), line.size());
      };
      if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
          setresuid(kNobody, kNobody, kNobody) != 0) {
        fail("could not become uid 65534");
        _exit(1);
      }
      body(fail);
      _exit(0);
    }
    close(pipefd[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) out.append(buf, n);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) out += "child died\n";
    return out;
  }
};

// One expectation inside the child: `r` is the call's result, `want` the
// errno (0: must succeed).
void Check(const std::function<void(std::string)>& fail, const char* what, long r, int want) {
  const int e = errno;
  if (want == 0 && r == -1) fail(std::string(what) + " failed with " + strerrorname_np(e));
  if (want != 0 && (r != -1 || e != want)) {
    fail(std::string(what) + " gave " + (r == -1 ? strerrorname_np(e) : "success") +
         ", expected " + strerrorname_np(want));
  }
}

TEST_F(Permission, ModeBitsGovernWhatAnotherUserMayDo) {
  WriteFile(Path("secret"), "s", 0600);
  WriteFile(Path("public"), "p", 0644);
  ASSERT_SYS(chmod(Path("secret").c_str(), 0600));
  ASSERT_SYS(chmod(Path("public").c_str(), 0644));
  ASSERT_SYS(mkdir(Path("open").c_str(), 0777));
  ASSERT_SYS(chmod(Path("open").c_str(), 0777));
  ASSERT_SYS(mkdir(Path("sticky").c_str(), 0777));
  ASSERT_SYS(chmod(Path("sticky").c_str(), 01777));
  WriteFile(Path("sticky/rootfile"), "r");
  ASSERT_SYS(mkdir(Path("closed").c_str(), 0700));
  WriteFile(Path("closed/inner"), "i");
  const std::string d = Path();
  const std::string out = AsNobody([&](const std::function<void(std::string)>& fail) {
    auto p = [&](const char* rel) { return d + "/" + rel; };
    struct stat st;
    Check(fail, "stat the test dir", stat(d.c_str(), &st), 0);
    Check(fail, "open 0600 root file for reading", open(p("secret").c_str(), O_RDONLY), EACCES);
    Check(fail, "open 0644 root file for reading", open(p("public").c_str(), O_RDONLY), 0);
    Check(fail, "open 0644 root file for writing", open(p("public").c_str(), O_WRONLY), EACCES);
    Check(fail, "access W_OK of 0644 root file", access(p("public").c_str(), W_OK), EACCES);
    Check(fail, "access R_OK of 0644 root file", access(p("public").c_str(), R_OK), 0);
    Check(fail, "truncate 0644 root file", truncate(p("public").c_str(), 0), EACCES);
    Check(fail, "chmod root's file", chmod(p("public").c_str(), 0666), EPERM);
    Check(fail, "utimensat explicit times on root's file",
          [&] {
            const timespec t[2] = {{1, 0}, {1, 0}};
            return utimensat(AT_FDCWD, p("public").c_str(), t, 0);
          }(),
          EPERM);
    Check(fail, "utimensat now on root's 0644 file", utimensat(AT_FDCWD, p("public").c_str(), nullptr, 0),
          EACCES);
    Check(fail, "setxattr user.* on root's 0644 file", setxattr(p("public").c_str(), "user.x", "v", 1, 0),
          EACCES);
    Check(fail, "create in root's 0755 dir", open(p("new").c_str(), O_CREAT | O_WRONLY, 0644), EACCES);
    Check(fail, "mkdir in root's 0755 dir", mkdir(p("newdir").c_str(), 0755), EACCES);
    Check(fail, "unlink in root's 0755 dir", unlink(p("public").c_str()), EACCES);
    Check(fail, "create in a 0777 dir", open(p("open/mine").c_str(), O_CREAT | O_WRONLY, 0644), 0);
    Check(fail, "stat own new file",
          stat(p("open/mine").c_str(), &st) == 0 && st.st_uid == kNobody ? 0 : -1, 0);
    Check(fail, "unlink own file in a 0777 dir", unlink(p("open/mine").c_str()), 0);
    Check(fail, "unlink root's file in a sticky dir", unlink(p("sticky/rootfile").c_str()), EPERM);
    Check(fail, "stat inside root's 0700 dir", stat(p("closed/inner").c_str(), &st), EACCES);
    Check(fail, "readdir of root's 0700 dir", open(p("closed").c_str(), O_RDONLY | O_DIRECTORY), EACCES);
  });
  EXPECT_EQ(out, "") << "as uid 65534:\n" << out;
}

TEST_F(Permission, RootNeedsSomeExecuteBitToExecute) {
  WriteFile(Path("plain"), "#!/bin/sh\n", 0644);
  ASSERT_SYS(chmod(Path("plain").c_str(), 0644));
  EXPECT_ERRNO(EACCES, access(Path("plain").c_str(), X_OK));
  EXPECT_SYS(access(Path("plain").c_str(), R_OK | W_OK));
  ASSERT_SYS(chmod(Path("plain").c_str(), 0000));
  EXPECT_SYS(access(Path("plain").c_str(), R_OK | W_OK)) << "root reads and writes anything";
  ASSERT_SYS(chmod(Path("plain").c_str(), 0100));
  EXPECT_SYS(access(Path("plain").c_str(), X_OK));
  EXPECT_ERRNO(ENOENT, access(Path("missing").c_str(), F_OK));
}

// FUSE_HANDLE_KILLPRIV_V2 leaves clearing set-id bits to walfs
// (mount/setid_kill.h); what a kernel filesystem does must still happen, and
// stat must show it at once (the kernel's cached mode is invalidated).
TEST_F(Permission, AnotherUsersWriteClearsSetuidAndGroupExecutableSetgidAtOnce) {
  WriteFile(Path("both"), "x");
  ASSERT_SYS(chmod(Path("both").c_str(), 06777));
  WriteFile(Path("lockmark"), "x");
  ASSERT_SYS(chmod(Path("lockmark").c_str(), 02766));  // setgid without g+x
  struct stat st {};
  ASSERT_SYS(stat(Path("both").c_str(), &st));  // the kernel caches the set-id mode
  const std::string d = Path();
  const std::string out = AsNobody([&](const std::function<void(std::string)>& fail) {
    for (const char* f : {"both", "lockmark"}) {
      const int fd = open((d + "/" + f).c_str(), O_WRONLY | O_APPEND);
      Check(fail, "open for append", fd, 0);
      Check(fail, "append", write(fd, "y", 1), 0);
      close(fd);
    }
  });
  EXPECT_EQ(out, "");
  ASSERT_SYS(stat(Path("both").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  // Without g+x S_ISGID goes too when the writer is not in the file's
  // group (setattr_should_drop_sgid, Linux 6.2; tmpfs and ext4 do the same).
  ASSERT_SYS(stat(Path("lockmark").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0766u);
}

TEST_F(Permission, AnotherUsersTruncateOrTruncatingOpenClearsSetuid) {
  WriteFile(Path("t1"), "data");
  WriteFile(Path("t2"), "data");
  ASSERT_SYS(chmod(Path("t1").c_str(), 04777));
  ASSERT_SYS(chmod(Path("t2").c_str(), 04777));
  const std::string d = Path();
  const std::string out = AsNobody([&](const std::function<void(std::string)>& fail) {
    Check(fail, "truncate", truncate((d + "/t1").c_str(), 1), 0);
    const int fd = open((d + "/t2").c_str(), O_WRONLY | O_TRUNC);
    Check(fail, "open O_TRUNC", fd, 0);
    close(fd);
  });
  EXPECT_EQ(out, "");
  struct stat st {};
  ASSERT_SYS(stat(Path("t1").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  ASSERT_SYS(stat(Path("t2").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  EXPECT_EQ(st.st_size, 0);
}

TEST_F(Permission, ChownClearsSetuidOfAFileEvenForRootButNotOfADirectory) {
  WriteFile(Path("prog"), "x");
  ASSERT_SYS(chmod(Path("prog").c_str(), 06755));
  ASSERT_SYS(mkdir(Path("dir").c_str(), 0755));
  ASSERT_SYS(chmod(Path("dir").c_str(), 02755));
  ASSERT_SYS(chown(Path("prog").c_str(), kNobody, kNobody));
  ASSERT_SYS(chown(Path("dir").c_str(), kNobody, kNobody));
  struct stat st {};
  ASSERT_SYS(stat(Path("prog").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_SYS(stat(Path("dir").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 02755u);
}

TEST_F(Permission, RootsWriteKeepsSetuid) {
  WriteFile(Path("mine"), "x");
  ASSERT_SYS(chmod(Path("mine").c_str(), 04755));
  const int fd = open(Path("mine").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "y", 1), 1);
  close(fd);
  struct stat st {};
  ASSERT_SYS(stat(Path("mine").c_str(), &st));
  EXPECT_EQ(st.st_mode & 07777, 04755u);
}

TEST_F(Permission, AnotherUsersWriteRemovesFileCapabilities) {
  WriteFile(Path("capped"), "x");
  ASSERT_SYS(chmod(Path("capped").c_str(), 0777));
  const std::string cap = NetRawCapability();
  ASSERT_SYS(setxattr(Path("capped").c_str(), "security.capability", cap.data(), cap.size(), 0));
  const std::string d = Path();
  const std::string out = AsNobody([&](const std::function<void(std::string)>& fail) {
    const int fd = open((d + "/capped").c_str(), O_WRONLY | O_APPEND);
    Check(fail, "open for append", fd, 0);
    Check(fail, "append", write(fd, "y", 1), 0);
    close(fd);
  });
  EXPECT_EQ(out, "");
  char buf[64];
  EXPECT_ERRNO(ENODATA, getxattr(Path("capped").c_str(), "security.capability", buf, sizeof buf));
}

// The trace names every file, pid and command anyone's operations touch: it
// is the mount owner's (root here) alone, enforced by walfs whatever the
// mode bits say, as tracefs is root's.  stats names no file and stays open.
TEST_F(Permission, AnotherUserCanNeitherReadNorDrainNorSteerTheTrace) {
  WALFS_REQUIRE_WALFS();
  const std::string ctl = Root() + "/.walfs";
  const std::string out = AsNobody([&](const std::function<void(std::string)>& fail) {
    auto p = [&](const char* rel) { return (ctl + "/" + rel); };
    auto o = [&](const char* rel, int flags) { return open(p(rel).c_str(), flags); };
    for (const char* f : {"trace", "trace_pipe", "trace_pipe_raw", "messages"})
      Check(fail, (std::string("open ") + f + " for reading").c_str(), o(f, O_RDONLY | O_NONBLOCK), EACCES);
    Check(fail, "open tracing_on for writing", o("tracing_on", O_WRONLY), EACCES);
    Check(fail, "open events/enable for writing", o("events/enable", O_WRONLY), EACCES);
    Check(fail, "open options/overwrite for writing", o("options/overwrite", O_WRONLY), EACCES);
    Check(fail, "open stats for reading", o("stats", O_RDONLY), 0);
  });
  EXPECT_EQ(out, "") << "as uid 65534:\n" << out;
  struct stat st {};
  ASSERT_SYS(stat((ctl + "/trace_pipe").c_str(), &st));
  EXPECT_EQ(st.st_mode & 0777, 0400u);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(Permission, ASecondReaderOfTheTraceStreamIsRefusedNotSplit) {
  WALFS_REQUIRE_WALFS();
  const std::string pipe = Root() + "/.walfs/trace_pipe";
  const int first = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_SYS(first);
  EXPECT_ERRNO(EBUSY, open(pipe.c_str(), O_RDONLY | O_NONBLOCK));
  EXPECT_ERRNO(EBUSY, open((Root() + "/.walfs/trace_pipe_raw").c_str(), O_RDONLY | O_NONBLOCK));
  close(first);
  // The release reaches walfs after close returns: wait for it.
  int again = -1;
  for (int i = 0; i < 100 && again < 0; ++i) {
    again = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
    if (again < 0) usleep(10'000);
  }
  EXPECT_GE(again, 0) << "trace_pipe stays busy after its reader closed";
  if (again >= 0) close(again);
}

}  // namespace
}  // namespace permission_test
}  // namespace walfs::testing
