// The open-file writer of walfs-killtest: data a program wrote into files it
// still holds open, never fsynced (docs/killtest.md, docs/reliability.md
// "two kinds of crash").  With the writeback cache those writes sit in the
// kernel's page cache until something writes them back; the writeback push
// (mount/writeback_push.h, wb_push_ms) bounds how long.
//
// Open writer u works, each round, in a fresh directory o<u>/r<round>: it
// creates kOpenFiles files, keeps them open, and appends records of 1 ..
// 8192 bytes (a known stream per file) to one file at a time, sleeping
// `pause_us` before each.  It never closes, fsyncs or syncs.  Its ledger:
//
//   w <file> <end offset> <monotonic ns>      a write(2) up to there returned
//   E <op> <errno> <monotonic ns>             a call failed; the writer exits
//
// The promise checked after the kill at K with margin M: each file holds
// its stream up to the end of the last write acknowledged before K - M;
// past that, any byte is the stream's or zero (written back in part), and
// the file is no longer than the last write could have made it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace walfs::bench::killtest {

inline constexpr int kOpenFiles = 4;

[[noreturn]] void RunOpenWriter(std::uint64_t seed, std::uint64_t round_seed, int writer, int round,
                                const std::string& dir, int pause_us, int ledger_fd);

struct OpenOutcome {
  std::uint64_t checked = 0;      // writes acknowledged before kill - margin
  std::uint64_t too_recent = 0;   // later ones
  std::uint64_t lost = 0;         // checked writes whose bytes are not all there
  double oldest_lost_ms = 0;      // the age at the kill of the oldest lost write (0: none lost)
  std::vector<std::string> failures;
};

// Reads the ledger and checks `dir` (after the remount) against it.
OpenOutcome CheckOpenWriter(std::uint64_t seed, int writer, int round, const std::string& dir,
                            const std::string& ledger, std::int64_t kill_ns, std::int64_t margin_ns);

}  // namespace walfs::bench::killtest
