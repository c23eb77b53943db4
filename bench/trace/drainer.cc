#include "bench/trace/drainer.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "base/clock.h"
#include "base/coding.h"
#include "tracing/event.h"
#include "tracing/event_table.h"
#include "tracing/raw_reader.h"
#include "tracing/reader.h"
#include "tracing/text_format.h"
#include "tracing/trace_file.h"
#include "tracing/tracer.h"

namespace walfs::bench {

namespace {

using tracing::TraceEntry;
using tracing::TraceReader;
using tracing::Tracer;

constexpr std::size_t kReadMax = 4096;
constexpr std::size_t kRawReadBytes = 256 << 10;

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

// Counts the records of a RawTraceReader stream's sections (whole sections,
// the file header first on the first read) without decoding them.
void AbsorbRaw(std::string_view bytes, bool* header_seen, DrainCounts* c) {
  namespace f = tracing::trace_file;
  if (!*header_seen) {
    bytes.remove_prefix(std::min(bytes.size(), f::kFileHeaderSize));
    *header_seen = true;
  }
  bool first = true;
  while (bytes.size() >= f::kSectionHeaderSize) {
    const std::uint16_t type = DecodeFixed16(bytes.data() + f::kSectionTypeOffset);
    const std::uint32_t length = DecodeFixed32(bytes.data() + f::kSectionLengthOffset);
    WALFS_CHECK(bytes.size() >= f::kSectionHeaderSize + length);
    const char* p = bytes.data() + f::kSectionHeaderSize;
    bytes.remove_prefix(f::kSectionHeaderSize + length);
    if (type != static_cast<std::uint16_t>(f::SectionType::kRecords)) continue;
    const std::uint32_t count = DecodeFixed32(p);
    p += f::kChunkPrefixSize;
    for (std::uint32_t i = 0; i < count; ++i, p += f::kRecordSize) {
      const std::uint16_t id = DecodeFixed16(p + f::kRecordEventIdOffset);
      if (id == f::kLostEventId) {
        c->lost_in_stream += DecodeFixed64(p + f::kRecordFieldsOffset);
        continue;
      }
      if (id >= c->by_event.size()) c->by_event.resize(id + 1);
      ++c->by_event[id];
      ++c->records;
      if (first) {
        const auto ts = static_cast<std::int64_t>(DecodeFixed64(p + f::kRecordTimestampOffset));
        c->max_lag_ns = std::max(c->max_lag_ns, Tracer::Get().NowNs() - ts);
        first = false;
      }
    }
  }
  ++c->reads;
}

// One reader of any kind: Read(timeout) absorbs what it got into *c, and
// returns false when there was nothing.
class AnyReader {
 public:
  explicit AnyReader(ReaderKind kind)
      : kind_(kind),
        entries_(&Tracer::Get()),
        raw_(&Tracer::Get(), tracing::CurrentTraceFileInfo(&Tracer::Get())),
        table_(tracing::EventTable::FromCatalogue(tracing::Catalogue::Get())) {}

  bool Read(std::int64_t timeout_ns, DrainCounts* c) {
    if (kind_ == ReaderKind::kRaw) {
      bytes_.clear();
      if (!raw_.Read(&bytes_, kRawReadBytes, timeout_ns).ok()) return false;
      AbsorbRaw(bytes_, &header_seen_, c);
      return true;
    }
    auto r = entries_.Read(kReadMax, timeout_ns);
    if (!r.ok()) return false;
    if (kind_ == ReaderKind::kText) {
      text_.clear();
      for (const TraceEntry& e : *r) tracing::AppendTextLine(e, table_, &text_, &tasks_);
    }
    Absorb(*r, c);
    return true;
  }

 private:
  const ReaderKind kind_;
  TraceReader entries_;
  tracing::RawTraceReader raw_;
  const tracing::EventTable table_;
  std::string bytes_, text_;
  tracing::TaskNames tasks_;
  bool header_seen_ = false;
};

// Reads without blocking until nothing is left; returns the records read.
std::uint64_t DrainInto(AnyReader* reader, DrainCounts* c) {
  const std::uint64_t before = c->records;
  while (reader->Read(0, c)) {
  }
  return c->records - before;
}

}  // namespace

std::string_view ReaderKindName(ReaderKind k) {
  switch (k) {
    case ReaderKind::kEntries: return "entries";
    case ReaderKind::kText: return "text";
    case ReaderKind::kRaw: return "raw";
  }
  return "?";
}

Result<ReaderKind> ParseReaderKind(std::string_view name) {
  for (ReaderKind k : {ReaderKind::kEntries, ReaderKind::kText, ReaderKind::kRaw})
    if (name == ReaderKindName(k)) return k;
  return Status::InvalidArgument("unknown reader '" + std::string(name) + "' (text, entries, raw)");
}

Drainer::Drainer(ReaderKind kind) : kind_(kind), thread_([this] { Main(); }) {}

Drainer::~Drainer() {
  if (thread_.joinable()) Stop();
}

void Drainer::Main() {
  const std::int64_t cpu0 = ThreadCpuNanos();
  AnyReader reader(kind_);
  for (;;) {
    if (reader.Read(-1, &counts_)) continue;
    if (!stop_.load(std::memory_order_acquire)) {
      ++counts_.empty_returns;
      continue;
    }
    // The writers were joined before stop_ was set: whatever they wrote is
    // published, and reading until WouldBlock empties every ring.
    counts_.final_records = DrainInto(&reader, &counts_);
    break;
  }
  counts_.cpu_ns = ThreadCpuNanos() - cpu0;
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
  AnyReader reader(ReaderKind::kEntries);
  DrainInto(&reader, &c);
  return c;
}

}  // namespace walfs::bench
