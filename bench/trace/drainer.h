// Drainer: the trace_pipe reader of a bench cell.  One thread consumes
// everything the tracer's rings hold with a blocking, consuming read and
// counts what it got: records per event id, losses reported in the stream
// ([LOST N EVENTS]), how late records were read, and its own CPU time.
// The read is one of three (ReaderKind):
//   entries  TraceReader::Read(4096, -1): merged entries, counted (the
//            getuid and recursion tables' reader)
//   text     the same, each entry formatted as a trace_pipe line
//            (AppendTextLine): what `cat .walfs/trace_pipe` costs the daemon
//   raw      RawTraceReader::Read(256 KiB, -1): the binary stream of
//            `.walfs/trace_pipe_raw`; records are counted from the sections'
//            bytes (event id and lost markers), nothing is decoded
//
// Stop() is called after the writers have been joined.  It sets the stop
// flag and interrupts the reader until the thread has seen the flag: one
// InterruptReaders() is not enough, because it only wakes a reader that is
// already inside WaitForData(); a reader that enters WaitForData() just after
// the interrupt sleeps through it.  The thread then reads what is left
// without blocking, so the rings are empty when Stop() returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"

namespace walfs::bench {

enum class ReaderKind : std::uint8_t { kEntries, kText, kRaw };
std::string_view ReaderKindName(ReaderKind k);
Result<ReaderKind> ParseReaderKind(std::string_view name);

struct DrainCounts {
  std::uint64_t records = 0;
  std::vector<std::uint64_t> by_event;  // index: event id
  std::uint64_t lost_in_stream = 0;     // sum of kLost entries
  std::uint64_t reads = 0;              // Read() calls that returned entries
  // Read(max, -1) returned WouldBlock before Stop() was called: a wakeup
  // with nothing to read (the documented "waits for at least one" did not hold).
  std::uint64_t empty_returns = 0;
  std::int64_t max_lag_ns = 0;  // now - timestamp of the oldest record of a batch, max
  std::uint64_t final_records = 0;  // read by the final non-blocking drain
  std::int64_t cpu_ns = 0;          // the reader thread's CPU time, reading and counting

  std::uint64_t Count(std::uint16_t id) const { return id < by_event.size() ? by_event[id] : 0; }
};

class Drainer {
 public:
  explicit Drainer(ReaderKind kind = ReaderKind::kEntries);
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;
  ~Drainer();

  // Reads what is left, stops the thread and returns the counts.
  DrainCounts Stop();

 private:
  void Main();

  const ReaderKind kind_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  DrainCounts counts_;  // written by the thread, read after join
  std::thread thread_;
};

// Consumes everything readable now, without blocking, from the calling
// thread (for cells that read after the writers are done).
DrainCounts DrainNow();

}  // namespace walfs::bench
