#include "tracing/reader.h"

#include <algorithm>

#include "base/mutex.h"

namespace walfs::tracing {

namespace {
constexpr std::size_t kBatch = 512;
}  // namespace

Mutex& RingConsumeMutex() {
  // Leaked: a reader thread that outlives main (WALFS_TRACE_OUT's recorder)
  // may still lock it during static destruction.
  static Mutex* mu = new Mutex;
  return *mu;
}

void MergeByTimestamp(std::vector<TraceEntry>* entries) {
  std::stable_sort(entries->begin(), entries->end(), [](const TraceEntry& a, const TraceEntry& b) {
    return a.record.timestamp < b.record.timestamp;
  });
}

void TraceReader::Refill() {
  MutexLock l(&RingConsumeMutex());
  for (const std::shared_ptr<Ring>& ring : tracer_->Rings()) {
    Pending& p = pending_[ring.get()];
    if (!p.ring) {
      p.ring = ring;
      p.comm = std::make_shared<const std::string>(ring->comm());
    }
    if (p.next < p.records.size()) continue;  // still has buffered records
    p.records.resize(kBatch);
    p.next = 0;
    const std::size_t n = ring->Consume(p.records.data(), kBatch, &p.lost);
    p.records.resize(n);
  }
  // Forget rings that are gone from the tracer and fully returned.
  for (auto it = pending_.begin(); it != pending_.end();) {
    const Pending& p = it->second;
    const bool empty = p.next >= p.records.size() && p.lost == 0;
    if (empty && p.ring->retired() && !p.ring->HasUnread())
      it = pending_.erase(it);
    else
      ++it;
  }
}

void TraceReader::Merge(std::size_t max, std::vector<TraceEntry>* out) {
  while (out->size() < max) {
    Pending* best = nullptr;
    for (auto& [key, p] : pending_) {
      if (p.lost > 0) {  // a loss is reported where it happened: before the next record
        TraceEntry e;
        e.type = TraceEntry::Type::kLost;
        e.lost = p.lost;
        e.tid = p.ring->tid();
        e.comm = p.comm;
        // Stamped like the record it precedes (as Snapshot does), so that
        // exporters can place it on the timeline.
        if (p.next < p.records.size()) e.record.timestamp = p.records[p.next].timestamp;
        out->push_back(std::move(e));
        p.lost = 0;
        if (out->size() >= max) return;
      }
      if (p.next >= p.records.size()) continue;
      if (best == nullptr ||
          p.records[p.next].timestamp < best->records[best->next].timestamp)
        best = &p;
    }
    if (best == nullptr) return;
    TraceEntry e;
    e.record = best->records[best->next++];
    e.tid = best->ring->tid();
    e.comm = best->comm;
    out->push_back(std::move(e));
  }
}

Result<std::vector<TraceEntry>> TraceReader::Read(std::size_t max, std::int64_t timeout_ns) {
  std::vector<TraceEntry> out;
  if (max == 0) return out;
  for (;;) {
    Refill();
    Merge(max, &out);
    if (!out.empty()) return out;
    if (timeout_ns == 0) return Status::WouldBlock("no trace events to read");
    if (!tracer_->WaitForData(timeout_ns) && !tracer_->HasUnread())
      return Status::WouldBlock("no trace events before the timeout");
  }
}

std::vector<TraceEntry> TraceReader::Snapshot(Tracer* tracer) {
  std::vector<TraceEntry> out;
  for (const std::shared_ptr<Ring>& ring : tracer->Rings()) {
    auto comm = std::make_shared<const std::string>(ring->comm());
    std::vector<Record> records(ring->capacity());
    std::uint64_t lost = 0;
    records.resize(ring->Peek(records.data(), records.size(), &lost));
    if (lost > 0) {
      TraceEntry e;
      e.type = TraceEntry::Type::kLost;
      e.lost = lost;
      e.tid = ring->tid();
      e.comm = comm;
      e.record.timestamp = records.empty() ? 0 : records.front().timestamp;
      out.push_back(std::move(e));
    }
    for (const Record& r : records) {
      TraceEntry e;
      e.record = r;
      e.tid = ring->tid();
      e.comm = comm;
      out.push_back(std::move(e));
    }
  }
  MergeByTimestamp(&out);  // lost markers carry the timestamp of the record they precede
  return out;
}

}  // namespace walfs::tracing
