#include "tracing/trace_file.h"

#include <unistd.h>

#include <ctime>

namespace walfs::tracing {

namespace {
constexpr std::size_t kDrainBatch = 4096;

std::uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::uint64_t(ts.tv_sec) * 1'000'000'000 + std::uint64_t(ts.tv_nsec);
}
}  // namespace

TraceFileInfo CurrentTraceFileInfo(Tracer* tracer, std::uint32_t pid) {
  const TracerOptions options = tracer->options();
  TraceFileInfo info;
  info.flags = options.overwrite ? trace_file::kFlagOverwrite : 0;
  info.clock = std::string(ClockKindName(options.clock));
  info.created_unix_ns = RealtimeNs();
  info.created_trace_ns = static_cast<std::uint64_t>(tracer->NowNs());
  info.pid = pid != 0 ? pid : static_cast<std::uint32_t>(::getpid());
  return info;
}

Status WriteTraceFile(const std::string& path, Tracer* tracer,
                      const WriteTraceFileOptions& options) {
  const std::uint64_t start = static_cast<std::uint64_t>(tracer->NowNs());
  WALFS_ASSIGN_OR_RETURN(
      std::unique_ptr<TraceFileWriter> writer,
      TraceFileWriter::Create(path, CurrentTraceFileInfo(tracer, options.pid),
                              options.chunk_records));
  WALFS_RETURN_IF_ERROR(writer->AddEvents(EventTable::FromCatalogue(Catalogue::Get())));
  TraceReader reader(tracer);
  for (;;) {
    Result<std::vector<TraceEntry>> batch = reader.Read(kDrainBatch, /*timeout_ns=*/0);
    if (!batch.ok()) {
      if (batch.status().code() == StatusCode::kWouldBlock) break;  // drained
      return batch.status();
    }
    // Each ring is in time order and Read refills every ring it has
    // exhausted before merging, so a batch with nothing stamped before
    // `start` means no ring holds anything older: stop even if writers
    // keep the rings busy.
    bool any_before_start = false;
    bool any_record = false;
    for (const TraceEntry& e : *batch) {
      if (e.type == TraceEntry::Type::kRecord) {
        any_record = true;
        any_before_start |= e.record.timestamp <= start;
        // An event registered after the file was created (a late static
        // initialiser, a dlopen): define it before its first record.
        if (!writer->HasEvent(e.record.event_id))
          WALFS_RETURN_IF_ERROR(writer->AddEvents(EventTable::FromCatalogue(Catalogue::Get())));
      }
      WALFS_RETURN_IF_ERROR(writer->Append(e));
    }
    if (any_record && !any_before_start) break;
  }
  return writer->Close();
}

Result<TraceFileContents> ReadAllTraceEntries(TraceFileReader* reader) {
  TraceFileContents out;
  std::vector<TraceEntry> chunk;
  for (;;) {
    WALFS_RETURN_IF_ERROR(reader->ReadChunk(&chunk));
    if (chunk.empty()) break;
    out.entries.insert(out.entries.end(), std::make_move_iterator(chunk.begin()),
                       std::make_move_iterator(chunk.end()));
  }
  out.info = reader->info();
  out.events = reader->events();
  out.torn_tail = reader->torn_tail();
  return out;
}

Result<TraceFileContents> ReadTraceFile(const std::string& path) {
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileReader> reader, TraceFileReader::Open(path));
  return ReadAllTraceEntries(reader.get());
}

}  // namespace walfs::tracing
