// Ring: one thread's trace buffer — a single-writer ring of fixed-size
// records that one reader at a time consumes, without locks on either side.
//
// Sequence numbers, not indexes: record s lives in slot s % capacity.
//   reserve_  records the writer has started (published before it writes
//             the slot, so a reader can tell when a slot it copied was being
//             overwritten)
//   head_     records the writer has finished (readers read below it)
//   tail_     the next record the consuming reader will read
//
// Overwrite mode never blocks the writer: when it laps the reader, the
// oldest records are lost and the reader counts them (overruns).  Discard
// mode drops the new record instead and the writer counts it (drops).
//
// Memory ordering (docs/tracing.md has the argument in full): the writer
// stores reserve_ (relaxed), issues a release fence, stores the slot words
// (relaxed) and then head_ (release).  The reader loads head_ (acquire),
// copies the slots (relaxed), issues an acquire fence and re-loads reserve_:
// if the writer had started record s + capacity, the copy of record s may be
// torn, and it is discarded as lost.  This is a seqlock whose sequence is
// the writer's reserve_ cursor.
//
// Write() is for writers that cannot be re-entered (recursion modes safe and
// fast); WriteNested() may be interrupted by a signal handler that writes to
// the same ring (mode context): claims are atomic RMWs, and only the
// outermost write publishes head_.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/cpu.h"
#include "tracing/record.h"

namespace walfs::tracing {

struct RingCounters {
  std::uint64_t entries = 0;           // records written
  std::uint64_t overruns = 0;          // records overwritten before they were read
  std::uint64_t drops = 0;             // records refused because the ring was full (discard)
  std::uint64_t recursion_misses = 0;  // events refused by recursion protection
  std::uint64_t writer_wake_syscalls = 0;  // syscalls the writer made to wake readers
};

class Ring {
 public:
  // `capacity` is rounded up to a power of two (at least 2).
  Ring(std::size_t capacity, std::uint32_t tid, std::string comm, std::uint32_t generation);
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // --- writer side: the owner thread (and, for WriteNested, its signal handlers)
  // Returns false if the record was dropped (discard mode, ring full).
  bool Write(const Record& r, bool overwrite);
  bool WriteNested(const Record& r, bool overwrite);
  // Records written and not yet consumed (for the reader-wake watermark).
  std::uint64_t Unread() const {
    return reserve_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  }
  void CountRecursionMiss() { Bump(&recursion_misses_); }
  void CountWakeSyscall() { Bump(&writer_wake_syscalls_); }

  // --- reader side: one consumer at a time (callers serialise)
  // Copies up to `max` records from the read position and consumes them.
  // *lost is increased by records that were overwritten before being read.
  std::size_t Consume(Record* out, std::size_t max, std::uint64_t* lost);
  // As Consume, into bytes at any alignment (RawTraceReader fills its output
  // buffer in place: a record's bytes are the trace file's encoding).
  std::size_t ConsumeBytes(char* out, std::size_t max, std::uint64_t* lost);
  // As Consume, from the read position, without consuming.
  std::size_t Peek(Record* out, std::size_t max, std::uint64_t* lost) const;
  bool HasUnread() const {
    return head_.load(std::memory_order_acquire) != tail_.load(std::memory_order_relaxed);
  }
  // Drops everything written so far (tracefs: `echo > trace`).
  void Clear() { tail_.store(head_.load(std::memory_order_acquire), std::memory_order_release); }

  // The owner thread exited (or the ring was replaced): once drained it can go.
  void Retire() { retired_.store(true, std::memory_order_release); }
  bool retired() const { return retired_.load(std::memory_order_acquire); }

  std::size_t capacity() const { return mask_ + 1; }
  std::uint32_t tid() const { return tid_; }
  const std::string& comm() const { return comm_; }
  std::uint32_t generation() const { return generation_; }
  RingCounters Counters() const;

 private:
  void Copy(std::uint64_t from, std::uint64_t n, char* out) const;
  std::size_t Read(char* out, std::size_t max, std::uint64_t* lost, bool consume) const;
  void StoreSlot(std::uint64_t seq, const Record& r);
  static void Bump(std::atomic<std::uint64_t>* c) {
    // Signal-safe on the owner thread, and a relaxed RMW keeps nested
    // increments from a signal handler from being lost.
    c->fetch_add(1, std::memory_order_relaxed);
  }

  const std::size_t mask_;
  const std::uint32_t tid_;
  const std::string comm_;
  const std::uint32_t generation_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;

  // Writer-owned cursors, on their own line; readers only load them.
  alignas(kCacheLineSize) std::atomic<std::uint64_t> reserve_{0};
  std::atomic<std::uint64_t> head_{0};
  std::atomic<std::uint64_t> nesting_{0};
  std::atomic<std::uint64_t> entries_{0};
  std::atomic<std::uint64_t> drops_{0};
  std::atomic<std::uint64_t> recursion_misses_{0};
  std::atomic<std::uint64_t> writer_wake_syscalls_{0};

  // Reader-owned, on another line.
  alignas(kCacheLineSize) mutable std::atomic<std::uint64_t> tail_{0};
  mutable std::atomic<std::uint64_t> overruns_{0};
  std::atomic<bool> retired_{false};
};

}  // namespace walfs::tracing
