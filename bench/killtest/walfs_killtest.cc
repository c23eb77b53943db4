// walfs-killtest: kill -9 the walfs daemon under load, many times, and check
// that every acknowledged fsync survives (and every unsynced change older than
// --unsynced-margin-ms), recovery works, fsck is clean and
// the mountpoint is usable again (docs/killtest.md).
//
//   walfs-killtest --quick                   3 short rounds (the ctest)
//   walfs-killtest --rounds 50 --seed 7 --json kill.json
//
// Exit status: 0 every round survived, 1 a round failed (the message says
// how to reproduce it), 2 bad usage or the campaign could not start, 77
// skipped (not root, no /dev/fuse).
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/report.h"
#include "bench/killtest/campaign.h"
#include "tools/cli.h"

namespace walfs::bench::killtest {
namespace {

constexpr int kExitSkip = 77;

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

int Main(int argc, char** argv) {
  CampaignOptions o;
  o.bin_dir = SelfDir();
  if (const char* env = std::getenv("WALFS_BIN_DIR"); env != nullptr && *env != '\0') o.bin_dir = env;
  o.fio_dir = WALFS_KILLTEST_FIO_DIR;
  o.seed = std::random_device{}() % 100000;
  bool quick = false, keep = false, no_aim = false, no_fio = false;
  std::string json;
  CLI::App app{"walfs-killtest: SIGKILL the walfs daemon under load, remount, check every "
               "acknowledged fsync, fsck", "walfs-killtest"};
  cli::AddVersion(app, "walfs-killtest");
  app.add_option("--rounds", o.rounds, "rounds (default 20; --quick: 3)");
  app.add_option("--seed", o.seed, "seed of the delays and file contents (default: random, printed)");
  app.add_flag("--quick", quick, "3 short rounds with small loads (well under a minute)");
  app.add_option("--json", json, "write one JSON object per round");
  app.add_option("--dir", o.dir, "where the image, ledgers and logs go (default /dev/shm, a tmpfs)");
  app.add_option("--size", o.image_size, "image size (default 1g)");
  app.add_option("--writers", o.writers, "verifying writer processes (default 4)");
  app.add_option("--unsynced-writers", o.unsynced_writers,
                 "writers that never fsync (create+write+close, mkdir, rename, unlink, chmod; default 1)");
  app.add_option("--unsynced-pause-us", o.unsynced_pause_us,
                 "the unsynced writers' sleep before each change (default 500: an application's pace, "
                 "not a flood that fills the CIL to its space push)");
  app.add_option("--unsynced-margin-ms", o.unsynced_margin_ms,
                 "check every unsynced change acknowledged this long before the kill (default 200: "
                 "lazy_commit_ms plus slack for a loaded machine)");
  app.add_option("--open-writers", o.open_writers,
                 "writers that append to files they keep open and never fsync (default 1): with the page "
                 "cache on, the writeback push (wb_push_ms) is what brings their data to walfs");
  app.add_option("--open-pause-us", o.open_pause_us, "the open writers' sleep before each write (default 500)");
  app.add_option("--open-margin-ms", o.open_margin_ms,
                 "check every open writer's write acknowledged this long before the kill (default 1000: "
                 "wb_push_ms plus a push, which under fio's buffered load waits for all of the mount's "
                 "dirty pages, up to the bdi's ~48 MB, plus lazy_commit_ms)");
  std::uint64_t min_unsynced = 0;
  app.add_option("--min-unsynced-checked", min_unsynced,
                 "fail unless the rounds together checked at least this many unsynced changes");
  app.add_option("--quiet-every", o.quiet_every,
                 "rounds 1, 1+N, 1+2N...: the unsynced writers alone, so that only the lazy push writes "
                 "their changes (default 4; 0: never)");
  app.add_option("--mount-options", o.mount_options, "walfs -o OPTS for every mount (default none)");
  app.add_option("--transport", o.transport,
                 "serve every mount through dev (/dev/fuse) or uring (the io_uring rings; skipped, exit "
                 "77, where the kernel does not offer them); default: the mount's own choice")
      ->check(CLI::IsMember({"dev", "uring"}));
  app.add_option("--min-delay-ms", o.min_delay_ms, "earliest kill after the mount (default 300)");
  app.add_option("--max-delay-ms", o.max_delay_ms, "latest kill after the mount (default 4000)");
  app.add_flag("--no-aim", no_aim, "no walfs-aim load");
  app.add_flag("--no-fio", no_fio, "no fio verify load");
  app.add_option("--bin-dir", o.bin_dir, "where walfs, mkfs.walfs, fsck.walfs, walfs-aim are");
  app.add_option("--fio-dir", o.fio_dir, "bench/fio (run-job.sh and the *verify*.fio jobs)");
  app.add_flag("--keep", keep, "keep the work directory (kept anyway after a failure)");
  if (auto code = cli::Parse(app, argc, argv)) return *code;
  o.aim = !no_aim;
  o.fio = !no_fio;
  if (quick) {
    if (app.count("--rounds") == 0) o.rounds = 3;
    if (app.count("--max-delay-ms") == 0) o.max_delay_ms = 2500;
    // The stated bound under load (docs/reliability.md): 1 s.  Half a
    // second held on a quiet machine, but not beside a sanitizer build
    // writing elsewhere, as in CI's pipelined jobs (646 ms in a failing run; before
    // the push wrote files back one by one, 1.4 s).  Kills come up to
    // 2.5 s in, so that the margin leaves open-file writes to check.
    if (app.count("--open-margin-ms") == 0) o.open_margin_ms = 1000;
    o.fio_size = "16m";
  }
  if (o.rounds < 1 || o.writers < 0 || o.unsynced_writers < 0 || o.writers + o.unsynced_writers < 1 ||
      o.unsynced_margin_ms < 0 || o.open_writers < 0 || o.open_margin_ms < 0 || o.open_pause_us < 0 ||
      o.quiet_every < 0 || o.unsynced_pause_us < 0 || o.min_delay_ms < 0 ||
      o.max_delay_ms < o.min_delay_ms)
    return cli::UsageError("walfs-killtest",
                           fmt::format("--rounds is at least 1, --writers plus --unsynced-writers at least 1, "
                                       "margins and pauses not negative, 0 <= --min-delay-ms <= --max-delay-ms "
                                       "(got {}, {}+{}, {}..{})",
                                       o.rounds, o.writers, o.unsynced_writers, o.min_delay_ms, o.max_delay_ms));

  // Skips (exit 77, ctest's SKIP_RETURN_CODE) where it cannot mount.
  if (::geteuid() != 0) {
    fmt::print("walfs-killtest: skipped: needs root (it kills and detaches mounts)\n");
    return kExitSkip;
  }
  if (const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC); fd < 0) {
    fmt::print("walfs-killtest: skipped: cannot open /dev/fuse: {}\n", std::strerror(errno));
    return kExitSkip;
  } else {
    ::close(fd);
  }
  if (o.transport == "uring") {
    // The kernel offers the rings only while the fuse module's enable_uring
    // is on (Linux 6.14 and later).
    std::ifstream param("/sys/module/fuse/parameters/enable_uring");
    std::string on;
    if (!(param >> on) || on != "Y") {
      fmt::print("walfs-killtest: skipped: --transport uring, but the kernel does not offer FUSE over "
                 "io_uring ({}; as root: echo Y > /sys/module/fuse/parameters/enable_uring)\n",
                 param ? "enable_uring is off" : "no such kernel feature");
      return kExitSkip;
    }
  }
  if (app.count("--dir") == 0) {
    struct statvfs sv = {};
    if (::statvfs(o.dir.c_str(), &sv) != 0 ||
        static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize < (std::uint64_t{2} << 30)) {
      fmt::print("walfs-killtest: {} is missing or has less than 2 GiB free; using /tmp\n", o.dir);
      o.dir = "/tmp";
    }
  }

  fmt::print("walfs-killtest: seed {}, {} rounds, {} writers, {} unsynced (margin {} ms), kill after "
             "{}..{} ms, aim {}, fio {}, mount options '{}', transport {}\n",
             o.seed, o.rounds, o.writers, o.unsynced_writers, o.unsynced_margin_ms, o.min_delay_ms,
             o.max_delay_ms, o.aim ? "on" : "off", o.fio ? "on" : "off", o.mount_options,
             o.transport.empty() ? "the mount's choice" : o.transport);
  std::fflush(stdout);
  Campaign campaign(o);
  if (Status s = campaign.Prepare(); !s.ok()) {
    fmt::print(stderr, "walfs-killtest: cannot start: {}\n", s.message());
    campaign.Finish(true);
    return 2;
  }
  fmt::print("work directory {}\n", campaign.work_dir());

  Report report({"round", "delay_ms", "loads", "ops_acked", "files_checked", "unsynced_checked",
                 "unsynced_too_recent", "unsynced_missing", "open_checked", "open_lost", "open_oldest_lost_ms",
                 "recovery_ms", "replayed", "fsck", "result"});
  int survived = 0;
  std::uint64_t checked_acks = 0, checked_unsynced = 0, checked_open = 0;
  std::vector<double> recovery;
  std::string failure;
  int failed_round = -1;
  for (int round = 0; round < o.rounds; ++round) {
    RoundResult r = campaign.RunRound(round);
    const bool ok = r.failure.empty();
    report.AddRow({Cell(r.round), Cell(r.delay_ms), Cell(r.quiet ? "unsynced" : "all"), Cell(r.ops_acked), Cell(r.files_checked),
                   Cell(r.unsynced_checked), Cell(r.unsynced_too_recent), Cell(r.unsynced_missing),
                   Cell(r.open_checked), Cell(r.open_lost), Cell(r.open_oldest_lost_ms, 1),
                   Cell(r.recovery_ms, 1), Cell(r.replayed), Cell(r.fsck), Cell(ok ? "ok" : "FAILED")});
    fmt::print("round {:3}: kill after {:5} ms ({}), {:6} fsyncs acked, {:3} files checked, unsynced "
               "{:5} checked / {:3} too recent / {} missing, open-file writes {:5} checked / {} lost, remount "
               "{:7.1f} ms ({}), fsck {}: {}\n",
               r.round, r.delay_ms, r.quiet ? "unsynced writers only" : "all loads", r.ops_acked, r.files_checked, r.unsynced_checked,
               r.unsynced_too_recent, r.unsynced_missing, r.open_checked, r.open_lost, r.recovery_ms, r.replayed, r.fsck,
               ok ? "ok" : "FAILED");
    std::fflush(stdout);
    if (!ok) {
      failure = r.failure;
      failed_round = round;
      break;
    }
    ++survived;
    checked_acks += r.ops_acked;
    checked_unsynced += r.unsynced_checked;
    checked_open += r.open_checked;
    recovery.push_back(r.recovery_ms);
  }
  report.Print(stdout, "walfs-killtest");
  if (!json.empty()) {
    if (Status s = report.WriteJson(json); !s.ok())
      fmt::print(stderr, "walfs-killtest: {}\n", s.message());
  }
  const double max_ms = recovery.empty() ? 0 : *std::max_element(recovery.begin(), recovery.end());
  fmt::print("walfs-killtest: {}/{} rounds survived; {} acknowledged fsyncs checked; {} unsynced "
             "changes and {} writes into open files checked; remount after the kill: median {:.1f} ms, max "
             "{:.1f} ms\n",
             survived, failed_round >= 0 ? failed_round + 1 : o.rounds, checked_acks, checked_unsynced, checked_open,
             Median(recovery), max_ms);
  if (failed_round >= 0) {
    fmt::print(stderr,
               "walfs-killtest: round {} FAILED: {}\nreproduce: walfs-killtest --seed {} --rounds {}{} "
               "(kill timing is random; the seed fixes delays and contents)\nkept: {} (image, "
               "ledgers, walfs.log)\n",
               failed_round, failure, o.seed, failed_round + 1, quick ? " --quick" : "",
               campaign.work_dir());
    campaign.Finish(true);
    return 1;
  }
  if (checked_unsynced < min_unsynced) {
    fmt::print(stderr,
               "walfs-killtest: FAILED: only {} unsynced changes were old enough to check, fewer than "
               "--min-unsynced-checked {} (did the unsynced writer run?)\nkept: {}\n",
               checked_unsynced, min_unsynced, campaign.work_dir());
    campaign.Finish(true);
    return 1;
  }
  campaign.Finish(keep);
  return 0;
}

}  // namespace
}  // namespace walfs::bench::killtest

int main(int argc, char** argv) { return walfs::bench::killtest::Main(argc, argv); }
