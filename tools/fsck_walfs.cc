// fsck.walfs: checks a walfs image and repairs what is safe, with the
// options and exit codes fsck(8) expects of a checker it runs
// (`fsck -t walfs -a IMAGE`, an fstab pass number):
//
//   fsck.walfs IMAGE        recover a dirty log (left clean), check, report
//   fsck.walfs -n IMAGE     check only, writing nothing (the image is opened
//                           read-only): a dirty log is replayed in memory and
//                           the image checked as it would leave it
//   fsck.walfs -p IMAGE     preen (-a too): repair what is safe without asking;
//                           an image marked clean is not checked unless -f
//   fsck.walfs -y IMAGE     repair everything fsck.walfs can repair
//   fsck.walfs -L IMAGE     zero a log recovery cannot replay (saying what is
//                           lost), then check and repair; -y and -p refuse
//                           such a log (exit 4, nothing written) and say to
//                           copy out with -o ro,norecovery first, then -L
//   fsck.walfs -C ...       progress on stderr: a line per phase, and on a
//                           terminal the phase's percentage
//
// What is checked and what is repaired is in fs/fsck.h.  -p repairs what
// is safe (counters, leaked blocks, blocks the bitmap wrongly calls free,
// inode-map records, link counts); -y and -L also clear inodes that do not
// read, drop entries naming inodes not in use, empty a directory whose
// index cannot be read and reconnect unnamed inodes in /lost+found -- the
// repairs that change which files there are, which preen leaves to a person.
// Exit status, fsck(8)'s bits: 0 no problems; 1 problems found and all
// repaired; 4 problems left; 8 the check could not run (not a walfs image,
// unreadable, mounted: a running walfs daemon holds the image's lock,
// base/file_lock.h); 16 a usage error.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "fs/fsck.h"
#include "tools/cli.h"
#include "tools/progress.h"

namespace walfs {
namespace {

constexpr int kExitOperational = 8;

int Run(int argc, char** argv) {
  CLI::App app{"fsck.walfs: check (and repair) a walfs image", "fsck.walfs"};
  cli::AddVersion(app, "fsck.walfs");
  std::string image;
  bool no_change = false, yes = false, preen_a = false, preen_p = false, force = false,
       verbose = false;
  app.add_option("IMAGE", image, "image file or block device")->required();
  auto* n = app.add_flag("-n,--no-change", no_change,
                         "check only, write nothing (a dirty log is replayed in memory)");
  auto* y = app.add_flag("-y,--yes", yes, "repair everything fsck.walfs can repair");
  auto* a = app.add_flag("-a", preen_a, "preen: the same as -p");
  auto* p = app.add_flag("-p,--preen", preen_p,
                         "preen: repair what is safe without asking; skip an image marked clean");
  bool zero_log = false;
  auto* l = app.add_flag("-L,--zero-log", zero_log,
                         "zero a log that cannot be replayed (what it holds is lost, and said), "
                         "then check and repair");
  app.add_flag("-f,--force", force, "check even an image marked clean (with -p or -a)");
  app.add_flag("-v,--verbose", verbose, "print what was checked");
  bool progress = false;
  app.add_flag("-C,--progress", progress,
               "show progress on stderr: each phase, and on a terminal how far it got (as e2fsck -C)");
  n->excludes(y)->excludes(a)->excludes(p)->excludes(l);
  y->excludes(a)->excludes(p);
  if (auto code = cli::Parse(app, argc, argv, cli::kFsckUsageExit)) return *code;
  const bool preen = preen_a || preen_p;

  // Never beside a mount: its image changes under the check.  -n opens
  // the image read-only, so it checks one nobody may write (mode 0444,
  // `chattr +i`, read-only media), as e2fsck -n and xfs_repair -n do.
  auto dev = FileDevice::Open(image, {.exclusive = true, .read_only = no_change});
  if (!dev.ok()) {
    fmt::print(stderr, "fsck.walfs: {}: {}{}\n", image, dev.status().message(),
               !no_change && CannotOpenForWriting(dev.status())
                   ? "; recovering and repairing need write access to the image: fsck.walfs -n "
                     "checks it without writing"
                   : "");
    return kExitOperational;
  }
  fs::FsckOptions o;
  o.replay = !no_change;
  o.repair = yes || preen || zero_log;
  o.clear_and_reconnect = yes || zero_log;  // not preen: they change which files there are
  o.skip_if_clean = preen && !force;
  o.zero_log = zero_log;
  cli::ProgressLine line;  // '\r' only on a terminal; a line per phase elsewhere
  if (progress) {
    o.progress = [&line](const fs::FsckProgress& at) {
      line.Show(fmt::format("Phase {}/{}: {}", at.phase, at.phases, at.name), fmt::format("{:.0f}%", at.done * 100));
    };
  }
  auto report = fs::CheckImage(dev->get(), o);
  line.Done();
  if (!report.ok()) {
    fmt::print(stderr, "fsck.walfs: {}: {}\n", image, report.status().message());
    return kExitOperational;
  }
  if (report->log_unreplayable) {
    // Refused before anything was written (fs/fsck.h).  4, not 8: the check
    // ran and found a problem it leaves to a person (fsck.xfs's answer to
    // xfs_repair's dirty-log refusal), so a boot drops to a shell for one
    // to choose -L; 8 says the checker itself failed.
    fmt::print(stderr, "fsck.walfs: {}: {}\n", image, report->problems.front().message);
    return report->ExitCode();
  }
  if (report->skipped) {
    // e2fsck -p's line for a clean filesystem: from the superblock's
    // counters, exact for a clean image.
    const auto& sb = report->sb;
    fmt::print("{}: clean, {}/{} inodes, {}/{} blocks (not checked: -f checks it)\n", image,
               sb.icount - sb.ifree, sb.icount, sb.total_blocks - sb.free_blocks, sb.total_blocks);
    return 0;
  }
  if (report->replayed) fmt::print("{}: replayed the log\n", image);
  for (const fs::FsckProblem& pr : report->problems)
    fmt::print("{}: {}{}\n", image, pr.message, pr.repaired ? " [repaired]" : "");
  if (verbose || !report->problems.empty())
    fmt::print("{}: {} inodes in use ({} directories), {} blocks in use of {}{}\n", image,
               report->inodes_in_use, report->directories, report->blocks_in_use,
               report->sb.total_blocks,
               report->replayed_in_memory ? ", as the log would leave it (replayed in memory only)" : "");
  const std::size_t left = report->unrepaired();
  if (report->problems.empty())
    fmt::print("{}: clean\n", image);
  else
    fmt::print("{}: {} problem(s), {} repaired, {} left\n", image, report->problems.size(),
               report->problems.size() - left, left);
  if (preen && left > 0)
    fmt::print("{}: UNEXPECTED INCONSISTENCY: {} problem(s) preen may not repair; a person must "
               "decide (they are listed above)\n",
               image, left);
  return report->ExitCode();
}

}  // namespace
}  // namespace walfs

int main(int argc, char** argv) { return walfs::Run(argc, argv); }
