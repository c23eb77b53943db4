// UringEngine: FileDevice's batched path over io_uring (liburing).  Internal
// to FileDevice; nothing else should need it.
//
//   WALFS_ASSIGN_OR_RETURN(std::unique_ptr<UringEngine> e,
//                          UringEngine::Create(fd, /*entries=*/64, path));
//   e->Submit(std::move(validated_batch));   // callbacks on e's reaper thread
//
// One ring per device.  Submitters prepare SQEs and call io_uring_submit()
// under mu_ (the SQ has one producer at a time); one reaper thread owns the
// CQ: it waits for CQEs, continues short reads and writes for their
// remainder, moves backlogged requests into the ring as slots free up, and
// runs callbacks -- without mu_, one at a time, in submission order.
//
// Request mapping:
//   read / write     IORING_OP_READ / IORING_OP_WRITE on the byte range
//   kIoFua           the write's rw_flags = RWF_DSYNC (per-I/O O_DSYNC)
//   kIoPreflush      IORING_OP_FSYNC(DATASYNC) linked (IOSQE_IO_LINK) before
//                    the write: the write starts only after the fsync has
//                    succeeded; if the fsync fails the write is cancelled
//                    and the request fails with the fsync's errno
//   flush            IORING_OP_FSYNC with IORING_FSYNC_DATASYNC
//   zero length      IORING_OP_NOP (or just the fsync, with kIoPreflush)
//
// At most entries() SQEs are in the kernel at once, so the CQ (twice that)
// can never overflow and io_uring_get_sqe() never fails; requests beyond that
// wait, in order, in a backlog.  Submit() therefore never blocks on the
// device, and may be called from a callback.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/block_device.h"
#include "base/mutex.h"
#include "base/status.h"

struct io_uring;  // liburing: kept out of walfs headers

namespace walfs {

class UringEngine {
 public:
  // Sets up a ring of `entries` SQEs for fd.  Fails (with the errno of
  // io_uring_queue_init, or NotSupported when the kernel lacks an opcode)
  // where io_uring cannot be used; the message says why.  `name` (the path)
  // goes into error messages.
  static Result<std::unique_ptr<UringEngine>> Create(int fd, unsigned entries,
                                                     std::string name);
  // Stop(), then tears the ring down.
  ~UringEngine();
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  // Issues requests that passed BlockDevice::Validate().
  void Submit(std::vector<IoRequest> batch) EXCLUDES(mu_);

  // Waits for every submitted request and its callback (callbacks may still
  // submit meanwhile; those are waited for too), then joins the reaper.
  // Submit() from any other thread after this is a bug.  Idempotent.
  void Stop() EXCLUDES(mu_);

  unsigned entries() const { return entries_; }
  // How many short reads and writes were continued for their remainder.
  std::uint64_t continued() const EXCLUDES(mu_);

 private:
  struct Op;
  struct Cqe {
    std::uint64_t user_data;
    int res;
  };

  UringEngine(int fd, unsigned entries, std::string name, std::unique_ptr<io_uring> ring);

  void ReaperLoop() EXCLUDES(mu_);
  // Handles one CQE; true when its Op needs no more SQEs.
  void CompleteLocked(const Cqe& cqe) REQUIRES(mu_);
  // SQEs op needs next (the fsync counts only before it has run).
  unsigned SqesNeeded(const Op& op) const;
  // Prepares op's next SQE(s); the caller has checked there is room.
  void PrepLocked(Op* op) REQUIRES(mu_);
  // Moves backlogged ops into the ring while there is room, and submits.
  void PumpLocked() REQUIRES(mu_);
  void SubmitRingLocked() REQUIRES(mu_);
  std::string Context(const Op& op) const;

  const int fd_;
  const unsigned entries_;
  const std::string name_;

  // Lock order: leaf.  Never held while a callback runs.
  mutable Mutex mu_;
  // The SQ side of the ring is guarded by mu_; the CQ side belongs to the
  // reaper thread alone.
  const std::unique_ptr<io_uring> ring_;
  // Every request not yet called back, in submission order.  Ops live here
  // so their addresses stay valid while the kernel holds them.
  std::deque<std::unique_ptr<Op>> order_ GUARDED_BY(mu_);
  // Requests waiting for ring slots, in submission order (FIFO: a request
  // never overtakes an earlier one into the ring).
  std::deque<Op*> backlog_ GUARDED_BY(mu_);
  unsigned sqes_in_kernel_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::uint64_t continued_ GUARDED_BY(mu_) = 0;
  std::thread reaper_;  // last: starts once everything above exists
};

}  // namespace walfs
