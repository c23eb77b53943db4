// Hostile images through the real mount (docs/hostile_images.md): damaged
// images (tests/hostile/hostile_mutate.h) handed to the `walfs` daemon.
// Either the mount is refused with a message and a failure exit status, or
// it mounts, `ls -R` and reading every file finish (errors such as EIO or
// EUCLEAN are fine), and after the unmount the daemon exits by itself.
// Never a crash signal, a sanitizer report or a hang.
//
// Skips where FUSE cannot mount (no /dev/fuse, no fusermount3, not root).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/mount_table.h"
#include "tests/fuse/mount_fixture.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_mutate.h"
#include "tests/tools/tool_run.h"

namespace walfs::testing {
namespace {

using Clock = std::chrono::steady_clock;
using hostile::BlockKind;
using hostile::Flavour;

bool Mounted(const std::string& mnt) {
  const std::optional<MountEntry> m = TopMountAt(mnt);
  return m && m->fstype == "fuse.walfs";
}

bool SanitizerSpoke(const std::string& out) {
  return out.find("Sanitizer") != std::string::npos || out.find("runtime error:") != std::string::npos;
}

class HostileMount : public ::testing::Test {
 protected:
  void SetUp() override {
    const int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0) GTEST_SKIP() << "cannot open /dev/fuse";
    close(fd);
    if (geteuid() != 0) GTEST_SKIP() << "not root";
    if (RunTool("command -v fusermount3").exit_code != 0) GTEST_SKIP() << "fusermount3 is not installed";
    char templ[] = "/tmp/walfs-hostile-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    tmp_ = templ;
    image_ = tmp_ + "/image";
    mnt_ = tmp_ + "/mnt";
    log_ = tmp_ + "/walfs.log";
    ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
  }
  void TearDown() override {
    if (tmp_.empty()) return;
    if (Mounted(mnt_)) RunTool("umount -l " + mnt_);
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }

  // A base image damaged in one block of `kind`: the first seed from 1 that
  // changes it.
  void WriteDamaged(Flavour flavour, BlockKind kind, std::string* what) {
    static const hostile::BaseImage* bases[2] = {};
    const hostile::BaseImage*& base = bases[static_cast<int>(flavour)];
    if (base == nullptr) {
      auto b = hostile::BuildBaseImage(flavour);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      base = new hostile::BaseImage(std::move(b).value());
    }
    for (std::uint64_t seed = 1;; ++seed) {
      std::vector<std::byte> image = base->image;
      const hostile::Mutation m = hostile::Mutate(*base, seed, &image, static_cast<int>(kind));
      if (!m.changed) continue;
      *what = m.description;
      std::ofstream out(image_, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
      ASSERT_TRUE(static_cast<bool>(out));
      return;
    }
  }

  // Mounts, reads everything, unmounts; every outcome but a crash, a
  // sanitizer report or a hang is fine.
  void MountAndRead(const std::string& what) {
    SCOPED_TRACE(what);
    std::vector<std::string> args{BinDir() + "/walfs", image_, mnt_, "-f"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    bool exited = false;
    const auto mount_deadline = Clock::now() + std::chrono::seconds(20);
    while (!Mounted(mnt_)) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      if (Clock::now() > mount_deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "walfs neither mounted nor exited within 20 s; output:\n" << Slurp(log_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (exited) {
      const std::string out = Slurp(log_);
      ASSERT_TRUE(WIFEXITED(status)) << "walfs died of signal " << WTERMSIG(status) << "; output:\n" << out;
      EXPECT_NE(WEXITSTATUS(status), 0) << out;
      EXPECT_FALSE(SanitizerSpoke(out)) << out;
      // A refusal says why, in a line of its own.
      EXPECT_NE(out.find("walfs"), std::string::npos) << out;
      EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 3) << out;
      std::printf("refused: %s", out.c_str());
      return;
    }
    // Errors go to the output (the first line is printed), data nowhere.
    const ToolRun ls = RunTool("{ timeout -s KILL 60 ls -laR " + mnt_ + " 2>&1 >/dev/null; }");
    const ToolRun cat = RunTool("{ timeout -s KILL 60 find " + mnt_ + " -type f -exec cat {} + 2>&1 >/dev/null; }");
    const ToolRun xattrs = RunTool(
        "timeout -s KILL 60 python3 -c 'import os,sys\n"
        "bad = 0\n"
        "for d, dirs, files in os.walk(sys.argv[1]):\n"
        "  for p in [d] + [os.path.join(d, f) for f in files]:\n"
        "    try: [os.getxattr(p, n, follow_symlinks=False) for n in os.listxattr(p, follow_symlinks=False)]\n"
        "    except OSError as e: bad = 1; print(e)\n"
        "sys.exit(bad)' " + mnt_);
    EXPECT_NE(ls.exit_code, 137) << "ls -R hung";
    EXPECT_NE(cat.exit_code, 137) << "cat hung";
    EXPECT_NE(xattrs.exit_code, 137) << "the xattr walk hung";
    auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
    std::printf("mounted: ls %d (%s), cat %d (%s), xattrs %d (%s)\n", ls.exit_code, first_line(ls.out).c_str(),
                cat.exit_code, first_line(cat.out).c_str(), xattrs.exit_code, first_line(xattrs.out).c_str());
    if (RunTool("fusermount3 -u " + mnt_).exit_code != 0) RunTool("umount -l " + mnt_);
    const auto exit_deadline = Clock::now() + std::chrono::seconds(30);
    while (waitpid(pid, &status, WNOHANG) != pid) {
      if (Clock::now() > exit_deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "walfs did not exit within 30 s of the unmount; output:\n" << Slurp(log_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string out = Slurp(log_);
    ASSERT_TRUE(WIFEXITED(status)) << "walfs died of signal " << WTERMSIG(status) << "; output:\n" << out;
    EXPECT_FALSE(SanitizerSpoke(out)) << out;
  }

  std::string tmp_, image_, mnt_, log_;
};

TEST_F(HostileMount, DamagedSuperblockIsRefusedWithAMessage) {
  std::string what;
  WriteDamaged(Flavour::kClean, BlockKind::kSuperblock, &what);
  MountAndRead(what);
}

TEST_F(HostileMount, DamagedTreesAndInodesMountOrRefuseAndTheDaemonExits) {
  for (BlockKind k : {BlockKind::kDirNode, BlockKind::kExtentNode, BlockKind::kXattrNode, BlockKind::kInodeChunk,
                      BlockKind::kAgHeader}) {
    std::string what;
    WriteDamaged(Flavour::kClean, k, &what);
    MountAndRead(what);
    if (HasFatalFailure()) return;
  }
}

TEST_F(HostileMount, DamagedLogOfACrashedImageMountsOrRefusesAndTheDaemonExits) {
  for (BlockKind k : {BlockKind::kLogRecord, BlockKind::kDirNode, BlockKind::kImap}) {
    std::string what;
    WriteDamaged(Flavour::kCrashed, k, &what);
    MountAndRead(what);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace walfs::testing
