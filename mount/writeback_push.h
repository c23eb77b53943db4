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
// a helper process of the daemon (below) writes those files' dirty pages
// back: sync_file_range(SYNC_FILE_RANGE_WRITE) on each of them (the daemon
// tells the helper which, by node id; the helper opens each once, by
// handle, from the second push that finds it open -- one closed sooner was
// written back by its own close -- and keeps it open while it is written
// through the cache).  That
// starts write-back of exactly those files in the helper's own task.  It
// used to call syncfs(2) alone, which asks the flusher to write back as
// many pages as are dirty in the whole system (writeback_inodes_sb), skips
// files first dirtied after it began, and waits: beside a buffered writer
// of this mount and a build writing elsewhere, one syncfs took seconds and
// files opened meanwhile lost every write of a killed daemon's last 1.4 s
// (walfs-killtest, CI).  syncfs(2) still runs when more files are written
// than the helper has slots for, or one cannot be opened (yet).
//
// Either way the kernel sends the dirty pages as WRITE requests, batched
// by writepages, that the daemon's FUSE workers serve, and does not wait
// for their replies (a syncfs also sends each file's times, a SETATTR it
// waits for): on Linux 6.18 the fuse tracepoints show a syncfs returning
// with WRITEs sent before it still unanswered, as kernel commit
// f9a49aa302a0 does (the wait for write-back skips FUSE's mappings).  So
// what was dirty when a push began is walfs's once walfs has answered the
// WRITEs that push sent, and walfs's lazy push bounds the rest.  (The replies end the folios' write-back, since 6.14 has no
// temporary pages: cachestat(2) on a file tells when its pages are
// walfs's.)
//
// The pushes need files of this mount, and a file opened on the mount
// itself pins it: an umount meanwhile would get EBUSY.  So each push opens
// a detached clone of the mount (open_tree(OPEN_TREE_CLONE): a private
// mount of the same superblock, outside every namespace), which an umount
// of the real one does not count; the superblock lives until the push
// closes it.  The clone is checked to be this mount's (its device number)
// so a mountpoint covered by another mount, or unmounted, is never synced.
// Cloning a mount needs CAP_SYS_ADMIN: a mount by an ordinary user (through
// fusermount3) has no push, and says so.
//
// The pushes run in a helper process (named walfs-wbpush), not a thread.
// A syncfs waits, uninterruptibly, for requests that the daemon serves
// (the SETATTR above; a dirty page already under write-back); if
// the daemon is killed meanwhile, a thread stuck there keeps the process
// (and so /dev/fuse, which would abort the connection) alive forever: the
// mount hangs until someone aborts it in /sys/fs/fuse/connections.  The
// helper closes every descriptor it inherited, so a killed daemon exits at
// once, the connection aborts, and the helper's syncfs returns; the helper
// dies with the daemon (PR_SET_PDEATHSIG).  Daemon and helper share one
// page of counters and flags (MAP_SHARED); the helper allocates nothing.
//
//   WritebackPush push({.mountpoint = "/mnt", .device = "0:53", .interval_ms = 10});
//   guard.SetWritersObserver([&](bool any) { push.SetWanted(any); });
//   push.Start();             // once mounted; before the session serves
//   ...
//   push.RequestStop();       // before the session ends
//   push.Join();              // after /dev/fuse is closed (a syncfs in
//                             // flight returns once the connection aborts)
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "base/histogram.h"

namespace walfs::mount {

class WritebackPush {
 public:
  struct Options {
    std::string mountpoint;  // absolute, as in /proc/self/mountinfo
    std::string device;      // "MAJ:MIN" of this mount
    int interval_ms = 0;     // 0: no push
  };
  // What the push is doing, for .walfs/stats.
  enum class State : std::uint32_t { kOff, kOn, kUnavailable, kStopped };

  explicit WritebackPush(Options options);
  ~WritebackPush();
  WritebackPush(const WritebackPush&) = delete;
  WritebackPush& operator=(const WritebackPush&) = delete;

  // Checks that this mount can be cloned and starts the helper
  // (interval_ms > 0); when it cannot, the push stays off and a message
  // says why.  From the thread that lives as long as the mount (the helper
  // dies with it).
  void Start();
  // Whether a push could find anything: some file is open for writing
  // through the cache (WritebackGuard's observer).  Any thread.
  void SetWanted(bool wanted);
  // The file with FUSE node id `nodeid` is now open for writing through
  // the cache / no longer is (its first such handle opened, its last was
  // released).  Serialized by the caller (the guard's lock).
  void FileOpened(std::uint64_t nodeid);
  void FileReleased(std::uint64_t nodeid);
  // Asks the helper to stop, without waiting.
  void RequestStop();
  // Waits for the helper.  A syncfs in flight waits for WRITE requests:
  // call this only once they are served or the connection is gone.
  void Join();

  State state() const;
  static const char* StateName(State s);
  // writeback_push_* lines of .walfs/stats.
  std::string StatsText() const;

 private:
  // Files the helper writes back one by one; more than this many at once,
  // and it calls syncfs for the rest.
  static constexpr int kFileSlots = 64;

  // The page the daemon and the helper share.
  struct Shared {
    // Node ids of the files open for writing through the cache (0: a free
    // slot), written by the daemon under the guard's lock, read by the
    // helper; `untracked` counts those that found no slot.
    std::atomic<std::uint64_t> files[kFileSlots] = {};
    // Bumped each time a slot is given to a file: the helper tells a file
    // still open from the same file opened again.
    std::atomic<std::uint32_t> file_opens[kFileSlots] = {};
    std::atomic<std::uint32_t> untracked{0};
    std::atomic<std::uint64_t> file_pushes{0};  // sync_file_range calls
    std::atomic<std::uint64_t> syncfs_pushes{0};
    std::atomic<std::uint32_t> stop{0};    // the helper sleeps on it (futex)
    std::atomic<std::uint32_t> wanted{0};
    std::atomic<std::uint32_t> state{0};   // State
    std::atomic<std::uint64_t> pushes{0};
    std::atomic<std::uint64_t> skipped{0};  // the mountpoint was not this mount
    std::atomic<std::uint64_t> failed{0};   // syncfs returned an error
    Histogram latency_ns;
  };

  // The helper's loop (in the child: no allocation, no lock).
  [[noreturn]] static void HelperMain(Shared* shared, const char* mountpoint, unsigned dev_major,
                                      unsigned dev_minor, std::int64_t interval_ns, pid_t parent);
  // One push (the helper): each tracked file, then syncfs if needed.
  // `held`/`fds`: the helper's open descriptors, by slot; `seen`: what each
  // slot held at the last push, its node id and `file_opens` (a file is
  // opened from the second push that finds it open).  False: a call failed.
  struct Seen {
    std::uint64_t id = 0;
    std::uint32_t opens = 0;
  };
  static bool PushOnce(Shared* shared, int tree, std::uint64_t* held, Seen* seen, int* fds);

  const Options options_;
  Shared* shared_ = nullptr;  // an anonymous MAP_SHARED mapping
  pid_t helper_ = -1;
};

}  // namespace walfs::mount
