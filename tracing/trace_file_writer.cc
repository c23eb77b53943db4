#include "tracing/trace_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/coding.h"
#include "base/crc32c.h"

namespace walfs::tracing {

using namespace trace_file;  // NOLINT: the format's constants, in this file only

namespace {

Status PutString(std::string* dst, std::string_view s, std::string_view what) {
  if (s.size() > 0xffff)
    return Status::InvalidArgument(fmt::format("{} is {} bytes, more than a trace file holds",
                                               what, s.size()));
  PutFixed16(dst, static_cast<std::uint16_t>(s.size()));
  dst->append(s);
  return Status::Ok();
}

void PutRecord(std::string* dst, const Record& r) {
  char buf[kRecordSize];
  EncodeFixed16(buf + kRecordEventIdOffset, r.event_id);
  EncodeFixed16(buf + kRecordCpuOffset, r.cpu);
  EncodeFixed32(buf + kRecordTidOffset, r.tid);
  EncodeFixed64(buf + kRecordTimestampOffset, r.timestamp);
  for (int i = 0; i < kMaxFields; ++i)
    EncodeFixed64(buf + kRecordFieldsOffset + 8 * i, r.fields[i]);
  dst->append(buf, sizeof(buf));
}

}  // namespace

TraceFileWriter::TraceFileWriter(int fd, std::string* buffer, std::size_t chunk_records)
    : fd_(fd), buffer_(buffer), chunk_records_(chunk_records == 0 ? 1 : chunk_records) {}

TraceFileWriter::~TraceFileWriter() {
  if (!closed_) static_cast<void>(Close());
}

Result<std::unique_ptr<TraceFileWriter>> TraceFileWriter::Create(const std::string& path,
                                                                 const TraceFileInfo& info,
                                                                 std::size_t chunk_records) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "creating trace file " + path);
  std::unique_ptr<TraceFileWriter> w(new TraceFileWriter(fd, nullptr, chunk_records));
  WALFS_RETURN_IF_ERROR(w->WriteHeader(info));
  return w;
}

std::unique_ptr<TraceFileWriter> TraceFileWriter::ToBuffer(std::string* buffer,
                                                           const TraceFileInfo& info,
                                                           std::size_t chunk_records) {
  std::unique_ptr<TraceFileWriter> w(new TraceFileWriter(-1, buffer, chunk_records));
  Status s = w->WriteHeader(info);
  WALFS_CHECK_MSG(s.ok(), "appending to a string failed");
  return w;
}

Status TraceFileWriter::WriteHeader(const TraceFileInfo& info) {
  char h[kFileHeaderSize] = {};
  std::memcpy(h + kMagicOffset, kMagic.data(), kMagic.size());
  EncodeFixed16(h + kVersionOffset, info.version);
  EncodeFixed32(h + kFlagsOffset, info.flags);
  // NUL padded; a name of exactly kClockNameSize bytes has no NUL.
  std::memcpy(h + kClockOffset, info.clock.data(), std::min(info.clock.size(), kClockNameSize));
  EncodeFixed64(h + kCreatedUnixNsOffset, info.created_unix_ns);
  EncodeFixed64(h + kCreatedTraceNsOffset, info.created_trace_ns);
  EncodeFixed32(h + kPidOffset, info.pid);
  EncodeFixed32(h + kHeaderCrcOffset, crc32c::Mask(crc32c::Value(h, kHeaderCrcOffset)));
  return WriteBytes(std::string_view(h, sizeof(h)));
}

Status TraceFileWriter::WriteBytes(std::string_view bytes) {
  if (!error_.ok()) return error_;
  if (closed_) return Status::InvalidArgument("trace file writer is closed");
  if (buffer_ != nullptr) {
    buffer_->append(bytes);
    return Status::Ok();
  }
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = Status::FromErrno(errno, "writing trace file");
      return error_;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

void EncodeSectionHeader(SectionType type, std::string_view payload,
                         char (&out)[kSectionHeaderSize]) {
  std::memset(out, 0, sizeof(out));
  EncodeFixed16(out + kSectionTypeOffset, static_cast<std::uint16_t>(type));
  EncodeFixed32(out + kSectionLengthOffset, static_cast<std::uint32_t>(payload.size()));
  EncodeFixed32(out + kSectionPayloadCrcOffset,
                crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
  EncodeFixed32(out + kSectionHeaderCrcOffset,
                crc32c::Mask(crc32c::Value(out, kSectionHeaderCrcOffset)));
}

Status TraceFileWriter::WriteSection(SectionType type, std::string_view payload) {
  if (payload.size() > kMaxSectionPayload)
    return Status::InvalidArgument(
        fmt::format("trace file section of {} bytes is over the {} byte limit", payload.size(),
                    kMaxSectionPayload));
  char h[kSectionHeaderSize];
  EncodeSectionHeader(type, payload, h);
  if (buffer_ != nullptr) {  // appended in place; WriteBytes checks the state first
    WALFS_RETURN_IF_ERROR(WriteBytes(std::string_view(h, sizeof(h))));
    buffer_->append(payload);
    return Status::Ok();
  }
  // One write per section, so that a crash leaves whole sections or a torn last one.
  std::string section(h, sizeof(h));
  section.append(payload);
  return WriteBytes(section);
}

Status TraceFileWriter::AddEvents(const EventTable& events) {
  std::string payload;
  PutFixed32(&payload, 0);  // count, patched below
  std::uint32_t count = 0;
  for (const EventInfo* e : events.Events()) {
    if (const EventInfo* have = events_.ById(e->id)) {
      if (*have == *e) continue;
      return Status::AlreadyExists(fmt::format("trace file already defines event {} as {}",
                                               e->id, have->full_name()));
    }
    PutFixed16(&payload, e->id);
    payload.push_back(static_cast<char>(e->kind));
    payload.push_back(static_cast<char>(e->fields.size()));
    WALFS_RETURN_IF_ERROR(PutString(&payload, e->subsystem, "an event subsystem"));
    WALFS_RETURN_IF_ERROR(PutString(&payload, e->name, "an event name"));
    for (const FieldInfo& f : e->fields) {
      payload.push_back(static_cast<char>(f.kind));
      WALFS_RETURN_IF_ERROR(PutString(&payload, f.name, "a field name"));
    }
    ++count;
  }
  if (count == 0) return Status::Ok();
  EncodeFixed32(payload.data(), count);
  WALFS_RETURN_IF_ERROR(WriteSection(SectionType::kCatalogue, payload));
  for (const EventInfo* e : events.Events())
    if (!events_.Contains(e->id)) WALFS_RETURN_IF_ERROR(events_.Add(*e));
  return Status::Ok();
}

Status TraceFileWriter::Append(const TraceEntry& entry) {
  if (!error_.ok()) return error_;
  if (closed_) return Status::InvalidArgument("trace file writer is closed");
  Record r;
  if (entry.type == TraceEntry::Type::kLost) {
    r.event_id = kLostEventId;
    r.cpu = entry.record.cpu;
    r.tid = entry.tid;
    r.timestamp = entry.record.timestamp;
    r.fields[0] = entry.lost;
    r.fields[1] = entry.tid;
  } else {
    r = entry.record;
    if (r.event_id == kLostEventId || !events_.Contains(r.event_id))
      return Status::InvalidArgument(
          fmt::format("trace event id {} is not in the file's catalogue", r.event_id));
  }
  if (entry.comm) {
    WALFS_RETURN_IF_ERROR(NameThread(entry.tid, *entry.comm));
  } else if (!threads_.contains(entry.tid)) {
    unnamed_in_chunk_.insert(entry.tid);
  }
  PutRecord(&chunk_, r);
  ++chunk_count_;
  if (entry.type == TraceEntry::Type::kLost)
    ++lost_markers_;
  else
    ++records_;
  if (chunk_count_ >= chunk_records_) return Flush();
  return Status::Ok();
}

Status TraceFileWriter::NameThread(std::uint32_t tid, std::string_view comm) {
  if (!error_.ok()) return error_;
  auto it = threads_.find(tid);
  if (it != threads_.end() && it->second == comm) return Status::Ok();
  // A threads section names the tid for the whole chunk after it, so
  // entries already buffered keep the old name, or none: they go out first.
  if (it != threads_.end() || unnamed_in_chunk_.contains(tid)) WALFS_RETURN_IF_ERROR(Flush());
  threads_[tid] = std::string(comm);
  pending_threads_[tid] = std::string(comm);
  return Status::Ok();
}

Status TraceFileWriter::WriteThreadsSection() {
  std::string payload;
  PutFixed32(&payload, static_cast<std::uint32_t>(pending_threads_.size()));
  for (const auto& [tid, comm] : pending_threads_) {
    PutFixed32(&payload, tid);
    WALFS_RETURN_IF_ERROR(PutString(&payload, comm, "a thread name"));
  }
  WALFS_RETURN_IF_ERROR(WriteSection(SectionType::kThreads, payload));
  pending_threads_.clear();
  return Status::Ok();
}

Status TraceFileWriter::Flush() {
  if (!error_.ok()) return error_;
  if (!pending_threads_.empty()) WALFS_RETURN_IF_ERROR(WriteThreadsSection());
  if (chunk_count_ == 0) return Status::Ok();
  std::string payload;
  payload.reserve(kChunkPrefixSize + chunk_.size());
  PutFixed32(&payload, chunk_count_);
  PutFixed32(&payload, 0);  // reserved
  payload.append(chunk_);
  // Invariant: a chunk holds exactly its count of 64-byte records.
  WALFS_CHECK(payload.size() == kChunkPrefixSize + std::size_t{chunk_count_} * kRecordSize);
  WALFS_RETURN_IF_ERROR(WriteSection(SectionType::kRecords, payload));
  chunk_.clear();
  chunk_count_ = 0;
  unnamed_in_chunk_.clear();
  return Status::Ok();
}

Status TraceFileWriter::Close() {
  if (closed_) return Status::InvalidArgument("trace file writer closed twice");
  Status s = Flush();
  closed_ = true;
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && s.ok()) s = Status::FromErrno(errno, "closing trace file");
    fd_ = -1;
  }
  return s;
}

}  // namespace walfs::tracing
