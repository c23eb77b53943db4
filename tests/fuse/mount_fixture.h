// MountedFs: a gtest fixture that runs each test in a fresh directory of a
// mounted walfs, so the tests exercise the filesystem the way programs do --
// through the kernel's FUSE client, with real errnos.
//
// One mount serves a whole test suite (mkfs + mount + unmount + fsck once per
// suite: ctest runs each TEST in its own process, so there a suite is a test).
// SetUp() gives every test a fresh empty directory `Path("")`; TearDown leaves
// it in place so the suite's final fsck sees everything the tests made.
// A suite that needs a different image or mount options defines its own
//
//   static void SetUpTestSuite() { MountSuite({.image_size = "64m"}); }
//
// Remount() unmounts, runs `fsck.walfs -n` (it must be clean), and mounts the
// same image again; the test's directory survives.
//
// Where the programs come from: `mkfs.walfs`, `fsck.walfs` and `walfs` are
// taken from $WALFS_BIN_DIR if set, else from the build's bin directory
// (compile definition WALFS_BIN_DIR).  A missing `walfs` fails the suite.
//
// Running elsewhere: with WALFS_FUSE_TEST_DIR=/some/dir nothing is mounted;
// every test runs in a fresh directory under /some/dir, and tests that need
// walfs itself (its control directory, remounts, fsck) skip.  That is how the
// tests are checked against tmpfs and ext4: a test that fails there is wrong.
//
// Hangs: a test running longer than $WALFS_FUSE_TEST_TIMEOUT seconds (default
// 120) has the daemon's thread stacks recorded (gdb, if installed) and the
// daemon killed, so the stuck call returns ENOTCONN and the test fails with
// the stacks instead of waiting for ctest's timeout.
//
// Skips: only when this machine cannot mount FUSE at all -- /dev/fuse cannot
// be opened, fusermount3 is missing, or we are not root and /etc/fuse.conf
// lacks user_allow_other.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tools/tool_run.h"

namespace walfs::testing {

struct MountConfig {
  std::string image_size = "2g";  // sparse; big enough for 100k inodes
  std::vector<std::string> options;  // each passed as `-o opt`
};

class WalfsMount;

class MountedFs : public ::testing::Test {
 public:
  static void SetUpTestSuite() { MountSuite(MountConfig{}); }
  static void TearDownTestSuite();

 protected:
  // Mounts (or, with WALFS_FUSE_TEST_DIR, prepares) the suite's filesystem.
  // Problems are remembered and reported by every SetUp().
  static void MountSuite(const MountConfig& config);

  void SetUp() override;
  // Closes descriptors the test left open inside the filesystem (an ASSERT
  // that returned early) so the unmount is not busy; a test that passed and
  // still left one open fails.
  void TearDown() override;

  // The test's own directory, or a path inside it.
  std::string Path(std::string_view rel = "") const;
  // The root of the mounted filesystem (or the external directory).
  std::string Root() const;
  // True when the tests run on walfs (not on WALFS_FUSE_TEST_DIR).
  static bool OnWalfs();
  // Total bytes of the filesystem under test (statvfs).
  unsigned long long FsBytes() const;

  // Unmount, fsck -n (must be clean), mount again.  Walfs only.
  void Remount(const std::vector<std::string>& options = {});
  // For a filesystem that shut down: unmount (the daemon must exit 1, the
  // log not closed), fsck -n (clean, or only the log left to replay), mount
  // again (recovery runs).  Walfs only.
  void RemountAfterShutdown(const std::vector<std::string>& options = {});

  // For crash and stale-mount tests (walfs only).  KillDaemon sends SIGKILL
  // and reaps: the mount stays, dead (ENOTCONN).  MountAgain starts the
  // daemon on the same image and mountpoint (no unmount, no fsck) and waits
  // for a new mount.  WaitForDaemonExit: "" once the daemon exited 0 on its
  // own, else why not.  DaemonOutput: what it printed since it last started.
  static void KillDaemon();
  static void MountAgain(const std::vector<std::string>& options = {});
  static std::string WaitForDaemonExit(int seconds);
  static std::string DaemonOutput();
  static std::string ImagePath();

  static ToolRun RunTool(const std::string& command) { return testing::RunTool(command); }

 private:
  std::string dir_;
};

// For tests of walfs itself: skips under WALFS_FUSE_TEST_DIR.
#define WALFS_REQUIRE_WALFS()                                                        \
  do {                                                                               \
    if (!OnWalfs()) GTEST_SKIP() << "walfs-specific test; WALFS_FUSE_TEST_DIR is set"; \
  } while (0)

// Errno checks.  EXPECT_ERRNO(EEXIST, open(...)) expects the call to return
// -1 with errno EEXIST; ASSERT_SYS(call) asserts it did not return -1.  All
// take a streamed message like other gtest assertions.
std::string ErrnoMismatch(const char* call, long result, int got, int want);
#define WALFS_ERRNO_CHECK_(fail, err, call)                                          \
  switch (0)                                                                         \
  case 0:                                                                            \
  default:                                                                           \
    if (const std::string walfs_m_ = [&] {                                           \
          errno = 0;                                                                 \
          const long walfs_r_ = static_cast<long>(call);                             \
          return ::walfs::testing::ErrnoMismatch(#call, walfs_r_, errno, err);       \
        }();                                                                         \
        walfs_m_.empty())                                                            \
      ;                                                                              \
    else                                                                             \
      fail() << walfs_m_
#define EXPECT_ERRNO(err, call) WALFS_ERRNO_CHECK_(ADD_FAILURE, err, call)
#define ASSERT_ERRNO(err, call) WALFS_ERRNO_CHECK_(FAIL, err, call)
#define ASSERT_SYS(call) \
  ASSERT_NE(static_cast<long>(call), -1L) << #call << ": " << strerrorname_np(errno) << " "
#define EXPECT_SYS(call) \
  EXPECT_NE(static_cast<long>(call), -1L) << #call << ": " << strerrorname_np(errno) << " "

// Where mkfs.walfs, fsck.walfs and walfs are: $WALFS_BIN_DIR, else the build's.
std::string BinDir();
// A whole file's bytes ("" if it cannot be read).
std::string Slurp(const std::string& path);

// Small file helpers; they fail the current test on error.
void WriteFile(const std::string& path, std::string_view data, int mode = 0644);
std::string ReadFile(const std::string& path);
ino_t InodeOf(const std::string& path);  // lstat
// Every name in a directory except "." and "..", in readdir order.
std::vector<std::string> ListDir(const std::string& path);

}  // namespace walfs::testing
