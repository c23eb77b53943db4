// PollNotifier: poll(2) on a control file that has nothing to read yet.  The
// kernel's poll handle is kept until the file becomes readable, then the
// kernel is told (fuse_lowlevel_notify_poll) and polls again.  Readiness is
// checked every kCheckMs by a thread started on the first watch (the tracer
// has no callback to hang this on, and a watch is rare: only with
// `-o trace_poll`, FuseServerOptions::trace_poll).
//
//   PollNotifier polls([&](std::uint64_t fh) { return control.Readable(fh); });
//   polls.Watch(fi->fh, ph);   // poll handler, nothing readable
//   polls.Forget(fi->fh);      // release handler
//   polls.Stop();              // before the session it notifies is destroyed
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace walfs::mount {

class PollNotifier {
 public:
  static constexpr int kCheckMs = 20;

  explicit PollNotifier(std::function<bool(std::uint64_t handle)> readable) : readable_(std::move(readable)) {}
  ~PollNotifier() { Stop(); }
  PollNotifier(const PollNotifier&) = delete;
  PollNotifier& operator=(const PollNotifier&) = delete;

  // Takes ownership of `ph`; after Stop() it is destroyed at once.
  void Watch(std::uint64_t handle, fuse_pollhandle* ph);
  // Destroys the handle's watches (its file was released).
  void Forget(std::uint64_t handle);
  // Joins the thread and drops every watch.  Idempotent.
  void Stop();

 private:
  void Loop();

  const std::function<bool(std::uint64_t)> readable_;
  std::mutex mu_;  // leaf; readable_ is called under it
  std::condition_variable cv_;
  std::vector<std::pair<std::uint64_t, fuse_pollhandle*>> polls_;  // guarded by mu_
  bool stopping_ = false;                                          // guarded by mu_
  std::thread thread_;
};

}  // namespace walfs::mount
