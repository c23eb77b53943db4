#include "tools/walfs_args.h"

#include <charconv>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>

#include "tools/cli.h"

namespace walfs::tools {

#define WALFS_OPT(t, p) {t, offsetof(Config, p), 1}
const fuse_opt kMountOptions[] = {
    WALFS_OPT("wake=%s", wake),
    WALFS_OPT("logbufs=%s", logbufs),
    WALFS_OPT("logbsize=%s", logbsize),
    WALFS_OPT("threads=%s", threads),
    WALFS_OPT("commit=%s", commit),
    {"writeback_cache", offsetof(Config, writeback_cache), 1},
    {"nowriteback_cache", offsetof(Config, writeback_cache), 0},
    WALFS_OPT("wb_reserve_mb=%s", wb_reserve_mb),
    WALFS_OPT("wb_push_ms=%s", wb_push_ms),
    WALFS_OPT("lazy_commit_ms=%s", lazy_commit),
    WALFS_OPT("zeroout_kb=%s", zeroout_kb),
    WALFS_OPT("trace_poll", trace_poll),
    WALFS_OPT("norecovery", norecovery),
    WALFS_OPT("io=sync", sync_io),
    WALFS_OPT("force_io=inline", force_io_inline),
    WALFS_OPT("force_io=device", force_io_device),
    WALFS_OPT("io=uring", uring_io),
    WALFS_OPT("fault_injection", fault_injection),
    WALFS_OPT("discard", discard),
    WALFS_OPT("trace_wakeup=%s", trace_wakeup),
    WALFS_OPT("trace_delay_us=%s", trace_delay_us),
    WALFS_OPT("trace_recursion=%s", trace_recursion),
    WALFS_OPT("trace_buffer_kb=%s", trace_buffer_kb),
    WALFS_OPT("attr_timeout=%s", attr_timeout),
    WALFS_OPT("entry_timeout=%s", entry_timeout),
    WALFS_OPT("negative_timeout=%s", negative_timeout),
    WALFS_OPT("flush_requests", flush_requests),
    WALFS_OPT("opendir_requests", opendir_requests),
    WALFS_OPT("nokillpriv_v2", no_killpriv_v2),
    WALFS_OPT("transport=%s", transport),
    WALFS_OPT("uring_lanes=%s", uring_lanes),
    WALFS_OPT("-h", help),
    WALFS_OPT("--help", help),
    FUSE_OPT_END,
};

int ProcessMountArg(void* data, const char* arg, int key, fuse_args*) {
  auto* cfg = static_cast<Config*>(data);
  if (key == FUSE_OPT_KEY_NONOPT) {
    if (cfg->image == nullptr) {
      cfg->image = strdup(arg);
    } else if (cfg->mountpoint == nullptr) {
      cfg->mountpoint = strdup(arg);
    } else {
      cfg->bad_choice = fmt::format("unexpected argument '{}' (walfs takes an IMAGE and a MOUNTPOINT)", arg);
      return -1;
    }
    return 0;  // consumed
  }
  if (key == FUSE_OPT_KEY_OPT && std::strcmp(arg, "remount") == 0) {
    cfg->remount = 1;  // mount(8) runs the helper for `mount -o remount,...`
    return 0;
  }
  if (key == FUSE_OPT_KEY_OPT && (std::strcmp(arg, "ro") == 0)) {
    cfg->ro = 1;
    return 1;  // and the kernel mount is read-only too
  }
  // walfs's own choices with a value not among them (the valid ones were
  // matched by kOptions): named here, not left to libfuse's "unknown option".
  if (key == FUSE_OPT_KEY_OPT) {
    const std::string_view a(arg);
    if (a.starts_with("io=") || a.starts_with("force_io=")) {
      const char* choices = a.starts_with("io=") ? "io=sync or io=uring" : "force_io=inline or force_io=device";
      cfg->bad_choice = fmt::format("{}: must be {}", a, choices);
      return -1;
    }
  }
  return 1;
}

void MountUsage() {
  fmt::print(
      "Usage: walfs IMAGE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]\n"
      "  or:  walfs sync PATH...\n"
      "  or:  walfs grow [-n] MOUNTPOINT [SIZE]\n"
      "Mounts the walfs image IMAGE on MOUNTPOINT.  walfs sync makes every change on PATH's walfs\n"
      "mount durable, which sync(1) cannot (sync(2) never reaches a FUSE daemon; see walfs sync --help).\n"
      "walfs grow is walfs-growfs: it grows a mounted filesystem (see walfs grow --help).\n"
      "\n"
      "Options:\n"
      "  -f                      stay in the foreground (default: detach once mounted)\n"
      "  -d                      print FUSE's debug log (stays in the foreground)\n"
      "  -h, --help              print this help\n"
      "  -V, --version           print the walfs, on-disk format and libfuse versions\n"
      "  -o ro                   read-only (a log that needs replay is still replayed); an image\n"
      "                          walfs may not write is opened read-only, if its log is clean\n"
      "  -o norecovery           read-only, the log not replayed whatever it holds (even damage):\n"
      "                          the image as it was last written back; works on an image walfs\n"
      "                          may not write (mode 0444, chattr +i, read-only media)\n"
      "  -o wake=inline|waking|wakeq   how grant-head waiters are woken (default wakeq)\n"
      "  -o logbufs=N            in-core log buffers, 2..16 (default 8)\n"
      "  -o logbsize=BYTES       log buffer size, 16384..57856 (default 32768)\n"
      "  -o commit=SECONDS       changes start to reach the log at most this long after they are\n"
      "                          made, fsynced or not: what a crash can lose (0..86400, default\n"
      "                          5, as ext4; 0: only an fsync, walfs sync, unmount or a CIL of\n"
      "                          1/8 of the log do)\n"
      "  -o lazy_commit_ms=MS    changes are written to the image (no FUA) at most this\n"
      "                          long after they are made: what a killed daemon can lose; a power\n"
      "                          cut is bounded by commit= (0..1000, default 5; 0: off)\n"
      "  -o zeroout_kb=KIB       a write into preallocated space also zeroes what is left of\n"
      "                          the extent beside it when that and the write together are at\n"
      "                          most KIB, so the extent is not split (0..1024, default 32, as\n"
      "                          ext4; 0: never)\n"
      "  -o threads=N            FUSE worker threads kept idle (default: libfuse's 10)\n"
      "  -o max_threads=N        at most N FUSE worker threads (libfuse's; default 10)\n"
      "  -o nowriteback_cache    every write(2) goes to walfs at once (default: the kernel caches\n"
      "                          written data and writes it back later; -o writeback_cache)\n"
      "  -o wb_reserve_mb=N      below N MiB free, files opened for writing bypass that cache and\n"
      "                          files opened before ask before each write(2), which gets ENOSPC\n"
      "                          where the space left only fits what the kernel holds (0..1048576,\n"
      "                          default 256; 0: off, a failed write-back is told by fsync only)\n"
      "  -o wb_push_ms=MS        while files are open for writing through that cache, the kernel\n"
      "                          writes its dirty pages back to walfs every MS: what a killed\n"
      "                          daemon can lose of them (0..60000, default 10; 0: the kernel's\n"
      "                          own write-back, about 30 s; needs root)\n"
      "  -o transport=T          how FUSE requests reach walfs: auto (io_uring rings, one queue\n"
      "                          per CPU, when the kernel offers them: the fuse module's\n"
      "                          enable_uring; else /dev/fuse, said in one line), uring (the same,\n"
      "                          warning when not offered) or dev (/dev/fuse only); default auto\n"
      "  -o uring_lanes=N        requests each CPU's ring queue serves at once (1..64, default 4)\n"
      "  -o io=sync              pread/pwrite instead of io_uring (the default for an image in\n"
      "                          tmpfs or ramfs, where it is one thread hop fewer)\n"
      "  -o io=uring             io_uring wherever the image is\n"
      "  -o force_io=device      a log force hands its write to the device's threads and waits\n"
      "                          to be woken (default force_io=inline: the forcer writes it)\n"
      "  -o attr_timeout=S, entry_timeout=S, negative_timeout=S\n"
      "                          how long the kernel may cache attributes, names and names that\n"
      "                          do not exist (0..31536000 seconds, default 86400 each)\n"
      "  -o flush_requests, opendir_requests, nokillpriv_v2\n"
      "                          let the kernel send FLUSH on close / OPENDIR, or clear set-id\n"
      "                          bits itself (default: it need not; docs/fuse_policy.md)\n"
      "  -o discard              give freed blocks back to the image file (a punched hole) or\n"
      "                          device (BLKDISCARD) once their free is on disk (default: only\n"
      "                          fstrim MOUNTPOINT does)\n"
      "  -o fault_injection      testing: fail the image's I/O on command (MOUNTPOINT/.walfs/fault)\n"
      "  -o trace_poll           poll(2) on .walfs/trace_pipe waits for events (costs every\n"
      "                          io_uring read and write a FUSE round trip; see the README)\n"
      "  -o trace_wakeup=immediate|deferred, trace_delay_us=N, trace_recursion=safe|fast|context, trace_buffer_kb=N\n"
      "                          tracer options (also in MOUNTPOINT/.walfs/options/)\n"
      "FUSE options (-o allow_other, default_permissions, ...): see mount.fuse3(8).\n");
}

int MountUsageError(std::string_view what) { return cli::UsageError("walfs", what); }

bool ParseNumber(const char* name, const char* text, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out,
                 std::string_view unit) {
  if (text == nullptr) return true;
  const std::string_view v(text);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
    MountUsageError(
        fmt::format("{}={}: must be a whole number from {} to {}{}{}", name, v, lo, hi, unit.empty() ? "" : " ", unit));
    return false;
  }
  *out = n;
  return true;
}

bool ParseTimeout(const char* text, double* out) {
  if (text == nullptr) return true;
  const std::string_view v(text);
  double seconds = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !(seconds >= 0 && seconds <= 31'536'000))
    return false;
  *out = seconds;
  return true;
}

}  // namespace walfs::tools
