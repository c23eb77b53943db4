#include "tracing/raw_reader.h"

#include <algorithm>
#include <bit>
#include <string_view>

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
  const std::size_t n = Catalogue::Get().Events().size();
  if (n == catalogue_size_) return Status::Ok();
  WALFS_RETURN_IF_ERROR(writer_->AddEvents(EventTable::FromCatalogue(Catalogue::Get())));
  catalogue_size_ = n;
  return Status::Ok();
}

Status RawTraceReader::Fill(std::size_t max_bytes) {
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
    const std::size_t used = pending_.size();
    const std::size_t room = max_bytes > used ? max_bytes - used : 0;
    // Room for the section and a possible lost marker; one record at least
    // when nothing was made yet.
    std::size_t fit = room > kSectionOverhead + trace_file::kRecordSize
                          ? (room - kSectionOverhead) / trace_file::kRecordSize - 1
                          : 0;
    fit = std::min(fit, ring.capacity());
    if (fit == 0) {
      if (used > 0) break;
      fit = 1;
    }
    if (scratch_.size() < fit + 1) scratch_.resize(fit + 1);
    std::uint64_t lost = 0;
    const std::size_t n = ring.Consume(&scratch_[1], fit, &lost);
    if (n == 0 && lost == 0) continue;
    std::size_t first = 1;
    if (lost > 0) {  // as TraceFileWriter encodes a kLost entry
      Record& m = scratch_[0];
      m = Record{};
      m.event_id = trace_file::kLostEventId;
      m.tid = ring.tid();
      m.cpu = n > 0 ? scratch_[1].cpu : 0;
      m.timestamp = n > 0 ? scratch_[1].timestamp : static_cast<std::uint64_t>(tracer_->NowNs());
      m.fields[0] = lost;
      m.fields[1] = ring.tid();
      first = 0;
      lost_ += lost;
    }
    records_ += n;
    WALFS_RETURN_IF_ERROR(writer_->NameThread(ring.tid(), ring.comm()));
    const std::size_t count = n + 1 - first;
    WALFS_RETURN_IF_ERROR(writer_->AppendEncodedChunk(
        std::string_view(reinterpret_cast<const char*>(&scratch_[first]),
                         count * sizeof(Record)),
        static_cast<std::uint32_t>(count)));
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
