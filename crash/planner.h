// The crash states checked for one recorded run, after CrashMonkey's and
// the RecordingDevice crash model (base/block_device_recording.h):
//  - kPrefix: every prefix of the write stream that ends at a flush (or,
//    with every_prefix, every prefix: for short recordings);
//  - kTorn: the same prefix with its last write torn to one sector (only
//    fsyncs that returned before that write count);
//  - kReordered: sampled states where the writes in flight land in any
//    order the model allows, some torn, some not at all, the crash just
//    before an op or just after it before its completions.
//
//   WALFS_ASSIGN_OR_RETURN(auto states, PlanCrashStates(rec, {.seed = 7}));
//   for (const CrashState& s : states) {
//     WALFS_ASSIGN_OR_RETURN(auto img, Materialize(rec, s));
//     checker.Check(img.get(), s.limit, s.moment);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "base/status.h"

namespace walfs::crash {

struct CrashState {
  enum class Kind : std::uint8_t { kPrefix, kTorn, kReordered };
  Kind kind = Kind::kPrefix;
  std::size_t limit = 0;   // writes [0, limit) may have landed
  std::size_t moment = 0;  // fsyncs that returned by this op are durable
  std::string description;
  std::size_t prefix = 0;  // kPrefix, kTorn: MaterializePrefix(prefix, torn_sectors)
  std::uint64_t torn_sectors = RecordingDevice::kWholeWrite;
  std::vector<PlannedWrite> plan;  // kReordered
};

struct PlannerOptions {
  std::uint64_t seed = 0;   // for the sampled reorderings
  int samples = 40;         // reordered states wanted
  int max_tries = 400;      // draws (a sample with no write landing is not refused)
  std::size_t first_op = 0;  // no state before this op (a fixed setup)
  bool every_prefix = false;   // every prefix, not only those ending at a flush
  // With every_prefix: every stride-th prefix, and always those that end at
  // a flush and the whole recording (a sanitizer build's smaller campaign).
  std::size_t prefix_stride = 1;
  // After planning: every stride-th state of each kind (prefix, torn,
  // reordered), counted from each kind's first, and always the prefix of
  // the whole recording.  A campaign's smaller form where each state costs
  // the most and its checks add least (ThreadSanitizer's: the checks are
  // the gcc job's, TSan looks at the threads of a mount, the same in every
  // state).  0 or 1 keeps every state.
  std::size_t state_stride = 1;
};

Result<std::vector<CrashState>> PlanCrashStates(const RecordingDevice& rec, const PlannerOptions& options);

// The image of state `s`.
Result<std::unique_ptr<MemoryDevice>> Materialize(const RecordingDevice& rec, const CrashState& s);

// Whether no write half of a kIoPreflush request lands unless what its
// flush covers landed whole (the write starts after the flush completed:
// docs/block_device.md).  RecordingDevice::PlanCrash plans only such
// states; the planner checks every plan against this independent statement
// of the rule and fails (Internal) if one breaks it.
bool PreflushRespected(const std::vector<RecordedOp>& ops, const std::vector<PlannedWrite>& plan);

}  // namespace walfs::crash
