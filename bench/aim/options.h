// walfs-aim's command line, parsed into Options without exiting the process
// (tests drive it directly).
//
//   walfs-aim DIR... [-s start -e end -i incr] [-j jobs] [--fs-only | --with-cpu]
//             [--quick] [--json PATH] [--csv PATH] ...
//
// Option names follow re-aim-7 (-s/--startusers, -e/--endusers,
// -i/--increment, -j/--jobs; FILESIZE and POOLSIZE as sizes with a K or M
// suffix).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace walfs::bench::aim {

struct Options {
  std::vector<std::string> dirs;
  int start_users = 1;
  int end_users = 5;  // re-aim's default run: 1..5 users
  int increment = 1;
  int jobs = 100;
  bool with_cpu = false;
  bool sync_calls = false;
  bool quick = false;
  int reps = 1;
  std::int64_t filesize_kib = 10;
  std::int64_t poolsize_kib = 1024;
  std::uint64_t seed = 1;
  std::string json_path, csv_path;

  // start, start + incr, ... up to end.
  std::vector<int> LoadLevels() const;
};

struct ParsedArgs {
  Options options;
  bool help = false;       // --help was given; print help_text and exit 0
  std::string help_text;
};

// `args` excludes the program name.  Bad usage is InvalidArgument, with a
// message for the user.
Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args);

// "10K" -> 10, "1M" -> 1024, "64" -> 64 (KiB when no suffix).
Result<std::int64_t> ParseSizeKib(const std::string& text);

}  // namespace walfs::bench::aim
