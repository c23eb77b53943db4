#include "bench/trace/drainer.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "tracing/reader.h"
#include "tracing/tracer.h"

namespace walfs::bench {

namespace {

using tracing::TraceEntry;
using tracing::TraceReader;
using tracing::Tracer;

constexpr std::size_t kReadMax = 4096;

void Absorb(const std::vector<TraceEntry>& entries, DrainCounts* c) {
  const std::int64_t now = Tracer::Get().NowNs();
  bool first = true;
  for (const TraceEntry& e : entries) {
    if (e.type == TraceEntry::Type::kLost) {
      c->lost_in_stream += e.lost;
      continue;
    }
    const std::uint16_t id = e.record.event_id;
    if (id >= c->by_event.size()) c->by_event.resize(id + 1);
    ++c->by_event[id];
    ++c->records;
    if (first) {  // the merge returns the oldest record of the batch first
      c->max_lag_ns = std::max(c->max_lag_ns, now - static_cast<std::int64_t>(e.record.timestamp));
      first = false;
    }
  }
  ++c->reads;
}

// Reads without blocking until nothing is left; returns the records read.
std::uint64_t DrainInto(TraceReader* reader, DrainCounts* c) {
  const std::uint64_t before = c->records;
  for (;;) {
    auto r = reader->Read(kReadMax, 0);
    if (!r.ok()) break;
    Absorb(*r, c);
  }
  return c->records - before;
}

}  // namespace

Drainer::Drainer() : thread_([this] { Main(); }) {}

Drainer::~Drainer() {
  if (thread_.joinable()) Stop();
}

void Drainer::Main() {
  TraceReader reader(&Tracer::Get());
  for (;;) {
    auto r = reader.Read(kReadMax, -1);
    if (r.ok()) {
      Absorb(*r, &counts_);
      continue;
    }
    if (!stop_.load(std::memory_order_acquire)) {
      ++counts_.empty_returns;
      continue;
    }
    // The writers were joined before stop_ was set: whatever they wrote is
    // published, and reading until WouldBlock empties every ring.
    counts_.final_records = DrainInto(&reader, &counts_);
    break;
  }
  done_.store(true, std::memory_order_release);
}

DrainCounts Drainer::Stop() {
  WALFS_CHECK_MSG(thread_.joinable(), "Drainer stopped twice");
  stop_.store(true, std::memory_order_release);
  // Interrupt until the thread has seen stop_ (see the header comment).
  while (!done_.load(std::memory_order_acquire)) {
    Tracer::Get().InterruptReaders();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  thread_.join();
  return std::move(counts_);
}

DrainCounts DrainNow() {
  DrainCounts c;
  TraceReader reader(&Tracer::Get());
  DrainInto(&reader, &c);
  return c;
}

}  // namespace walfs::bench
