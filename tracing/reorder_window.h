// ReorderWindow: makes one timeline of a trace stream read piece by piece,
// as `walfs-trace record --mount` reads `.walfs/trace_pipe_raw`.
//
// The mount takes a ring's records when it reads that ring, so a record
// committed just after its ring was read arrives in a later read, behind
// newer records of other rings that an earlier read already delivered.
// Merging each read on its own (MergeByTimestamp) would write it out of
// place.  The window holds back the newest entries until they are `hold`
// (trace clock units) older than the newest entry seen; a record late by
// less than that takes its place.  (trace-cmd keeps each CPU's buffer apart
// in its file and merges them when it reports; a walfs trace file is one
// timeline, so the merge happens while recording.)
#pragma once

#include <cstdint>
#include <vector>

#include "tracing/reader.h"

namespace walfs::tracing {

class ReorderWindow {
 public:
  explicit ReorderWindow(std::uint64_t hold) : hold_(hold) {}

  // One read's entries, in any order; equal timestamps keep their order (a
  // lost marker stays before the record it precedes).
  void Add(std::vector<TraceEntry> entries);
  // Every entry at least `hold` older than the newest added, oldest first;
  // they leave the window.
  std::vector<TraceEntry> TakeReady();
  // Everything left, oldest first (the stream ended).
  std::vector<TraceEntry> TakeAll();

  std::size_t waiting() const { return pending_.size(); }

 private:
  const std::uint64_t hold_;
  std::vector<TraceEntry> pending_;  // sorted by timestamp
};

}  // namespace walfs::tracing
