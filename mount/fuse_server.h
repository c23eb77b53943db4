// FuseServer: the libfuse3 low-level adapter.  It translates each FUSE
// request into a Filesystem call (or, under /.walfs, a ControlDir call) and
// the result into a reply; nothing else.  The mount's root is FUSE_ROOT_ID
// (1) to the kernel and the superblock's root inode to the filesystem;
// control inodes carry kControlInoBase.
//
//   FuseServer server(fs.get(), {.writeback_cache = true});
//   fuse_session* se = fuse_session_new(&args, &FuseServer::Operations(), sizeof(fuse_lowlevel_ops), &server);
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "fs/filesystem.h"
#include "mount/control_dir.h"
#include "mount/kernel_policy.h"
#include "mount/poll_notifier.h"
#include "mount/session_io.h"
#include "mount/writeback_guard.h"
#include "mount/writeback_push.h"

namespace walfs::mount {

// What the server lets the kernel cache and which requests it may skip
// (mount/kernel_policy.h).
using FuseServerOptions = KernelPolicy;

class FuseServer {
 public:
  // `mount_options`: the mount program's options as .walfs/mount_options
  // shows them (fs::MountOptions::OptionsText() and what else it took);
  // the file adds the live wake mode, this server's policy and the
  // transport in use.
  FuseServer(fs::Filesystem* fs, const FuseServerOptions& options, std::string mount_options = {});
  ~FuseServer();

  static const fuse_lowlevel_ops& Operations();
  ControlDir& control() { return *control_; }
  fs::Filesystem* fs() const { return fs_; }
  const FuseServerOptions& options() const { return options_; }
  // FUSE_POLL requests received (the `fuse_polls` line of .walfs/stats).
  void CountPoll() { polls_received_.fetch_add(1, std::memory_order_relaxed); }

  // The session the server answers (for notifications); set once it exists.
  void SetSession(fuse_session* se) { session_.store(se, std::memory_order_release); }
  // Tells the kernel to drop its cached attributes of `ino`.
  void InvalidateAttr(fuse_ino_t ino);
  // Has the kernel write back (and drop) its cached pages of `ino` from
  // byte `from` on; returns once they reached walfs.  Never from a handler
  // of a WRITE: the write-back needs other workers.
  void WriteBackCached(fuse_ino_t ino, off_t from);
  // Whether a handler may wait for a request another worker serves (false
  // for `-s` or max_threads=1): WriteBackCached needs one.
  void SetOtherWorkersServe(bool yes) { other_workers_serve_.store(yes, std::memory_order_relaxed); }
  bool other_workers_serve() const { return other_workers_serve_.load(std::memory_order_relaxed); }
  // After the free space changed: entering low space makes every file open
  // through the page cache ask before its next write (WritebackGuard).
  void NoteSpace();
  // Once mounted on `mountpoint`: reads how much of this mount's data the
  // kernel may hold dirty (its bdi, mount/bdi_limit.h), and starts the
  // writeback push (mount/writeback_push.h), which needs the mount's device
  // number.  Before the session serves requests.
  void LearnMount(const std::string& mountpoint);
  // Before the session ends: the push asks nothing more.  JoinWritebackPush
  // once /dev/fuse is closed (a syncfs in flight waits for WRITEs until the
  // connection is gone).
  void StopWritebackPush();
  void JoinWritebackPush();
  // Writes held in the kernel's cache (mount/writeback_guard.h); `granted`
  // is whether the kernel took the writeback cache at INIT.
  WritebackGuard& writeback() { return writeback_; }
  bool writeback_granted() const { return writeback_granted_.load(std::memory_order_relaxed); }
  void SetWritebackGranted(bool granted) { writeback_granted_.store(granted, std::memory_order_relaxed); }
  // The session's raw I/O: request accounting, KILLPRIV_V2 (SessionIo::Attach).
  SessionIo& session_io() { return session_io_; }
  // poll(2) on control files with nothing to read yet (-o trace_poll).
  PollNotifier& polls() { return polls_; }
  // Stops the poll notifier (before the session it notifies is destroyed).
  void StopPolling() { polls_.Stop(); }

  // FUSE inode <-> filesystem inode.
  std::uint64_t ToFs(fuse_ino_t ino) const { return ino == FUSE_ROOT_ID ? fs_->root() : ino; }
  fuse_ino_t ToFuse(std::uint64_t ino) const { return ino == fs_->root() ? FUSE_ROOT_ID : ino; }

 private:
  fs::Filesystem* const fs_;
  const FuseServerOptions options_;
  std::atomic<std::uint64_t> polls_received_{0};
  std::atomic<fuse_session*> session_{nullptr};
  WritebackGuard writeback_;
  std::atomic<bool> writeback_granted_{false};
  std::atomic<bool> other_workers_serve_{true};
  SessionIo session_io_;
  std::unique_ptr<ControlDir> control_;
  PollNotifier polls_;  // after control_: it asks control_ until stopped
  // Set by LearnMount before the session serves; read by the stats file.
  std::unique_ptr<WritebackPush> push_;
};

}  // namespace walfs::mount
