// OpLatency: what the FUSE requests in a trace cost, per operation and per
// caller, from the `fs_<op>_exit` records (each carries the request's
// latency_ns, err and caller_pid) and the `fs_task` records that name the
// callers: `walfs-trace stats`'s operations and callers tables.
//
//   OpLatency ops;
//   for (const TraceEntry& e : entries) ops.Add(e, events);
//   ops.Operations().Print(stdout, "operations");
//
// Percentiles are exact (nearest rank over every latency kept, 8 bytes a
// request), not a histogram's bucket bounds: a trace is read once, offline.
// An `_exit` event of another build without latency_ns is not counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/report.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/text_format.h"

namespace walfs::tracing {

class OpLatency {
 public:
  void Add(const TraceEntry& entry, const EventTable& events);

  // One row per operation, most total time first: op, count, errors,
  // total_ms, mean_us, p50_us, p99_us, max_us.
  Report Operations() const;
  // One row per caller (the process a request came from; pid 0: the
  // kernel's own), most total time first, at most `limit` rows (0: all):
  // pid, comm, requests, errors, total_ms, busiest_op (the operation it
  // spent most time in).  `*left_out` (if given) is the number of callers
  // beyond `limit`.
  Report Callers(std::size_t limit = 0, std::size_t* left_out = nullptr) const;

  std::uint64_t requests() const { return requests_; }

 private:
  struct Resolved {
    bool known = false;  // looked up
    int op = -1;         // index in ops_; -1: not an _exit event of ours
    int latency = -1, err = -1, caller = -1;  // field indexes
    bool task = false;   // fs_task: names a caller
  };
  struct Op {
    std::string name;
    std::vector<std::uint64_t> latencies_ns;
    std::uint64_t errors = 0;
    std::uint64_t total_ns = 0;
  };
  struct Caller {
    std::uint64_t requests = 0, errors = 0, total_ns = 0;
    std::map<int, std::uint64_t> op_ns;  // op index -> time
  };

  const Resolved& Resolve(std::uint16_t id, const EventTable& events);

  std::map<std::uint16_t, Resolved> resolved_;
  std::vector<Op> ops_;
  std::map<std::uint32_t, Caller> callers_;
  TaskNames names_;
  std::uint64_t requests_ = 0;
};

}  // namespace walfs::tracing
