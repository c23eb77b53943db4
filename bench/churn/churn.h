// The churn loop: how an application saves a file safely, over and over.
// Each cycle creates a temporary file, writes it, fsyncs it, closes it,
// renames it to its final name and removes it again:
//
//   open("tmp", O_CREAT|O_EXCL|O_WRONLY) write fsync close rename("tmp", "file") unlink("file")
//
// Every step is a metadata change a journaling filesystem must make durable
// or order (the fsync forces the create and the write; the rename and the
// unlink are journaled behind it), and on a FUSE filesystem every step is at
// least one round trip to the daemon.  N processes run the loop at once, each
// in a directory of its own (so they contend for the journal, not for one
// directory's lock), for a fixed time; the rate is cycles per second summed
// over the processes.  issue 25's table calls it the
// "create+write+fsync+rename+unlink loop".
//
//   Config c{.dir = "/mnt/walfs", .processes = 8, .seconds = 5};
//   Result<LevelResult> r = RunLevel(c);   // r->cycles_per_s
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace walfs::bench::churn {

inline constexpr int kMaxProcesses = 256;
inline constexpr std::size_t kMaxWriteBytes = std::size_t{64} << 20;

struct Config {
  std::filesystem::path dir;       // the run's workspace is made (and removed) under it
  int processes = 1;               // 1..kMaxProcesses
  double seconds = 5;              // each process starts a cycle until this much time has passed
  std::size_t write_bytes = 4096;  // written into each temporary file (0: none)
};

// One level's result.  A cycle's latency is from its create to its unlink's
// return, over every process's cycles.
struct LevelResult {
  int processes = 0;
  std::uint64_t cycles = 0;
  double seconds = 0;       // the slowest process's time from the start to its last cycle's end
  double cycles_per_s = 0;  // the sum over processes of its cycles over its own time
  std::int64_t p50_us = 0, p99_us = 0, max_us = 0;
};

// The steps of a cycle, for an error's message ("process 3 of 8, cycle 120:
// fsync: No space left on device").
enum class Step : std::uint8_t { kCreate, kWrite, kFsync, kClose, kRename, kUnlink };
std::string_view StepName(Step s);

// Forks c.processes processes, starts them together, waits for them and
// removes what they made.  A step that fails stops its process; the level
// then fails with the first failure's step, errno and message (the other
// processes finish their time).  InvalidArgument for a bad Config; the errno
// of a workspace that cannot be made (ENOENT, EACCES, EROFS, ENOSPC...).
Result<LevelResult> RunLevel(const Config& c);

}  // namespace walfs::bench::churn
