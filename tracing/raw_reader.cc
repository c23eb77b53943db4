#include "tracing/raw_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>

#include "base/coding.h"

#include "tracing/event.h"
#include "tracing/event_table.h"
#include "tracing/reader.h"

namespace walfs::tracing {

// Ring records are copied into the stream as they are: that is the file's
// encoding only where the machine is little-endian (trace_file_format.h).
static_assert(std::endian::native == std::endian::little,
              "RawTraceReader copies records verbatim; a big-endian port must encode them");
static_assert(sizeof(Record) == trace_file::kRecordSize);

namespace {
// A records section's fixed cost: its header and the chunk prefix.
constexpr std::size_t kSectionOverhead = trace_file::kSectionHeaderSize + trace_file::kChunkPrefixSize;
}  // namespace

RawTraceReader::RawTraceReader(Tracer* tracer, const TraceFileInfo& info)
    : tracer_(tracer), writer_(TraceFileWriter::ToBuffer(&pending_, info)) {}

Status RawTraceReader::SyncCatalogue() {
  const std::size_t n = Catalogue::Get().size();
  if (n == catalogue_size_) return Status::Ok();
  WALFS_RETURN_IF_ERROR(writer_->AddEvents(EventTable::FromCatalogue(Catalogue::Get())));
  catalogue_size_ = n;
  return Status::Ok();
}

Status RawTraceReader::Fill(std::size_t max_bytes) {
  using trace_file::kRecordSize;
  // Events first: a record may only follow its event's definition, and any
  // record consumed below was committed by an event registered by now.
  WALFS_RETURN_IF_ERROR(SyncCatalogue());
  MutexLock l(&RingConsumeMutex());
  const std::vector<std::shared_ptr<Ring>> rings = tracer_->Rings();
  if (rings.empty()) return Status::Ok();
  const std::size_t start = next_ring_++ % rings.size();
  for (std::size_t i = 0; i < rings.size(); ++i) {
    Ring& ring = *rings[(start + i) % rings.size()];
    if (!ring.HasUnread()) continue;
    // A threads section first if the ring's thread is not named yet.
    WALFS_RETURN_IF_ERROR(writer_->NameThread(ring.tid(), ring.comm()));
    WALFS_RETURN_IF_ERROR(writer_->Flush());
    const std::size_t at = pending_.size();
    const std::size_t room = max_bytes > at ? max_bytes - at : 0;
    // Room for the section and a possible lost marker; one record at least
    // when nothing was made yet.
    std::size_t fit = room > kSectionOverhead + kRecordSize
                          ? (room - kSectionOverhead) / kRecordSize - 1
                          : 0;
    // No more than the ring holds (the in-place area is zeroed when made),
    // and no section over the format's limit (rings go up to 1 GiB).
    constexpr std::size_t kMaxSectionRecords =
        (trace_file::kMaxSectionPayload - trace_file::kChunkPrefixSize) / kRecordSize - 1;
    fit = std::min<std::size_t>({fit, ring.capacity(), ring.Unread(), kMaxSectionRecords});
    if (fit == 0) {
      if (at > 0) break;
      fit = 1;
    }
    // The section is laid out in place: header, chunk prefix, records
    // copied from the ring straight into the buffer (one slot spare for a
    // lost marker).
    pending_.resize(at + kSectionOverhead + (fit + 1) * kRecordSize);
    char* payload = pending_.data() + at + trace_file::kSectionHeaderSize;
    char* records = payload + trace_file::kChunkPrefixSize;
    std::uint64_t lost = 0;
    const std::size_t n = ring.ConsumeBytes(records, fit, &lost);
    std::size_t count = n;
    if (lost > 0) {  // rare: make room for the marker, as TraceFileWriter encodes a kLost entry
      std::memmove(records + kRecordSize, records, n * kRecordSize);
      Record m;
      if (n > 0) std::memcpy(&m, records + kRecordSize, sizeof(m));
      const std::uint64_t ts = n > 0 ? m.timestamp : static_cast<std::uint64_t>(tracer_->NowNs());
      const std::uint16_t cpu = n > 0 ? m.cpu : 0;
      m = Record{};
      m.event_id = trace_file::kLostEventId;
      m.cpu = cpu;
      m.tid = ring.tid();
      m.timestamp = ts;
      m.fields[0] = lost;
      m.fields[1] = ring.tid();
      std::memcpy(records, &m, sizeof(m));
      ++count;
      lost_ += lost;
    }
    if (count == 0) {
      pending_.resize(at);
      continue;
    }
    records_ += n;
    pending_.resize(at + kSectionOverhead + count * kRecordSize);
    payload = pending_.data() + at + trace_file::kSectionHeaderSize;
    EncodeFixed32(payload, static_cast<std::uint32_t>(count));
    EncodeFixed32(payload + 4, 0);  // reserved
    char header[trace_file::kSectionHeaderSize];
    EncodeSectionHeader(trace_file::SectionType::kRecords,
                        std::string_view(payload, trace_file::kChunkPrefixSize + count * kRecordSize),
                        header);
    std::memcpy(pending_.data() + at, header, sizeof(header));
  }
  return Status::Ok();
}

Result<std::size_t> RawTraceReader::Read(std::string* out, std::size_t max_bytes,
                                         std::int64_t timeout_ns) {
  for (;;) {
    WALFS_RETURN_IF_ERROR(Fill(max_bytes));  // after the header, on the first call
    if (!pending_.empty()) {
      const std::size_t n = pending_.size();
      if (out->empty())
        out->swap(pending_);
      else
        out->append(pending_);
      pending_.clear();
      return n;
    }
    if (timeout_ns == 0) return Status::WouldBlock("no trace events to read");
    if (!tracer_->WaitForData(timeout_ns) && !tracer_->HasUnread())
      return Status::WouldBlock("no trace events before the timeout");
  }
}

}  // namespace walfs::tracing
