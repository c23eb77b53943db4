// The mount behind MountedFs: mkfs an image, run `walfs IMAGE MNT -f` as a
// child, wait for the mount to appear in /proc/self/mountinfo, and at the end
// unmount, require the daemon to exit 0 and `fsck.walfs -n` to say clean.
#include "tests/fuse/mount_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "base/file_lock.h"
#include "base/mount_table.h"
#include "tests/fuse/thread_report.h"

namespace walfs::testing {
std::string BinDir() {
  if (const char* env = std::getenv("WALFS_BIN_DIR"); env != nullptr && *env != '\0') return env;
  return WALFS_BIN_DIR;
}

std::string Slurp(const std::string& path) {
  // read(2) into a string sized once: the image comparisons slurp 64 MiB,
  // which a stringstream copied three times over (a second an image under
  // the sanitizers).  Files that say size 0 (/proc, /sys, the control
  // directory's) are read until end of file all the same.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st = {};
  std::string out(::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0, '\0');
  std::size_t have = 0;
  char more[4096];
  for (;;) {
    const bool room = have < out.size();
    const ssize_t n = room ? ::read(fd, out.data() + have, out.size() - have) : ::read(fd, more, sizeof more);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!room) out.append(more, static_cast<std::size_t>(n));
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(have);
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

bool OnPath(const std::string& prog) {
  return RunTool("command -v " + prog + " >/dev/null").exit_code == 0;
}

// The fstype mounted at `mnt`, or "" if nothing is.
std::string MountedFsType(const std::string& mnt) {
  const std::optional<MountEntry> m = TopMountAt(mnt);
  return m ? m->fstype : "";
}

}  // namespace

std::string FuseUnavailableReason() {
  const int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open /dev/fuse: ") + strerror(errno);
  close(fd);
  if (!OnPath("fusermount3")) return "fusermount3 is not installed";
  if (geteuid() != 0) {
    // The permission tests mount with allow_other, which needs this.
    std::ifstream conf("/etc/fuse.conf");
    std::string line;
    bool allowed = false;
    while (std::getline(conf, line)) allowed |= line.rfind("user_allow_other", 0) == 0;
    if (!allowed) return "not root and /etc/fuse.conf lacks user_allow_other";
  }
  return "";
}

WalfsMount::~WalfsMount() {
  if (pid_ > 0) {
    std::string ignored = Unmount();
  }
  std::error_code ec;
  if (!tmp_.empty()) std::filesystem::remove_all(tmp_, ec);
}

std::string WalfsMount::Create(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return std::string("mkdtemp: ") + strerror(errno);
  tmp_ = templ;
  // Others must reach the mountpoint: the permission tests run as nobody.
  chmod(tmp_.c_str(), 0755);
  image_ = tmp_ + "/image";
  mnt_ = tmp_ + "/mnt";
  log_ = tmp_ + "/walfs.log";
  if (mkdir(mnt_.c_str(), 0755) != 0) return std::string("mkdir mnt: ") + strerror(errno);
  for (const char* tool : {"mkfs.walfs", "fsck.walfs", "walfs"}) {
    const std::string path = BinDir() + "/" + tool;
    if (access(path.c_str(), X_OK) != 0) {
      return path + " does not exist or is not executable (set WALFS_BIN_DIR to the "
                    "directory holding walfs, mkfs.walfs and fsck.walfs)";
    }
  }
  if (config_.image_size.empty()) return "";
  std::string mkfs_command = BinDir() + "/mkfs.walfs -q -f";
  for (const auto& a : config_.mkfs_args) mkfs_command += " " + a;
  ToolRun mkfs = RunTool(mkfs_command + " " + image_ + " " + config_.image_size);
  if (mkfs.exit_code != 0) return "mkfs.walfs failed:\n" + mkfs.out;
  return "";
}

std::string WalfsMount::Mount(const std::vector<std::string>& extra) {
  std::vector<std::string> args{BinDir() + "/walfs", image_, mnt_, "-f"};
  // $WALFS_FUSE_TRANSPORT (auto, dev, uring) runs every spec over one FUSE
  // transport (mount/uring_transport.h); a spec's own -o transport= comes
  // later and wins.
  if (const char* t = std::getenv("WALFS_FUSE_TRANSPORT"); t != nullptr && *t != '\0')
    args.insert(args.end(), {"-o", std::string("transport=") + t});
  for (const auto& o : config_.options) args.insert(args.end(), {"-o", o});
  for (const auto& o : extra) args.insert(args.end(), {"-o", o});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  log_from_ = LogSize();
  exit_status_ = -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return std::string("fork: ") + strerror(errno);
  if (pid == 0) {
    // Only async-signal-safe calls until exec.  If the test process dies,
    // SIGTERM makes the daemon unmount rather than leave a dead mount.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  const auto deadline = Clock::now() + std::chrono::seconds(config_.mount_timeout_s);
  std::string type;
  while (Clock::now() < deadline) {
    // A live mount: a dead one left by a killed daemon does not count
    // (statfs always reaches the daemon; mount ids are reused), nor the
    // directory underneath, which statfs reaches between walfs detaching
    // the dead mount and mounting its own.
    type = MountedFsType(mnt_);
    struct statfs sf {};
    if (type == "fuse.walfs" && statfs(mnt_.c_str(), &sf) == 0 && sf.f_type == 0x65735546 /* FUSE_SUPER_MAGIC */)
      return "";
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid) {
      pid_ = -1;
      exit_status_ = status;
      return "walfs exited (" + Describe(status) + ") before mounting; its output:\n" + Output();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "no fuse.walfs mount at " + mnt_ + " after " + std::to_string(config_.mount_timeout_s) +
         " s (mounted fstype: \"" + type + "\"); walfs output:\n" + Output();
}

std::string WalfsMount::Unmount(int want_status) {
  if (pid_ <= 0) return "";
  std::string err;
  ToolRun um = RunTool("fusermount3 -u " + mnt_);
  if (um.exit_code != 0) {
    err = "fusermount3 -u failed (" + um.out + "), used umount -l; ";
    RunTool("umount -l " + mnt_);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(config_.exit_timeout_s);
  int status = 0;
  for (;;) {
    if (waitpid(pid_, &status, WNOHANG) == pid_.load()) break;
    if (Clock::now() > deadline) {
      const std::string threads = ThreadReport(pid_);
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      exit_status_ = status;
      return err + "walfs did not exit within " + std::to_string(config_.exit_timeout_s) +
             " s of the unmount (killed); its threads:\n" + threads + "its output:\n" + Output();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  exit_status_ = status;
  const bool want = WIFEXITED(status) && (want_status == kAnyExit || WEXITSTATUS(status) == want_status);
  if (!want) return err + "walfs " + Describe(status) + " after unmount; its output:\n" + Output();
  return err.empty() ? "" : err + "walfs output:\n" + Output();
}

void WalfsMount::Kill() {
  if (pid_ <= 0) return;
  // The connection's number is the mount's device minor (fusectl).
  struct stat st = {};
  const bool have_dev = stat(mnt_.c_str(), &st) == 0;
  kill(pid_, SIGKILL);
  // A killed daemon must be gone at once: its last close of /dev/fuse is
  // what fails the mount's requests.  A thread of it stuck in the kernel
  // on a request to itself would keep it (and the mount) alive forever, so
  // after 30 s the connection is aborted through fusectl to end the test.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_.load()) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "the killed walfs daemon (pid " << pid_ << ") did not exit within 30 s; aborting its "
                    << "connection through /sys/fs/fuse/connections";
      if (have_dev) {
        (void)!system("mountpoint -q /sys/fs/fuse/connections || mount -t fusectl none /sys/fs/fuse/connections");
        std::ofstream(fmt::format("/sys/fs/fuse/connections/{}/abort", minor(st.st_dev))) << "1";
      }
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  exit_status_ = status;
}

std::string WalfsMount::WaitExit(std::chrono::seconds timeout) {
  if (pid_ <= 0) return "walfs is not running";
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_.load()) {
    if (Clock::now() > deadline) {
      return fmt::format("walfs still runs after {} s; its threads:\n{}its output:\n{}", timeout.count(),
                         ThreadReport(pid_), Output());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  exit_status_ = status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return "walfs " + Describe(status) + "; its output:\n" + Output();
}

std::string WalfsMount::WaitSessionEnd(std::chrono::seconds timeout) const {
  const pid_t pid = pid_;
  if (pid <= 0) return "walfs is not running";
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    // "PID (COMM) STATE ...": gone (reaped, unreadable), exited (a zombie,
    // Z), or named for writing back.
    const std::string stat = Slurp(fmt::format("/proc/{}/stat", pid));
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') return "";
    if (stat.find(fmt::format(" ({}) ", kClosingComm)) != std::string::npos) return "";
    if (Clock::now() > deadline) {
      return fmt::format("walfs still serves its FUSE session after {} s; its threads:\n{}", timeout.count(),
                         ThreadReport(pid));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string WalfsMount::Output() const {
  const std::string all = Slurp(log_);
  return all.substr(std::min(log_from_, all.size()));
}

std::string WalfsMount::Fsck() {
  ToolRun r = RunTool(BinDir() + "/fsck.walfs -n " + image_);
  if (r.exit_code == 0) return "";
  return "fsck.walfs -n " + image_ + " exited " + std::to_string(r.exit_code) + ":\n" + r.out;
}

std::string WalfsMount::Describe(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::size_t WalfsMount::LogSize() const {
  struct stat st {};
  return stat(log_.c_str(), &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
}

// A test that runs past the timeout has almost always hung inside walfs (a
// request it never answers), and waiting for ctest's own timeout would lose
// why.  The watchdog records walfs's thread stacks (with gdb, if installed)
// and kills the daemon: the kernel then fails the stuck call with ENOTCONN
// and the test reports the stacks.
class Watchdog {
 public:
  Watchdog() : thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(const WalfsMount* mount, std::string test) {
    std::lock_guard<std::mutex> l(mu_);
    mount_ = mount;
    test_ = std::move(test);
    deadline_ = Clock::now() + Timeout();
    cv_.notify_all();
  }
  // Stops watching; returns the report if it fired.
  std::string Disarm() {
    std::lock_guard<std::mutex> l(mu_);
    mount_ = nullptr;
    return std::exchange(report_, "");
  }
  static std::chrono::seconds Timeout() {
    const char* env = std::getenv("WALFS_FUSE_TEST_TIMEOUT");
    return std::chrono::seconds(env != nullptr ? std::atoi(env) : 120);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (mount_ == nullptr) {
        cv_.wait(l);
        continue;
      }
      if (cv_.wait_until(l, deadline_) != std::cv_status::timeout || mount_ == nullptr) continue;
      if (Clock::now() < deadline_) continue;
      const pid_t pid = mount_->pid();
      std::string r = test_ + " ran longer than " + std::to_string(Timeout().count()) +
                      " s (WALFS_FUSE_TEST_TIMEOUT); walfs (pid " + std::to_string(pid) +
                      ") is presumed hung and was killed.";
      if (pid > 0) {
        r += " Its threads:\n" + ThreadReport(pid);
        kill(pid, SIGKILL);
      }
      report_ = r;
      mount_ = nullptr;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  const WalfsMount* mount_ = nullptr;
  std::string test_;
  Clock::time_point deadline_;
  std::string report_;
  std::thread thread_;
};

namespace {

// The suite's filesystem: a mount, or an external directory.
struct SuiteState {
  std::unique_ptr<WalfsMount> mount;
  std::unique_ptr<Watchdog> watchdog;  // declared after `mount`: destroyed first
  std::string root;           // what tests run under
  std::string skip_reason;    // FUSE unusable here
  std::string failure;        // mounting failed
  int next_dir = 0;
};
SuiteState* suite = nullptr;

const char* ExternalDir() {
  const char* d = std::getenv("WALFS_FUSE_TEST_DIR");
  return d != nullptr && *d != '\0' ? d : nullptr;
}

}  // namespace

void MountedFs::MountSuite(const MountConfig& config) {
  delete suite;
  suite = new SuiteState;
  if (const char* ext = ExternalDir()) {
    std::string templ = std::string(ext) + "/suite-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      suite->failure = "mkdtemp under WALFS_FUSE_TEST_DIR=" + std::string(ext) + ": " +
                       strerror(errno);
      return;
    }
    chmod(templ.c_str(), 0755);
    suite->root = templ;
    return;
  }
  suite->skip_reason = FuseUnavailableReason();
  if (!suite->skip_reason.empty()) return;
  suite->mount = std::make_unique<WalfsMount>(config);
  suite->failure = suite->mount->Create();
  if (suite->failure.empty()) suite->failure = suite->mount->Mount({});
  suite->root = suite->mount->mountpoint();
  suite->watchdog = std::make_unique<Watchdog>();
}

void MountedFs::TearDownTestSuite() {
  if (suite == nullptr) return;
  if (suite->mount != nullptr && suite->failure.empty()) {
    const std::string um = suite->mount->Unmount();
    EXPECT_EQ(um, "") << "unmounting at the end of the suite";
    if (um.empty()) {
      const std::string fsck = suite->mount->Fsck();
      EXPECT_EQ(fsck, "") << "fsck at the end of the suite";
    }
  }
  if (suite->mount == nullptr && !suite->root.empty()) {
    std::error_code ec;  // WALFS_FUSE_TEST_DIR: leave the directory as we found it
    std::filesystem::remove_all(suite->root, ec);
  }
  delete suite;
  suite = nullptr;
}

void MountedFs::SetUp() {
  ASSERT_NE(suite, nullptr) << "a suite's SetUpTestSuite must call MountSuite";
  if (!suite->skip_reason.empty()) {
    std::printf("[  SKIPPED ] FUSE is unavailable: %s\n", suite->skip_reason.c_str());
    GTEST_SKIP() << "FUSE is unavailable: " << suite->skip_reason;
  }
  ASSERT_EQ(suite->failure, "") << "the suite's filesystem could not be set up";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (suite->watchdog != nullptr) {
    suite->watchdog->Arm(suite->mount.get(),
                         std::string(info->test_suite_name()) + "." + info->name());
  }
  dir_ = suite->root + "/" + info->name() + "-" + std::to_string(suite->next_dir++);
  ASSERT_SYS(mkdir(dir_.c_str(), 0755));
}

void MountedFs::TearDown() {
  if (suite == nullptr || suite->root.empty()) return;
  if (suite->watchdog != nullptr) {
    const std::string hung = suite->watchdog->Disarm();
    if (!hung.empty()) {
      ADD_FAILURE() << hung;
      suite->failure = "walfs was killed after a test hung in it";
    }
  }
  std::vector<std::string> leaked;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind(suite->root + "/", 0) != 0) continue;
    leaked.push_back(target);
    close(std::stoi(entry.path().filename().string()));
  }
  if (!leaked.empty() && !HasFailure()) {
    ADD_FAILURE() << "the test left " << leaked.size() << " descriptor(s) open, e.g. "
                  << leaked.front();
  }
}

std::string MountedFs::Path(std::string_view rel) const {
  return rel.empty() ? dir_ : dir_ + "/" + std::string(rel);
}

std::string MountedFs::Root() const {
  if (ExternalDir() != nullptr) return suite->root;
  return suite->mount->mountpoint();
}

bool MountedFs::OnWalfs() { return ExternalDir() == nullptr; }

unsigned long long MountedFs::FsBytes() const {
  struct statvfs sv {};
  if (statvfs(dir_.c_str(), &sv) != 0) return 0;
  return static_cast<unsigned long long>(sv.f_blocks) * sv.f_frsize;
}

void MountedFs::RemountAfterShutdown(const std::vector<std::string>& options) {
  ASSERT_TRUE(OnWalfs()) << "RemountAfterShutdown needs walfs";
  const std::string um = suite->mount->Unmount(1);
  ASSERT_EQ(um, "") << "unmount of a shut-down filesystem";
  const std::string fsck = suite->mount->Fsck();
  // Clean when nothing reached the log after the last clean state (the
  // failed write was the first), else a log left for recovery.
  ASSERT_TRUE(fsck.empty() || fsck.find("not yet replayed") != std::string::npos)
      << "fsck -n of a shut-down filesystem's image:\n" << fsck;
  suite->failure = suite->mount->Mount(options);
  ASSERT_EQ(suite->failure, "") << "mount again (recovery)";
}

void MountedFs::Remount(const std::vector<std::string>& options) {
  ASSERT_TRUE(OnWalfs()) << "Remount needs walfs";
  const std::string um = suite->mount->Unmount();
  ASSERT_EQ(um, "") << "unmount before remount";
  const std::string fsck = suite->mount->Fsck();
  ASSERT_EQ(fsck, "") << "fsck between unmount and mount";
  suite->failure = suite->mount->Mount(options);
  ASSERT_EQ(suite->failure, "") << "mount again";
}

std::string MountedFs::ImagePath() { return suite->mount->image(); }

pid_t MountedFs::DaemonPid() { return suite->mount ? suite->mount->pid() : -1; }

std::string MountedFs::DaemonOutput() { return suite->mount->Output(); }

void MountedFs::KillDaemon() { suite->mount->Kill(); }

std::string MountedFs::WaitForDaemonExit(int seconds) {
  return suite->mount->WaitExit(std::chrono::seconds(seconds));
}

std::string MountedFs::WaitForSessionEnd(int seconds) {
  return suite->mount->WaitSessionEnd(std::chrono::seconds(seconds));
}

void MountedFs::MountAgain(const std::vector<std::string>& options) {
  ASSERT_TRUE(OnWalfs()) << "MountAgain needs walfs";
  suite->failure = suite->mount->Mount(options);
  ASSERT_EQ(suite->failure, "") << "mount again";
}

std::string ErrnoMismatch(const char* call, long result, int got, int want) {
  if (result == -1 && got == want) return "";
  return std::string(call) + " returned " + std::to_string(result) +
         (result == -1 ? std::string(" errno ") + strerrorname_np(got) : std::string()) +
         ", expected -1 errno " + strerrorname_np(want) + " ";
}

void WriteFile(const std::string& path, std::string_view data, int mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_SYS(fd);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()))
      << path << ": " << strerrorname_np(errno);
  ASSERT_SYS(close(fd));
}

void PutControl(const std::string& root, const std::string& rel, std::string_view value) {
  const std::string path = root + "/.walfs/" + rel;
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  ASSERT_SYS(fd) << path;
  EXPECT_EQ(write(fd, value.data(), value.size()), static_cast<ssize_t>(value.size()))
      << path << ": " << strerrorname_np(errno);
  close(fd);
}

long long StatValue(const std::string& root, const std::string& key) {
  return StatIn(ReadFile(root + "/.walfs/stats"), key);
}

long long StatIn(const std::string& stats_text, const std::string& key) {
  const std::string text = "\n" + stats_text;
  const std::string needle = "\n" + key + " ";
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtoll(text.c_str() + at + needle.size(), nullptr, 10);
}

std::string ReadFile(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_NE(fd, -1) << path << ": " << strerrorname_np(errno);
  if (fd < 0) return out;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  EXPECT_EQ(n, 0) << path << ": " << strerrorname_np(errno);
  close(fd);
  return out;
}

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path << ": " << strerrorname_np(errno);
  return st.st_ino;
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  EXPECT_NE(d, nullptr) << path << ": " << strerrorname_np(errno);
  if (d == nullptr) return names;
  errno = 0;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  EXPECT_EQ(errno, 0) << "readdir " << path;
  closedir(d);
  return names;
}

std::string NetRawCapability() {
  const std::uint32_t words[5] = {0x02000000u, 1u << 13, 0, 0, 0};
  return std::string(reinterpret_cast<const char*>(words), sizeof words);
}

}  // namespace walfs::testing
