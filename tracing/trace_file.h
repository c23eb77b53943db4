// Trace files: save the tracer's records to a self-describing binary file
// and read them back (docs/trace_format.md).  This header is the entry
// point; the format is trace_file_format.h, the streaming writer and reader
// are trace_file_writer.h and trace_file_reader.h.
//
// Save everything the tracer holds now:
//
//   Status s = WriteTraceFile("run.wtrace", &Tracer::Get());
//
// Read a whole (small) file:
//
//   WALFS_ASSIGN_OR_RETURN(TraceFileContents t, ReadTraceFile("run.wtrace"));
//   for (const TraceEntry& e : t.entries) std::cout << FormatTextLine(e, t.events) << '\n';
//
// walfs-trace (tools/walfs_trace.cc) prints, converts and summarises files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/trace_file_format.h"
#include "tracing/trace_file_reader.h"
#include "tracing/trace_file_writer.h"
#include "tracing/tracer.h"

namespace walfs::tracing {

struct WriteTraceFileOptions {
  std::uint32_t pid = 0;  // 0: this process
  std::size_t chunk_records = TraceFileWriter::kDefaultChunkRecords;
};

// A header for a file of `tracer`'s records, made now: its clock and
// overwrite mode, the wall-clock and trace-clock times, the pid.
TraceFileInfo CurrentTraceFileInfo(Tracer* tracer, std::uint32_t pid = 0);

// Creates `path` and drains `tracer` into it through a consuming
// TraceReader: the records are consumed (a trace_pipe reader running at the
// same time shares them).  Returns once everything committed before the
// call has been written; records committed while it runs may be included.
// Call it after the traced work, e.g. at the end of a bench.
Status WriteTraceFile(const std::string& path, Tracer* tracer,
                      const WriteTraceFileOptions& options = {});

struct TraceFileContents {
  TraceFileInfo info;
  EventTable events;
  std::vector<TraceEntry> entries;
  bool torn_tail = false;  // the file ended inside a section (see TraceFileReader)
};

// Every entry of a file, in memory.  Errors as TraceFileReader.
Result<TraceFileContents> ReadTraceFile(const std::string& path);
// The rest of what `reader` holds.
Result<TraceFileContents> ReadAllTraceEntries(TraceFileReader* reader);

}  // namespace walfs::tracing
