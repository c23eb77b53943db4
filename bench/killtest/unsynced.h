// The unsynced writer of walfs-killtest and what a killed daemon promises
// about it (docs/killtest.md, docs/reliability.md "daemon killed").
//
// Unsynced writer u works, each round, in a fresh directory u<u>/r<round> of
// the mount and never calls fsync: it creates small files of known content
// (open O_CREAT|O_EXCL with a mode, one write, close), makes directories,
// and chmods, renames (within and across its directories) and unlinks the
// files it made.  Every name it uses is new, so each object (a file or a
// directory, numbered) has its own names.  Its ledger, outside the mount:
//
//   b <seq> create <obj> <path> <mode>        about to do op <seq>
//   b <seq> mkdir  <obj> <path> <mode>
//   b <seq> chmod  <obj> <path> <mode>        (the new mode)
//   b <seq> rename <obj> <from> <to>
//   b <seq> unlink <obj> <path>
//   a <seq> <monotonic ns>                    op <seq> returned
//   E <op> <errno> <monotonic ns>             a call failed; the writer exits
//
// The promise checked after the kill at monotonic time K with margin M: every
// op acknowledged before K - M is in the remounted filesystem (a file at its
// last such name with exactly its content and mode, its older names gone; a
// directory present); later ops may or may not be there, but each object is
// in a state one of its ops left it in -- never two names at once, never
// other bytes.  The one allowance: a file whose create is itself recent may
// be empty (its create reached the image, its write's size not yet), and a
// file whose create was in flight may hold any prefix of its bytes, or zeros.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace walfs::bench::killtest {

// The bytes of object `obj` of unsynced writer `writer` in `round` (1 ..
// 3000 bytes: one page, so the kernel writes it back in one request).
std::string UnsyncedContent(std::uint64_t seed, int writer, int round, int obj);

// The child process: loops over random ops in `dir` (an existing, durable,
// empty directory of the mount) until a call fails or it is killed,
// sleeping `pause_us` before each op.
[[noreturn]] void RunUnsyncedWriter(std::uint64_t seed, std::uint64_t round_seed, int writer,
                                    int round, const std::string& dir, int pause_us, int ledger_fd);

struct UnsyncedOutcome {
  std::uint64_t checked = 0;     // ops acknowledged before kill - margin: all checked
  std::uint64_t too_recent = 0;  // acknowledged later, or in flight: allowed either way
  std::uint64_t missing = 0;     // checked ops whose effect is not there
  std::vector<std::string> failures;  // missing ops, half-done states, ledger errors
};

// Reads the ledger and checks `dir` (the writer's round directory, after the
// remount) against it.
UnsyncedOutcome CheckUnsynced(std::uint64_t seed, int writer, int round, const std::string& dir,
                              const std::string& ledger, std::int64_t kill_ns,
                              std::int64_t margin_ns);

}  // namespace walfs::bench::killtest
