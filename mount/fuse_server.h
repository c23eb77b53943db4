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
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
#include "mount/control_dir.h"

namespace walfs::mount {

struct FuseServerOptions {
  bool writeback_cache = false;
  // Answer poll(2) on the control files, so that poll/select/epoll on
  // .walfs/trace_pipe sleep until events arrive.  Off by default: the kernel
  // then also asks the daemon before every io_uring read or write of every
  // file (io_uring's nonblocking check polls a file without FMODE_NOWAIT),
  // a synchronous round trip that made 4 KiB io_uring reads 4x slower.
  // Off, the first poll request is refused with ENOSYS and the kernel stops
  // asking: poll reports every walfs file readable and writable.
  bool trace_poll = false;
  double entry_timeout = 1.0;
  double attr_timeout = 1.0;
};

class FuseServer {
 public:
  FuseServer(fs::Filesystem* fs, const FuseServerOptions& options);
  ~FuseServer();

  static const fuse_lowlevel_ops& Operations();
  ControlDir& control() { return *control_; }
  fs::Filesystem* fs() const { return fs_; }
  const FuseServerOptions& options() const { return options_; }
  // FUSE_POLL requests received (the `fuse_polls` line of .walfs/stats).
  void CountPoll() { polls_received_.fetch_add(1, std::memory_order_relaxed); }

  // poll(2) on a control file with nothing to read yet: the kernel is told
  // (fuse_lowlevel_notify_poll) once there is, checked every kPollCheckMs.
  void WatchPoll(std::uint64_t handle, fuse_pollhandle* ph);
  void ForgetPolls(std::uint64_t handle);  // the handle is released
  // Stops the notifier (before the session it notifies is destroyed).
  void StopPolling();
  static constexpr int kPollCheckMs = 20;

  // FUSE inode <-> filesystem inode.
  std::uint64_t ToFs(fuse_ino_t ino) const { return ino == FUSE_ROOT_ID ? fs_->root() : ino; }
  fuse_ino_t ToFuse(std::uint64_t ino) const { return ino == fs_->root() ? FUSE_ROOT_ID : ino; }

 private:
  fs::Filesystem* const fs_;
  const FuseServerOptions options_;
  std::atomic<std::uint64_t> polls_received_{0};
  std::unique_ptr<ControlDir> control_;
  void PollLoop();
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  std::vector<std::pair<std::uint64_t, fuse_pollhandle*>> polls_;  // guarded by poll_mu_
  bool stopping_ = false;                                          // guarded by poll_mu_
  std::thread poll_thread_;
};

}  // namespace walfs::mount
