// TraceFileReader: reads a walfs trace file (trace_file_format.h) back as
// TraceEntry values, chunk by chunk, in constant memory.
//
//   WALFS_ASSIGN_OR_RETURN(auto r, TraceFileReader::Open(path));
//   std::vector<TraceEntry> chunk;
//   for (;;) {
//     WALFS_RETURN_IF_ERROR(r->ReadChunk(&chunk));
//     if (chunk.empty()) break;                          // end of file
//     for (const TraceEntry& e : chunk) Print(e, r->events());
//   }
//
// Bad data is reported, never trusted: Open() returns Corruption for a bad
// magic, an unknown version, a header CRC mismatch or a file shorter than
// its header; ReadChunk() for a section whose header or payload CRC does not
// match, a length over kMaxSectionPayload, or a payload that does not parse.
// A file that ends inside a section is a torn tail — the writer stopped
// mid-append — and reads as end of file (torn_tail() tells), as LevelDB's
// log reader treats a torn last record.  After an error every call returns
// it again.  The reader never crashes and never allocates more than one
// section's payload, whatever the input (tests/tracing/trace_file_fuzzer.cc).
//
// Stream mode (ForStream): bytes arrive in pieces through Feed() (a
// `.walfs/trace_pipe_raw` read, a socket); ReadChunk() parses the whole
// sections fed so far and returns empty when the next one is incomplete,
// without treating that as the end.  finished() after the producer stopped
// says whether the bytes ended between sections.
//
// Sections of a type this reader does not know are skipped (counted in
// skipped_sections()).  Records name events by id; an id the file's
// catalogue does not define is passed through (formatters print it as
// unknown_event_<id>).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"
#include "tracing/trace_file_format.h"

namespace walfs::tracing {

class TraceFileReader {
 public:
  static Result<std::unique_ptr<TraceFileReader>> Open(const std::string& path);
  static Result<std::unique_ptr<TraceFileReader>> FromBuffer(std::string contents);
  static std::unique_ptr<TraceFileReader> ForStream();

  // Stream mode: appends bytes for ReadChunk to parse.
  void Feed(std::string_view bytes);
  // Stream mode: bytes fed and not yet parsed (0: the stream ended between
  // sections; more: it stopped inside one).
  std::size_t unparsed_bytes() const { return data_.size() - (offset_ - base_); }

  TraceFileReader(const TraceFileReader&) = delete;
  TraceFileReader& operator=(const TraceFileReader&) = delete;
  ~TraceFileReader();

  // Stream mode: valid once has_header() (a ReadChunk call parsed it).
  const TraceFileInfo& info() const { return info_; }
  bool has_header() const { return header_read_; }
  // The events defined by the sections read so far (a file defines events
  // before the records that use them).  The object stays the same one for
  // the reader's life, so a formatter may keep a pointer to it.
  const EventTable& events() const { return events_; }

  // Reads up to and including the next records section and replaces *out
  // with its entries; *out is empty at the end of the file (stream mode: when
  // the next section has not been fed whole yet).
  Status ReadChunk(std::vector<TraceEntry>* out);

  bool torn_tail() const { return torn_tail_; }
  std::uint64_t torn_bytes() const { return torn_bytes_; }  // ignored at the tail
  std::uint64_t skipped_sections() const { return skipped_sections_; }
  std::uint64_t offset() const { return offset_; }          // bytes consumed so far

 private:
  TraceFileReader(int fd, std::string contents, bool stream);
  // Reads up to n bytes at the current offset; fewer only at end of file
  // (stream mode: at the end of what was fed).
  Status ReadBytes(std::size_t n, std::string* out);
  Status ReadHeader();
  Status Fail(Status s);
  Status ParseCatalogue(const std::string& payload);
  Status ParseThreads(const std::string& payload);
  Status ParseRecords(const std::string& payload, std::vector<TraceEntry>* out);

  int fd_ = -1;              // reading a file, or
  std::string data_;         // reading a buffer (stream mode: what was fed, from base_)
  const bool stream_ = false;
  bool header_read_ = false;
  std::uint64_t base_ = 0;   // stream mode: the offset of data_[0]
  std::uint64_t offset_ = 0;
  Status error_;             // sticky
  bool eof_ = false;
  bool torn_tail_ = false;
  std::uint64_t torn_bytes_ = 0;
  std::uint64_t skipped_sections_ = 0;

  TraceFileInfo info_;
  EventTable events_;
  std::map<std::uint32_t, std::shared_ptr<const std::string>> threads_;  // tid -> comm
};

}  // namespace walfs::tracing
