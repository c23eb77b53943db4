// fsck.walfs: checks a walfs image (and with -y repairs what is safe).
//
//   fsck.walfs IMAGE        replay a dirty log (and close it clean), then check
//   fsck.walfs -n IMAGE     check only, writing nothing: a dirty log is replayed
//                           in memory and the image checked as it would leave it
//   fsck.walfs -y IMAGE     replay, check, and repair counters that disagree
//
// What is checked is listed in fs/fsck.h.  Exit status, as e2fsck's:
// 0 no problems, 1 problems found and all repaired, 4 problems left,
// 8 the check could not run (not a walfs image, unreadable, bad usage, or
// mounted: a running walfs daemon holds the image's lock, base/file_lock.h).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/block_device_file.h"
#include "fs/fsck.h"

namespace walfs {
namespace {

int Run(int argc, char** argv) {
  CLI::App app{"fsck.walfs: check (and repair) a walfs image"};
  std::string image;
  bool no_change = false, yes = false, verbose = false;
  app.add_option("IMAGE", image, "image file or block device")->required();
  auto* n = app.add_flag("-n,--no-change", no_change, "check only, write nothing (a dirty log is replayed in memory)");
  app.add_flag("-y,--yes", yes, "repair what is safe (counters)")->excludes(n);
  app.add_flag("-v,--verbose", verbose, "print what was checked");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 8;
  }
  // Never beside a mount: its image changes under the check.
  auto dev = FileDevice::Open(image, {.exclusive = true});
  if (!dev.ok()) {
    fmt::print(stderr, "fsck.walfs: {}: {}\n", image, dev.status().message());
    return 8;
  }
  auto report = fs::CheckImage(dev->get(), {.replay = !no_change, .repair = yes});
  if (!report.ok()) {
    fmt::print(stderr, "fsck.walfs: {}: {}\n", image, report.status().message());
    return 8;
  }
  if (report->replayed) fmt::print("{}: replayed the log\n", image);
  for (const fs::FsckProblem& p : report->problems)
    fmt::print("{}: {}{}\n", image, p.message, p.repaired ? " [repaired]" : "");
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
  return report->ExitCode();
}

}  // namespace
}  // namespace walfs

int main(int argc, char** argv) { return walfs::Run(argc, argv); }
