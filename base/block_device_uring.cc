#include "base/block_device_uring.h"

#include <liburing.h>
#include <pthread.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace walfs {

namespace {

// One SQE moves at most this much; the rest is a "short" completion that the
// reaper continues.  (The kernel caps a single read or write at 2 GiB - 4 KiB.)
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;
// user_data of the destructor's wake-up NOP.  Ops are 8-byte aligned, so
// their pointers never have bit 0 set; bit 0 marks a preflush fsync.
constexpr std::uint64_t kWakeTag = 0;
constexpr std::uint64_t kPreflushBit = 1;
constexpr unsigned kReapBatch = 64;

// Why io_uring_queue_init may fail, for the message the mount prints.
std::string_view InitFailureHint(int err) {
  switch (err) {
    case EPERM: return " (kernel.io_uring_disabled, or a seccomp filter)";
    case ENOSYS: return " (kernel built without io_uring, or a seccomp filter)";
    case ENOMEM: return " (RLIMIT_MEMLOCK too low for the ring on kernels before 5.12)";
    case EINVAL: return " (invalid ring size)";
    default: return "";
  }
}

}  // namespace

struct UringEngine::Op {
  IoRequest req;
  std::uint64_t done_bytes = 0;  // of req.len, moved so far
  bool preflush_done = false;    // the kIoPreflush fsync has completed
  unsigned sqes = 0;             // this op's SQEs in the kernel
  bool finished = false;         // no more SQEs; status is final
  Status status;                 // the first error
};

Result<std::unique_ptr<UringEngine>> UringEngine::Create(int fd, unsigned entries,
                                                         std::string name) {
  // A preflush write takes two SQEs at once; a ring of one could never
  // issue it.  (0 stays 0: the kernel refuses it, which tests rely on.)
  if (entries == 1) entries = 2;
  auto ring = std::make_unique<io_uring>();
  if (int rc = io_uring_queue_init(entries, ring.get(), 0); rc < 0) {
    return Status::FromErrno(-rc, fmt::format("io_uring_queue_init({} entries){}", entries,
                                              InitFailureHint(-rc)));
  }
  // Kernels before 5.6 have io_uring but not these opcodes.
  io_uring_probe* probe = io_uring_get_probe_ring(ring.get());
  const char* missing = nullptr;
  if (probe == nullptr) {
    missing = "io_uring_register(PROBE)";
  } else {
    if (!io_uring_opcode_supported(probe, IORING_OP_READ)) missing = "IORING_OP_READ";
    if (!io_uring_opcode_supported(probe, IORING_OP_WRITE)) missing = "IORING_OP_WRITE";
    if (!io_uring_opcode_supported(probe, IORING_OP_FSYNC)) missing = "IORING_OP_FSYNC";
    io_uring_free_probe(probe);
  }
  if (missing != nullptr) {
    io_uring_queue_exit(ring.get());
    return Status::NotSupported(fmt::format("io_uring: the kernel lacks {}", missing));
  }
  const unsigned granted = ring->sq.ring_entries;  // the kernel rounds up
  return std::unique_ptr<UringEngine>(
      new UringEngine(fd, granted, std::move(name), std::move(ring)));
}

UringEngine::UringEngine(int fd, unsigned entries, std::string name,
                         std::unique_ptr<io_uring> ring)
    : fd_(fd),
      entries_(entries),
      name_(std::move(name)),
      ring_(std::move(ring)),
      reaper_([this] { ReaperLoop(); }) {}

UringEngine::~UringEngine() {
  Stop();
  io_uring_queue_exit(ring_.get());
}

void UringEngine::Stop() {
  WALFS_CHECK_MSG(std::this_thread::get_id() != reaper_.get_id(),
                  "a completion callback destroyed its own device");
  {
    MutexLock l(&mu_);
    if (!stopping_) {
      stopping_ = true;
      // Wake the reaper if it sleeps on an empty ring.  With no room there
      // is I/O in flight, whose completions wake it anyway.
      if (sqes_in_kernel_ < entries_) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
        WALFS_CHECK(sqe != nullptr);
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data64(sqe, kWakeTag);
        ++sqes_in_kernel_;
        SubmitRingLocked();
      }
    }
  }
  if (reaper_.joinable()) reaper_.join();
}

std::uint64_t UringEngine::continued() const {
  MutexLock l(&mu_);
  return continued_;
}

std::string UringEngine::Context(const Op& op) const {
  return fmt::format("io_uring {} [{}, +{}) {}on {}", IoOpName(op.req.op), op.req.offset,
                     op.req.len,
                     op.req.flags ? IoFlagsToString(op.req.flags) + " " : std::string(),
                     name_);
}

void UringEngine::Submit(std::vector<IoRequest> batch) {
  MutexLock l(&mu_);
  WALFS_CHECK_MSG(!stopping_ || std::this_thread::get_id() == reaper_.get_id(),
                  "request submitted to a device being destroyed");
  for (IoRequest& req : batch) {
    auto op = std::make_unique<Op>();
    op->req = std::move(req);
    backlog_.push_back(op.get());
    order_.push_back(std::move(op));
  }
  PumpLocked();
}

unsigned UringEngine::SqesNeeded(const Op& op) const {
  const bool preflush = (op.req.flags & kIoPreflush) && !op.preflush_done;
  // A zero-length preflush write is only its fsync.
  return preflush && op.req.len > 0 ? 2 : 1;
}

void UringEngine::PrepLocked(Op* op) {
  const IoRequest& r = op->req;
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  // Invariant: at most entries_ SQEs are in the kernel, so the SQ has room.
  WALFS_CHECK(sqe != nullptr);
  const std::uint64_t tag = reinterpret_cast<std::uintptr_t>(op);
  if (r.op == IoOp::kFlush) {
    io_uring_prep_fsync(sqe, fd_, IORING_FSYNC_DATASYNC);
    io_uring_sqe_set_data64(sqe, tag);
  } else if ((r.flags & kIoPreflush) && !op->preflush_done) {
    io_uring_prep_fsync(sqe, fd_, IORING_FSYNC_DATASYNC);
    if (r.len == 0) {
      io_uring_sqe_set_data64(sqe, tag);  // the fsync is the whole request
    } else {
      io_uring_sqe_set_data64(sqe, tag | kPreflushBit);
      sqe->flags |= IOSQE_IO_LINK;  // the write waits for the fsync
      ++op->sqes;
      ++sqes_in_kernel_;
      sqe = io_uring_get_sqe(ring_.get());
      WALFS_CHECK(sqe != nullptr);
    }
  }
  if (r.op != IoOp::kFlush && !(r.len == 0 && (r.flags & kIoPreflush))) {
    const std::size_t chunk = std::min<std::uint64_t>(r.len - op->done_bytes, kMaxChunk);
    std::byte* buf = r.buf + op->done_bytes;
    const std::uint64_t off = r.offset + op->done_bytes;
    if (r.len == 0) {
      io_uring_prep_nop(sqe);
    } else if (r.op == IoOp::kRead) {
      io_uring_prep_read(sqe, fd_, buf, static_cast<unsigned>(chunk), off);
    } else {
      io_uring_prep_write(sqe, fd_, buf, static_cast<unsigned>(chunk), off);
      if (r.flags & kIoFua) sqe->rw_flags = RWF_DSYNC;
    }
    io_uring_sqe_set_data64(sqe, tag);
  }
  ++op->sqes;
  ++sqes_in_kernel_;
}

void UringEngine::PumpLocked() {
  while (!backlog_.empty() && sqes_in_kernel_ + SqesNeeded(*backlog_.front()) <= entries_) {
    PrepLocked(backlog_.front());
    backlog_.pop_front();
  }
  SubmitRingLocked();
}

void UringEngine::SubmitRingLocked() {
  // EINTR, EAGAIN (no memory for a request just now) and EBUSY are
  // transient; with at most entries_ SQEs in the kernel the CQ cannot
  // overflow, so EBUSY should not even be seen.  Anything else means the
  // ring itself is broken: an invariant, not an I/O error.
  int idle = 0;
  while (io_uring_sq_ready(ring_.get()) > 0) {
    const int rc = io_uring_submit(ring_.get());
    if (rc > 0) {
      idle = 0;
      continue;
    }
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      const std::string msg = fmt::format("io_uring_submit: {}", std::strerror(-rc));
      CheckFailed(__FILE__, __LINE__, "io_uring_submit() >= 0", msg.c_str());
    }
    WALFS_CHECK_MSG(++idle < 100000, "io_uring_submit makes no progress");
    std::this_thread::yield();
  }
}

void UringEngine::CompleteLocked(const Cqe& cqe) {
  --sqes_in_kernel_;
  if (cqe.user_data == kWakeTag) return;
  Op* op = reinterpret_cast<Op*>(static_cast<std::uintptr_t>(cqe.user_data & ~kPreflushBit));
  --op->sqes;
  const IoRequest& r = op->req;

  if (cqe.user_data & kPreflushBit) {
    op->preflush_done = true;
    // On failure the linked write completes with -ECANCELED; keep this error.
    if (cqe.res < 0 && op->status.ok())
      op->status = Status::FromErrno(-cqe.res, "preflush of " + Context(*op));
    if (op->sqes == 0) op->finished = true;
    return;
  }
  if (r.op == IoOp::kWrite && (r.flags & kIoPreflush)) op->preflush_done = true;
  bool again = false;
  if (!op->status.ok()) {
    // The write behind a failed preflush: cancelled, nothing more to do.
  } else if (cqe.res == -EAGAIN || cqe.res == -EINTR) {
    again = true;
  } else if (cqe.res < 0) {
    op->status = Status::FromErrno(-cqe.res, Context(*op));
  } else if (r.op != IoOp::kFlush && r.len > 0) {
    op->done_bytes += static_cast<unsigned>(cqe.res);
    if (op->done_bytes < r.len) {
      if (cqe.res > 0) {
        again = true;  // short read or write: continue with the remainder
        ++continued_;
      } else if (r.op == IoOp::kRead) {
        op->status = Status::IoError(fmt::format(
            "{}: unexpected end of file at offset {}", Context(*op), r.offset + op->done_bytes));
      } else {
        op->status = Status::IoError(fmt::format(
            "{}: the write made no progress at offset {}", Context(*op),
            r.offset + op->done_bytes));
      }
    }
  }
  // The freed slot is reused at once: a continuation goes before the backlog.
  if (again) {
    PrepLocked(op);
  } else if (op->sqes == 0) {
    op->finished = true;
  }
}

void UringEngine::ReaperLoop() {
  internal::MarkCompletionThread();
  pthread_setname_np(pthread_self(), "walfs-uring");
  std::vector<Cqe> cqes;
  std::vector<std::unique_ptr<Op>> ready;
  while (true) {
    io_uring_cqe* first = nullptr;
    const int rc = io_uring_wait_cqe(ring_.get(), &first);
    if (rc == -EINTR || rc == -EAGAIN) continue;
    WALFS_CHECK_MSG(rc == 0, "io_uring_wait_cqe failed");
    // Copy a batch out of the CQ and release the slots before taking mu_.
    io_uring_cqe* batch[kReapBatch];
    const unsigned n = io_uring_peek_batch_cqe(ring_.get(), batch, kReapBatch);
    cqes.clear();
    for (unsigned i = 0; i < n; ++i) cqes.push_back({batch[i]->user_data, batch[i]->res});
    io_uring_cq_advance(ring_.get(), n);

    {
      MutexLock l(&mu_);
      for (const Cqe& c : cqes) CompleteLocked(c);
      PumpLocked();
      // Callbacks go strictly in submission order: stop at the first op
      // that is still in flight, even if later ones are done.
      while (!order_.empty() && order_.front()->finished) {
        ready.push_back(std::move(order_.front()));
        order_.pop_front();
      }
    }
    // Only this thread pops order_, so `ready` holds the oldest finished
    // requests, and their callbacks run before any later one is popped.
    for (std::unique_ptr<Op>& op : ready) op->req.done(std::move(op->status));
    ready.clear();
    MutexLock l(&mu_);
    // Callbacks may have submitted more: exit only when stopping and idle.
    // (Stopping with SQEs in the kernel means a CQE will wake us again.)
    if (stopping_ && order_.empty() && sqes_in_kernel_ == 0) return;
  }
}

}  // namespace walfs
