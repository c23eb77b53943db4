#include "mount/uring_transport.h"

#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "base/messages.h"
#include "mount/fuse_uring_abi.h"
#include "mount/session_io.h"

namespace walfs::mount {

namespace {

// Room in front of each payload buffer for the in_header and the first
// argument, so libfuse reads the request as one run of bytes.
constexpr std::size_t kRequestPrefix = 256;
static_assert(kRequestPrefix >= sizeof(fuse_in_header) + fuse_uring::kOpInSize);

// user_data of a lane's completions: Stop's wake-up and a foreign thread's
// "your reply is ready" (posted by IORING_OP_MSG_RING from the waker
// ring), and the entry's command.
constexpr std::uint64_t kStopTag = 1;
constexpr std::uint64_t kReplyReadyTag = 2;
constexpr std::uint64_t kEntryTag = 3;

}  // namespace

struct UringTransport::Lane {
  std::uint32_t qid = 0;
  io_uring ring{};
  bool ring_ready = false;
  // Other threads never touch the ring's queues (only the lane's thread
  // submits, so a commit and the wait for the next completion are one
  // io_uring_enter): they post a completion to it from the waker ring.
  std::thread thread;
  // The entry: header buffer, and the payload buffer kRequestPrefix into `buffer`.
  fuse_uring::ReqHeader header{};
  std::unique_ptr<char[]> buffer;
  char* payload = nullptr;
  std::size_t payload_size = 0;
  struct iovec iov[2]{};
  // The request the entry carries now (its unique), 0 when none: the lane
  // sets it before the handler runs and Reply clears it.
  std::atomic<std::uint64_t> serving{0};
  std::atomic<bool> foreign_reply_ready{false};
  // The lane's own thread only: it is inside the handler (Serve), and the
  // handler replied -- the commit waits until the handler returns, since
  // the next request overwrites the buffers its arguments point into.
  bool in_serve = false;
  bool replied_in_serve = false;
  // The lane's own thread only: the command in flight on the entry (what a
  // failed completion refused), and whether a refused commit was sent
  // again (the next request the entry carries clears it).
  std::uint32_t in_flight = 0;
  bool commit_retried = false;
  std::atomic<std::uint64_t> requests{0};
};

namespace {
thread_local UringTransport::Lane* current_lane = nullptr;
}  // namespace

Result<std::uint32_t> PossibleCpus() {
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string text;
  if (!std::getline(in, text) || text.empty())
    return Status::NotSupported("cannot read /sys/devices/system/cpu/possible");
  std::uint32_t n = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const std::size_t dash = part.find('-');
    const std::uint32_t lo = static_cast<std::uint32_t>(std::strtoul(std::string(part.substr(0, dash)).c_str(), nullptr, 10));
    const std::uint32_t hi = dash == std::string_view::npos
                                 ? lo
                                 : static_cast<std::uint32_t>(std::strtoul(std::string(part.substr(dash + 1)).c_str(), nullptr, 10));
    if (hi < lo) return Status::Corruption(fmt::format("/sys/devices/system/cpu/possible: \"{}\"", text));
    n += hi - lo + 1;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (n == 0 || n > 4096) return Status::Corruption(fmt::format("/sys/devices/system/cpu/possible: \"{}\"", text));
  return n;
}

UringTransport::UringTransport(fuse_session* se, int fuse_fd, SessionIo* io, const Options& options,
                               std::uint32_t queues)
    : se_(se), fuse_fd_(fuse_fd), io_(io), options_(options), queues_(queues) {}

Result<std::unique_ptr<UringTransport>> UringTransport::Create(fuse_session* se, int fuse_fd, SessionIo* io,
                                                                const Options& options) {
  if (options.lanes_per_queue == 0 || options.lanes_per_queue > 64)
    return Status::InvalidArgument(fmt::format("{} lanes per queue (1 to 64)", options.lanes_per_queue));
  WALFS_ASSIGN_OR_RETURN(const std::uint32_t queues, PossibleCpus());
  std::unique_ptr<UringTransport> t(new UringTransport(se, fuse_fd, io, options, queues));
  {
    MutexLock l(&t->waker_mu_);
    const int rc = io_uring_queue_init(8, &t->waker_ring_, 0);
    if (rc < 0) return Status::FromErrno(-rc, "io_uring_queue_init (the lanes' waker)");
    t->waker_ready_ = true;
  }
  for (std::uint32_t q = 0; q < queues; ++q) {
    for (std::uint32_t l = 0; l < options.lanes_per_queue; ++l) {
      auto lane = std::make_unique<Lane>();
      lane->qid = q;
      // Four SQEs: the entry's command and spares; SQE128 for the command
      // area the FUSE command lives in.
      const int rc = io_uring_queue_init(4, &lane->ring, IORING_SETUP_SQE128);
      if (rc < 0) {
        t->Stop();
        return Status::FromErrno(-rc, "io_uring_queue_init (SQE128)");
      }
      lane->ring_ready = true;
      t->lanes_.push_back(std::move(lane));
    }
  }
  for (auto& lane : t->lanes_) {
    Lane* l = lane.get();
    try {
      l->thread = std::thread([t = t.get(), l] { t->Run(l); });
    } catch (const std::system_error& e) {
      t->Stop();
      return Status::FromErrno(e.code().value(), "starting a ring lane");
    }
  }
  return t;
}

UringTransport::~UringTransport() { Stop(); }

void UringTransport::Start(std::size_t payload_bytes) {
  MutexLock l(&start_mu_);
  payload_bytes_ = payload_bytes;
  started_ = true;
  started_flag_.store(true, std::memory_order_release);
  start_cv_.SignalAll();
}

bool UringTransport::serving() const {
  return started_flag_.load(std::memory_order_acquire) && !refused_.load(std::memory_order_acquire);
}

void UringTransport::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    MutexLock l(&start_mu_);
    stopping_ = true;
    start_cv_.SignalAll();
  }
  for (auto& lane : lanes_) {
    if (!lane->thread.joinable()) continue;
    Wake(lane.get(), kStopTag);
    lane->thread.join();
  }
  for (auto& lane : lanes_) {
    if (lane->ring_ready) io_uring_queue_exit(&lane->ring);
    lane->ring_ready = false;
  }
  MutexLock l(&waker_mu_);
  if (waker_ready_) io_uring_queue_exit(&waker_ring_);
  waker_ready_ = false;
}

// Any thread: posts a completion tagged `tag` straight into the lane's
// ring (IORING_OP_MSG_RING), which wakes its thread from its wait.  The
// waker ring is shared, under waker_mu_; a success posts nothing back to it.
void UringTransport::Wake(Lane* lane, std::uint64_t tag) {
  MutexLock l(&waker_mu_);
  if (!waker_ready_) return;
  io_uring_sqe* sqe = io_uring_get_sqe(&waker_ring_);
  if (sqe == nullptr) {  // never: each Wake submits what it queued
    errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  io_uring_prep_msg_ring(sqe, lane->ring.ring_fd, 0, tag, 0);
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  if (io_uring_submit(&waker_ring_) < 0) errors_.fetch_add(1, std::memory_order_relaxed);
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(&waker_ring_, &cqe) == 0) {  // failures only
    Message(Severity::kError, "FUSE ring queue {}: waking its lane failed: {}", lane->qid, std::strerror(-cqe->res));
    errors_.fetch_add(1, std::memory_order_relaxed);
    io_uring_cqe_seen(&waker_ring_, cqe);
  }
}

// The lane's thread: queues the entry's command; the loop in Run submits
// it with its wait for the next completion.
void UringTransport::Submit(Lane* lane, std::uint32_t cmd_op, std::uint64_t commit_id) {
  io_uring_sqe* sqe = io_uring_get_sqe(&lane->ring);
  if (sqe == nullptr) {  // never: a lane has one command in flight and four SQEs
    errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::memset(sqe, 0, 2 * sizeof(io_uring_sqe));  // SQE128: the command area is the second half
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fuse_fd_;
  sqe->cmd_op = cmd_op;
  if (cmd_op == fuse_uring::kCmdRegister) {
    sqe->addr = reinterpret_cast<std::uintptr_t>(lane->iov);
    sqe->len = 2;
  }
  fuse_uring::CmdReq req{};
  req.commit_id = commit_id;
  if (cmd_op == fuse_uring::kCmdCommitAndFetch) {
    std::uint64_t in = fail_commit_in_.load(std::memory_order_relaxed);
    while (in > 0 && !fail_commit_in_.compare_exchange_weak(in, in - 1, std::memory_order_relaxed)) {
    }
    if (in == 1) req.commit_id = ~commit_id;  // FailNthCommit: an id no request has
  }
  req.qid = static_cast<std::uint16_t>(lane->qid);
  std::memcpy(sqe->cmd, &req, sizeof req);
  io_uring_sqe_set_data64(sqe, kEntryTag);
  lane->in_flight = cmd_op;
}

void UringTransport::Run(Lane* lane) {
  // Pinned to its queue's CPU: the callers the kernel routes here run there.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(lane->qid, &cpus);
  (void)pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
  pthread_setname_np(pthread_self(), fmt::format("walfs-ring{}", lane->qid).substr(0, 15).c_str());
  {
    MutexLock l(&start_mu_);
    while (!started_ && !stopping_) start_cv_.Wait(&start_mu_);
    if (stopping_) return;
  }
  lane->buffer = std::make_unique<char[]>(kRequestPrefix + payload_bytes_);
  lane->payload = lane->buffer.get() + kRequestPrefix;
  lane->payload_size = payload_bytes_;
  lane->iov[0] = {&lane->header, sizeof lane->header};
  lane->iov[1] = {lane->payload, payload_bytes_};
  current_lane = lane;
  Submit(lane, fuse_uring::kCmdRegister, 0);
  bool registered = false;
  for (bool running = true; running;) {
    // The commit of the last reply (or a registration) and the wait for
    // the next completion: one io_uring_enter a request.
    const int rc = io_uring_submit_and_wait(&lane->ring, 1);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      Message(Severity::kError, "FUSE ring queue {}: io_uring_enter: {}", lane->qid, std::strerror(-rc));
      break;
    }
    io_uring_cqe* cqe = nullptr;
    while (running && io_uring_peek_cqe(&lane->ring, &cqe) == 0) {
      const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&lane->ring, cqe);
      if (tag == kStopTag) {
        running = false;
      } else if (tag == kReplyReadyTag) {
        if (lane->foreign_reply_ready.exchange(false, std::memory_order_acq_rel)) Commit(lane);
      } else {
        running = Completed(lane, res, &registered);
      }
    }
  }
  current_lane = nullptr;
}

// The entry's command completed with `res`: a request to serve, or the
// kernel's refusal.  False: the lane ends.
bool UringTransport::Completed(Lane* lane, int res, bool* registered) {
  if (res == -EAGAIN && !*registered) {  // INIT not yet processed (fc->initialized): try again
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Submit(lane, fuse_uring::kCmdRegister, 0);
    return true;
  }
  if (res < 0 && lane->in_flight == fuse_uring::kCmdCommitAndFetch && res != -ENOTCONN && res != -ECANCELED) {
    // The kernel refused a commit (ENOENT: it knows no request by that
    // commit id; EINVAL: the entry was not in userspace).  The kernel
    // checks this before it touches the entry, so the entry still holds
    // the request and our reply: commit it again, once.  If that fails
    // too the reply cannot reach its caller (who waits until the mount is
    // aborted or unmounted); the lane registers a fresh entry so that its
    // queue keeps serving, and the refused one stays with the kernel
    // until the connection ends.
    commit_failures_.fetch_add(1, std::memory_order_relaxed);
    if (!lane->commit_retried) {
      lane->commit_retried = true;
      Message(Severity::kWarning, "FUSE ring queue {}: the kernel refused a reply's commit ({}): committing it again",
              lane->qid, std::strerror(-res));
      Commit(lane);
      return true;
    }
    lane->commit_retried = false;
    reregistered_.fetch_add(1, std::memory_order_relaxed);
    Message(Severity::kError,
            "FUSE ring queue {}: the kernel refused a reply's commit twice ({}): its caller waits until the "
            "mount ends; the lane registers a fresh entry",
            lane->qid, std::strerror(-res));
    Submit(lane, fuse_uring::kCmdRegister, 0);
    return true;
  }
  if (res < 0) {
    // ENOTCONN: the connection ended (unmount, abort); anything else:
    // the kernel refused the entry, and the connection went back to
    // /dev/fuse (a failed registration turns the rings off), or refused
    // a lane's fresh entry after a lost commit (the lane ends).
    if (res != -ENOTCONN && res != -ECANCELED) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (!*registered) refused_.store(true, std::memory_order_release);
      Message(Severity::kWarning, "FUSE ring queue {}: the kernel refused a command: {}", lane->qid,
              std::strerror(-res));
    }
    return false;
  }
  if (!*registered) {
    *registered = true;
    lanes_used_.fetch_add(1, std::memory_order_relaxed);
  }
  lane->commit_retried = false;
  Serve(lane);
  return true;
}

void UringTransport::Serve(Lane* lane) {
  fuse_in_header in;
  std::memcpy(&in, lane->header.in_out, sizeof in);
  const std::uint32_t payload_sz = lane->header.ring_ent_in_out.payload_sz;
  lane->requests.fetch_add(1, std::memory_order_relaxed);
  // in.len counts the header, the first argument (in op_in) and the payload.
  const std::uint64_t rest = std::uint64_t{sizeof in} + payload_sz;
  if (in.len < rest || in.len - rest > fuse_uring::kOpInSize || payload_sz > payload_bytes_) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    Message(Severity::kError, "FUSE ring queue {}: a request of {} bytes with a {}-byte payload does not add up",
            lane->qid, in.len, payload_sz);
    fuse_out_header out{sizeof(fuse_out_header), -EIO, in.unique};
    std::memcpy(lane->header.in_out, &out, sizeof out);
    lane->header.ring_ent_in_out.payload_sz = 0;
    Submit(lane, fuse_uring::kCmdCommitAndFetch, lane->header.ring_ent_in_out.commit_id);
    return;
  }
  const std::uint32_t first = in.len - static_cast<std::uint32_t>(rest);
  char* start = lane->payload - first - sizeof in;
  std::memcpy(start, &in, sizeof in);
  std::memcpy(start + sizeof in, lane->header.op_in, first);
  lane->serving.store(in.unique, std::memory_order_release);
  io_->Received(start, in.len);
  fuse_buf buf{};
  buf.size = in.len;
  buf.mem = start;
  buf.fd = -1;
  lane->in_serve = true;
  lane->replied_in_serve = false;
  io_->LaneBusy();
  fuse_session_process_buf(se_, &buf);
  io_->LaneIdle();
  lane->in_serve = false;
  if (lane->replied_in_serve) Commit(lane);
}

bool UringTransport::Reply(const struct iovec* iov, int count) {
  if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return false;
  fuse_out_header out;
  std::memcpy(&out, iov[0].iov_base, sizeof out);
  if (out.unique == 0) return false;  // a notification: /dev/fuse's
  if (!serving()) return false;       // no lane carries anything (not started, or refused)
  Lane* lane = current_lane;
  if (lane == nullptr || lane->serving.load(std::memory_order_acquire) != out.unique) {
    lane = nullptr;
    for (auto& l : lanes_) {
      if (l->serving.load(std::memory_order_acquire) == out.unique) {
        lane = l.get();
        break;
      }
    }
    if (lane == nullptr) return false;  // a request /dev/fuse carried
  }
  // The out header in in_out, every argument in the payload.
  std::size_t n = 0;
  bool fits = true;
  for (int i = 1; i < count; ++i) {
    if (iov[i].iov_len > payload_bytes_ - n) {
      fits = false;
      break;
    }
    // Data a handler wrote into the payload buffer (ReplyBuffer) is in place.
    if (iov[i].iov_base != lane->payload + n)
      std::memmove(lane->payload + n, iov[i].iov_base, iov[i].iov_len);
    else if (iov[i].iov_len > 0)
      in_place_replies_.fetch_add(1, std::memory_order_relaxed);
    n += iov[i].iov_len;
  }
  if (!fits) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    out.error = -EIO;
    out.len = sizeof out;
    n = 0;
  }
  std::memcpy(lane->header.in_out, &out, sizeof out);
  lane->header.ring_ent_in_out.payload_sz = static_cast<std::uint32_t>(n);
  lane->serving.store(0, std::memory_order_release);
  if (lane == current_lane && lane->in_serve) {
    lane->replied_in_serve = true;  // committed when the handler returns (Serve)
  } else if (lane == current_lane) {
    Commit(lane);
  } else {
    // Another thread answers: the lane submits the commit itself, so that
    // the kernel copies the next request in the lane's own task.
    foreign_replies_.fetch_add(1, std::memory_order_relaxed);
    lane->foreign_reply_ready.store(true, std::memory_order_release);
    Wake(lane, kReplyReadyTag);
  }
  return true;
}

std::span<char> UringTransport::ReplyBuffer(std::size_t size) {
  Lane* lane = current_lane;
  if (lane == nullptr || !lane->in_serve || lane->header.ring_ent_in_out.payload_sz != 0 ||
      size > lane->payload_size)
    return {};
  return {lane->payload, lane->payload_size};
}

void UringTransport::Commit(Lane* lane) {
  Submit(lane, fuse_uring::kCmdCommitAndFetch, lane->header.ring_ent_in_out.commit_id);
}

std::string UringTransport::StatsText() const {
  std::uint64_t total = 0;
  std::vector<std::uint64_t> per_queue(queues_, 0);
  for (const auto& l : lanes_) {
    const std::uint64_t n = l->requests.load(std::memory_order_relaxed);
    per_queue[l->qid] += n;
    total += n;
  }
  std::string s = fmt::format("fuse_uring_queues {}\nfuse_uring_lanes_per_queue {}\nfuse_uring_lanes_used {}\n"
                              "fuse_uring_requests {}\n",
                              queues_, options_.lanes_per_queue, lanes_used_.load(std::memory_order_relaxed), total);
  for (std::uint32_t q = 0; q < queues_; ++q) s += fmt::format("fuse_uring_q{}_requests {}\n", q, per_queue[q]);
  s += fmt::format("fuse_uring_foreign_replies {}\nfuse_uring_in_place_replies {}\nfuse_uring_errors {}\n"
                   "fuse_uring_commit_failures {}\nfuse_uring_reregistered {}\n",
                   foreign_replies_.load(std::memory_order_relaxed),
                   in_place_replies_.load(std::memory_order_relaxed), errors_.load(std::memory_order_relaxed),
                   commit_failures_.load(std::memory_order_relaxed), reregistered_.load(std::memory_order_relaxed));
  return s;
}

}  // namespace walfs::mount
