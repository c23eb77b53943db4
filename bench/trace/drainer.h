// Drainer: the trace_pipe reader of a bench cell.  One thread consumes
// everything the tracer's rings hold with TraceReader::Read(4096, -1) — the
// blocking, consuming read a `cat trace_pipe` does — and counts what it got:
// records per event id, losses reported in the stream ([LOST N EVENTS]),
// and how late records were read.
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
#include <thread>
#include <vector>

namespace walfs::bench {

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

  std::uint64_t Count(std::uint16_t id) const { return id < by_event.size() ? by_event[id] : 0; }
};

class Drainer {
 public:
  Drainer();
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;
  ~Drainer();

  // Reads what is left, stops the thread and returns the counts.
  DrainCounts Stop();

 private:
  void Main();

  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  DrainCounts counts_;  // written by the thread, read after join
  std::thread thread_;
};

// Consumes everything readable now, without blocking, from the calling
// thread (for cells that read after the writers are done).
DrainCounts DrainNow();

}  // namespace walfs::bench
