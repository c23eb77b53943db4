// ErrorRecorder: what a mounted filesystem does when it finds damage on
// disk -- ext4's __ext4_error / save_error_info, for walfs.  The damage is
// counted in the superblock's error record (format::ErrorRecord: the count,
// the first and the last error), which is logged like any other superblock
// change, so that fsck.walfs -p checks the image at the next boot even
// though it was unmounted cleanly, and the next mount warns.
//
//   ErrorRecorder rec({.image = "img", .initial = sb.errors,
//                      .can_log = [&] { return !log->IsShutdown(); },
//                      .log = [&](const format::ErrorRecord& r) { return LogErrorRecord(r); }});
//   rec.Note("directory block CRC", /*ino=*/0, blkno, status);  // from any thread
//   ...
//   rec.Stop(/*flush=*/true);  // before the log closes
//   sb.errors = rec.record();  // what the clean unmount writes
//
// Note() never logs on the caller's thread: it is called where the damage
// is found, under whatever buffer and inode locks the reader holds, and a
// transaction there could wait for log space those locks hold back.  It
// updates the record in memory, says so in the message log (naming the
// fsck command) and wakes a worker thread, started at the first error,
// that logs the record -- at most once per min_interval_ms, and only when
// it changed.  An error already noted this mount (the same what, inode and
// block: the same directory read again by every `ls`) is not counted again,
// so a damaged block read in a loop costs no transaction and no message
// after its first.  On a read-only or shut-down mount nothing can be
// logged: the record is kept in memory and the message says so.
//
// Thread safety: every method may be called from any thread; Stop() once,
// before the things `log` uses are destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>

#include "base/mutex.h"
#include "base/status.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

class ErrorRecorder {
 public:
  struct Options {
    std::string image;              // named in the messages and the fsck command
    format::ErrorRecord initial{};  // the record the superblock holds at mount
    // Whether a transaction can be logged now (false: a read-only or
    // shut-down mount).
    std::function<bool()> can_log;
    // Logs `record` into the superblock: one transaction, committed.
    std::function<Status(const format::ErrorRecord&)> log;
    std::int64_t min_interval_ms = 1000;  // between two logged updates
  };

  explicit ErrorRecorder(Options options);
  ~ErrorRecorder();  // Stop(false) if not stopped
  ErrorRecorder(const ErrorRecorder&) = delete;
  ErrorRecorder& operator=(const ErrorRecorder&) = delete;

  // Damage found: `what` says what it was ("directory block CRC", "inode
  // decode"; at most format::kErrorWhatSize bytes are kept), `ino` and
  // `blkno` where (0: not known), `s` the status the caller gets.  Damage
  // to the structure only: the buffer cache does not report I/O errors.
  void Note(std::string_view what, std::uint64_t ino, std::uint64_t blkno, const Status& s) EXCLUDES(mu_);
  // Stops the worker; with `flush`, first logs a record not yet logged
  // (when it can).  Later Note()s still count in memory.
  void Stop(bool flush) EXCLUDES(mu_);

  format::ErrorRecord record() const EXCLUDES(mu_);
  // Distinct errors noted since the mount.
  std::uint64_t noted() const EXCLUDES(mu_);
  // Records logged since the mount (transactions committed).
  std::uint64_t logged() const EXCLUDES(mu_);

  // At most this many distinct errors are remembered as seen; past that,
  // every error counts (and the rate limit alone bounds the transactions).
  static constexpr std::size_t kMaxRemembered = 1024;

 private:
  void Worker() EXCLUDES(mu_);
  // Logs the record if it changed since last logged; mu_ is let go around
  // the transaction.
  void LogIfChangedLocked() REQUIRES(mu_);
  std::string FsckHint() const;

  const Options options_;
  mutable Mutex mu_;
  CondVar cv_;  // a new error, or Stop()
  format::ErrorRecord record_ GUARDED_BY(mu_);
  format::ErrorRecord logged_record_ GUARDED_BY(mu_);  // what the log (or the disk) has
  std::set<std::tuple<std::string, std::uint64_t, std::uint64_t>> seen_ GUARDED_BY(mu_);
  std::uint64_t noted_ GUARDED_BY(mu_) = 0;
  std::uint64_t logged_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::thread worker_;  // started (under mu_) at the first Note(); joined by Stop()
};

}  // namespace walfs::fs
