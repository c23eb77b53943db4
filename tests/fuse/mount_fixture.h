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

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tools/tool_run.h"

namespace walfs::testing {

struct MountConfig {
  std::string image_size = "2g";  // sparse; big enough for 100k inodes; "": no mkfs
  std::vector<std::string> options = {};  // each passed as `-o opt`
  int mount_timeout_s = 10;  // for the mount to appear
  // For the daemon to exit after the unmount: as long as a new mount waits
  // for a closing daemon (base/file_lock.h), since the write-back at exit
  // waits for the disk, which a loaded CI machine can make slow.
  int exit_timeout_s = 60;
  std::vector<std::string> mkfs_args = {};  // more mkfs.walfs arguments ("-l", "size=N")
};

// Why this machine cannot mount FUSE filesystems, or "" if it can.
std::string FuseUnavailableReason();

// One image and the `walfs IMAGE MNT -f` daemon on it, in a temp directory
// of its own (the mount behind MountedFs; tests that bring their own image,
// such as the hostile-image mounts, use it directly).  The destructor
// unmounts if the daemon still runs and removes the directory.  Calls that
// can fail return an error message, "" on success.
class WalfsMount {
 public:
  explicit WalfsMount(MountConfig config) : config_(std::move(config)) {}
  ~WalfsMount();
  WalfsMount(const WalfsMount&) = delete;
  WalfsMount& operator=(const WalfsMount&) = delete;

  // Makes the temp dir (under /tmp, named `prefix`-XXXXXX) and, unless
  // config.image_size is "", the image (mkfs.walfs).
  std::string Create(const std::string& prefix = "walfs-fuse");
  // Starts the daemon and waits for the mount.  If the daemon exits before
  // mounting, the error says so and exit_status() is its wait status; on a
  // timeout the daemon is left running (Kill() it).
  std::string Mount(const std::vector<std::string>& extra);
  // Unmounts and waits for the daemon to exit with `want_status` (0: a
  // clean unmount; 1: the filesystem had shut down, the log is left for
  // recovery; kAnyExit: any exit status, but not a signal).
  static constexpr int kAnyExit = -1;
  std::string Unmount(int want_status = 0);
  // SIGKILL, and reap: the mount is left dead (ENOTCONN), as after a crash.
  void Kill();
  // Waits for the daemon to exit on its own; "" when it exited 0.
  std::string WaitExit(std::chrono::seconds timeout);
  // Waits for the daemon to leave its FUSE session: "" once it has exited
  // or its main thread is named kClosingComm (the session is over and it is
  // writing the image back, which may take long on a loaded machine).
  std::string WaitSessionEnd(std::chrono::seconds timeout) const;
  // fsck.walfs -n on the image.
  std::string Fsck();

  const std::string& mountpoint() const { return mnt_; }
  const std::string& image() const { return image_; }
  pid_t pid() const { return pid_; }
  // The wait status of the daemon's last exit (before mounting, or in
  // Unmount, Kill or WaitExit); -1 from Mount() on until it exits.
  int exit_status() const { return exit_status_; }
  // What the daemon printed since it was last started.
  std::string Output() const;
  // "exit status N" or "killed by SIG" for a wait status.
  static std::string Describe(int status);

 private:
  std::size_t LogSize() const;

  MountConfig config_;
  std::string tmp_, image_, mnt_, log_;
  std::size_t log_from_ = 0;
  int exit_status_ = -1;
  std::atomic<pid_t> pid_{-1};
};

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
  // own, else why not.  WaitForSessionEnd: "" once the daemon has left its
  // FUSE session (WalfsMount::WaitSessionEnd).  DaemonOutput: what it
  // printed since it last started.
  static void KillDaemon();
  static void MountAgain(const std::vector<std::string>& options = {});
  static std::string WaitForDaemonExit(int seconds);
  static std::string WaitForSessionEnd(int seconds);
  static std::string DaemonOutput();
  static std::string ImagePath();
  static pid_t DaemonPid();  // -1 when not running

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
// Walfs's control directory ROOT/.walfs: writes `value` to the file `rel`
// (as `echo -n value > rel`), and reads the number on a `key value` line
// of its stats (-1 when the line is missing); StatIn reads it from one
// snapshot of the stats text, for several values read together.
void PutControl(const std::string& root, const std::string& rel, std::string_view value);
long long StatValue(const std::string& root, const std::string& key);
long long StatIn(const std::string& stats_text, const std::string& key);
// A version-2 file capability granting CAP_NET_RAW (linux/capability.h's
// vfs_cap_data, little-endian), the value of a security.capability xattr:
// the kernel accepts only a well-formed one.
std::string NetRawCapability();
// Every name in a directory except "." and "..", in readdir order.
std::vector<std::string> ListDir(const std::string& path);

}  // namespace walfs::testing
