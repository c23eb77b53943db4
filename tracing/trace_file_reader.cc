#include "tracing/trace_file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/crc32c.h"

namespace walfs::tracing {

using namespace trace_file;  // NOLINT: the format's constants, in this file only

namespace {

// Fuzz builds (-DWALFS_FUZZ=ON defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION,
// as OSS-Fuzz does) compute CRCs but do not act on a mismatch, so that the
// fuzzer reaches the parsers behind them instead of stopping at every CRC.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCrcMismatchIsFatal = false;
#else
constexpr bool kCrcMismatchIsFatal = true;
#endif

bool CrcMatches(std::uint32_t stored_masked, const char* data, std::size_t n) {
  return crc32c::Unmask(stored_masked) == crc32c::Value(data, n) || !kCrcMismatchIsFatal;
}

// Bounds-checked little-endian reads from one section's payload.  Every
// getter returns false, consuming nothing, if the bytes are not there.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool U8(std::uint8_t* v) {
    if (s_.size() < 1) return false;
    *v = static_cast<std::uint8_t>(s_[0]);
    s_.remove_prefix(1);
    return true;
  }
  bool U16(std::uint16_t* v) {
    if (s_.size() < 2) return false;
    *v = DecodeFixed16(s_.data());
    s_.remove_prefix(2);
    return true;
  }
  bool U32(std::uint32_t* v) {
    if (s_.size() < 4) return false;
    *v = DecodeFixed32(s_.data());
    s_.remove_prefix(4);
    return true;
  }
  bool String(std::string* v) {
    std::uint16_t n = 0;
    if (s_.size() < 2 || s_.size() - 2 < (n = DecodeFixed16(s_.data()))) return false;
    v->assign(s_.data() + 2, n);
    s_.remove_prefix(2 + std::size_t{n});
    return true;
  }
  bool done() const { return s_.empty(); }

 private:
  std::string_view s_;
};

Record DecodeRecord(const char* p) {
  Record r;
  r.event_id = DecodeFixed16(p + kRecordEventIdOffset);
  r.cpu = DecodeFixed16(p + kRecordCpuOffset);
  r.tid = DecodeFixed32(p + kRecordTidOffset);
  r.timestamp = DecodeFixed64(p + kRecordTimestampOffset);
  for (int i = 0; i < kMaxFields; ++i) r.fields[i] = DecodeFixed64(p + kRecordFieldsOffset + 8 * i);
  return r;
}

}  // namespace

TraceFileReader::TraceFileReader(int fd, std::string contents, bool stream)
    : fd_(fd), data_(std::move(contents)), stream_(stream) {}

TraceFileReader::~TraceFileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<TraceFileReader>> TraceFileReader::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);  // "PATH: No such file or directory"
  std::unique_ptr<TraceFileReader> r(new TraceFileReader(fd, {}, false));
  WALFS_RETURN_IF_ERROR(r->ReadHeader());
  return r;
}

Result<std::unique_ptr<TraceFileReader>> TraceFileReader::FromBuffer(std::string contents) {
  std::unique_ptr<TraceFileReader> r(new TraceFileReader(-1, std::move(contents), false));
  WALFS_RETURN_IF_ERROR(r->ReadHeader());
  return r;
}

std::unique_ptr<TraceFileReader> TraceFileReader::ForStream() {
  return std::unique_ptr<TraceFileReader>(new TraceFileReader(-1, {}, true));
}

void TraceFileReader::Feed(std::string_view bytes) {
  WALFS_CHECK_MSG(stream_, "Feed() on a trace file reader not made by ForStream()");
  // Drop what was parsed once it is most of the buffer: each byte is moved
  // a bounded number of times.
  const std::size_t parsed = static_cast<std::size_t>(offset_ - base_);
  if (parsed > 0 && parsed >= data_.size() / 2) {
    data_.erase(0, parsed);
    base_ = offset_;
  }
  data_.append(bytes);
}

Status TraceFileReader::Fail(Status s) {
  error_ = std::move(s);
  return error_;
}

Status TraceFileReader::ReadBytes(std::size_t n, std::string* out) {
  if (fd_ < 0) {
    const std::size_t at =
        static_cast<std::size_t>(std::min<std::uint64_t>(offset_ - base_, data_.size()));
    out->assign(data_, at, n);
    offset_ += out->size();
    return Status::Ok();
  }
  out->resize(n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd_, out->data() + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Fail(Status::FromErrno(errno, "reading trace file"));
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  out->resize(got);
  offset_ += got;
  return Status::Ok();
}

Status TraceFileReader::ReadHeader() {
  std::string h;
  WALFS_RETURN_IF_ERROR(ReadBytes(kFileHeaderSize, &h));
  const std::size_t magic_bytes = std::min(h.size(), kMagic.size());
  if (h.empty() || h.compare(0, magic_bytes, kMagic.substr(0, magic_bytes)) != 0)
    return Fail(Status::Corruption("not a walfs trace file (bad magic)"));
  if (h.size() < kFileHeaderSize)
    return Fail(Status::Corruption(
        fmt::format("trace file header truncated at {} of {} bytes", h.size(), kFileHeaderSize)));
  if (!CrcMatches(DecodeFixed32(h.data() + kHeaderCrcOffset), h.data(), kHeaderCrcOffset))
    return Fail(Status::Corruption("trace file header CRC mismatch"));
  info_.version = DecodeFixed16(h.data() + kVersionOffset);
  if (info_.version != kVersion)
    return Fail(Status::Corruption(fmt::format(
        "trace file version {} is not supported (this reader knows {})", info_.version, kVersion)));
  header_read_ = true;
  info_.flags = DecodeFixed32(h.data() + kFlagsOffset);
  const std::string_view clock(h.data() + kClockOffset, kClockNameSize);
  info_.clock = std::string(clock.substr(0, clock.find('\0')));
  info_.created_unix_ns = DecodeFixed64(h.data() + kCreatedUnixNsOffset);
  info_.created_trace_ns = DecodeFixed64(h.data() + kCreatedTraceNsOffset);
  info_.pid = DecodeFixed32(h.data() + kPidOffset);
  return Status::Ok();
}

Status TraceFileReader::ReadChunk(std::vector<TraceEntry>* out) {
  out->clear();
  if (!error_.ok()) return error_;
  if (stream_ && !header_read_) {
    if (unparsed_bytes() < kFileHeaderSize) {
      // A stream that cannot be a trace file is refused as soon as it says so.
      const std::string_view have(data_.data(), std::min(data_.size(), kMagic.size()));
      if (have != kMagic.substr(0, have.size()))
        return Fail(Status::Corruption("not a walfs trace stream (bad magic)"));
      return Status::Ok();
    }
    WALFS_RETURN_IF_ERROR(ReadHeader());
  }
  while (!eof_) {
    const std::uint64_t at = offset_;
    // Stream mode: a section not fed whole yet is left for a later call.
    auto incomplete = [&](std::size_t need) {
      if (!stream_) return false;
      offset_ = at;
      return unparsed_bytes() < need;
    };
    std::string h;
    WALFS_RETURN_IF_ERROR(ReadBytes(kSectionHeaderSize, &h));
    if (h.size() < kSectionHeaderSize && incomplete(kSectionHeaderSize)) return Status::Ok();
    if (h.size() < kSectionHeaderSize) {  // clean end, or torn inside a section header
      eof_ = true;
      torn_tail_ = !h.empty();
      torn_bytes_ = h.size();
      break;
    }
    if (!CrcMatches(DecodeFixed32(h.data() + kSectionHeaderCrcOffset), h.data(),
                    kSectionHeaderCrcOffset))
      return Fail(Status::Corruption(
          fmt::format("trace file section header at offset {}: CRC mismatch", at)));
    const std::uint16_t type = DecodeFixed16(h.data() + kSectionTypeOffset);
    const std::uint32_t length = DecodeFixed32(h.data() + kSectionLengthOffset);
    if (length > kMaxSectionPayload)
      return Fail(Status::Corruption(fmt::format(
          "trace file section at offset {}: length {} is over the limit", at, length)));
    std::string payload;
    WALFS_RETURN_IF_ERROR(ReadBytes(length, &payload));
    if (payload.size() < length && incomplete(kSectionHeaderSize + std::size_t{length}))
      return Status::Ok();
    if (payload.size() < length) {  // the writer stopped inside this section
      eof_ = true;
      torn_tail_ = true;
      torn_bytes_ = kSectionHeaderSize + payload.size();
      break;
    }
    if (!CrcMatches(DecodeFixed32(h.data() + kSectionPayloadCrcOffset), payload.data(),
                    payload.size()))
      return Fail(Status::Corruption(
          fmt::format("trace file section at offset {}: payload CRC mismatch", at)));

    Status s;
    switch (static_cast<SectionType>(type)) {
      case SectionType::kCatalogue:
        s = ParseCatalogue(payload);
        break;
      case SectionType::kThreads:
        s = ParseThreads(payload);
        break;
      case SectionType::kRecords:
        s = ParseRecords(payload, out);
        break;
      default:  // a newer writer's section: skippable by design
        ++skipped_sections_;
        break;
    }
    if (!s.ok())
      return Fail(Status::Corruption(
          fmt::format("trace file section at offset {}: {}", at, s.message())));
    if (!out->empty()) return Status::Ok();
  }
  return Status::Ok();
}

Status TraceFileReader::ParseCatalogue(const std::string& payload) {
  Cursor c(payload);
  std::uint32_t count = 0;
  if (!c.U32(&count)) return Status::Corruption("catalogue too short");
  for (std::uint32_t i = 0; i < count; ++i) {
    EventInfo e;
    std::uint8_t kind = 0, nfields = 0;
    if (!c.U16(&e.id) || !c.U8(&kind) || !c.U8(&nfields) || !c.String(&e.subsystem) ||
        !c.String(&e.name))
      return Status::Corruption(fmt::format("catalogue entry {} truncated", i));
    if (kind > kMaxEventKind)
      return Status::Corruption(fmt::format("event {} has unknown kind {}", e.id, kind));
    if (nfields > kMaxFields)
      return Status::Corruption(fmt::format("event {} has {} fields", e.id, nfields));
    e.kind = static_cast<EventKind>(kind);
    for (std::uint8_t f = 0; f < nfields; ++f) {
      FieldInfo field;
      std::uint8_t field_kind = 0;
      if (!c.U8(&field_kind) || !c.String(&field.name))
        return Status::Corruption(fmt::format("catalogue entry {} truncated", i));
      if (field_kind > kMaxFieldKind)
        return Status::Corruption(
            fmt::format("event {} field {} has unknown kind {}", e.id, f, field_kind));
      field.kind = static_cast<FieldKind>(field_kind);
      e.fields.push_back(std::move(field));
    }
    Status s = events_.Add(std::move(e));
    if (!s.ok()) return Status::Corruption(s.message());
  }
  if (!c.done()) return Status::Corruption("catalogue has trailing bytes");
  return Status::Ok();
}

Status TraceFileReader::ParseThreads(const std::string& payload) {
  Cursor c(payload);
  std::uint32_t count = 0;
  if (!c.U32(&count)) return Status::Corruption("thread table too short");
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t tid = 0;
    std::string comm;
    if (!c.U32(&tid) || !c.String(&comm))
      return Status::Corruption(fmt::format("thread table entry {} truncated", i));
    threads_[tid] = std::make_shared<const std::string>(std::move(comm));
  }
  if (!c.done()) return Status::Corruption("thread table has trailing bytes");
  return Status::Ok();
}

Status TraceFileReader::ParseRecords(const std::string& payload, std::vector<TraceEntry>* out) {
  if (payload.size() < kChunkPrefixSize) return Status::Corruption("record chunk too short");
  const std::uint32_t count = DecodeFixed32(payload.data());
  if (payload.size() != kChunkPrefixSize + std::uint64_t{count} * kRecordSize)
    return Status::Corruption(
        fmt::format("record chunk of {} bytes cannot hold {} records", payload.size(), count));
  out->reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const Record r = DecodeRecord(payload.data() + kChunkPrefixSize + std::size_t{i} * kRecordSize);
    TraceEntry e;
    e.tid = r.tid;
    if (r.event_id == kLostEventId) {
      e.type = TraceEntry::Type::kLost;
      e.lost = r.fields[0];
      e.record.cpu = r.cpu;
      e.record.timestamp = r.timestamp;
    } else {
      e.record = r;
    }
    if (auto it = threads_.find(e.tid); it != threads_.end()) e.comm = it->second;
    out->push_back(std::move(e));
  }
  return Status::Ok();
}

}  // namespace walfs::tracing
