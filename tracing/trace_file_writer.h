// TraceFileWriter: writes trace entries to a walfs trace file
// (trace_file_format.h), a self-describing binary file that walfs-trace
// prints and converts later.
//
//   WALFS_ASSIGN_OR_RETURN(auto w, TraceFileWriter::Create(path, info));
//   WALFS_RETURN_IF_ERROR(w->AddEvents(EventTable::FromCatalogue(Catalogue::Get())));
//   for (const TraceEntry& e : entries) WALFS_RETURN_IF_ERROR(w->Append(e));
//   WALFS_RETURN_IF_ERROR(w->Close());
//
// The file carries everything needed to read it: the events (a catalogue
// section, written by AddEvents before the records that use them) and the
// thread names (a threads section, written before the chunk that first
// names a tid, or renames it; entries of that tid buffered before, with the
// old name or none, go out in the chunk before it).  Records are buffered
// and written in chunks of `chunk_records`; Flush() writes a partial chunk.
// Every write is an append, so a crash leaves a prefix of the file, which
// readers accept up to the last whole section.  Close() does not fsync.
//
// A write error is sticky: every later call returns it.  Not thread-safe;
// one writer per file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/trace_file_format.h"

namespace walfs::tracing {

// The 16-byte header of a section with this payload (its length and masked
// CRC32C), for code that lays a section out in place (RawTraceReader).
void EncodeSectionHeader(trace_file::SectionType type, std::string_view payload,
                         char (&out)[trace_file::kSectionHeaderSize]);

class TraceFileWriter {
 public:
  static constexpr std::size_t kDefaultChunkRecords = 1024;  // 64 KiB chunks

  // Creates (or truncates) `path` and writes the file header.
  static Result<std::unique_ptr<TraceFileWriter>> Create(
      const std::string& path, const TraceFileInfo& info,
      std::size_t chunk_records = kDefaultChunkRecords);
  // Appends the file to *buffer instead (tests, fuzz seeds).
  static std::unique_ptr<TraceFileWriter> ToBuffer(
      std::string* buffer, const TraceFileInfo& info,
      std::size_t chunk_records = kDefaultChunkRecords);

  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;
  // Closes the file if Close() was not called; an error then is lost.
  ~TraceFileWriter();

  // Writes a catalogue section with the events of `events` the file does
  // not have yet (none: nothing is written).  AlreadyExists if an id is
  // already in the file with a different definition.
  Status AddEvents(const EventTable& events);
  bool HasEvent(std::uint16_t id) const { return events_.Contains(id); }

  // Buffers one entry.  InvalidArgument for a record whose event the file
  // has no definition for (call AddEvents first).
  Status Append(const TraceEntry& entry);
  // Names `tid` for the entries appended after this call (a threads section
  // goes out before them), as an entry's comm does in Append.
  Status NameThread(std::uint32_t tid, std::string_view comm);
  // Writes the buffered records as a chunk.
  Status Flush();
  // Flush(), then closes the file.  Later calls return an error.
  Status Close();

  std::uint64_t records_written() const { return records_; }  // record entries appended
  std::uint64_t lost_markers_written() const { return lost_markers_; }

 private:
  TraceFileWriter(int fd, std::string* buffer, std::size_t chunk_records);
  Status WriteHeader(const TraceFileInfo& info);
  Status WriteSection(trace_file::SectionType type, std::string_view payload);
  Status WriteBytes(std::string_view bytes);
  Status WriteThreadsSection();

  int fd_ = -1;                     // the file, or -1
  std::string* const buffer_;       // or the buffer
  const std::size_t chunk_records_;
  Status error_;                    // sticky
  bool closed_ = false;

  EventTable events_;               // events the file defines
  std::map<std::uint32_t, std::string> threads_;          // tid -> comm, as the file says
  std::map<std::uint32_t, std::string> pending_threads_;  // to write before the next chunk
  std::set<std::uint32_t> unnamed_in_chunk_;  // tids of buffered entries with no comm
  std::string chunk_;               // encoded records not yet written
  std::uint32_t chunk_count_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t lost_markers_ = 0;
};

}  // namespace walfs::tracing
