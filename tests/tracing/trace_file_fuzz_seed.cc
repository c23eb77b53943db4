// Writes the seed corpus of trace_file_fuzzer into the directory given as
// the only argument: small valid trace files made by the real writer, so the
// seeds follow the format whenever it changes.  Run at build time.
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

#include "tracing/trace_file.h"

namespace walfs::tracing {
namespace {

TraceEntry Rec(std::uint16_t id, std::uint32_t tid, const char* comm, std::uint64_t ts,
               std::uint64_t f0, std::uint64_t f1) {
  TraceEntry e;
  e.record.event_id = id;
  e.record.cpu = static_cast<std::uint16_t>(tid & 3);
  e.record.tid = tid;
  e.record.timestamp = ts;
  e.record.fields[0] = f0;
  e.record.fields[1] = f1;
  e.tid = tid;
  e.comm = std::make_shared<const std::string>(comm);
  return e;
}

Status WriteSeed(const std::string& path, std::size_t chunk_records, bool with_records) {
  TraceFileInfo info;
  info.flags = trace_file::kFlagOverwrite;
  info.created_unix_ns = 1'700'000'000'000'000'000ull;
  info.created_trace_ns = 1'000'000'000;
  info.pid = 4242;
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileWriter> w,
                         TraceFileWriter::Create(path, info, chunk_records));
  EventTable events;
  WALFS_RETURN_IF_ERROR(events.Add({1, "journal", "grant_sleep", EventKind::kInstant,
                                    {{"tid", FieldKind::kU64}, {"need", FieldKind::kU64}}}));
  WALFS_RETURN_IF_ERROR(events.Add({2, "fs", "write_enter", EventKind::kBegin,
                                    {{"ino", FieldKind::kHex}}}));
  WALFS_RETURN_IF_ERROR(events.Add({3, "fs", "write_exit", EventKind::kEnd,
                                    {{"ret", FieldKind::kI64}}}));
  WALFS_RETURN_IF_ERROR(events.Add({4, "journal", "grant_free", EventKind::kCounter,
                                    {{"bytes", FieldKind::kU64}}}));
  WALFS_RETURN_IF_ERROR(w->AddEvents(events));
  if (with_records) {
    TraceEntry lost;
    lost.type = TraceEntry::Type::kLost;
    lost.lost = 17;
    lost.tid = 100;
    lost.comm = std::make_shared<const std::string>("walfs-fuse");
    WALFS_RETURN_IF_ERROR(w->Append(lost));
    WALFS_RETURN_IF_ERROR(w->Append(Rec(2, 100, "walfs-fuse", 1'000'001'000, 0x42, 0)));
    WALFS_RETURN_IF_ERROR(w->Append(Rec(1, 101, "walfs-log", 1'000'002'000, 7, 4096)));
    WALFS_RETURN_IF_ERROR(w->Append(Rec(4, 101, "walfs-log", 1'000'002'500, 65536, 0)));
    WALFS_RETURN_IF_ERROR(w->Append(Rec(3, 100, "walfs-fuse", 1'000'003'000, ~0ull, 0)));
  }
  return w->Close();
}

}  // namespace
}  // namespace walfs::tracing

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  using walfs::tracing::WriteSeed;
  for (const auto& [name, chunk, records] :
       {std::tuple{"small.wtrace", 2, true}, std::tuple{"one_chunk.wtrace", 64, true},
        std::tuple{"catalogue_only.wtrace", 64, false}}) {
    walfs::Status s = WriteSeed(dir + "/" + name, static_cast<std::size_t>(chunk), records);
    if (!s.ok()) {
      std::fprintf(stderr, "trace_file_fuzz_seed: %s: %s\n", name, s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
