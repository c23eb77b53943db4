#include "bench/killtest/daemon.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <optional>

#include <fmt/format.h>

#include "base/mount_table.h"
#include "bench/killtest/process.h"

namespace walfs::bench::killtest {

namespace {

using Clock = std::chrono::steady_clock;

constexpr decltype(statfs::f_type) kFuseSuperMagic = 0x65735546;  // linux/magic.h FUSE_SUPER_MAGIC

// True when a fuse.walfs mount at `mnt` answers: the last one listed there
// is walfs and statfs (which always reaches the daemon) works.  A dead mount
// left by a killed daemon fails statfs with ENOTCONN.
bool LiveWalfsMount(const std::string& mnt) {
  const std::optional<MountEntry> top = TopMountAt(mnt);
  const std::string type = top ? top->fstype : "";
  // The filesystem type too: between walfs detaching a dead mount and
  // mounting its own, statfs reaches the directory underneath.
  struct statfs sf = {};
  return type == "fuse.walfs" && ::statfs(mnt.c_str(), &sf) == 0 && sf.f_type == kFuseSuperMagic;
}

std::size_t FileSize(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
}

// The `fuse_transport` word of the mount's stats ("" if unreadable).
std::string TransportInUse(const std::string& mnt) {
  std::ifstream in(mnt + "/.walfs/stats");
  std::string key, value;
  while (in >> key) {
    if (key == "fuse_transport" && in >> value) return value;
    std::getline(in, value);
  }
  return "";
}

// With setup.transport, the mount must serve through it: transport=uring
// falls back to /dev/fuse (warning) where the kernel does not take the
// rings, and a campaign "over the rings" would then test the wrong thing.
// The rings start serving right after INIT's reply: allow them a moment.
Status CheckTransport(const Setup& setup) {
  if (setup.transport.empty()) return Status::Ok();
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  std::string used;
  for (;;) {
    used = TransportInUse(setup.mnt);
    if (used == setup.transport || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (used == setup.transport) return Status::Ok();
  return Status::NotSupported(fmt::format(
      "asked for transport={}, the mount serves through {} (see {})", setup.transport,
      used.empty() ? "an unknown transport" : used, setup.daemon_log));
}

}  // namespace

Result<Daemon> StartDaemon(const Setup& setup, int timeout_s) {
  const std::size_t log_from = FileSize(setup.daemon_log);
  const auto start = Clock::now();
  std::vector<std::string> argv = {setup.bin_dir + "/walfs", setup.image, setup.mnt, "-f"};
  std::string options = setup.mount_options;
  if (!setup.transport.empty())
    options += (options.empty() ? "" : ",") + std::string("transport=") + setup.transport;
  if (!options.empty()) {
    argv.push_back("-o");
    argv.push_back(options);
  }
  WALFS_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, LogTo(setup.daemon_log)));
  Daemon d;
  d.pid = pid;
  const auto deadline = start + std::chrono::seconds(timeout_s);
  for (;;) {
    if (LiveWalfsMount(setup.mnt)) {
      d.mount_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (Status s = CheckTransport(setup); !s.ok()) {
        (void)UnmountAndWait(setup, &d, timeout_s);
        if (d.pid > 0) KillGroupAndReap(d.pid);
        return s;
      }
      d.output = Slurp(setup.daemon_log, log_from);
      return d;
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return Status::IoError(fmt::format("walfs {} before mounting; it said:\n{}",
                                         DescribeStatus(status), Slurp(setup.daemon_log, log_from)));
    }
    if (Clock::now() >= deadline) {
      KillGroupAndReap(pid);
      return Status::IoError(fmt::format("no new fuse.walfs mount at {} after {} s; walfs said:\n{}",
                                         setup.mnt, timeout_s, Slurp(setup.daemon_log, log_from)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Status UnmountAndWait(const Setup& setup, Daemon* daemon, int timeout_s) {
  const std::size_t log_from = FileSize(setup.daemon_log);
  if (::geteuid() == 0) {
    if (::umount2(setup.mnt.c_str(), 0) != 0)
      return Status::FromErrno(errno, fmt::format("umount {}", setup.mnt));
  } else {
    RunResult r = Run({"fusermount3", "-u", setup.mnt});
    if (r.exit_code != 0)
      return Status::IoError(fmt::format("fusermount3 -u {}: {}", setup.mnt, r.output));
  }
  std::optional<int> status = WaitFor(daemon->pid, std::chrono::seconds(timeout_s));
  const pid_t pid = std::exchange(daemon->pid, -1);
  if (!status) {
    KillGroupAndReap(pid);
    return Status::IoError(fmt::format("walfs did not exit within {} s of the unmount", timeout_s));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return Status::IoError(fmt::format("walfs {} after a clean unmount; it said:\n{}",
                                       DescribeStatus(*status), Slurp(setup.daemon_log, log_from)));
  }
  return Status::Ok();
}

}  // namespace walfs::bench::killtest
