// Checker: the oracles a crash image must satisfy.  For a crash state where
// writes [0, limit) may have landed and the fsyncs that returned by op
// `moment` are durable, the image must
//  - mount (recovery), and pass fsck with replay and, after a clean unmount,
//    without;
//  - hold every file fsynced before the crash under its fsynced names with
//    exactly its fsynced size, bytes and xattrs -- or, if it changed after
//    that fsync, that state or a later one, never an older byte;
//  - expose no stale data: every inode is one the workload made, and every
//    byte of every file is zero or a byte the workload wrote to that file at
//    that offset (Content);
//  - show a namespace the log allows (NamespaceOracle: rename atomicity, and
//    no later name change without the earlier ones);
//  - recover idempotently: crashing right after recovery, and unmounting
//    cleanly, then mounting again both show the same tree.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/block_device_memory.h"
#include "crash/history.h"
#include "crash/namespace_oracle.h"
#include "crash/tree.h"

namespace walfs::crash {

class Checker {
 public:
  explicit Checker(const History& h) : h_(h), names_(h) {}

  // Checks the crash image `dev` (it is mounted and changed); returns what
  // is wrong, empty when nothing is.
  std::vector<std::string> Check(MemoryDevice* dev, std::size_t limit, std::size_t moment);

 private:
  void Error(std::string e) { errors_.push_back(std::move(e)); }
  bool Before(std::size_t op) const { return op < limit_; }

  std::optional<std::uint64_t> Unexplained(const File& f, const std::string& got, const std::string* base,
                                           bool zero_ok, std::size_t from) const;
  std::string Describe(const File& f, const std::string& got, std::uint64_t o) const;
  std::optional<std::string> Stale(const File& f, const Node& n) const;
  void CheckTree(const Tree& t);
  void CheckSynced(const File& f, const Tree& t, bool ino_reused);

  const History& h_;
  NamespaceOracle names_;
  std::size_t limit_ = 0, moment_ = 0;
  std::vector<std::string> errors_;
};

}  // namespace walfs::crash
