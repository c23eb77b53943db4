// ControlDir: the model of `/.walfs/`, the tracefs-like control directory at
// the root of every walfs mount (docs/control_dir.md).  It owns the tree,
// its inode numbers and the state of every open control file; the FUSE
// adapter only forwards calls to it and turns the Status it gets into an
// errno (Status::ToErrno()).  Nothing here includes a FUSE header.
//
//   ControlDir control({.tracer = &tracing::Tracer::Get(), .stats = ..., ...});
//   // lookup(FUSE_ROOT_ID, ".walfs") and anything below a control inode:
//   if (ControlDir::IsControlIno(parent) || (parent == root && name == ControlDir::kName))
//     Reply(control.Lookup(parent, name));
//   // open: fi->fh = opened->handle; fi->direct_io = 1; fi->nonseekable = opened->nonseekable;
//   // read: control.Read(fi->fh, off, size, fi->flags & O_NONBLOCK)
//   // unmount: control.InterruptReaders() before the session loop is joined.
//
// The tree (every file's size is 0, as in procfs: readers read to EOF):
//
//   README  stats  trace  trace_pipe  trace_pipe_raw  tracing_on  trace_marker  set_event
//   [Sources::files...]
//   events/enable  events/<subsystem>/enable  events/<subsystem>/<event>/{enable,format,filter}
//   options/{wakeup,wakeup_delay_us,buffer_percent,safety_timeout_ms,recursion,
//            overwrite,buffer_size_kb,trace_clock,grant_wake}
//
// Inode numbers are kControlInoBase + a node index; nodes are never removed
// (the event catalogue only grows), so a number stays valid for the life of
// the ControlDir and the adapter needs no lookup counts for them.
//
// Thread safety: every method may be called from any FUSE worker thread.
// Reads of one handle may run concurrently; a blocked trace_pipe read holds
// no lock, so poll, release and other reads of the same handle proceed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "mount/control_files.h"
#include "tracing/tracer.h"

namespace walfs::mount {

namespace internal {
struct ControlNode;    // one file or directory of the tree (control_dir.cc)
struct ControlHandle;  // one open control file
}  // namespace internal

// Control inodes live in a range the filesystem never allocates (its inode
// numbers are block * inodes-per-block + slot, far below 2^62).
inline constexpr std::uint64_t kControlInoBase = std::uint64_t{1} << 62;

class ControlDir {
 public:
  struct Sources {
    tracing::Tracer* tracer = nullptr;             // &Tracer::Get(); required
    std::function<std::string()> stats;            // the body of `stats` (may be empty)
    // options/grant_wake: "inline" | "waking" | "wakeq".  Without a getter the
    // file does not exist; without a setter it is read-only.
    std::function<std::string()> get_grant_wake;
    std::function<Status(std::string_view)> set_grant_wake;
    std::uint64_t parent_ino = 1;                  // the mount's root (FUSE_ROOT_ID): `..` of .walfs
    // Who owns the tree: the user who mounted (root for a root mount).  The
    // trace names every file, pid and command that anyone's operations
    // touch, so reading it, draining it and changing what it records are
    // the owner's and root's alone, as tracefs is root's; Open enforces it
    // whatever the kernel checks (with or without default_permissions).
    std::uint32_t owner_uid = 0;
    std::uint32_t owner_gid = 0;
    // More files at the top of the tree (the mount's `messages`, `fault`).
    struct File {
      std::string name;
      std::function<std::string()> read;                // required
      std::function<Status(std::string_view)> write;    // none: the file is read-only
      bool snapshot = true;  // the text is taken at open (else again at every read from 0)
      std::string help;      // its line in README
      bool owner_reads_only = false;  // it may name files or callers: the owner's alone
      bool anyone_writes = false;     // any user may write it (sync, as sync(2))
    };
    std::vector<File> files;
  };

  // What a control node looks like to stat(2).  uid/gid are the adapter's.
  struct Attr {
    std::uint64_t ino = 0;
    // S_IFDIR|0555; files: 0444 anyone reads, 0400 the owner only, plus 0200
    // for the owner's writes or 0222 for anyone's.
    std::uint32_t mode = 0;
    std::uint32_t uid = 0;     // Sources::owner_uid
    std::uint32_t gid = 0;
    std::uint64_t size = 0;    // always 0 (procfs style)
    std::uint32_t nlink = 1;   // directories: 2 + subdirectories
    std::int64_t time_ns = 0;  // atime = mtime = ctime: when the ControlDir was made
  };
  struct DirEntry {
    std::string name;
    Attr attr;  // for "..", only ino and mode are meaningful
  };
  struct Opened {
    std::uint64_t handle = 0;
    bool nonseekable = false;  // trace_pipe: a stream, offsets are ignored
  };

  static constexpr std::string_view kName = ".walfs";

  explicit ControlDir(Sources sources);
  ~ControlDir();
  ControlDir(const ControlDir&) = delete;
  ControlDir& operator=(const ControlDir&) = delete;

  static bool IsControlIno(std::uint64_t ino) { return (ino & kControlInoBase) != 0; }
  static std::uint64_t root_ino() { return kControlInoBase; }

  // `parent` is a control directory, or Sources::parent_ino with kName.
  // NotFound (ENOENT) for a missing name; ENOTDIR when `parent` is a file.
  Result<Attr> Lookup(std::uint64_t parent, std::string_view name) EXCLUDES(mu_);
  Result<Attr> GetAttr(std::uint64_t ino) EXCLUDES(mu_);
  // ".", ".." and the children, in a stable order.  ENOTDIR for a file.
  Result<std::vector<DirEntry>> ReadDir(std::uint64_t ino) EXCLUDES(mu_);

  // `flags` as open(2) passes them, `caller_uid` the caller's.  EISDIR for a
  // directory, EACCES for write access to a read-only file, and for reading
  // an owner-only file or writing a file only the owner writes when the
  // caller is neither the owner nor root.  EBUSY for a second consuming
  // reader (trace_pipe, trace_pipe_raw): two readers of one stream would
  // each silently miss what the other took.  O_TRUNC on `trace` clears the
  // buffer.  `stats` and `trace` take their snapshot here.
  Result<Opened> Open(std::uint64_t ino, int flags, std::uint32_t caller_uid) EXCLUDES(mu_);
  // setattr with a size (the kernel's O_TRUNC without atomic_o_trunc):
  // clears `trace`, is accepted and ignored by other writable files, EACCES
  // for read-only ones and for a caller who may not write the file, EISDIR
  // for directories.
  Status Truncate(std::uint64_t ino, std::uint32_t caller_uid) EXCLUDES(mu_);

  // EBADF for an unknown handle or a handle opened without read access.
  // trace_pipe: consumes; waits for an event unless `nonblock` (WouldBlock,
  // EAGAIN); returns whole lines (one line is cut only when it alone exceeds
  // `size`); returns "" (EOF) when InterruptReaders() is called while it waits.
  // While it waits, `interrupted` (if given) is asked once per wait slice;
  // when it says true the read ends with EINTR.  The adapter passes
  // fuse_req_interrupted: a reader killed by a signal must not leave a
  // worker blocked here for good (after `umount -l` that blocked request
  // would keep the whole connection, and the daemon, alive).
  // Other files: the bytes at `offset` of the handle's text.
  Result<std::string> Read(std::uint64_t handle, std::uint64_t offset, std::size_t size,
                           bool nonblock, const std::function<bool()>& interrupted = {})
      EXCLUDES(mu_);
  // Each write is one whole value, whatever its offset (tracefs): trailing
  // whitespace is ignored, an invalid value is InvalidArgument (EINVAL) and
  // changes nothing.  Returns data.size().  EBADF without write access.
  // trace_marker takes the text as written (tracing/marker.h), recorded for
  // `caller_pid`, the writing process.
  Result<std::size_t> Write(std::uint64_t handle, std::uint64_t offset, std::string_view data,
                            std::uint32_t caller_pid = 0) EXCLUDES(mu_);
  // For poll: would Read return data without waiting.  trace_pipe pulls
  // pending events into the handle to answer; other files are always ready.
  bool Readable(std::uint64_t handle) EXCLUDES(mu_);
  void Release(std::uint64_t handle) EXCLUDES(mu_);

  // Every trace_pipe Read waiting now returns (with what it has, or ""),
  // within a wait slice (kWaitSliceNs) at worst.  Reads that start later
  // wait normally.  For unmount and FUSE interrupts.
  void InterruptReaders();

  // How long a blocked trace_pipe read sleeps before it re-checks for an
  // interrupt it may have raced with, or for its request's interruption.
  static constexpr std::int64_t kWaitSliceNs = 100'000'000;

 private:
  using Node = internal::ControlNode;
  using Handle = internal::ControlHandle;

  std::uint64_t AddLocked(std::uint64_t parent, std::unique_ptr<Node> node) REQUIRES(mu_);
  void SyncCatalogueLocked() REQUIRES(mu_);
  const Node* FindLocked(std::uint64_t ino) const REQUIRES(mu_);
  Attr AttrOfLocked(const Node& node) const REQUIRES(mu_);
  bool IsOwner(std::uint32_t uid) const { return uid == 0 || uid == src_.owner_uid; }
  std::shared_ptr<Handle> FindHandle(std::uint64_t handle) EXCLUDES(mu_);

  // The text of a non-stream file, made now (control_files.h).
  std::string Render(const Handle& h) const;
  // Parses and applies one written, trimmed value.
  Status Apply(const Handle& h, std::string_view value) EXCLUDES(options_mu_);
  Status ApplyOption(ControlOption option, std::string_view value) EXCLUDES(options_mu_);
  Result<std::string> ReadPipe(Handle* h, std::size_t size, bool nonblock,
                               const std::function<bool()>& interrupted);
  // Moves up to `size` bytes of whole lines from the handle into *out,
  // first consuming up to `max_events` events if it holds no text.
  void PullPipe(Handle* h, std::size_t max_events, std::size_t size, std::string* out);

  const Sources src_;
  const std::int64_t made_ns_;

  // Lock order: mu_ before the Catalogue's lock; never held with a
  // Handle's mu or options_mu_.
  Mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_ GUARDED_BY(mu_);  // index = ino - kControlInoBase
  std::map<std::string, std::uint64_t, std::less<>> subsystems_ GUARDED_BY(mu_);  // name -> dir ino
  std::size_t synced_events_ GUARDED_BY(mu_) = 0;  // catalogue events already in the tree
  std::uint64_t events_dir_ GUARDED_BY(mu_) = 0;
  std::map<std::uint64_t, std::shared_ptr<Handle>> handles_ GUARDED_BY(mu_);
  std::uint64_t next_handle_ GUARDED_BY(mu_) = 1;
  std::uint64_t consumer_ GUARDED_BY(mu_) = 0;  // the open trace_pipe(_raw) reader's handle, 0: none

  // Serialises the read-modify-write of TracerOptions by option files.
  // Lock order: before the Tracer's lock.
  Mutex options_mu_;

  std::atomic<std::uint64_t> interrupts_{0};
};

}  // namespace walfs::mount
