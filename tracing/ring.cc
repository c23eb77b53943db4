#include "tracing/ring.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"

namespace walfs::tracing {

namespace {

#if defined(__SANITIZE_THREAD__)
#define WALFS_RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WALFS_RING_TSAN 1
#endif
#endif

// Read-modify-writes that must be atomic only against signal handlers on the
// owner thread, not against other CPUs (the kernel's local_t): on x86-64 one
// instruction without the LOCK prefix, which a signal cannot split, at a few
// cycles instead of ~20.  Other threads only load these words.  Elsewhere,
// and under TSan (which cannot see inline assembly), real atomics.
std::uint64_t LocalFetchAdd(std::atomic<std::uint64_t>* a, std::uint64_t v) {
#if defined(__x86_64__) && !defined(WALFS_RING_TSAN)
  static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
  auto* p = reinterpret_cast<std::uint64_t*>(a);
  asm volatile("xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory", "cc");
  return v;
#else
  return a->fetch_add(v, std::memory_order_relaxed);
#endif
}

bool LocalCompareExchange(std::atomic<std::uint64_t>* a, std::uint64_t* expected,
                          std::uint64_t desired) {
#if defined(__x86_64__) && !defined(WALFS_RING_TSAN)
  auto* p = reinterpret_cast<std::uint64_t*>(a);
  std::uint64_t prev = *expected;
  asm volatile("cmpxchgq %2, %1" : "+a"(prev), "+m"(*p) : "r"(desired) : "memory", "cc");
  const bool ok = prev == *expected;
  *expected = prev;
  return ok;
#else
  return a->compare_exchange_strong(*expected, desired, std::memory_order_relaxed);
#endif
}

std::size_t RoundUpPow2(std::size_t n) { return std::bit_ceil(std::max<std::size_t>(n, 2)); }

void ToWords(const Record& r, std::uint64_t (&w)[kRecordWords]) { std::memcpy(w, &r, sizeof(r)); }
}  // namespace

Ring::Ring(std::size_t capacity, std::uint32_t tid, std::string comm, std::uint32_t generation)
    : mask_(RoundUpPow2(capacity) - 1),
      tid_(tid),
      comm_(std::move(comm)),
      generation_(generation),
      words_(new std::atomic<std::uint64_t>[(mask_ + 1) * kRecordWords]) {
  for (std::size_t i = 0; i < (mask_ + 1) * kRecordWords; ++i)
    words_[i].store(0, std::memory_order_relaxed);
}

void Ring::StoreSlot(std::uint64_t seq, const Record& r) {
  std::uint64_t w[kRecordWords];
  ToWords(r, w);
  std::atomic<std::uint64_t>* slot = &words_[(seq & mask_) * kRecordWords];
  for (std::size_t i = 0; i < kRecordWords; ++i) slot[i].store(w[i], std::memory_order_relaxed);
}

// Not re-entrant: the owner thread only, with no signal handler writing to
// this ring meanwhile (the tracer's recursion modes safe and fast make sure).
bool Ring::Write(const Record& r, bool overwrite) {
  const std::uint64_t seq = reserve_.load(std::memory_order_relaxed);
  if (!overwrite && seq - tail_.load(std::memory_order_acquire) > mask_) {
    Bump(&drops_);
    return false;
  }
  reserve_.store(seq + 1, std::memory_order_relaxed);
  // reserve_ must be visible before any word of the slot changes: a reader
  // that copied the old record re-checks reserve_ after its copy.
  std::atomic_thread_fence(std::memory_order_release);
  StoreSlot(seq, r);
  head_.store(seq + 1, std::memory_order_release);
  entries_.store(entries_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

// Re-entrant from signal handlers on the owner thread: the claim is a CAS,
// so an interrupting writer takes the next sequence number, and only the
// outermost writer publishes head_ (ftrace's rb_end_commit).
bool Ring::WriteNested(const Record& r, bool overwrite) {
  LocalFetchAdd(&nesting_, 1);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::uint64_t seq = reserve_.load(std::memory_order_relaxed);
  bool claimed = false;
  for (;;) {
    if (!overwrite && seq - tail_.load(std::memory_order_acquire) > mask_) break;
    if (LocalCompareExchange(&reserve_, &seq, seq + 1)) {
      claimed = true;
      break;
    }
  }
  if (claimed) {
    std::atomic_thread_fence(std::memory_order_release);
    StoreSlot(seq, r);
    LocalFetchAdd(&entries_, 1);
  } else {
    LocalFetchAdd(&drops_, 1);
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (LocalFetchAdd(&nesting_, ~std::uint64_t{0}) == 1) {
    // Publish everything claimed so far.  A handler that ran after our
    // decrement may already have published further; head_ never goes back.
    // (On x86 a plain store is a release; the fence keeps the compiler from
    // sinking the slot stores below it.)
    std::atomic_thread_fence(std::memory_order_release);
    const std::uint64_t r_now = reserve_.load(std::memory_order_relaxed);
    std::uint64_t h = head_.load(std::memory_order_relaxed);
    while (h < r_now && !LocalCompareExchange(&head_, &h, r_now)) {
    }
  }
  return claimed;
}

// The seqlock reader's copy.  Under TSan, word by word with relaxed atomic
// loads (what the C++ model blesses).  Elsewhere, the ring's words in at most
// two memcpy runs, as ftrace's reader copies a page: the copy may race with
// a writer lapping the reader, and Read() drops every record whose slot a
// writer could have touched, re-checking reserve_ after an acquire fence.
// Per record that is ~10 instructions instead of ~55.
void Ring::Copy(std::uint64_t from, std::uint64_t n, char* out) const {
#if defined(WALFS_RING_TSAN)
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::atomic<std::uint64_t>* slot = &words_[((from + i) & mask_) * kRecordWords];
    std::uint64_t w[kRecordWords];
    for (std::size_t k = 0; k < kRecordWords; ++k) w[k] = slot[k].load(std::memory_order_relaxed);
    std::memcpy(out + i * sizeof(Record), w, sizeof(Record));
  }
#else
  static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
  const auto* words = reinterpret_cast<const char*>(words_.get());
  const std::uint64_t first = from & mask_;
  const std::uint64_t run = std::min<std::uint64_t>(n, mask_ + 1 - first);
  std::memcpy(out, words + first * sizeof(Record), run * sizeof(Record));
  std::memcpy(out + run * sizeof(Record), words, (n - run) * sizeof(Record));
#endif
}

std::size_t Ring::Read(char* out, std::size_t max, std::uint64_t* lost, bool consume) const {
  const std::uint64_t cap = mask_ + 1;
  std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  std::uint64_t missed = 0;
  if (head - tail > cap) {  // lapped: the oldest are gone
    missed += head - tail - cap;
    tail = head - cap;
  }
  const std::uint64_t n = std::min<std::uint64_t>(head - tail, max);
  Copy(tail, n, out);
  std::atomic_thread_fence(std::memory_order_acquire);
  // Record s is intact only if the writer had not started record s + cap.
  const std::uint64_t started = reserve_.load(std::memory_order_relaxed);
  const std::uint64_t valid_from = started > cap ? started - cap : 0;
  std::uint64_t bad = 0;
  if (tail < valid_from) bad = std::min(valid_from, tail + n) - tail;
  if (bad > 0) std::memmove(out, out + bad * sizeof(Record), (n - bad) * sizeof(Record));
  missed += bad;
  if (consume) {
    tail_.store(tail + n, std::memory_order_release);
    if (missed) overruns_.fetch_add(missed, std::memory_order_relaxed);
  }
  *lost += missed;
  return static_cast<std::size_t>(n - bad);
}

std::size_t Ring::Consume(Record* out, std::size_t max, std::uint64_t* lost) {
  return Read(reinterpret_cast<char*>(out), max, lost, true);
}

std::size_t Ring::ConsumeBytes(char* out, std::size_t max, std::uint64_t* lost) {
  return Read(out, max, lost, true);
}

std::size_t Ring::Peek(Record* out, std::size_t max, std::uint64_t* lost) const {
  return Read(reinterpret_cast<char*>(out), max, lost, false);
}

RingCounters Ring::Counters() const {
  RingCounters c;
  c.entries = entries_.load(std::memory_order_relaxed);
  c.overruns = overruns_.load(std::memory_order_relaxed);
  c.drops = drops_.load(std::memory_order_relaxed);
  c.recursion_misses = recursion_misses_.load(std::memory_order_relaxed);
  c.writer_wake_syscalls = writer_wake_syscalls_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace walfs::tracing
