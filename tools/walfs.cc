// walfs IMAGE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]: mounts a walfs image.
// `walfs sync PATH...` makes a mount durable instead (tools/walfs_sync.h),
// `walfs grow [-n] MNT [SIZE]` grows one (tools/growfs.h); an image file
// called `sync` or `grow` is mounted as ./sync or ./grow.
// Also `mount -t fuse.walfs IMAGE MOUNTPOINT -o ...` and /etc/fstab
// (mount.fuse3 runs this program).  README "Mounting" lists the options.
//
// Startup: a dead mount left on MOUNTPOINT by a killed daemon is detached
// (tools/stale_mount.h); then (without -f) the daemon detaches, and the
// image is opened, locked (no second mount, mkfs or fsck while this one
// runs: base/file_lock.h) and recovered, and the FUSE session mounted.
// A usage error (an unknown option, a value outside its range, a missing
// argument) is one line on stderr ending in "see walfs --help", exit status
// 2, as every walfs program's (tools/cli.h), found before anything is
// opened; a mount that fails (no image, not a walfs image, the image in use,
// no mount point) is one line with the reason, exit status 32, mount(8)'s
// "mount failure", which mount.fuse3 passes on.  Shutdown (umount, fusermount3 -u,
// SIGTERM/SIGINT/SIGHUP): the session ends, the log is forced, everything
// written back, the unmount record written and the superblock marked
// clean, and only then does the process exit (status 0; 1 when that failed).
#define FUSE_USE_VERSION 314
#include <fuse_log.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "base/file_lock.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "journal/wake_mode.h"
#include "mount/fuse_server.h"
#include "tools/cli.h"
#include "tools/stale_mount.h"
#include "tools/growfs.h"
#include "tools/mount_point.h"
#include "tools/walfs_args.h"
#include "tools/walfs_sync.h"
#include "tracing/options.h"
#include "tracing/tracer.h"

namespace {

using walfs::tools::Config;
using walfs::tools::HidesImage;
using walfs::tools::MountSource;
using walfs::tools::ParseNumber;
using walfs::tools::ParseTimeout;
using walfs::tools::ResolveMountpoint;

constexpr int kUsageExit = walfs::cli::kUsageExit;
constexpr int kMountFailedExit = 32;  // mount(8): "mount failure"

int UsageError(std::string_view what) { return walfs::tools::MountUsageError(what); }

// "walfs: WHY", exit status 32.
int MountFailed(std::string_view why) {
  fmt::print(stderr, "walfs: {}\n", why);
  return kMountFailedExit;
}

// libfuse prints its own complaints ("fuse: unknown option(s): `-o foo'",
// "fuse: missing argument after `-o'") through fuse_log, on stderr and in
// pieces.  While a FuseLogCapture lives they are kept instead, to become part
// of walfs's one line.  Only main() parses and mounts, before any other
// thread exists.
class FuseLogCapture {
 public:
  FuseLogCapture() {
    Buffer().clear();
    fuse_set_log_func(&Append);
  }
  ~FuseLogCapture() { fuse_set_log_func(nullptr); }  // libfuse's own again (stderr)
  FuseLogCapture(const FuseLogCapture&) = delete;
  FuseLogCapture& operator=(const FuseLogCapture&) = delete;

  // What libfuse said since the last Take(), without its "fuse: " and
  // newlines (lines joined by "; "), or `otherwise` when it said nothing.
  static std::string Take(std::string_view otherwise) {
    std::string said;
    std::string_view rest = Buffer();
    while (!rest.empty()) {
      const std::size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (line.starts_with("fuse: ")) line.remove_prefix(6);
      if (line.empty()) continue;
      if (!said.empty()) said += "; ";
      said += line;
    }
    Buffer().clear();
    return said.empty() ? std::string(otherwise) : said;
  }

 private:
  static std::string& Buffer() {
    static auto* text = new std::string;  // never destroyed (STYLE.md 14a)
    return *text;
  }
  static void Append(fuse_log_level, const char* format, va_list ap) {
    char piece[1024];
    const int n = std::vsnprintf(piece, sizeof piece, format, ap);
    if (n > 0) Buffer().append(piece, std::min(static_cast<std::size_t>(n), sizeof piece - 1));
  }
};

// What fuse_session_new would refuse in `args` (an option neither walfs nor
// libfuse knows: "unknown option(s): `--bogus'"), or "".  Asked of a session
// made and destroyed at once, so that a bad option is a usage error before
// the image is opened, not a failure after recovery.  Call it while a
// FuseLogCapture lives.
std::string RefusedByLibfuse(const fuse_args& args) {
  fuse_args copy = FUSE_ARGS_INIT(0, nullptr);
  for (int i = 0; i < args.argc; ++i) fuse_opt_add_arg(&copy, args.argv[i]);
  (void)FuseLogCapture::Take("");
  fuse_session* probe =
      fuse_session_new(&copy, &walfs::mount::FuseServer::Operations(), sizeof(fuse_lowlevel_ops), nullptr);
  fuse_opt_free_args(&copy);
  if (probe == nullptr) return FuseLogCapture::Take("libfuse refused the options");
  fuse_session_destroy(probe);
  (void)FuseLogCapture::Take("");  // a -d session's "FUSE library version" line
  return "";
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
  if (argc >= 2 && std::strcmp(argv[1], "sync") == 0) return walfs::tools::SyncMain(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "grow") == 0) return walfs::tools::GrowfsMain(argc - 1, argv + 1, "walfs grow");
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  fuse_cmdline_opts cmd{};
  ArgsGuard guard{&args, &cmd};
  Config cfg;
  // The command line is checked whole before anything is opened: libfuse's
  // complaints become walfs's one-line usage errors.
  std::optional<FuseLogCapture> parsing(std::in_place);
  if (fuse_opt_parse(&args, &cfg, walfs::tools::kMountOptions, walfs::tools::ProcessMountArg) != 0)
    return UsageError(cfg.bad_choice.empty() ? FuseLogCapture::Take("bad options") : cfg.bad_choice);
  if (cfg.help) {
    walfs::tools::MountUsage();
    return 0;
  }
  if (cfg.remount)
    return MountFailed(
        "remount is not supported: a FUSE daemon cannot change a mount it serves; to make a walfs mount "
        "read-only (or writable again), unmount it and mount it again with (or without) -o ro");
  if (fuse_parse_cmdline(&args, &cmd) != 0) return UsageError(FuseLogCapture::Take("bad command line"));
  if (cmd.show_help) {
    walfs::tools::MountUsage();
    return 0;
  }
  if (cmd.show_version) {
    fmt::print("{} (libfuse {})\n", walfs::cli::VersionText("walfs"), fuse_pkgversion());
    return 0;
  }
  // An unknown option is named before a missing argument, as cli::Parse does.
  if (std::string refused = RefusedByLibfuse(args); !refused.empty()) return UsageError(refused);
  parsing.reset();
  if (cfg.image == nullptr) return UsageError("IMAGE and MOUNTPOINT are required");
  if (cfg.mountpoint == nullptr) return UsageError("MOUNTPOINT is required");
  if (cmd.max_threads == 0 || cmd.max_threads > 100'000)
    return UsageError(fmt::format("max_threads={}: must be a whole number from 1 to 100000 threads", cmd.max_threads));
  // A mount walfs will not write is read-only to the kernel too: /proc/mounts
  // says ro, and writes are refused before they reach walfs.
  if (cfg.norecovery && !cfg.ro) fuse_opt_add_arg(&args, "-oro");
  // Kernel-side permission checks: walfs stores modes and owners; the kernel
  // enforces them.  Mounted as root, other users may use it (like a kernel fs).
  fuse_opt_add_arg(&args, "-odefault_permissions");
  fuse_opt_add_arg(&args, ("-ofsname=" + MountSource(cfg.image)).c_str());
  fuse_opt_add_arg(&args, "-osubtype=walfs");
  if (geteuid() == 0) fuse_opt_add_arg(&args, "-oallow_other");

  walfs::fs::MountOptions mo;
  mo.image = cfg.image;
  mo.read_only = cfg.ro || cfg.norecovery;
  mo.norecovery = cfg.norecovery;
  if (cfg.sync_io && cfg.uring_io) return UsageError("-o io=sync and -o io=uring: choose one");
  mo.io_uring = !cfg.sync_io;
  mo.io_uring_in_memory = cfg.uring_io != 0;
  if (cfg.force_io_inline && cfg.force_io_device)
    return UsageError("-o force_io=inline and -o force_io=device: choose one");
  mo.inline_force_io = cfg.force_io_device == 0;
  std::uint64_t n = mo.commit_interval_s;
  if (!ParseNumber("commit", cfg.commit, 0, 86400, &n, "seconds (0: no timed commits)")) return kUsageExit;
  mo.commit_interval_s = static_cast<std::uint32_t>(n);
  n = mo.logbufs;
  if (!ParseNumber("logbufs", cfg.logbufs, 2, 16, &n, "log buffers")) return kUsageExit;
  mo.logbufs = static_cast<std::uint32_t>(n);
  n = mo.logbsize;
  if (!ParseNumber("logbsize", cfg.logbsize, 16384, 57856, &n, "bytes")) return kUsageExit;
  mo.logbsize = static_cast<std::uint32_t>(n);
  std::uint64_t idle_threads = 0;  // 0: libfuse's default
  if (!ParseNumber("threads", cfg.threads, 1, 100'000, &idle_threads, "threads")) return kUsageExit;
  std::uint64_t trace_delay_us = 0, trace_buffer_kb = 0;
  if (!ParseNumber("trace_delay_us", cfg.trace_delay_us, 1, 10'000'000, &trace_delay_us, "microseconds"))
    return kUsageExit;
  if (!ParseNumber("trace_buffer_kb", cfg.trace_buffer_kb, 4, 1'048'576, &trace_buffer_kb, "KiB")) return kUsageExit;
  n = mo.lazy_commit_ms;
  if (!ParseNumber("lazy_commit_ms", cfg.lazy_commit, 0, 1000, &n, "milliseconds (0: off)")) return kUsageExit;
  mo.lazy_commit_ms = static_cast<std::uint32_t>(n);
  n = mo.zeroout_kb;
  if (!ParseNumber("zeroout_kb", cfg.zeroout_kb, 0, 1024, &n, "KiB (0: never)")) return kUsageExit;
  mo.zeroout_kb = static_cast<std::uint32_t>(n);
  mo.fault_injection = cfg.fault_injection != 0;
  mo.discard = cfg.discard != 0;
  if (cfg.wake) {
    auto m = walfs::journal::ParseWakeMode(cfg.wake);
    if (!m.ok()) return UsageError(fmt::format("wake={}: {}", cfg.wake, m.status().message()));
    mo.wake_mode = *m;
  }
  walfs::mount::KernelPolicy policy;
  policy.writeback_cache = cfg.writeback_cache != 0;
  {
    std::uint64_t mb = policy.writeback_reserve_bytes >> 20;
    if (!ParseNumber("wb_reserve_mb", cfg.wb_reserve_mb, 0, 1'048'576, &mb, "MiB")) return kUsageExit;
    policy.writeback_reserve_bytes = mb << 20;
  }
  {
    std::uint64_t ms = static_cast<std::uint64_t>(policy.writeback_push_ms);
    if (!ParseNumber("wb_push_ms", cfg.wb_push_ms, 0, 60'000, &ms, "milliseconds (0: off)")) return kUsageExit;
    policy.writeback_push_ms = static_cast<int>(ms);
  }
  policy.trace_poll = cfg.trace_poll != 0;
  policy.skip_flush = cfg.flush_requests == 0;
  policy.skip_opendir = cfg.opendir_requests == 0;
  policy.killpriv_v2 = cfg.no_killpriv_v2 == 0;
  if (cfg.transport != nullptr) {
    const std::string_view t = cfg.transport;
    if (t != "auto" && t != "dev" && t != "uring")
      return UsageError(fmt::format("transport={}: auto, dev or uring", t));
    policy.transport = t;
  }
  {
    std::uint64_t lanes = policy.uring_lanes;
    if (!ParseNumber("uring_lanes", cfg.uring_lanes, 1, 64, &lanes, "lanes per CPU")) return kUsageExit;
    policy.uring_lanes = static_cast<std::uint32_t>(lanes);
  }
  for (auto [name, text, field] : {std::tuple{"attr_timeout", cfg.attr_timeout, &policy.attr_timeout},
                                   std::tuple{"entry_timeout", cfg.entry_timeout, &policy.entry_timeout},
                                   std::tuple{"negative_timeout", cfg.negative_timeout, &policy.negative_timeout}}) {
    if (!ParseTimeout(text, field))
      return UsageError(fmt::format("{}={}: a cache timeout is 0 to 31536000 seconds", name, text));
  }
  // Tracer options are checked now and applied after the fork (the tracer
  // may start threads).
  std::optional<walfs::tracing::WakeupMode> trace_wakeup;
  std::optional<walfs::tracing::RecursionMode> trace_recursion;
  if (cfg.trace_wakeup) {
    auto w = walfs::tracing::ParseWakeupMode(cfg.trace_wakeup);
    if (!w.ok()) return UsageError(fmt::format("trace_wakeup={}: {}", cfg.trace_wakeup, w.status().message()));
    trace_wakeup = *w;
  }
  if (cfg.trace_recursion) {
    auto r = walfs::tracing::ParseRecursionMode(cfg.trace_recursion);
    if (!r.ok())
      return UsageError(fmt::format("trace_recursion={}: {}", cfg.trace_recursion, r.status().message()));
    trace_recursion = *r;
  }

  if (std::string why = HidesImage(cfg.image, cfg.mountpoint); !why.empty()) return MountFailed(why);
  // A dead mount left on the mountpoint by a killed daemon is detached
  // (tools/stale_mount.h) before anything is opened, so a failure here
  // leaves the image alone.
  if (walfs::Status s = walfs::tools::ClearStaleMount(cfg.mountpoint, stderr); !s.ok())
    return MountFailed(s.message());
  // Checked here, not left to fuse_session_mount: that comes after the
  // image is opened and its log replayed.
  {
    std::string mountpoint;
    if (std::string why = ResolveMountpoint(cfg.mountpoint, &mountpoint); !why.empty()) return MountFailed(why);
    cmd.mountpoint = strdup(mountpoint.c_str());  // freed by ArgsGuard, as libfuse's would be
  }

  // Detach first (our own fork, so the parent can report how the mount went):
  // no thread may exist before fork().
  int report[2] = {-1, -1};
  if (!cmd.foreground) {
    if (pipe(report) != 0) return MountFailed(fmt::format("pipe: {}", std::strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0) return MountFailed(fmt::format("fork: {}", std::strerror(errno)));
    if (pid > 0) {
      close(report[1]);
      std::string msg;
      char buf[512];
      ssize_t got;
      while ((got = read(report[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(got));
      if (msg == "ok") return 0;
      if (msg.empty()) msg = "walfs: the daemon died while mounting\n";
      fmt::print(stderr, "{}", msg);
      return kMountFailedExit;
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
    return kMountFailedExit;
  };

  {
    walfs::tracing::Tracer& tracer = walfs::tracing::Tracer::Get();
    walfs::tracing::TracerOptions to = tracer.options();
    if (trace_wakeup) to.wakeup = *trace_wakeup;
    if (trace_recursion) to.recursion = *trace_recursion;
    if (trace_delay_us) to.wakeup_delay_us = static_cast<std::uint32_t>(trace_delay_us);
    if (trace_buffer_kb) to.buffer_size_kb = static_cast<std::uint32_t>(trace_buffer_kb);
    walfs::Status s = tracer.SetOptions(to);
    if (!s.ok()) return report_and_exit(fmt::format("tracer options: {}", s.message()));
  }
  auto fs = walfs::fs::Filesystem::Mount(mo);
  if (!fs.ok()) {
    // The message names the image itself when it came from opening it.
    const std::string_view why = fs.status().message();
    return report_and_exit(why.find(cfg.image) != std::string_view::npos ? std::string(why)
                                                                           : fmt::format("{}: {}", cfg.image, why));
  }
  if (cmd.foreground) fmt::print(stderr, "walfs: {}\n", (*fs)->Describe());

  walfs::mount::FuseServer server(
      fs->get(), policy,
      mo.OptionsText() + fmt::format("threads={}\n", idle_threads == 0 ? std::string("default") : std::to_string(idle_threads)));
  fuse_session* se = fuse_session_new(&args, &walfs::mount::FuseServer::Operations(),
                                      sizeof(fuse_lowlevel_ops), &server);
  if (se == nullptr) {
    (void)(*fs)->Unmount();
    return report_and_exit("could not create the FUSE session");  // the options passed RefusedByLibfuse
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    (void)(*fs)->Unmount();
    return report_and_exit("could not install signal handlers");
  }
  std::optional<FuseLogCapture> mounting(std::in_place);  // libfuse's reason, in walfs's line
  if (fuse_session_mount(se, cmd.mountpoint) != 0) {
    const std::string why = FuseLogCapture::Take("");
    mounting.reset();
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    (void)(*fs)->Unmount();
    return report_and_exit(fmt::format("could not mount on {}{}{}", cmd.mountpoint, why.empty() ? "" : ": ", why));
  }
  if (std::string said = FuseLogCapture::Take(""); !said.empty()) fmt::print(stderr, "walfs: {}\n", said);
  mounting.reset();
  server.SetSession(se);
  server.LearnMount(cmd.mountpoint);
  server.SetOtherWorkersServe(!cmd.singlethread && cmd.max_threads > 1);
  if (walfs::Status io = server.session_io().Attach(se); !io.ok()) {
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    (void)(*fs)->Unmount();
    return report_and_exit(fmt::format("could not take over the FUSE session's I/O: {}", io.message()));
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
    fuse_loop_cfg_set_max_threads(lc, cmd.max_threads);  // checked above
    // Only a value someone gave: libfuse's "unset" (UINT_MAX) makes it print
    // "Ignoring invalid max threads value" on every mount.
    if (idle_threads > 0)
      fuse_loop_cfg_set_idle_threads(lc, static_cast<unsigned>(idle_threads));
    else if (cmd.max_idle_threads <= 100'000)
      fuse_loop_cfg_set_idle_threads(lc, cmd.max_idle_threads);
    rc = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
  }
  // The kernel ends a session by failing reads of /dev/fuse: ENODEV, which
  // libfuse takes as the end, or, now and then at a lazy unmount (and after
  // an abort through /sys/fs/fuse/connections), ECONNABORTED, which libfuse
  // prints ("fuse: reading device: Software caused connection abort") and
  // returns.  Either way the mount is gone and what follows writes the
  // image back: the exit status says how that went.
  if (rc == -ECONNABORTED) rc = 0;
  // The session has ended (or is about to be unmounted): what is left is
  // writing back.  fsck, mkfs or a new mount of the image wait for that
  // instead of refusing (base/file_lock.h).
  walfs::MarkImageClosing();
  server.control().InterruptReaders();
  server.session_io().StopTransport();  // the ring lanes, before the session they serve goes
  server.StopPolling();  // it notifies through the session
  server.StopWritebackPush();
  server.SetSession(nullptr);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);  // closes /dev/fuse: a syncfs of the push returns
  server.JoinWritebackPush();
  walfs::Status s = (*fs)->Unmount();  // says how it went in the messages
  if (!s.ok()) return 1;
  return rc < 0 ? 1 : 0;
}
