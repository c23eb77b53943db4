// WritebackPush: bounds how long the kernel's page cache may hold this
// mount's written data before walfs has it (docs/reliability.md, "two kinds
// of crash").
//
// With the writeback cache a write(2) returns once its data is in the
// kernel's cache; walfs sees it when the kernel writes it back: at close,
// fsync, memory pressure, or after the system's dirty_expire_centisecs
// (30 s).  A killed daemon takes down the connection, and the kernel drops
// those pages with it.  Nothing a FUSE daemon can send shortens the age:
// the expiry is one system-wide setting, the bdi's max_bytes bounds bytes,
// not time, and FUSE_NOTIFY_INVAL_INODE writes back only by dropping the
// clean pages too, one folio and one WRITE at a time.
//
// So every `interval` while a file is open for writing through the cache,
// a thread of the daemon calls syncfs(2) on this mount.  The kernel writes
// back every dirty page of the superblock (as WRITE requests, batched by
// writepages, that the other FUSE workers serve) and returns once the
// replies came (fuse_writepage_end ends the folio's writeback; 6.x has no
// temporary pages).  After it, what was dirty when it began is walfs's,
// and walfs's lazy push bounds the rest.
//
// The syncfs needs a file of this mount, and a file opened on the mount
// itself pins it: an umount meanwhile would get EBUSY.  So each push opens
// a detached clone of the mount (open_tree(OPEN_TREE_CLONE): a private
// mount of the same superblock, outside every namespace), which an umount
// of the real one does not count; the superblock lives until the push
// closes it.  The clone is checked to be this mount's (its device number)
// so a mountpoint covered by another mount, or unmounted, is never synced.
// Cloning a mount needs CAP_SYS_ADMIN: a mount by an ordinary user (through
// fusermount3) has no push, and says so.
//
//   WritebackPush push({.mountpoint = "/mnt", .device = "0:53", .interval_ms = 10},
//                      [&] { return guard.AnyCachedWriters(); });
//   push.Start();             // once the session serves requests
//   ...
//   push.RequestStop();       // before the session ends
//   push.Join();              // after /dev/fuse is closed (a syncfs in
//                             // flight returns once the connection aborts)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "base/histogram.h"
#include "base/mutex.h"

namespace walfs::mount {

class WritebackPush {
 public:
  struct Options {
    std::string mountpoint;  // absolute, as in /proc/self/mountinfo
    std::string device;      // "MAJ:MIN" of this mount
    int interval_ms = 0;     // 0: no push
  };
  // What the push is doing, for .walfs/stats.
  enum class State { kOff, kOn, kUnavailable, kStopped };

  // `wanted` says whether a push could find anything: a file is open for
  // writing through the cache (WritebackGuard).
  WritebackPush(Options options, std::function<bool()> wanted);
  ~WritebackPush();
  WritebackPush(const WritebackPush&) = delete;
  WritebackPush& operator=(const WritebackPush&) = delete;

  // Starts the thread (interval_ms > 0); the first push that cannot clone
  // the mount turns the push off with a message.
  void Start() EXCLUDES(mu_);
  // Asks the thread to stop, without waiting.
  void RequestStop() EXCLUDES(mu_);
  // Waits for the thread.  A syncfs in flight waits for WRITE requests: call
  // this only once they are served or the connection is gone.
  void Join();

  int interval_ms() const { return options_.interval_ms; }
  State state() const EXCLUDES(mu_);
  static const char* StateName(State s);
  // writeback_push_* lines of .walfs/stats.
  std::string StatsText() const EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);
  // One push; false when the push cannot work on this mount at all.
  bool PushOnce() EXCLUDES(mu_);

  const Options options_;
  const std::function<bool()> wanted_;
  mutable Mutex mu_;  // leaf
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  State state_ GUARDED_BY(mu_) = State::kOff;
  std::string unavailable_why_ GUARDED_BY(mu_);
  std::uint64_t pushes_ GUARDED_BY(mu_) = 0;
  std::uint64_t skipped_ GUARDED_BY(mu_) = 0;  // the mountpoint was not this mount
  std::uint64_t failed_ GUARDED_BY(mu_) = 0;   // syncfs returned an error
  Histogram latency_ns_;
  std::thread thread_;
};

}  // namespace walfs::mount
