// The set-id rules walfs applies for the kernel (mount/setid_kill.h), checked
// cell by cell against a kernel filesystem: every case runs on a walfs
// directory and on a tmpfs mounted beside it, and the mode and file
// capability each leaves must be the same.  The cases cross every file type
// with the operations that clear set-id bits (chown, chgrp, write, truncate,
// a truncating open), the callers that decide them (the owner, another user,
// root with and without CAP_FSETID) and modes with and without group-execute.
// After the table, walfs is remounted and read again: what the kernel showed
// must be what the image holds.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

constexpr uid_t kOwnerUid = 4242;  // in groups kOwnerUid and kOwnerSecond
constexpr gid_t kOwnerSecond = 4243;
constexpr uid_t kOtherUid = 4244;  // in its own group only

enum class Actor { kOwner, kOther, kRoot, kRootWithoutFsetid };
enum class Op { kChgrpToSecond, kChownToOther, kChownToSelf, kWrite, kTruncate, kOpenTrunc };

const char* Name(Actor a) {
  switch (a) {
    case Actor::kOwner: return "owner";
    case Actor::kOther: return "other";
    case Actor::kRoot: return "root";
    case Actor::kRootWithoutFsetid: return "root-without-CAP_FSETID";
  }
  return "?";
}

const char* Name(Op o) {
  switch (o) {
    case Op::kChgrpToSecond: return "chgrp to the owner's second group";
    case Op::kChownToOther: return "chown to another user and group";
    case Op::kChownToSelf: return "chown to the same owner";
    case Op::kWrite: return "append";
    case Op::kTruncate: return "truncate";
    case Op::kOpenTrunc: return "open O_TRUNC";
  }
  return "?";
}

struct FileType {
  const char* name;
  mode_t type;
};
constexpr FileType kTypes[] = {{"regular", S_IFREG}, {"fifo", S_IFIFO},     {"char-dev", S_IFCHR},
                               {"block-dev", S_IFBLK}, {"socket", S_IFSOCK}, {"directory", S_IFDIR}};
constexpr mode_t kModes[] = {06777, 06767, 04777, 02777, 02767, 06555, 00777};

struct Case {
  FileType type;
  mode_t mode;
  Op op;
  Actor actor;
  std::string Label() const {
    return fmt::format("{} {:04o}, {} by {}", type.name, mode, Name(op), Name(actor));
  }
};

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (const FileType& t : kTypes) {
    for (mode_t m : kModes) {
      for (Actor a : {Actor::kOwner, Actor::kRoot, Actor::kRootWithoutFsetid}) {
        out.push_back({t, m, Op::kChgrpToSecond, a});
        out.push_back({t, m, Op::kChownToSelf, a});
      }
      for (Actor a : {Actor::kRoot, Actor::kRootWithoutFsetid}) out.push_back({t, m, Op::kChownToOther, a});
      if (t.type != S_IFREG) continue;
      for (Op o : {Op::kWrite, Op::kTruncate, Op::kOpenTrunc})
        for (Actor a : {Actor::kOwner, Actor::kOther, Actor::kRoot, Actor::kRootWithoutFsetid})
          out.push_back({t, m, o, a});
    }
  }
  return out;
}

// Becomes `a` (in a forked child).  False if the switch failed.
bool Become(Actor a) {
  if (a == Actor::kRoot) return true;
  if (a == Actor::kRootWithoutFsetid) {
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    if (syscall(SYS_capget, &h, d) != 0) return false;
    d[0].effective &= ~(1u << CAP_FSETID);
    return syscall(SYS_capset, &h, d) == 0;
  }
  const uid_t uid = a == Actor::kOwner ? kOwnerUid : kOtherUid;
  const std::vector<gid_t> groups =
      a == Actor::kOwner ? std::vector<gid_t>{kOwnerUid, kOwnerSecond} : std::vector<gid_t>{kOtherUid};
  return setgroups(groups.size(), groups.data()) == 0 && setresgid(uid, uid, uid) == 0 &&
         setresuid(uid, uid, uid) == 0;
}

// Runs the operation as its actor in a child; returns errno (0: success).
int RunAs(const Case& c, const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!Become(c.actor)) _exit(250);
    long r = 0;
    switch (c.op) {
      case Op::kChgrpToSecond: r = lchown(path.c_str(), -1, kOwnerSecond); break;
      case Op::kChownToOther: r = lchown(path.c_str(), kOtherUid, kOtherUid); break;
      case Op::kChownToSelf: r = lchown(path.c_str(), kOwnerUid, -1); break;
      case Op::kWrite: {
        const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
        r = fd < 0 ? -1 : write(fd, "y", 1);
        if (fd >= 0) close(fd);
        break;
      }
      case Op::kTruncate: r = truncate(path.c_str(), 1); break;
      case Op::kOpenTrunc: {
        const int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
        r = fd;
        if (fd >= 0) close(fd);
        break;
      }
    }
    _exit(r < 0 ? errno : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 251;
}

// What a file looks like after a case: its mode and whether it kept its capability.
std::string Observe(const std::string& path, bool regular) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return fmt::format("lstat: {}", strerrorname_np(errno));
  std::string out = fmt::format("mode {:04o} owner {}:{}", st.st_mode & 07777, st.st_uid, st.st_gid);
  if (regular) {
    char buf[64];
    const bool has = lgetxattr(path.c_str(), "security.capability", buf, sizeof buf) > 0;
    out += has ? " capability kept" : " capability gone";
  }
  return out;
}

// Makes the case's file in `dir`, owned by the owner, with the case's mode.
std::string Prepare(const Case& c, const std::string& dir, int index) {
  const std::string path = fmt::format("{}/f{}", dir, index);
  int r = 0;
  if (c.type.type == S_IFDIR) {
    r = mkdir(path.c_str(), 0700);
  } else if (c.type.type == S_IFREG) {
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600);
    r = fd < 0 ? -1 : static_cast<int>(write(fd, "data", 4));
    if (fd >= 0) close(fd);
  } else {
    const dev_t dev = c.type.type == S_IFCHR ? makedev(1, 3) : c.type.type == S_IFBLK ? makedev(7, 200) : 0;
    r = mknod(path.c_str(), c.type.type | 0600, dev);
  }
  if (r < 0) return "";
  if (lchown(path.c_str(), kOwnerUid, kOwnerUid) != 0 || chmod(path.c_str(), c.mode) != 0) return "";
  if (c.type.type == S_IFREG) {
    const std::string cap = NetRawCapability();
    if (setxattr(path.c_str(), "security.capability", cap.data(), cap.size(), 0) != 0) return "";
    if (chmod(path.c_str(), c.mode) != 0) return "";  // a capability set by root keeps the mode; be sure
  }
  return path;
}

class SetidTable : public MountedFs {
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
    if (geteuid() != 0) GTEST_SKIP() << "switching users and mounting tmpfs need root";
    WALFS_REQUIRE_WALFS();
    char tmpl[] = "/tmp/walfs-setid-tmpfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmpfs_ = tmpl;
    ASSERT_SYS(mount("tmpfs", tmpfs_.c_str(), "tmpfs", 0, "size=16m,mode=0777"));
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount2(tmpfs_.c_str(), MNT_DETACH);
    if (!tmpfs_.empty()) rmdir(tmpfs_.c_str());
    MountedFs::TearDown();
  }

  std::string tmpfs_;
  bool mounted_ = false;
};

TEST_F(SetidTable, EveryCaseLeavesTheModeAndCapabilityATmpfsLeaves) {
  const std::string walfs_dir = Path("cases");
  ASSERT_SYS(mkdir(walfs_dir.c_str(), 0777));
  ASSERT_SYS(chmod(walfs_dir.c_str(), 0777));
  ASSERT_SYS(chmod(tmpfs_.c_str(), 0777));
  const std::vector<Case> cases = AllCases();
  std::vector<std::string> walfs_paths, kernel_results;
  std::string mismatches;
  int differing = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const bool regular = c.type.type == S_IFREG;
    const std::string on_walfs = Prepare(c, walfs_dir, static_cast<int>(i));
    const std::string on_tmpfs = Prepare(c, tmpfs_, static_cast<int>(i));
    ASSERT_FALSE(on_walfs.empty()) << "preparing " << c.Label() << " on walfs: " << strerrorname_np(errno);
    ASSERT_FALSE(on_tmpfs.empty()) << "preparing " << c.Label() << " on tmpfs: " << strerrorname_np(errno);
    const int walfs_err = RunAs(c, on_walfs);
    const int tmpfs_err = RunAs(c, on_tmpfs);
    const std::string kernel = fmt::format("{} -> {}", tmpfs_err ? strerrorname_np(tmpfs_err) : "ok",
                                           Observe(on_tmpfs, regular));
    const std::string walfs = fmt::format("{} -> {}", walfs_err ? strerrorname_np(walfs_err) : "ok",
                                          Observe(on_walfs, regular));
    walfs_paths.push_back(on_walfs);
    kernel_results.push_back(kernel);
    if (walfs != kernel) {
      ++differing;
      mismatches += fmt::format("  {}: tmpfs {}, walfs {}\n", c.Label(), kernel, walfs);
    }
  }
  EXPECT_EQ(differing, 0) << differing << " of " << cases.size() << " cases differ:\n" << mismatches;

  // The image holds what the kernel showed.
  Remount();
  std::string after;
  int differing_after = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const bool regular = cases[i].type.type == S_IFREG;
    const std::string kernel_state = kernel_results[i].substr(kernel_results[i].find("-> ") + 3);
    const std::string now = Observe(walfs_paths[i], regular);
    if (now != kernel_state) {
      ++differing_after;
      after += fmt::format("  {}: tmpfs {}, walfs after remount {}\n", cases[i].Label(), kernel_state, now);
    }
  }
  EXPECT_EQ(differing_after, 0) << differing_after << " cases differ after a remount:\n" << after;
}

}  // namespace
}  // namespace walfs::testing
