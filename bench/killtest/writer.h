// The verifying writers of walfs-killtest and what they promise.
//
// Writer w owns files w<w>/f<i>.  Even-numbered files are *replaced*: a new
// generation g is written to f<i>.tmp, fsynced, renamed over f<i>, and the
// directory fsynced.  Odd-numbered files are *appended to*: record n is
// appended and the file fsynced.  Every byte is a function of (seed, writer,
// file, generation or record), so the checker can recompute it.
//
// The ledger (one file per writer, outside the mount) records each step:
//
//   B <file> <n>      begun: generation n / record n is about to be written
//   A <file> <n>      acknowledged: its fsync (and the directory's) returned
//   E <op> <errno> <monotonic ns>   a call failed; the writer exits
//
// A line is one write(2) on an O_APPEND descriptor of a tmpfs file, so a
// writer killed at any instant leaves whole lines.  After a crash, a
// replaced file must hold exactly its last acknowledged generation, or the
// one begun after it (the rename may have reached the log through another
// writer's fsync); never anything else, never a mix.  An appended file must
// hold every acknowledged record intact; past them, only a prefix of the
// record in flight, or zeros (a size that reached the log before the data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace walfs::bench::killtest {

struct FileId {
  int writer = 0;
  int file = 0;
  bool replaced() const { return file % 2 == 0; }
  std::string RelPath() const;  // "w<writer>/f<file>"
};

// The bytes of generation `gen` of a replaced file (1 .. 64 KiB).
std::string ReplaceContent(std::uint64_t seed, const FileId& id, std::uint64_t gen);
// Record `n` of an appended file (64 .. 8 KiB).
std::string AppendRecord(std::uint64_t seed, const FileId& id, std::uint64_t n);

// What the checker knows about one file between rounds.
struct FileState {
  FileId id;
  // Replaced: the generation the file holds (0: none yet, the file may be
  // absent).  Appended: how many records it holds.
  std::uint64_t acked = 0;
  // Replaced: the next generation to write (every generation is written at
  // most once, so a file's bytes name it).  Appended: unused (= acked).
  std::uint64_t next = 1;
};

// The writer's child process: loops over random files of its own until a
// call fails (it records E and exits 1) or it is killed.  Never returns.
[[noreturn]] void RunWriter(std::uint64_t seed, std::uint64_t round_seed, const std::string& mnt,
                            std::vector<FileState> files, int ledger_fd);

}  // namespace walfs::bench::killtest
