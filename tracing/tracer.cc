#include "tracing/tracer.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "base/clock.h"
#include "base/futex.h"
#include "tracing/clock.h"
#include "tracing/event_filter.h"
#include "tracing/thread_state.h"

namespace walfs::tracing {

namespace {

thread_local ThreadState tls_state;  // zero-initialised

// Keeps the thread's ring alive and retires it when the thread exits.
struct RingHolder {
  std::shared_ptr<Ring> ring;
  ~RingHolder() {
    ThreadState& ts = tls_state;
    ts.dead = 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    ts.ring = nullptr;
    if (ring) ring->Retire();
  }
};
thread_local RingHolder tls_holder;

bool RegisterMembarrier() {
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

// The reader's half of the asymmetric Dekker with the commit path: makes every
// running thread of the process execute a full barrier, so that writers need
// only a compiler barrier between publishing a record and checking for readers.
void HeavyBarrier(bool membarrier) {
  if (!membarrier || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Add(RingCounters* to, const RingCounters& c) {
  to->entries += c.entries;
  to->overruns += c.overruns;
  to->drops += c.drops;
  to->recursion_misses += c.recursion_misses;
  to->writer_wake_syscalls += c.writer_wake_syscalls;
}

}  // namespace

ThreadState& CurrentThreadState() { return tls_state; }

namespace {
// The calling thread's id, for filters on common_pid (looked up once).
std::uint32_t FilterTid() {
  thread_local const auto tid = static_cast<std::uint32_t>(::gettid());
  return tid;
}
}  // namespace

void EventDef::CommitEvent(const EventDef& event, const std::uint64_t* values) {
  // Filtered before anything is written: a record that fails costs no ring space.
  if (const EventFilter* f = event.filter(); f != nullptr && !f->Matches(values, FilterTid())) return;
  Tracer::Get().Commit(event, values);
}

Tracer& Tracer::Get() {
  static Tracer* tracer = new Tracer;  // never destroyed: threads may trace during exit
  return *tracer;
}

Tracer::Tracer() : membarrier_(RegisterMembarrier()) {}

Tracer::~Tracer() { StopWaker(); }

// The process's tracer is never destroyed, but its waker must not outlive
// the process's exit: a thread still running while exit() runs the static
// destructors is one more thing to race with them (ThreadSanitizer sleeps a
// second at every such exit to catch those races).  A forked child has no
// waker thread, only the parent's std::thread object: it joins nothing.
void Tracer::StopWaker() {
  if (!waker_.joinable() || ::getpid() != waker_pid_) return;
  waker_stop_.store(true);
  waker_token_.load()->Signal();
  waker_.join();
}

TracerOptions Tracer::options() const {
  MutexLock l(&mu_);
  return options_;
}

Status Tracer::SetOptions(const TracerOptions& o) { return SetOptionsAndStartWaker(o); }

Status Tracer::ApplyOptions(const TracerOptions& o) {
  WALFS_RETURN_IF_ERROR(o.Validate());
  MutexLock l(&mu_);
  const bool resize = o.buffer_size_kb != options_.buffer_size_kb;
  options_ = o;
  recursion_.store(o.recursion, std::memory_order_relaxed);
  overwrite_.store(o.overwrite, std::memory_order_relaxed);
  clock_.store(o.clock, std::memory_order_relaxed);
  wakeup_.store(o.wakeup, std::memory_order_relaxed);
  buffer_percent_.store(o.buffer_percent, std::memory_order_relaxed);
  wakeup_delay_us_.store(o.wakeup_delay_us, std::memory_order_relaxed);
  safety_timeout_ms_.store(o.safety_timeout_ms, std::memory_order_relaxed);
  // Threads pick up a ring of the new size at their next event.
  if (resize) generation_.fetch_add(1, std::memory_order_relaxed);
  // A pending deferred wakeup re-reads the delay.
  if (WaitToken* t = waker_token_.load(std::memory_order_acquire)) t->Signal();
  return Status::Ok();
}

Status Tracer::SetOptionsAndStartWaker(const TracerOptions& o) {
  WALFS_RETURN_IF_ERROR(ApplyOptions(o));
  // A reader asleep under `immediate` must still be woken after a switch
  // to `deferred`: the waker has to exist before any commit arms it.
  if (o.wakeup == WakeupMode::kDeferred) EnsureWaker();
  return Status::Ok();
}

std::int64_t Tracer::NowNs() const { return TraceClockNs(clock_.load(std::memory_order_relaxed)); }

void Tracer::CountMiss(ThreadState& ts) {
  if (ts.ring != nullptr)
    ts.ring->CountRecursionMiss();
  else
    lost_unattached_.fetch_add(1, std::memory_order_relaxed);
}

// The commit path.  Recursion protection decides whether this event may be
// written now; Write() does the rest.
void Tracer::Commit(const EventDef& event, const std::uint64_t* values) {
  ThreadState& ts = tls_state;
  if (ts.dead) {  // a destructor ran after this thread's ring was retired
    lost_unattached_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  switch (recursion_.load(std::memory_order_relaxed)) {
    case RecursionMode::kFast:
      if (ts.busy) {  // a signal landed mid-write, or the tracer traced itself
        CountMiss(ts);
        return;
      }
      ts.busy = 1;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      Write(ts, event, values, false);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ts.busy = 0;
      return;
    case RecursionMode::kContext: {
      const int bit = ts.signal_depth > 0 ? 2 : 1;
      if (ts.ctx_bits & bit) {  // recursion within one context
        CountMiss(ts);
        return;
      }
      ts.ctx_bits = ts.ctx_bits | bit;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      Write(ts, event, values, true);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ts.ctx_bits = ts.ctx_bits & ~bit;
      return;
    }
    case RecursionMode::kSafe:
      // defer_depth set means an unwrapped handler (or the tracer itself)
      // interrupted a write: wrapped handlers are held instead.
      if (ts.defer_depth) {
        CountMiss(ts);
        return;
      }
      ts.defer_depth = 1;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      Write(ts, event, values, false);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ts.defer_depth = 0;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (ts.npending) RunDeferredSignals(ts);
      return;
  }
}

void Tracer::Write(ThreadState& ts, const EventDef& event, const std::uint64_t* values,
                   bool nested) {
  Ring* ring = ts.ring;
  if (ring == nullptr || ts.generation != generation_.load(std::memory_order_relaxed)) {
    ring = Attach(ts);
    if (ring == nullptr) return;
  }
  Record r;
  r.event_id = event.id();
  r.cpu = CurrentCpu();
  r.tid = ts.tid;
  r.timestamp = static_cast<std::uint64_t>(TraceClockNs(clock_.load(std::memory_order_relaxed)));
  std::memcpy(r.fields, values, sizeof(r.fields));
  const bool overwrite = overwrite_.load(std::memory_order_relaxed);
  if (!(nested ? ring->WriteNested(r, overwrite) : ring->Write(r, overwrite))) return;

  // Asymmetric Dekker with WaitForData(): the record is published; now look
  // for sleeping readers.  The reader's membarrier() supplies the full
  // barrier; without it we pay for one here.
  if (membarrier_)
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
  if (readers_waiting_.load(std::memory_order_relaxed)) WakeFromWriter(ring);
}

// First event of a thread (or first after a buffer resize): register a ring.
// Allocates, so never from a signal handler: such events are counted lost.
Ring* Tracer::Attach(ThreadState& ts) {
  if (ts.signal_depth > 0 || ts.dead) {
    lost_unattached_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (ts.tid == 0) ts.tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  char comm[16] = "?";
  pthread_getname_np(pthread_self(), comm, sizeof(comm));
  std::shared_ptr<Ring> ring;
  {
    MutexLock l(&mu_);
    const std::size_t slots = std::size_t{options_.buffer_size_kb} * 1024 / sizeof(Record);
    ring = std::make_shared<Ring>(slots, ts.tid, comm, generation_.load(std::memory_order_relaxed));
    rings_.push_back(ring);
  }
  if (tls_holder.ring) tls_holder.ring->Retire();
  tls_holder.ring = ring;
  ts.generation = ring->generation();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ts.ring = ring.get();
  return ts.ring;
}

void Tracer::WakeFromWriter(Ring* ring) {
  const std::uint32_t percent = buffer_percent_.load(std::memory_order_relaxed);
  const bool watermark = percent > 0 && ring->Unread() * 100 >= ring->capacity() * percent;
  if (wakeup_.load(std::memory_order_relaxed) == WakeupMode::kImmediate || watermark) {
    if (!readers_waiting_.exchange(false, std::memory_order_acq_rel)) return;
    if (watermark) watermark_wakes_.fetch_add(1, std::memory_order_relaxed);
    reader_seq_.fetch_add(1, std::memory_order_release);
    ring->CountWakeSyscall();
    // The flag may be left over from a reader that found data without
    // sleeping: count only wakes that reached a sleeper.
    if (FutexWake(&reader_seq_, INT_MAX) > 0)
      reader_wakeups_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Deferred: only the first commit after a reader slept arms the waker.
  if (waker_armed_.load(std::memory_order_relaxed) ||
      waker_armed_.exchange(true, std::memory_order_acq_rel))
    return;
  waker_arms_.fetch_add(1, std::memory_order_relaxed);
  // The waker is started by SetOptions and by every reader before it
  // sleeps, so it exists whenever a reader waits.
  if (WaitToken* t = waker_token_.load(std::memory_order_acquire); t && t->Signal())
    ring->CountWakeSyscall();
}

void Tracer::WakeReaders() {
  if (!readers_waiting_.exchange(false, std::memory_order_acq_rel)) return;
  reader_seq_.fetch_add(1, std::memory_order_release);
  if (FutexWake(&reader_seq_, INT_MAX) > 0) reader_wakeups_.fetch_add(1, std::memory_order_relaxed);
}

void Tracer::InterruptReaders() {
  interrupts_.fetch_add(1, std::memory_order_release);
  reader_seq_.fetch_add(1, std::memory_order_release);
  FutexWake(&reader_seq_, INT_MAX);
}

void Tracer::EnsureWaker() {
  std::call_once(waker_once_, [this] {
    std::atomic<bool> started{false};
    waker_ = std::thread([this, &started] {
      pthread_setname_np(pthread_self(), "walfs-twake");
      // The tracer's own reference, never dropped: a commit may still
      // Signal() the token after StopWaker() has ended this thread.
      WaitToken& token = WaitToken::Current();
      token.Ref();
      waker_token_.store(&token, std::memory_order_release);
      started.store(true);
      WakerMain();
    });
    while (!started.load()) std::this_thread::yield();
    waker_pid_ = ::getpid();
    // Registered after the thread exists, so it runs before the destructors
    // of every static constructed earlier (none of which the waker uses).
    std::atexit([] { Get().StopWaker(); });
  });
}

// The deferred waker: sleeps until a commit arms it, waits wakeup_delay_us,
// then wakes the readers.  Disarms before waking, so that a commit after the
// readers' next sleep arms it again.
void Tracer::WakerMain() {
  WaitToken& token = WaitToken::Current();
  while (!waker_stop_.load()) {
    if (!waker_armed_.load(std::memory_order_acquire)) {
      token.Wait();
      continue;
    }
    // The delay is re-read on every pass: SetOptions() signals us, so a
    // shorter delay set while we wait applies to this wakeup already.
    const std::int64_t armed_at = MonotonicNanos();
    for (;;) {
      const std::int64_t delay_ns =
          std::int64_t{wakeup_delay_us_.load(std::memory_order_relaxed)} * 1000;
      const std::int64_t left = armed_at + delay_ns - MonotonicNanos();
      if (left <= 0 || waker_stop_.load()) break;
      token.WaitFor(left);
    }
    waker_armed_.store(false, std::memory_order_seq_cst);
    WakeReaders();
  }
}

bool Tracer::HasUnread() {
  MutexLock l(&mu_);
  for (const auto& r : rings_)
    if (r->HasUnread()) return true;
  return false;
}

// Returns true with data, false on timeout or InterruptReaders().  A wake
// that finds no data (another reader took it, or a wake left over from an
// earlier sleep) just waits again.
bool Tracer::WaitForData(std::int64_t timeout_ns) {
  EnsureWaker();
  const std::int64_t deadline = timeout_ns < 0 ? -1 : MonotonicNanos() + timeout_ns;
  const std::uint32_t start_interrupts = interrupts_.load(std::memory_order_acquire);
  bool napped = false;
  for (;;) {
    if (HasUnread()) return true;
    // Read the futex word before the interrupt count: an interrupt after this
    // point changes the word, so the FutexWait below returns at once.
    const std::uint32_t seq = reader_seq_.load(std::memory_order_acquire);
    if (interrupts_.load(std::memory_order_acquire) != start_interrupts) return false;
    // Deferred mode: first a nap of the wakeup delay, flagged as waiting but
    // without the barrier.  A reader that has just emptied the rings of a
    // busy tracer finds a new record by the time membarrier() returns, so
    // it paid the barrier (IPIs to every CPU running a writer) for every
    // record or two it read: 197,151 membarrier calls for 200,000 getuid
    // calls in trace_bench's reader table.  The nap is what the deferred
    // wakeup makes a reader wait anyway; a writer that sees the flag arms the
    // waker or wakes the reader at the watermark as before, and a wake lost
    // for want of the barrier only lets the nap run out.
    if (!napped && wakeup_.load(std::memory_order_relaxed) == WakeupMode::kDeferred) {
      napped = true;
      std::int64_t nap = std::int64_t{wakeup_delay_us_.load(std::memory_order_relaxed)} * 1000;
      if (deadline >= 0) nap = std::min(nap, deadline - MonotonicNanos());
      if (nap > 0) {
        readers_waiting_.store(true, std::memory_order_relaxed);
        reader_naps_.fetch_add(1, std::memory_order_relaxed);
        FutexWait(&reader_seq_, seq, nap);
        continue;
      }
    }
    readers_waiting_.store(true, std::memory_order_seq_cst);
    HeavyBarrier(membarrier_);
    if (HasUnread()) return true;
    std::int64_t left = -1;
    if (deadline >= 0) {
      left = deadline - MonotonicNanos();
      if (left <= 0) return false;
    }
    const std::int64_t safety =
        std::int64_t{safety_timeout_ms_.load(std::memory_order_relaxed)} * 1'000'000;
    if (safety > 0 && (left < 0 || left > safety)) left = safety;
    reader_sleeps_.fetch_add(1, std::memory_order_relaxed);
    FutexWait(&reader_seq_, seq, left);
    if (HasUnread()) {
      // Woken by nobody: only the safety timeout found these events.
      if (reader_seq_.load(std::memory_order_acquire) == seq)
        safety_timeouts_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (deadline >= 0 && MonotonicNanos() >= deadline) return false;
  }
}

std::vector<std::shared_ptr<Ring>> Tracer::Rings() {
  MutexLock l(&mu_);
  // Release retired rings once nothing is left to read in them.
  auto drained = [](const std::shared_ptr<Ring>& r) { return r->retired() && !r->HasUnread(); };
  for (const auto& r : rings_)
    if (drained(r)) Add(&freed_, r->Counters());
  rings_.erase(std::remove_if(rings_.begin(), rings_.end(), drained), rings_.end());
  return rings_;
}

void Tracer::Clear() {
  MutexLock l(&mu_);
  for (const auto& r : rings_) r->Clear();
}

TracerStats Tracer::Stats() {
  TracerStats s;
  {
    MutexLock l(&mu_);
    s.totals = freed_;
    for (const auto& r : rings_) {
      RingStats rs;
      rs.tid = r->tid();
      rs.comm = r->comm();
      rs.capacity = r->capacity();
      rs.unread = r->Unread();
      rs.retired = r->retired();
      rs.counters = r->Counters();
      Add(&s.totals, rs.counters);
      s.rings.push_back(std::move(rs));
    }
  }
  s.lost_unattached = lost_unattached_.load(std::memory_order_relaxed);
  s.reader_sleeps = reader_sleeps_.load(std::memory_order_relaxed);
  s.reader_naps = reader_naps_.load(std::memory_order_relaxed);
  s.reader_wakeups = reader_wakeups_.load(std::memory_order_relaxed);
  s.waker_arms = waker_arms_.load(std::memory_order_relaxed);
  s.watermark_wakes = watermark_wakes_.load(std::memory_order_relaxed);
  s.safety_timeouts = safety_timeouts_.load(std::memory_order_relaxed);
  s.membarrier = membarrier_;
  return s;
}

void Tracer::ResetForTesting() {
  Catalogue::Get().SetAllEnabled(false);
  for (const EventDef* e : Catalogue::Get().Events()) WALFS_CHECK(Catalogue::Get().SetFilter(*e, "0").ok());
  Catalogue::Get().SetTracingOn(true);
  WALFS_CHECK(SetOptions(TracerOptions{}).ok());
  {
    MutexLock l(&mu_);
    for (const auto& r : rings_) r->Retire();
    rings_.clear();
    freed_ = RingCounters{};
    generation_.fetch_add(1, std::memory_order_relaxed);
  }
  lost_unattached_.store(0);
  reader_sleeps_.store(0);
  reader_naps_.store(0);
  reader_wakeups_.store(0);
  waker_arms_.store(0);
  watermark_wakes_.store(0);
  safety_timeouts_.store(0);
  readers_waiting_.store(false);
}

}  // namespace walfs::tracing
