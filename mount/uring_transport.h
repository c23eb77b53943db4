// FUSE over io_uring (mount/fuse_uring_abi.h; the kernel's
// fs/fuse/dev_uring.c): walfs carries the requests itself, below
// libfuse 3.14's decoding, which cannot use the rings.  libfuse still
// mounts, answers INIT and turns each request into a handler call; the
// handlers never learn which transport carried a request.  What the kernel
// keeps on /dev/fuse (INIT, FORGET, INTERRUPT, notifications) still goes
// there, served by libfuse's workers as before.
//
// Shape.  The kernel has one queue per possible CPU and hands a request
// to the queue of the CPU its caller runs on.  walfs serves each queue with
// `lanes_per_queue` lanes; a lane is a thread pinned to that CPU with an
// io_uring of its own and one ring entry (a header buffer and a payload
// buffer, both registered with the kernel).  A lane waits in io_uring for
// its entry to carry a request, serves it on its own thread, and commits
// the reply with the fetch of its next request (COMMIT_AND_FETCH), in the
// same io_uring_enter as its wait for that request -- one system call per
// request, where /dev/fuse takes a read and a write.  Only the lane's
// thread submits to its ring: a thread that replies for it, or stops it,
// posts a completion into it (IORING_OP_MSG_RING) from a waker ring.
//
// A request that waits never stalls its queue: a lane holds one entry,
// so a lane asleep in fsync's log force, in a log-space reservation or on
// the device holds only the request it serves; the kernel gives the
// queue's next request to any entry of the queue that is free (its
// ent_avail_queue), that is, to another lane.  Each lane owns its ring
// (nothing is shared between the lanes of a queue), so the kernel's copy
// of a request into a lane's buffers -- done in the task that submitted
// the entry's command -- always runs in that lane's own io_uring_enter.
// Log space is freed by the log's own threads (AIL pushes, log writes),
// never by a FUSE request, so lanes asleep for it wait for no lane.
//
// The request's bytes are laid out as libfuse 3.14 reads them from
// /dev/fuse -- in_header, first argument, the rest -- without copying the
// payload: each entry's payload buffer has room in front of it, where the
// header and the first argument are put before the payload
// (kRequestPrefix).  The reply (libfuse's writev, routed here by
// SessionIo) goes into the entry's buffers: the out header into in_out,
// the arguments into the payload -- except what a handler wrote there
// already: a READ's data is read straight into the payload buffer
// (ReplyBuffer), so the rings copy it no more than /dev/fuse's writev does.
//
// A refused commit.  The kernel looks the commit id up before it touches
// the entry, so an entry whose commit it refused (ENOENT, EINVAL) still
// holds the request and the reply: the lane commits it again, once.  A
// second refusal loses that reply (its caller waits until the mount ends);
// the lane then registers a fresh entry so that its queue keeps serving
// (`fuse_uring_commit_failures`, `fuse_uring_reregistered`).
//
// Readiness and fallback.  The kernel sends nothing through the rings until
// every queue has an entry registered (is_ring_ready), and blocks new
// requests while it waits; a registration that fails turns the rings off
// for the connection (fc->io_uring = 0) and the kernel goes back to
// /dev/fuse.  So Create makes every ring and lane before INIT is answered
// (the flag is only offered when that worked), and Start only lets the
// lanes register.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace walfs::mount {

class SessionIo;

class UringTransport {
 public:
  struct Options {
    std::uint32_t lanes_per_queue = 4;  // requests a CPU's queue serves at once
  };

  // One queue per possible CPU (/sys/devices/system/cpu/possible), each
  // with its lanes: rings made and threads started, idle until Start.  An
  // error (io_uring_queue_init's, say) leaves nothing behind.
  static Result<std::unique_ptr<UringTransport>> Create(fuse_session* se, int fuse_fd, SessionIo* io,
                                                        const Options& options);
  ~UringTransport();
  UringTransport(const UringTransport&) = delete;
  UringTransport& operator=(const UringTransport&) = delete;

  // After the INIT reply reached the kernel: each lane registers its entry,
  // with a payload buffer of `payload_bytes` (the kernel's max_payload_sz:
  // the larger of 8 KiB, max_write and max_pages pages), and serves.
  void Start(std::size_t payload_bytes);

  // When the reply libfuse is writing answers a request a lane carried:
  // commits it through that lane's ring and returns true.  Otherwise false
  // (the reply belongs to /dev/fuse).
  bool Reply(const struct iovec* iov, int count);

  // For a handler running on a lane's thread, inside the request the lane
  // carries: the lane's payload buffer, when it holds at least `size`
  // bytes.  A reply whose data is written there goes to the kernel with no
  // copy (Reply finds it in place).  Empty on any other thread, and where
  // the request's own arguments are in the payload (WRITE's data, names):
  // only a handler whose request carries no payload (READ) may use it.
  // Static: a handler knows no transport.
  static std::span<char> ReplyBuffer(std::size_t size);

  // Wakes every lane and joins it; the rings are closed (the kernel cancels
  // what is still registered).  Idempotent.
  void Stop();

  std::uint32_t queues() const { return queues_; }
  std::uint32_t lanes_per_queue() const { return options_.lanes_per_queue; }
  // Whether the kernel serves the connection through the rings: started,
  // and no lane's entry refused.  (A registration that succeeds completes
  // nothing: it is seen when its first request arrives.)
  bool serving() const;
  // `fuse_uring_queues N`, `fuse_uring_lanes_per_queue N`,
  // `fuse_uring_lanes_used N` (lanes that have carried a request),
  // `fuse_uring_requests N`, `fuse_uring_q<i>_requests N` per queue,
  // `fuse_uring_foreign_replies N`, `fuse_uring_in_place_replies N`, `fuse_uring_errors N`,
  // `fuse_uring_commit_failures N`, `fuse_uring_reregistered N`.
  std::string StatsText() const;

  // Testing (`ring_commit N` in .walfs/fault, -o fault_injection): the
  // N-th commit from now (N >= 1, any lane) goes to the kernel with a
  // commit id it does not know, as a corrupted entry would; 0 disarms.
  // What a lane does when the kernel refuses a commit is in Run.
  void FailNthCommit(std::uint64_t n) { fail_commit_in_.store(n, std::memory_order_relaxed); }
  std::uint64_t commit_failures() const { return commit_failures_.load(std::memory_order_relaxed); }

  struct Lane;  // session_io.cc's trampolines need nothing of it: defined in the .cc

 private:
  UringTransport(fuse_session* se, int fuse_fd, SessionIo* io, const Options& options, std::uint32_t queues);
  void Run(Lane* lane);
  bool Completed(Lane* lane, int res, bool* registered);
  void Serve(Lane* lane);
  void Commit(Lane* lane);
  void Submit(Lane* lane, std::uint32_t cmd_op, std::uint64_t commit_id) EXCLUDES(start_mu_);
  void Wake(Lane* lane, std::uint64_t tag) EXCLUDES(waker_mu_);

  fuse_session* const se_;
  const int fuse_fd_;
  SessionIo* const io_;
  const Options options_;
  const std::uint32_t queues_;
  std::vector<std::unique_ptr<Lane>> lanes_;

  Mutex waker_mu_;
  io_uring waker_ring_ GUARDED_BY(waker_mu_){};
  bool waker_ready_ GUARDED_BY(waker_mu_) = false;
  Mutex start_mu_;
  CondVar start_cv_;
  bool started_ GUARDED_BY(start_mu_) = false;
  bool stopping_ GUARDED_BY(start_mu_) = false;
  std::size_t payload_bytes_ = 0;  // written before started_ is set, read after
  std::atomic<bool> started_flag_{false};  // started_, for readers without the lock
  std::atomic<bool> refused_{false};       // the kernel refused a lane's entry: /dev/fuse serves
  std::atomic<std::uint32_t> lanes_used_{0};
  std::atomic<std::uint64_t> foreign_replies_{0};
  std::atomic<std::uint64_t> in_place_replies_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> fail_commit_in_{0};     // FailNthCommit's countdown (0: none)
  std::atomic<std::uint64_t> commit_failures_{0};    // commits the kernel refused
  std::atomic<std::uint64_t> reregistered_{0};       // lanes that registered a fresh entry
  bool stopped_ = false;  // Stop()'s, on the thread that calls it
};

// The possible CPUs (the kernel's nr_queues: num_possible_cpus()), from
// /sys/devices/system/cpu/possible ("0-15", "0,2-3").
Result<std::uint32_t> PossibleCpus();

}  // namespace walfs::mount
