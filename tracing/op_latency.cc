#include "tracing/op_latency.h"

#include <algorithm>

#include "base/clock.h"

namespace walfs::tracing {

const OpLatency::Resolved& OpLatency::Resolve(std::uint16_t id, const EventTable& events) {
  Resolved& r = resolved_[id];
  if (r.known) return r;
  const EventInfo* e = events.ById(id);
  if (e == nullptr) return r;  // not defined yet: look again at the next record
  r.known = true;
  if (e->subsystem != "fs") return r;
  if (e->name == "task") {
    r.task = FieldIndex(*e, "caller_pid") == 0;
    return r;
  }
  if (e->name.size() <= 5 || !e->name.ends_with("_exit")) return r;
  r.latency = FieldIndex(*e, "latency_ns");
  r.err = FieldIndex(*e, "err");
  r.caller = FieldIndex(*e, "caller_pid");
  if (r.latency < 0) return r;
  const std::string op = e->name.substr(0, e->name.size() - 5);
  auto it = std::find_if(ops_.begin(), ops_.end(), [&](const Op& o) { return o.name == op; });
  if (it == ops_.end()) {
    ops_.push_back(Op{.name = op, .latencies_ns = {}});
    it = ops_.end() - 1;
  }
  r.op = static_cast<int>(it - ops_.begin());
  return r;
}

void OpLatency::Add(const TraceEntry& entry, const EventTable& events) {
  if (entry.type != TraceEntry::Type::kRecord) return;
  const Record& rec = entry.record;
  const Resolved& r = Resolve(rec.event_id, events);
  if (r.task) {
    names_.Observe(entry, *events.ById(rec.event_id));
    return;
  }
  if (r.op < 0) return;
  const std::uint64_t ns = rec.fields[r.latency];
  const bool failed = r.err >= 0 && rec.fields[r.err] != 0;
  Op& op = ops_[static_cast<std::size_t>(r.op)];
  op.latencies_ns.push_back(ns);
  op.total_ns += ns;
  op.errors += failed;
  ++requests_;
  if (r.caller < 0) return;
  Caller& c = callers_[static_cast<std::uint32_t>(rec.fields[r.caller])];
  ++c.requests;
  c.errors += failed;
  c.total_ns += ns;
  c.op_ns[r.op] += ns;
}

Report OpLatency::Operations() const {
  std::vector<const Op*> order;
  for (const Op& o : ops_)
    if (!o.latencies_ns.empty()) order.push_back(&o);
  std::sort(order.begin(), order.end(), [](const Op* a, const Op* b) {
    return a->total_ns != b->total_ns ? a->total_ns > b->total_ns : a->name < b->name;
  });
  Report r({"op", "count", "errors", "total_ms", "mean_us", "p50_us", "p99_us", "max_us"});
  for (const Op* o : order) {
    std::vector<std::uint64_t> v = o->latencies_ns;
    std::sort(v.begin(), v.end());
    const auto n = static_cast<double>(v.size());
    r.AddRow({Cell(o->name), Cell(static_cast<std::uint64_t>(v.size())), Cell(o->errors),
              Cell(NanosToMillis(o->total_ns), 3), Cell(NanosToMicros(o->total_ns) / n, 1),
              Cell(NanosToMicros(NearestRank(v, 0.50)), 1), Cell(NanosToMicros(NearestRank(v, 0.99)), 1),
              Cell(NanosToMicros(v.back()), 1)});
  }
  return r;
}

Report OpLatency::Callers(std::size_t limit, std::size_t* left_out) const {
  std::vector<std::pair<std::uint32_t, const Caller*>> order;
  for (const auto& [pid, c] : callers_) order.emplace_back(pid, &c);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->total_ns != b.second->total_ns ? a.second->total_ns > b.second->total_ns : a.first < b.first;
  });
  if (left_out != nullptr) *left_out = limit > 0 && order.size() > limit ? order.size() - limit : 0;
  if (limit > 0 && order.size() > limit) order.resize(limit);
  Report r({"pid", "comm", "requests", "errors", "total_ms", "busiest_op"});
  for (const auto& [pid, c] : order) {
    const auto busiest = std::max_element(c->op_ns.begin(), c->op_ns.end(), [](const auto& a, const auto& b) {
      return a.second < b.second;
    });
    r.AddRow({Cell(std::int64_t{pid}), Cell(std::string(names_.Find(pid))), Cell(c->requests), Cell(c->errors),
              Cell(NanosToMillis(c->total_ns), 3),
              Cell(busiest == c->op_ns.end() ? std::string("-") : ops_[static_cast<std::size_t>(busiest->first)].name)});
  }
  return r;
}

}  // namespace walfs::tracing
