// TraceReader: reads the tracer's rings as one stream, oldest first.
//
// Consuming (trace_pipe): every record is returned once, to one reader; a
// reader blocks until there is something to return, or returns WouldBlock
// when asked not to wait.  Records a ring lost (overwritten before they were
// read) come back as a kLost entry in their place, so losses are never
// silent ("[LOST N EVENTS]" in the text stream).
//
// Snapshot (trace): a copy of everything readable now, consuming nothing.
//
// Merge order: each call merges what the rings hold by timestamp.  A record
// that reaches its ring after a later-stamped record was already returned
// from another ring comes out after it, as with ftrace's per-CPU buffers.
//
// A TraceReader is used by one thread at a time (a FUSE file handle
// serialises its reads); any number of readers may exist, and consuming
// readers share the records between them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "tracing/record.h"
#include "tracing/ring.h"
#include "tracing/tracer.h"

namespace walfs::tracing {

// Ring::Consume allows one consumer at a time per ring: every consuming
// reader (TraceReader, RawTraceReader) holds this leaf lock around its
// consumes.
Mutex& RingConsumeMutex();

struct TraceEntry {
  enum class Type : std::uint8_t { kRecord, kLost };
  Type type = Type::kRecord;
  Record record;            // kRecord
  std::uint64_t lost = 0;   // kLost: records of this thread's ring lost here
  std::uint32_t tid = 0;    // the ring's thread
  std::shared_ptr<const std::string> comm;  // the ring's thread name
};

// Puts entries read ring by ring (a RawTraceReader stream's sections, the
// chunks of one read) into one timeline: by timestamp, and entries with
// equal timestamps keep their order, so a lost marker stays before the
// record it precedes (it carries that record's timestamp).
void MergeByTimestamp(std::vector<TraceEntry>* entries);

class TraceReader {
 public:
  explicit TraceReader(Tracer* tracer) : tracer_(tracer) {}

  // Consumes up to `max` entries.  timeout_ns: < 0 waits for at least one,
  // 0 never waits (WouldBlock when there is nothing), > 0 waits that long
  // (WouldBlock on timeout).  Also WouldBlock if InterruptReaders() is called
  // while waiting.
  Result<std::vector<TraceEntry>> Read(std::size_t max, std::int64_t timeout_ns);

  // Everything readable now, from every ring, merged; consumes nothing.
  static std::vector<TraceEntry> Snapshot(Tracer* tracer);

 private:
  struct Pending {
    std::shared_ptr<Ring> ring;
    std::shared_ptr<const std::string> comm;
    std::vector<Record> records;  // consumed from the ring, not yet returned
    std::size_t next = 0;
    std::uint64_t lost = 0;       // to report before records[next]
  };

  void Refill();
  void Merge(std::size_t max, std::vector<TraceEntry>* out);

  Tracer* const tracer_;
  std::map<const Ring*, Pending> pending_;
};

}  // namespace walfs::tracing
