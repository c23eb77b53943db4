// RawTraceReader: consumes the tracer's rings as a binary stream in the
// trace file format (trace_file_format.h) — what `.walfs/trace_pipe_raw`
// serves and `walfs-trace record --mount` saves, as ftrace's trace_pipe_raw
// hands the reader whole pages.
//
//   RawTraceReader raw(&Tracer::Get(), CurrentTraceFileInfo(&Tracer::Get()));
//   std::string bytes;
//   WALFS_ASSIGN_OR_RETURN(std::size_t n, raw.Read(&bytes, 256 << 10, -1));
//   ::write(fd, bytes.data(), bytes.size());   // the concatenation is a trace file
//
// It moves each ring's records as they lie: a ring slot is a 64-byte record
// in the file's encoding (little-endian), so one call makes, per ring with
// unread records, one records section laid out in place in the output
// buffer (the ring's slots copied straight into it, a lost marker first if
// the ring was overwritten), with no merge, no formatting and no per-record
// allocation.
// The first call starts with the file header and the catalogue; a later
// call adds a catalogue section for events registered since, and a threads
// section before the first records of a ring not named yet.
//
// Order: each section is one ring's records in time order; sections of
// different rings interleave.  A consumer that wants one timeline merges
// what one call returned (walfs-trace record does), as TraceReader does.
//
// Consuming: records returned here are gone for every other consuming
// reader (TraceReader, another RawTraceReader); readers of either kind share
// RingConsumeMutex().  One thread at a time per RawTraceReader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tracing/record.h"
#include "tracing/trace_file_format.h"
#include "tracing/trace_file_writer.h"
#include "tracing/tracer.h"

namespace walfs::tracing {

class RawTraceReader {
 public:
  RawTraceReader(Tracer* tracer, const TraceFileInfo& info);
  RawTraceReader(const RawTraceReader&) = delete;
  RawTraceReader& operator=(const RawTraceReader&) = delete;

  // Appends whole sections to *out, about `max_bytes` at most (always at
  // least one section when anything is unread), and returns the bytes
  // appended.  timeout_ns as TraceReader::Read: < 0 waits for a record, 0
  // never waits, > 0 waits that long; WouldBlock when there is nothing to
  // return (the header counts: the first call never blocks).
  Result<std::size_t> Read(std::string* out, std::size_t max_bytes, std::int64_t timeout_ns);

  std::uint64_t records() const { return records_; }  // records returned, lost markers not
  std::uint64_t lost() const { return lost_; }        // records the markers say were lost

 private:
  Status Fill(std::size_t max_bytes);
  Status SyncCatalogue();

  Tracer* const tracer_;
  std::string pending_;                     // encoded, not yet returned
  std::unique_ptr<TraceFileWriter> writer_;  // appends to pending_
  std::size_t catalogue_size_ = 0;           // catalogue events the stream defines
  std::size_t next_ring_ = 0;                // where the next call starts (fairness)
  std::uint64_t records_ = 0;
  std::uint64_t lost_ = 0;
};

}  // namespace walfs::tracing
