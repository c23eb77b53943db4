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

}  // namespace
}  // namespace walfs::testing
