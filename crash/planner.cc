#include "crash/planner.h"

#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>

namespace walfs::crash {

// A preflush pair is a flush whose completion was seen only after the next
// op, a write, was issued.
bool PreflushRespected(const std::vector<RecordedOp>& ops, const std::vector<PlannedWrite>& plan) {
  std::map<std::size_t, std::uint64_t> landed;
  for (const PlannedWrite& pw : plan) landed[pw.op] = pw.bytes;
  for (const PlannedWrite& pw : plan) {
    const std::size_t f = pw.op - 1;
    if (pw.op == 0 || ops[f].kind != RecordedOp::Kind::kFlush || ops[f].completed_before <= pw.op) continue;
    // It landed, so its flush completed: what that flush covers landed whole.
    for (std::size_t x = 0; x < f; ++x) {
      if (ops[x].kind != RecordedOp::Kind::kWrite || ops[x].failed || ops[x].completed_before > f) continue;
      auto it = landed.find(x);
      if (it == landed.end() || it->second != ops[x].data.size()) return false;
    }
  }
  return true;
}

namespace {

// Every stride-th state of each kind, and the whole recording's prefix.
std::vector<CrashState> Thinned(std::vector<CrashState> states, std::size_t stride, std::size_t ops) {
  if (stride <= 1) return states;
  std::map<CrashState::Kind, std::size_t> seen;
  std::vector<CrashState> kept;
  for (CrashState& s : states) {
    const bool whole = s.kind == CrashState::Kind::kPrefix && s.prefix == ops;
    if (seen[s.kind]++ % stride == 0 || whole) kept.push_back(std::move(s));
  }
  return kept;
}

}  // namespace

Result<std::vector<CrashState>> PlanCrashStates(const RecordingDevice& rec, const PlannerOptions& options) {
  const std::vector<RecordedOp> ops = rec.ops();
  std::vector<CrashState> states;
  // A prefix [0, n) whose last op is a flush or (every_prefix) anything, and
  // that prefix with its last write torn.
  auto prefix = [&](std::size_t n) {
    const std::size_t f = n - 1;
    const bool flush = ops[f].kind == RecordedOp::Kind::kFlush;
    states.push_back({.kind = CrashState::Kind::kPrefix, .limit = n, .moment = n,
                      .description = flush ? fmt::format("prefix {} (after flush {})", n, f)
                                           : fmt::format("prefix {}", n),
                      .prefix = n, .torn_sectors = RecordingDevice::kWholeWrite, .plan = {}});
    // The last write before the flush torn: only fsyncs that returned before
    // it was issued count.
    std::size_t last = SIZE_MAX;
    for (std::size_t i = n; i-- > 0;)
      if (ops[i].kind == RecordedOp::Kind::kWrite) {
        last = i;
        break;
      }
    if (last == SIZE_MAX || last < options.first_op || ops[last].data.size() <= 512) return;
    if (options.every_prefix && last != f) return;  // the prefix ending at that write tears it
    states.push_back({.kind = CrashState::Kind::kTorn, .limit = last + 1, .moment = last,
                      .description = fmt::format("prefix {} with write {} torn to one sector", last + 1, last),
                      .prefix = last + 1, .torn_sectors = 1, .plan = {}});
  };
  if (options.every_prefix) {
    const std::size_t stride = std::max<std::size_t>(1, options.prefix_stride);
    for (std::size_t n = options.first_op + 1; n <= ops.size(); ++n)
      if ((n - options.first_op - 1) % stride == 0 || n == ops.size() || ops[n - 1].kind == RecordedOp::Kind::kFlush)
        prefix(n);
  } else {
    for (std::size_t f : rec.FlushPoints())
      if (f + 1 > options.first_op) prefix(f + 1);
  }
  if (ops.empty()) return states;
  // Writes in flight land in any order the crash model allows, some torn.
  const std::size_t first = std::min(options.first_op, ops.size() - 1);
  std::mt19937_64 rng(options.seed);
  for (int s = 0, tries = 0; s < options.samples && tries < options.max_tries; ++tries) {
    const std::size_t n = first + 1 + rng() % (ops.size() - first);
    CrashSampleOptions o{.seed = rng(), .land_probability = 0.5, .tear_probability = 0.3,
                         .before_completions = (tries % 2) == 1};
    WALFS_ASSIGN_OR_RETURN(std::vector<PlannedWrite> plan, rec.PlanCrash(n, o));
    if (!PreflushRespected(ops, plan))
      return Status::Internal(fmt::format("RecordingDevice planned the write of a preflush write before its flush "
                                          "completed (crash at {}, seed {})", n, o.seed));
    states.push_back({.kind = CrashState::Kind::kReordered, .limit = n,
                      .moment = o.before_completions ? n - 1 : n,
                      .description = fmt::format("sample {} at {} (crash seed {}{})", s, n, o.seed,
                                                 o.before_completions ? ", before completions" : ""),
                      .plan = std::move(plan)});
    ++s;
  }
  return Thinned(std::move(states), options.state_stride, ops.size());
}

Result<std::unique_ptr<MemoryDevice>> Materialize(const RecordingDevice& rec, const CrashState& s) {
  if (s.kind == CrashState::Kind::kReordered) return rec.Apply(s.plan);
  return rec.MaterializePrefix(s.prefix, s.torn_sectors);
}

}  // namespace walfs::crash
