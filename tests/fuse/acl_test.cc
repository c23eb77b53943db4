// POSIX ACLs through the mount: the kernel enforces them (an ACL that says
// no keeps a user out, one that says yes lets a user in), walfs keeps them
// and the mode in step both ways, new files and directories inherit a
// directory's default ACL without the umask, malformed values are refused,
// ACLs outlive a remount and a killed daemon, and the copying tools (cp -a,
// tar --acls, rsync -aA) bring modes and ACLs over exactly.  Users other
// than root are uid 65534 (nobody) in a forked child, as in
// permission_test.cc; the suite mounts with allow_other so they may enter.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace acl_test {  // this file's own names (unity builds share one TU)
namespace {

constexpr uid_t kNobody = 65534;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// getfacl -R output with its per-file blocks in name order (directories
// list in a different order on each filesystem).
std::string SortedBlocks(const std::string& out) {
  std::vector<std::string> blocks;
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find("\n\n", at);
    if (end == std::string::npos) end = out.size();
    if (end > at) blocks.push_back(out.substr(at, end - at));
    at = end + 2;
  }
  std::sort(blocks.begin(), blocks.end());
  std::string joined;
  for (const std::string& b : blocks) joined += b + "\n\n";
  return joined;
}

class Acl : public MountedFs {
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
    if (RunTool("command -v setfacl getfacl").exit_code != 0)
      GTEST_SKIP() << "setfacl/getfacl missing (the acl package; scripts/setup.sh installs it)";
    // nobody must reach the test's directory.
    ASSERT_SYS(chmod(Path().c_str(), 0755));
  }

  static void Run(const std::string& command) {
    const ToolRun r = RunTool(command);
    ASSERT_EQ(r.exit_code, 0) << command << ":\n" << r.out;
  }
  static std::string Out(const std::string& command) {
    const ToolRun r = RunTool(command);
    EXPECT_EQ(r.exit_code, 0) << command << ":\n" << r.out;
    return r.out;
  }
  static mode_t ModeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path << ": " << strerrorname_np(errno);
    return st.st_mode & 07777;
  }

  // The errno nobody gets opening `path` with `flags` (0: it opened).
  static int NobodyOpens(const std::string& path, int flags) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return -1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      int err = 0;
      if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
          setresuid(kNobody, kNobody, kNobody) != 0) {
        err = -2;
      } else {
        const int fd = open(path.c_str(), flags);
        err = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
      }
      (void)!write(pipefd[1], &err, sizeof(err));
      _exit(0);
    }
    close(pipefd[1]);
    int err = -1;
    if (read(pipefd[0], &err, sizeof(err)) != sizeof(err)) err = -1;
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return err;
  }
};

TEST_F(Acl, AnAclThatDeniesAUserKeepsThemOutOfAFileTheModeOpens) {
  const std::string f = Path("f");
  WriteFile(f, "secret", 0644);
  ASSERT_EQ(NobodyOpens(f, O_RDONLY), 0) << "the mode alone lets nobody read";
  Run("setfacl -m u:nobody:--- " + Quote(f));
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), EACCES);
  EXPECT_EQ(ModeOf(f), 0644u);  // the mask (r--) shows as the group bits
}

TEST_F(Acl, ANamedUserEntryGrantsWhatTheModeDenies) {
  const std::string f = Path("f");
  WriteFile(f, "shared", 0600);
  ASSERT_EQ(NobodyOpens(f, O_RDONLY), EACCES);
  Run("setfacl -m u:nobody:r-- " + Quote(f));
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), 0);
  EXPECT_EQ(NobodyOpens(f, O_WRONLY), EACCES);
  EXPECT_EQ(ModeOf(f), 0640u);
}

TEST_F(Acl, ChmodRewritesTheMaskTheOwnerAndOther) {
  const std::string f = Path("f");
  WriteFile(f, "x", 0644);
  Run("setfacl -m u:nobody:rw- " + Quote(f));
  EXPECT_EQ(ModeOf(f), 0664u);
  ASSERT_EQ(NobodyOpens(f, O_WRONLY), 0);
  ASSERT_SYS(chmod(f.c_str(), 0741));
  const std::string acl = Out("getfacl -c -n -p " + Quote(f));
  EXPECT_NE(acl.find("user::rwx"), std::string::npos) << acl;
  EXPECT_NE(acl.find("user:65534:rw-\t#effective:r--"), std::string::npos) << acl;
  EXPECT_NE(acl.find("mask::r--"), std::string::npos) << acl;
  EXPECT_NE(acl.find("other::--x"), std::string::npos) << acl;
  EXPECT_EQ(NobodyOpens(f, O_WRONLY), EACCES);  // the mask limits the named entry now
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), 0);
}

TEST_F(Acl, SetfaclSetsTheModeAndAnAclTheModeSaysIsNotKept) {
  const std::string f = Path("f");
  WriteFile(f, "x", 0644);
  Run("setfacl -m u::rwx,g::---,o::--- " + Quote(f));
  EXPECT_EQ(ModeOf(f), 0700u);
  char buf[256];
  EXPECT_ERRNO(ENODATA, getxattr(f.c_str(), "system.posix_acl_access", buf, sizeof(buf)));
  Run("setfacl -m g::r-x " + Quote(f));
  EXPECT_EQ(ModeOf(f), 0750u);
}

TEST_F(Acl, NewFilesAndDirectoriesInheritTheDefaultAclAndIgnoreTheUmask) {
  const std::string d = Path("d");
  ASSERT_SYS(mkdir(d.c_str(), 0755));
  Run("setfacl -d -m u::rwx,g::rwx,o::rwx,u:nobody:--- " + Quote(d));
  const mode_t old = umask(077);
  const int fd = open((d + "/f").c_str(), O_CREAT | O_WRONLY, 0666);
  const int made_dir = mkdir((d + "/sub").c_str(), 0777);
  const int made_node = mknod((d + "/fifo").c_str(), S_IFIFO | 0640, 0);
  umask(old);
  ASSERT_SYS(fd);
  close(fd);
  ASSERT_SYS(made_dir);
  ASSERT_SYS(made_node);
  EXPECT_EQ(ModeOf(d + "/f"), 0666u);
  EXPECT_EQ(ModeOf(d + "/sub"), 0777u);
  EXPECT_EQ(ModeOf(d + "/fifo"), 0640u);
  EXPECT_EQ(NobodyOpens(d + "/f", O_RDONLY), EACCES);
  const std::string file_acl = Out("getfacl -c -n -p " + Quote(d + "/f"));
  EXPECT_NE(file_acl.find("user:65534:---"), std::string::npos) << file_acl;
  EXPECT_EQ(file_acl.find("default:"), std::string::npos) << file_acl;
  const std::string sub_acl = Out("getfacl -c -n -p " + Quote(d + "/sub"));
  EXPECT_NE(sub_acl.find("default:user:65534:---"), std::string::npos) << sub_acl;
  EXPECT_NE(sub_acl.find("\nuser:65534:---"), std::string::npos) << sub_acl;
  // Grandchildren too, through the subdirectory's own default.
  WriteFile(d + "/sub/g", "x", 0666);
  EXPECT_EQ(NobodyOpens(d + "/sub/g", O_RDONLY), EACCES);
  // Without a default ACL the umask applies as always.
  umask(077);
  const int plain = open(Path("plain").c_str(), O_CREAT | O_WRONLY, 0666);
  umask(old);
  ASSERT_SYS(plain);
  close(plain);
  EXPECT_EQ(ModeOf(Path("plain")), 0600u);
}

TEST_F(Acl, SetfaclBRemovesTheAclAndKRemovesTheDefault) {
  const std::string f = Path("f"), d = Path("d");
  WriteFile(f, "x", 0644);
  ASSERT_SYS(mkdir(d.c_str(), 0755));
  Run("setfacl -m u:nobody:--- " + Quote(f));
  Run("setfacl -d -m u:nobody:--- " + Quote(d));
  ASSERT_EQ(NobodyOpens(f, O_RDONLY), EACCES);
  Run("setfacl -b " + Quote(f));
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), 0);
  EXPECT_EQ(Out("getfacl -c -n -p " + Quote(f)), "user::rw-\ngroup::r--\nother::r--\n\n");
  Run("setfacl -k " + Quote(d));
  WriteFile(d + "/after", "x", 0644);
  EXPECT_EQ(NobodyOpens(d + "/after", O_RDONLY), 0);
  char buf[256];
  EXPECT_ERRNO(ENODATA, getxattr(d.c_str(), "system.posix_acl_default", buf, sizeof(buf)));
}

// The kernel decodes an ACL value before it sends it (posix_acl_from_xattr:
// EOPNOTSUPP for another version, EINVAL for a bad shape), as for ext4;
// walfs refuses the same values itself (tests/fs/posix_acl_test.cc) for
// any caller that bypasses that.
// An unprivileged owner manages ACLs on their own files (and only there);
// what they inherit ignores their umask too.
TEST_F(Acl, AnUnprivilegedOwnerSetsAclsOnTheirOwnFilesOnly) {
  const std::string d = Path("mine"), theirs = Path("roots");
  ASSERT_SYS(mkdir(d.c_str(), 0755));
  ASSERT_SYS(chown(d.c_str(), kNobody, kNobody));
  WriteFile(theirs, "x", 0644);
  auto as_nobody = [](const std::string& command) {
    return RunTool("setpriv --reuid=65534 --regid=65534 --clear-groups sh -c " + Quote(command));
  };
  const ToolRun r = as_nobody("umask 077 && setfacl -d -m u::rwx,g::r-x,o::r-x " + Quote(d) + " && echo x > " +
                              Quote(d + "/f") + " && mkdir " + Quote(d + "/sub") + " && setfacl -m u:root:--- " +
                              Quote(d + "/f"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(ModeOf(d + "/f"), 0644u);    // 0666 limited by the default ACL, not by umask 077
  EXPECT_EQ(ModeOf(d + "/sub"), 0755u);
  EXPECT_NE(Out("getfacl -c -n -p " + Quote(d + "/f")).find("user:0:---"), std::string::npos);
  const ToolRun refused = as_nobody("setfacl -m u:nobody:rw- " + Quote(theirs));
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.out.find("Operation not permitted"), std::string::npos) << refused.out;
  EXPECT_EQ(ModeOf(theirs), 0644u);
}

// posix_acl_update_mode: an owner outside the file's group who sets an
// ACL loses the setgid bit; a member keeps it (as on ext4).
TEST_F(Acl, SettingAnAclOutsideTheFilesGroupClearsSetgid) {
  const std::string f = Path("f");
  WriteFile(f, "x", 0644);
  ASSERT_SYS(chown(f.c_str(), kNobody, 0));
  ASSERT_SYS(chmod(f.c_str(), 02755));
  const ToolRun member = RunTool("setpriv --reuid=65534 --regid=65534 --groups=0 setfacl -m u:root:r-x " + Quote(f));
  ASSERT_EQ(member.exit_code, 0) << member.out;
  EXPECT_EQ(ModeOf(f), 02755u);
  const ToolRun outsider = RunTool("setpriv --reuid=65534 --regid=65534 --clear-groups setfacl -m u:root:r-- " + Quote(f));
  ASSERT_EQ(outsider.exit_code, 0) << outsider.out;
  EXPECT_EQ(ModeOf(f), 0755u);
}

TEST_F(Acl, MalformedAclValuesAreRefused) {
  const std::string f = Path("f");
  WriteFile(f, "x", 0644);
  const std::string garbage = "not an ACL at all";
  EXPECT_ERRNO(EOPNOTSUPP, setxattr(f.c_str(), "system.posix_acl_access", garbage.data(), garbage.size(), 0));
  // Version 2, then a torn entry; then an owner entry and nothing else.
  const char torn[] = {2, 0, 0, 0, 1, 0, 6, 0, -1};
  EXPECT_ERRNO(EINVAL, setxattr(f.c_str(), "system.posix_acl_access", torn, sizeof(torn), 0));
  const char owner_only[] = {2, 0, 0, 0, 1, 0, 6, 0, -1, -1, -1, -1};
  EXPECT_ERRNO(EINVAL, setxattr(f.c_str(), "system.posix_acl_access", owner_only, sizeof(owner_only), 0));
  EXPECT_EQ(ModeOf(f), 0644u);
  char buf[256];
  EXPECT_ERRNO(ENODATA, getxattr(f.c_str(), "system.posix_acl_access", buf, sizeof(buf)));
  // A default ACL is for directories.
  EXPECT_NE(RunTool("setfacl -d -m u:nobody:--- " + Quote(f)).exit_code, 0);
}

TEST_F(Acl, AclsSurviveARemountAndAKilledDaemon) {
  WALFS_REQUIRE_WALFS();
  const std::string f = Path("f"), d = Path("d");
  WriteFile(f, "x", 0644);
  ASSERT_SYS(mkdir(d.c_str(), 0755));
  Run("setfacl -m u:nobody:--- " + Quote(f));
  Run("setfacl -d -m u:nobody:r-x " + Quote(d));
  const std::string before = Out("getfacl -n -p -R " + Quote(Path()));
  Remount();
  EXPECT_EQ(Out("getfacl -n -p -R " + Quote(Path())), before);
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), EACCES);
  // A change, fsynced, then the daemon killed.
  Run("setfacl -m u:nobody:r--,g::--- " + Quote(f));
  const int fd = open(f.c_str(), O_RDONLY);
  ASSERT_SYS(fd);
  ASSERT_SYS(fsync(fd));
  close(fd);
  const std::string synced = Out("getfacl -n -p " + Quote(f));
  KillDaemon();
  ASSERT_NO_FATAL_FAILURE(MountAgain());
  EXPECT_EQ(Out("getfacl -n -p " + Quote(f)), synced);
  EXPECT_EQ(ModeOf(f), 0644u);
  EXPECT_EQ(NobodyOpens(f, O_RDONLY), 0);
}

// A tree with the modes and ACLs real trees have, on /tmp's filesystem
// (ext4 with ACLs), copied onto walfs by `copy`; the copy must match.
class AclCopy : public Acl {
 protected:
  void SetUp() override {
    Acl::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char tmpl[] = "/tmp/walfs-acl-src-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    src_ = tmpl;
    const std::string s = src_ + "/tree";
    if (RunTool("setfacl -m u:nobody:r " + Quote(src_)).exit_code != 0)
      GTEST_SKIP() << "/tmp has no ACL support here";
    Run("mkdir -p " + s + "/bin " + s + "/shared " + s + "/private " + s + "/inherit && "
        "chmod 0755 " + s + " " + s + "/bin && chmod 2775 " + s + "/shared && chmod 0700 " + s + "/private && "
        "echo a > " + s + "/bin/tool && chmod 0755 " + s + "/bin/tool && "
        "echo b > " + s + "/readme && chmod 0644 " + s + "/readme && "
        "echo c > " + s + "/private/key && chmod 0600 " + s + "/private/key && "
        "echo d > " + s + "/shared/doc && chmod 0664 " + s + "/shared/doc && "
        "echo e > " + s + "/setuid && chmod 4755 " + s + "/setuid && "
        "echo f > " + s + "/acl && chmod 0640 " + s + "/acl && setfacl -m u:nobody:r--,g:nogroup:rw- " + s + "/acl && "
        "setfacl -d -m u:nobody:rwx,o::--- " + s + "/inherit && echo g > " + s + "/inherit/child && "
        "mkdir " + s + "/inherit/subdir && ln -s readme " + s + "/link");
  }
  void TearDown() override {
    if (!src_.empty()) (void)RunTool("rm -rf " + Quote(src_));
    Acl::TearDown();
  }
  // Modes, owners and ACLs of every file under `root`, comparable across
  // filesystems.
  static std::string Describe(const std::string& root) {
    return Out("cd " + Quote(root) + " && find . -printf '%M %u %g %p\\n' | sort") +
           SortedBlocks(Out("cd " + Quote(root) + " && getfacl -R -p -n ."));
  }
  void ExpectSameTree(const std::string& copy) {
    const std::string want = Describe(src_ + "/tree");
    EXPECT_NE(want.find("user:65534:r--"), std::string::npos) << want;
    EXPECT_EQ(Describe(copy), want);
  }
  std::string src_;
};

TEST_F(AclCopy, CpAKeepsModesAndAclsExactly) {
  Run("cp -a " + Quote(src_ + "/tree") + " " + Quote(Path("copy")));
  ExpectSameTree(Path("copy"));
}

TEST_F(AclCopy, CpPAndMvAcrossFilesystemsKeepModesAndAclsExactly) {
  Run("cp -R -p " + Quote(src_ + "/tree") + " " + Quote(Path("p")));
  ExpectSameTree(Path("p"));
  const std::string want = Describe(src_ + "/tree");
  Run("mv " + Quote(src_ + "/tree") + " " + Quote(Path("moved")));
  EXPECT_EQ(Describe(Path("moved")), want);
}

TEST_F(AclCopy, TarWithAclsKeepsModesAndAclsExactly) {
  ASSERT_SYS(mkdir(Path("x").c_str(), 0755));
  Run("tar --acls -C " + Quote(src_) + " -cf - tree | tar --acls -xpf - -C " + Quote(Path("x")));
  ExpectSameTree(Path("x/tree"));
}

TEST_F(AclCopy, RsyncWithAclsKeepsModesAndAclsExactly) {
  if (RunTool("command -v rsync").exit_code != 0) GTEST_SKIP() << "rsync missing (scripts/setup.sh installs it)";
  Run("rsync -aA " + Quote(src_ + "/tree/") + " " + Quote(Path("r/")));
  ExpectSameTree(Path("r"));
}

}  // namespace
}  // namespace acl_test
}  // namespace walfs::testing
