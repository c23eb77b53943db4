#include "fs/error_recorder.h"

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "base/messages.h"

namespace walfs::fs {

namespace {
std::int64_t NowSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}
}  // namespace

ErrorRecorder::ErrorRecorder(Options options) : options_(std::move(options)), cv_(&mu_) {
  MutexLock l(&mu_);
  record_ = options_.initial;
  logged_record_ = options_.initial;
}

ErrorRecorder::~ErrorRecorder() { Stop(false); }

std::string ErrorRecorder::FsckHint() const {
  return fmt::format("unmount it and run fsck.walfs -f -y {}", options_.image);
}

void ErrorRecorder::Note(std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s) {
  format::ErrorEvent e;
  e.time_s = NowSeconds();
  e.ino = ino;
  e.blkno = blkno;
  e.err = static_cast<std::uint32_t>(s.ToErrno());
  e.what = std::string(what.substr(0, format::kErrorWhatSize));
  const bool can_log = options_.can_log && options_.can_log();
  std::uint32_t count = 0;
  {
    MutexLock l(&mu_);
    if (seen_.size() < kMaxRemembered) {
      if (!seen_.emplace(e.what, ino, blkno).second) return;  // noted already this mount
    }
    ++noted_;
    if (record_.count == 0) record_.first = e;
    record_.last = e;
    if (record_.count < UINT32_MAX) ++record_.count;
    count = record_.count;
    if (can_log && !stopped_) {
      if (!worker_.joinable()) worker_ = std::thread([this] { Worker(); });
      cv_.SignalAll();
    }
  }
  // Outside mu_: the message log has its own lock, and its sink may block.
  Message(Severity::kError, "{}: damage found: {}: {}; {}: {}", options_.image, format::ErrorEventString(e),
          s.message(),
          can_log ? fmt::format("error {} recorded in the superblock for fsck", count)
                  : std::string("the filesystem is read-only or shut down, so this error is kept in memory "
                                "only, not recorded in the superblock"),
          FsckHint());
}

void ErrorRecorder::Worker() {
  pthread_setname_np(pthread_self(), "walfs-errors");
  MutexLock l(&mu_);
  while (!stopping_) {
    if (record_ == logged_record_) {
      cv_.Wait(&mu_);
      continue;
    }
    LogIfChangedLocked();
    // The rate limit: errors found meanwhile (their Note()s wake us) go
    // into the next update, at the end of the interval or at Stop().
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.min_interval_ms);
    for (auto now = std::chrono::steady_clock::now(); !stopping_ && now < until;
         now = std::chrono::steady_clock::now())
      cv_.WaitFor(&mu_, std::chrono::duration_cast<std::chrono::nanoseconds>(until - now).count());
  }
}

void ErrorRecorder::LogIfChangedLocked() {
  if (record_ == logged_record_ || !options_.log) return;
  if (options_.can_log && !options_.can_log()) return;
  const format::ErrorRecord r = record_;
  mu_.Unlock();
  const Status s = options_.log(r);
  mu_.Lock();
  if (s.ok()) {
    logged_record_ = r;
    ++logged_;
    return;
  }
  // Not retried: a failed transaction has shut the filesystem down.
  logged_record_ = record_;
  Message(Severity::kError, "{}: could not record the error in the superblock ({}); it is kept in memory only; {}",
          options_.image, s.message(), FsckHint());
}

void ErrorRecorder::Stop(bool flush) {
  std::thread worker;
  {
    MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
    cv_.SignalAll();
    worker = std::move(worker_);
  }
  if (worker.joinable()) worker.join();
  if (flush) {
    MutexLock l(&mu_);
    LogIfChangedLocked();
  }
}

format::ErrorRecord ErrorRecorder::record() const {
  MutexLock l(&mu_);
  return record_;
}

std::uint64_t ErrorRecorder::noted() const {
  MutexLock l(&mu_);
  return noted_;
}

std::uint64_t ErrorRecorder::logged() const {
  MutexLock l(&mu_);
  return logged_;
}

}  // namespace walfs::fs
