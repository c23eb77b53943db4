#include "tracing/env_record.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tracing/event.h"
#include "tracing/reader.h"
#include "tracing/trace_file.h"
#include "tracing/trace_file_writer.h"
#include "tracing/tracer.h"

namespace walfs::tracing {

namespace {

struct Recorder {
  std::string path;
  std::unique_ptr<TraceFileWriter> writer;
  std::atomic<bool> stop{false};
  std::thread thread;
};

Recorder* g_recorder = nullptr;

void ReportRecordError(const std::string& path, const Status& s) {
  std::fprintf(stderr, "walfs: trace recording to %s: %s\n", path.c_str(), s.ToString().c_str());
}

void RecorderMain(Recorder* r) {
  TraceReader reader(&Tracer::Get());
  Status error;
  for (;;) {
    const bool stopping = r->stop.load(std::memory_order_acquire);
    auto got = reader.Read(4096, stopping ? 0 : 200'000'000);
    if (!got.ok()) {
      if (stopping) break;
      continue;
    }
    for (const TraceEntry& e : *got) {
      if (!error.ok()) break;
      if (e.type == TraceEntry::Type::kRecord && !r->writer->HasEvent(e.record.event_id))
        error = r->writer->AddEvents(EventTable::FromCatalogue(Catalogue::Get()));
      if (error.ok()) error = r->writer->Append(e);
    }
    if (error.ok()) error = r->writer->Flush();
  }
  if (error.ok()) error = r->writer->Close();
  if (!error.ok()) ReportRecordError(r->path, error);
}

void StopAtExit() {
  Recorder* r = g_recorder;
  if (r == nullptr || !r->thread.joinable()) return;
  r->stop.store(true, std::memory_order_release);
  Tracer::Get().InterruptReaders();
  r->thread.join();
}

std::vector<std::string> SplitPatterns(const char* spec) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = spec; ; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

void Start(Catalogue& catalogue) {
  const char* path = std::getenv("WALFS_TRACE_OUT");
  if (path == nullptr || *path == '\0') return;
  const char* events = std::getenv("WALFS_TRACE_EVENTS");
  std::vector<std::string> patterns =
      events == nullptr || *events == '\0' ? std::vector<std::string>{"all"} : SplitPatterns(events);
  auto writer = TraceFileWriter::Create(path, CurrentTraceFileInfo(&Tracer::Get()));
  if (!writer.ok()) {
    ReportRecordError(path, writer.status());
    return;
  }
  auto* r = new Recorder;  // lives until exit
  r->path = path;
  r->writer = std::move(writer).value();
  catalogue.SetAutoEnable(std::move(patterns));
  g_recorder = r;
  r->thread = std::thread(RecorderMain, r);
  std::atexit(StopAtExit);
}

}  // namespace

void StartRecordingFromEnvironment(Catalogue& catalogue) {
  static std::once_flag once;
  std::call_once(once, [&catalogue] { Start(catalogue); });
}

}  // namespace walfs::tracing
