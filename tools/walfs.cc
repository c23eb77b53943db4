// walfs IMAGE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]: mounts a walfs image.
// Also `mount -t fuse.walfs IMAGE MOUNTPOINT -o ...` and /etc/fstab
// (mount.fuse3 runs this program).  README "Mounting" lists the options.
//
// Startup: a dead mount left on MOUNTPOINT by a killed daemon is detached
// (tools/stale_mount.h); then (without -f) the daemon detaches, and the
// image is opened, locked (no second mount, mkfs or fsck while this one
// runs: base/file_lock.h) and recovered, and the FUSE session mounted; any
// failure before that is one line on stderr and exit status 1.  Shutdown (umount, fusermount3 -u,
// SIGTERM/SIGINT/SIGHUP): the session ends, the log is forced, everything
// written back, the unmount record written and the superblock marked
// clean, and only then does the process exit (status 0).
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/messages.h"
#include "fs/filesystem.h"
#include "journal/wake_mode.h"
#include "mount/fuse_server.h"
#include "tools/stale_mount.h"
#include "tracing/options.h"
#include "tracing/tracer.h"

namespace {

struct Config {
  char* image = nullptr;
  char* wake = nullptr;
  unsigned logbufs = 8;
  unsigned logbsize = 32 * 1024;
  unsigned threads = 0;
  char* commit = nullptr;  // seconds; parsed whole (fuse_opt's %u ignores trailing text)
  char* lazy_commit = nullptr;  // milliseconds; parsed whole
  int writeback_cache = 0;
  int trace_poll = 0;
  int ro = 0;
  int norecovery = 0;
  int sync_io = 0;  // io=sync: pread/pwrite instead of io_uring
  int fault_injection = 0;
  char* trace_wakeup = nullptr;
  unsigned trace_delay_us = 0;
  char* trace_recursion = nullptr;
  unsigned trace_buffer_kb = 0;
  int help = 0;

  Config() = default;
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;
  // fuse_opt_parse strdup()s every string option.
  ~Config() {
    for (char* p : {image, wake, commit, lazy_commit, trace_wakeup, trace_recursion}) free(p);
  }
};

#define WALFS_OPT(t, p) {t, offsetof(Config, p), 1}
const fuse_opt kOptions[] = {
    WALFS_OPT("wake=%s", wake),
    WALFS_OPT("logbufs=%u", logbufs),
    WALFS_OPT("logbsize=%u", logbsize),
    WALFS_OPT("threads=%u", threads),
    WALFS_OPT("commit=%s", commit),
    WALFS_OPT("lazy_commit_ms=%s", lazy_commit),
    WALFS_OPT("writeback_cache", writeback_cache),
    WALFS_OPT("trace_poll", trace_poll),
    WALFS_OPT("norecovery", norecovery),
    WALFS_OPT("io=sync", sync_io),
    WALFS_OPT("fault_injection", fault_injection),
    WALFS_OPT("trace_wakeup=%s", trace_wakeup),
    WALFS_OPT("trace_delay_us=%u", trace_delay_us),
    WALFS_OPT("trace_recursion=%s", trace_recursion),
    WALFS_OPT("trace_buffer_kb=%u", trace_buffer_kb),
    WALFS_OPT("-h", help),
    WALFS_OPT("--help", help),
    FUSE_OPT_END,
};

int ProcessArg(void* data, const char* arg, int key, fuse_args*) {
  auto* cfg = static_cast<Config*>(data);
  if (key == FUSE_OPT_KEY_NONOPT && cfg->image == nullptr) {
    cfg->image = strdup(arg);
    return 0;  // consumed: the mountpoint is left for fuse_parse_cmdline
  }
  if (key == FUSE_OPT_KEY_OPT && (std::strcmp(arg, "ro") == 0)) {
    cfg->ro = 1;
    return 1;  // and the kernel mount is read-only too
  }
  return 1;
}

void Usage(const char* prog) {
  fmt::print(
      "usage: {} IMAGE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]\n"
      "walfs options:\n"
      "  -o ro                   read-only (recovery still runs)\n"
      "  -o norecovery           read-only; refuse an image whose log needs recovery\n"
      "  -o wake=inline|waking|wakeq   how grant-head waiters are woken (default wakeq)\n"
      "  -o logbufs=N            in-core log buffers, 2..16 (default 8)\n"
      "  -o logbsize=BYTES       log buffer size, 16384..57856 (default 32768)\n"
      "  -o commit=SECONDS       changes start to reach the log at most this long after they are\n"
      "                          made, fsynced or not: what a crash can lose (0..86400, default\n"
      "                          30; 0: only an fsync, unmount or a CIL of 1/8 of the log do)\n"
      "  -o lazy_commit_ms=MS    changes are written to the image (no device flush) at most this\n"
      "                          long after they are made: what a killed daemon can lose; a power\n"
      "                          cut is bounded by commit= (0..1000, default 5; 0: off)\n"
      "  -o threads=N            FUSE worker threads kept idle (default: libfuse's 10)\n"
      "  -o max_threads=N        at most N FUSE worker threads (libfuse's; default 10)\n"
      "  -o writeback_cache      let the kernel cache writes\n"
      "  -o io=sync              pread/pwrite instead of io_uring\n"
      "  -o fault_injection      testing: fail the image's I/O on command (MOUNTPOINT/.walfs/fault)\n"
      "  -o trace_poll           poll(2) on .walfs/trace_pipe waits for events (costs every\n"
      "                          io_uring read and write a FUSE round trip; see the README)\n"
      "  -o trace_wakeup=immediate|deferred, trace_delay_us=N, trace_recursion=safe|fast|context,\n"
      "     trace_buffer_kb=N    tracer options (also in MOUNTPOINT/.walfs/options/)\n"
      "FUSE options (-o allow_other, default_permissions, ...): see mount.fuse3(8).\n",
      prog);
}

int Fail(const std::string& msg) {
  fmt::print(stderr, "walfs: {}\n", msg);
  return 1;
}

}  // namespace

// What fuse_opt_* and fuse_parse_cmdline allocate, freed on every return
// (LeakSanitizer checks the daemon in the asan test job).
struct ArgsGuard {
  fuse_args* args;
  fuse_cmdline_opts* cmd;
  ~ArgsGuard() {
    free(cmd->mountpoint);
    fuse_opt_free_args(args);
  }
};

int main(int argc, char** argv) {
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  fuse_cmdline_opts cmd{};
  ArgsGuard guard{&args, &cmd};
  Config cfg;
  if (fuse_opt_parse(&args, &cfg, kOptions, ProcessArg) != 0) return Fail("bad options (see walfs --help)");
  if (cfg.help) {
    Usage(argv[0]);
    return 0;
  }
  if (fuse_parse_cmdline(&args, &cmd) != 0) return Fail("bad command line (see walfs --help)");
  if (cmd.show_help) {
    Usage(argv[0]);
    return 0;
  }
  if (cmd.show_version) {
    fmt::print("walfs (libfuse {})\n", fuse_pkgversion());
    return 0;
  }
  if (cfg.image == nullptr || cmd.mountpoint == nullptr) {
    Usage(argv[0]);
    return 1;
  }
  // Kernel-side permission checks: walfs stores modes and owners; the kernel
  // enforces them.  Mounted as root, other users may use it (like a kernel fs).
  fuse_opt_add_arg(&args, "-odefault_permissions");
  fuse_opt_add_arg(&args, fmt::format("-ofsname={}", cfg.image).c_str());
  fuse_opt_add_arg(&args, "-osubtype=walfs");
  if (geteuid() == 0) fuse_opt_add_arg(&args, "-oallow_other");

  walfs::fs::MountOptions mo;
  mo.image = cfg.image;
  mo.read_only = cfg.ro || cfg.norecovery;
  mo.norecovery = cfg.norecovery;
  mo.logbufs = cfg.logbufs;
  mo.logbsize = cfg.logbsize;
  mo.io_uring = !cfg.sync_io;
  if (cfg.commit != nullptr) {
    const std::string_view v(cfg.commit);
    unsigned seconds = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || seconds > 86400)
      return Fail(fmt::format("commit={}: the interval is 0 to 86400 seconds (0: no timed commits)", v));
    mo.commit_interval_s = seconds;
  }
  if (cfg.lazy_commit != nullptr) {
    const std::string_view v(cfg.lazy_commit);
    unsigned ms = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || ms > 1000)
      return Fail(fmt::format("lazy_commit_ms={}: the delay is 0 to 1000 milliseconds (0: off)", v));
    mo.lazy_commit_ms = ms;
  }
  mo.fault_injection = cfg.fault_injection != 0;
  if (cfg.wake) {
    auto m = walfs::journal::ParseWakeMode(cfg.wake);
    if (!m.ok()) return Fail(fmt::format("wake={}: {}", cfg.wake, m.status().message()));
    mo.wake_mode = *m;
  }
  // Tracer options are checked now and applied after the fork (the tracer
  // may start threads).
  std::optional<walfs::tracing::WakeupMode> trace_wakeup;
  std::optional<walfs::tracing::RecursionMode> trace_recursion;
  if (cfg.trace_wakeup) {
    auto w = walfs::tracing::ParseWakeupMode(cfg.trace_wakeup);
    if (!w.ok()) return Fail(fmt::format("trace_wakeup={}: {}", cfg.trace_wakeup, w.status().message()));
    trace_wakeup = *w;
  }
  if (cfg.trace_recursion) {
    auto r = walfs::tracing::ParseRecursionMode(cfg.trace_recursion);
    if (!r.ok()) return Fail(fmt::format("trace_recursion={}: {}", cfg.trace_recursion, r.status().message()));
    trace_recursion = *r;
  }

  // A dead mount left on the mountpoint by a killed daemon is detached
  // (tools/stale_mount.h) before anything is opened, so a failure here
  // leaves the image alone.
  if (walfs::Status s = walfs::tools::ClearStaleMount(cmd.mountpoint, stderr); !s.ok())
    return Fail(std::string(s.message()));

  // Detach first (our own fork, so the parent can report how the mount went):
  // no thread may exist before fork().
  int report[2] = {-1, -1};
  if (!cmd.foreground) {
    if (pipe(report) != 0) return Fail(fmt::format("pipe: {}", std::strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0) return Fail(fmt::format("fork: {}", std::strerror(errno)));
    if (pid > 0) {
      close(report[1]);
      std::string msg;
      char buf[512];
      ssize_t n;
      while ((n = read(report[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
      if (msg == "ok") return 0;
      if (msg.empty()) msg = "walfs: the daemon died while mounting\n";
      fmt::print(stderr, "{}", msg);
      return 1;
    }
    close(report[0]);
    setsid();
  }
  // Messages (mount, recovery, errors, shutdown): a detached daemon's go to
  // syslog, a foreground one's to stderr; both are in MOUNTPOINT/.walfs/messages.
  walfs::Messages::Get().SetSink(cmd.foreground ? walfs::Messages::Sink::kStderr : walfs::Messages::Sink::kSyslog);
  auto report_and_exit = [&](const std::string& msg) {
    const std::string line = fmt::format("walfs: {}\n", msg);
    if (report[1] >= 0) {
      (void)!write(report[1], line.data(), line.size());
      close(report[1]);
    } else {
      fmt::print(stderr, "{}", line);
    }
    return 1;
  };

  {
    walfs::tracing::Tracer& tracer = walfs::tracing::Tracer::Get();
    walfs::tracing::TracerOptions to = tracer.options();
    if (trace_wakeup) to.wakeup = *trace_wakeup;
    if (trace_recursion) to.recursion = *trace_recursion;
    if (cfg.trace_delay_us) to.wakeup_delay_us = cfg.trace_delay_us;
    if (cfg.trace_buffer_kb) to.buffer_size_kb = cfg.trace_buffer_kb;
    walfs::Status s = tracer.SetOptions(to);
    if (!s.ok()) return report_and_exit(fmt::format("tracer options: {}", s.message()));
  }
  auto fs = walfs::fs::Filesystem::Mount(mo);
  if (!fs.ok()) return report_and_exit(fmt::format("{}: {}", cfg.image, fs.status().ToString()));
  if (cmd.foreground) fmt::print(stderr, "walfs: {}: {}\n", cfg.image, (*fs)->Describe());

  walfs::mount::FuseServer server(fs->get(), {.writeback_cache = cfg.writeback_cache != 0, .trace_poll = cfg.trace_poll != 0});
  fuse_session* se = fuse_session_new(&args, &walfs::mount::FuseServer::Operations(),
                                      sizeof(fuse_lowlevel_ops), &server);
  if (se == nullptr) {
    (void)(*fs)->Unmount();
    return report_and_exit("could not create the FUSE session (bad FUSE option?)");
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    (void)(*fs)->Unmount();
    return report_and_exit("could not install signal handlers");
  }
  if (fuse_session_mount(se, cmd.mountpoint) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    (void)(*fs)->Unmount();
    return report_and_exit(fmt::format("could not mount on {}", cmd.mountpoint));
  }
  if (report[1] >= 0) {
    (void)!write(report[1], "ok", 2);
    close(report[1]);
    (void)!freopen("/dev/null", "r", stdin);
    (void)!freopen("/dev/null", "w", stdout);
    (void)!freopen("/dev/null", "w", stderr);
  }

  int rc;
  if (cmd.singlethread) {
    rc = fuse_session_loop(se);
  } else {
    fuse_loop_config* lc = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(lc, cmd.clone_fd);
    if (cmd.max_threads > 0 && cmd.max_threads <= 100000) fuse_loop_cfg_set_max_threads(lc, cmd.max_threads);
    fuse_loop_cfg_set_idle_threads(lc, cfg.threads ? cfg.threads : cmd.max_idle_threads);
    rc = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
  }
  server.control().InterruptReaders();
  server.StopPolling();  // it notifies through the session
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  walfs::Status s = (*fs)->Unmount();  // says how it went in the messages
  if (!s.ok()) return 1;
  return rc < 0 ? 1 : 0;
}
