#include "mount/session_io.h"

#include <linux/fuse.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "base/clock.h"
#include "mount/control_dir.h"
#include "base/messages.h"
#include "mount/fuse_server.h"
#include "mount/fuse_uring_abi.h"

namespace walfs::mount {

namespace {

// The request this thread read last and has not answered yet.
struct Serving {
  std::uint64_t unique = 0;
  std::uint32_t slot = 0;
  std::int64_t start_ns = 0;
  bool kill_suidgid = false;
  bool tmpfile = false;
};
thread_local Serving serving;

// This worker is counted busy in `io` (from a read's return to its next
// read); a worker libfuse retires after a request stops counting at exit.
struct BusySpell {
  SessionIo* io = nullptr;
  ~BusySpell() {
    if (io != nullptr) io->WorkerIdle();
  }
};
thread_local BusySpell busy_spell;

std::string_view OpcodeName(std::uint32_t op) {
  static constexpr std::string_view kNames[] = {
      "",          "lookup",    "forget",      "getattr",    "setattr",     "readlink",  "symlink",
      "",          "mknod",     "mkdir",       "unlink",     "rmdir",       "rename",    "link",
      "open",      "read",      "write",       "statfs",     "release",     "",          "fsync",
      "setxattr",  "getxattr",  "listxattr",   "removexattr", "flush",      "init",      "opendir",
      "readdir",   "releasedir", "fsyncdir",   "getlk",      "setlk",       "setlkw",    "access",
      "create",    "interrupt", "bmap",        "destroy",    "ioctl",       "poll",      "notify_reply",
      "batch_forget", "fallocate", "readdirplus", "rename2", "lseek",      "copy_file_range",
      "setupmapping", "removemapping", "syncfs", "tmpfile"};
  if (op < std::size(kNames) && !kNames[op].empty()) return kNames[op];
  return "other";
}

// FUSE_DIRECT_IO_ALLOW_MMAP (kernel 6.6, protocol 7.39; Debian 12's headers
// predate it): MAP_SHARED on a file opened with FOPEN_DIRECT_IO.  Without
// it such an mmap fails with ENODEV, and walfs opens files for writing with
// FOPEN_DIRECT_IO near a full disk (mount/writeback_guard.h).  Bit 36: the
// INIT messages carry bits 32..63 in flags2, read when FUSE_INIT_EXT is set.
constexpr std::uint64_t kDirectIoAllowMmap = 1ull << 36;

template <typename T>
const T* Arg(const void* buf, std::size_t len) {
  if (len < sizeof(fuse_in_header) + sizeof(T)) return nullptr;
  return reinterpret_cast<const T*>(static_cast<const char*>(buf) + sizeof(fuse_in_header));
}

// A request about /.walfs (its files, or the lookup of the name itself):
// counted apart, so that reading the stats does not count itself.
bool IsControlRequest(const fuse_in_header& in, const void* buf, std::size_t len) {
  if (ControlDir::IsControlIno(in.nodeid)) return true;
  if (in.opcode != FUSE_LOOKUP || in.nodeid != FUSE_ROOT_ID) return false;
  const std::string_view name(static_cast<const char*>(buf) + sizeof in, len - sizeof in);
  return name.substr(0, name.find('\0')) == ControlDir::kName;
}

SessionIo& Io(void* userdata) { return static_cast<FuseServer*>(userdata)->session_io(); }

ssize_t ReadRequest(int fd, void* buf, size_t len, void* userdata) {
  SessionIo& io = Io(userdata);
  io.Reading();
  const ssize_t n = ::read(fd, buf, len);
  io.ReadDone();
  if (n > 0) io.Received(buf, static_cast<std::size_t>(n));
  return n;
}

ssize_t WriteReplyTrampoline(int fd, struct iovec* iov, int count, void* userdata) {
  return Io(userdata).WriteReply(fd, iov, count);
}

}  // namespace

Status SessionIo::Attach(fuse_session* se) {
  static const fuse_custom_io kIo = {.writev = WriteReplyTrampoline, .read = ReadRequest,
                                     .splice_receive = nullptr, .splice_send = nullptr};
  se_ = se;
  const int rc = fuse_session_custom_io(se, &kIo, fuse_session_fd(se));
  if (rc != 0) return Status::FromErrno(-rc, "fuse_session_custom_io");
  return Status::Ok();
}

ssize_t SessionIo::WriteReply(int fd, struct iovec* iov, int count) {
  Replying(iov, count);
  UringTransport* uring = uring_.load(std::memory_order_acquire);
  if (uring != nullptr && uring->Reply(iov, count)) {
    ssize_t n = 0;
    for (int i = 0; i < count; ++i) n += static_cast<ssize_t>(iov[i].iov_len);
    return n;
  }
  const ssize_t n = ::writev(fd, iov, count);
  // The INIT reply is in: the kernel now knows the rings were accepted
  // (process_init_reply runs in this writev), and the lanes may register.
  uring = uring_.load(std::memory_order_acquire);  // AmendInitReply may have made it
  if (n > 0 && uring != nullptr && count >= 1 && iov[0].iov_len >= sizeof(fuse_out_header) &&
      static_cast<const fuse_out_header*>(iov[0].iov_base)->unique == init_unique_.load(std::memory_order_relaxed)) {
    uring->Start(uring_payload_bytes_.load(std::memory_order_relaxed));
  }
  return n;
}

void SessionIo::StopTransport() {
  if (UringTransport* uring = uring_.load(std::memory_order_acquire)) uring->Stop();
}

std::string_view SessionIo::transport() const {
  const UringTransport* uring = uring_.load(std::memory_order_acquire);
  return uring != nullptr && uring->serving() ? "uring" : "dev";
}

bool SessionIo::PrepareRings() {
  using enum Transport;
  if (options_.transport == kDev || se_ == nullptr) return false;
  if (!kernel_offers_uring_.load(std::memory_order_relaxed)) {
    // The kernel offers the rings only while the fuse module's enable_uring
    // is on (and only kernels from 6.14 have them).
    Message(options_.transport == kUring ? Severity::kWarning : Severity::kInfo,
            "serving FUSE requests through /dev/fuse: the kernel does not offer FUSE over io_uring (as root: echo Y "
            "> /sys/module/fuse/parameters/enable_uring, before mounting; Linux 6.14 or later)");
    return false;
  }
  Result<std::unique_ptr<UringTransport>> t =
      UringTransport::Create(se_, fuse_session_fd(se_), this, {.lanes_per_queue = options_.uring_lanes});
  if (!t.ok()) {
    Message(Severity::kWarning, "serving FUSE requests through /dev/fuse: the io_uring rings could not be set up: {}",
            t.status().message());
    return false;
  }
  uring_owner_ = std::move(t).value();
  uring_.store(uring_owner_.get(), std::memory_order_release);
  Message(Severity::kInfo, "serving FUSE requests through io_uring: {} queues (one per CPU), {} lanes each",
          uring_owner_->queues(), uring_owner_->lanes_per_queue());
  return true;
}

bool SessionIo::IsRingFaultCommand(std::string_view command) {
  const std::size_t start = command.find_first_not_of(" \t\n");
  return start != std::string_view::npos && command.substr(start).starts_with("ring_commit");
}

Status SessionIo::ApplyRingFault(std::string_view command) {
  std::string_view rest = command;
  auto word = [&rest]() {
    const std::size_t start = rest.find_first_not_of(" \t\n");
    if (start == std::string_view::npos) return std::string_view();
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \t\n"), rest.size());
    const std::string_view w = rest.substr(0, end);
    rest.remove_prefix(end);
    return w;
  };
  const std::string_view verb = word(), count = word(), extra = word();
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
  if (verb != "ring_commit" || count.empty() || ec != std::errc() || end != count.data() + count.size() ||
      !extra.empty())
    return Status::InvalidArgument(fmt::format("'{}': expected 'ring_commit N' (N >= 0)", command));
  UringTransport* uring = uring_.load(std::memory_order_acquire);
  if (uring == nullptr || !uring->serving())
    return Status::InvalidArgument("ring_commit: the mount serves through /dev/fuse, not the io_uring rings");
  uring->FailNthCommit(n);
  return Status::Ok();
}

std::string SessionIo::RingFaultText() const {
  const UringTransport* uring = uring_.load(std::memory_order_acquire);
  if (uring == nullptr || !uring->serving()) return "";
  return fmt::format("ring_commit_failures: {}\n", uring->commit_failures());
}

bool SessionIo::KillSuidgid() { return serving.kill_suidgid; }
bool SessionIo::Tmpfile() { return serving.tmpfile; }
std::span<char> SessionIo::ReplyBuffer(std::size_t size) { return UringTransport::ReplyBuffer(size); }

SessionIo::~SessionIo() {
  if (busy_spell.io == this) busy_spell.io = nullptr;
}

void SessionIo::WorkerIdle() { busy_.fetch_sub(1, std::memory_order_relaxed); }

void SessionIo::LaneBusy() {
  const std::int32_t busy = busy_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::int32_t peak = busy_max_.load(std::memory_order_relaxed);
  while (busy > peak && !busy_max_.compare_exchange_weak(peak, busy, std::memory_order_relaxed)) {
  }
}

void SessionIo::LaneIdle() { busy_.fetch_sub(1, std::memory_order_relaxed); }

void SessionIo::Reading() {
  // libfuse starts the workers as copies of the main thread ("walfs"): name
  // each for its role once, so traces, top and ps tell them from the CIL
  // pusher or the AIL (the main thread keeps the process's name).
  thread_local bool named = false;
  if (!named) {
    named = true;
    if (::gettid() != ::getpid()) pthread_setname_np(pthread_self(), "walfs-fuse");
  }
  if (busy_spell.io != nullptr) {
    busy_spell.io->WorkerIdle();
    busy_spell.io = nullptr;
  }
  waiting_.fetch_add(1, std::memory_order_relaxed);
}

void SessionIo::ReadDone() {
  // This worker stops waiting; if it was the last one, a request the kernel
  // queues now waits for a worker.
  if (waiting_.fetch_sub(1, std::memory_order_relaxed) == 1) taken_last_waiter_.fetch_add(1, std::memory_order_relaxed);
  const std::int32_t busy = busy_.fetch_add(1, std::memory_order_relaxed) + 1;
  busy_spell.io = this;
  std::int32_t peak = busy_max_.load(std::memory_order_relaxed);
  while (busy > peak && !busy_max_.compare_exchange_weak(peak, busy, std::memory_order_relaxed)) {
  }
}

void SessionIo::Received(void* buf, std::size_t len) {
  if (len < sizeof(fuse_in_header)) return;
  auto* in = static_cast<fuse_in_header*>(buf);
  std::uint32_t slot = in->opcode < kOpcodeSlots ? in->opcode : kOpcodeSlots - 1;
  if (IsControlRequest(*in, buf, len)) slot = kControlSlot;
  ops_[slot].count.fetch_add(1, std::memory_order_relaxed);
  bool kill = false;
  switch (in->opcode) {
    case FUSE_INIT:
      if (const auto* a = Arg<fuse_init_in>(buf, len)) {
        kernel_offers_killpriv_v2_.store((a->flags & FUSE_HANDLE_KILLPRIV_V2) != 0, std::memory_order_relaxed);
        const std::uint64_t flags =
            a->flags | ((a->flags & FUSE_INIT_EXT) ? std::uint64_t{a->flags2} << 32 : 0);
        kernel_offers_direct_io_mmap_.store((flags & kDirectIoAllowMmap) != 0, std::memory_order_relaxed);
        kernel_offers_uring_.store((flags & fuse_uring::kOverIoUring) != 0, std::memory_order_relaxed);
      }
      init_unique_.store(in->unique, std::memory_order_relaxed);
      break;
    case FUSE_WRITE:
      if (const auto* a = Arg<fuse_write_in>(buf, len)) kill = (a->write_flags & FUSE_WRITE_KILL_SUIDGID) != 0;
      break;
    case FUSE_SETATTR:
      if (const auto* a = Arg<fuse_setattr_in>(buf, len)) kill = (a->valid & FATTR_KILL_SUIDGID) != 0;
      break;
    case FUSE_OPEN:
      if (const auto* a = Arg<fuse_open_in>(buf, len)) kill = (a->open_flags & FUSE_OPEN_KILL_SUIDGID) != 0;
      break;
    default:
      break;
  }
  const bool tmpfile = in->opcode == FUSE_TMPFILE && len >= sizeof(fuse_in_header) + sizeof(fuse_create_in);
  if (tmpfile) in->opcode = FUSE_CREATE;  // counted as what it is (slot) before
  serving = Serving{.unique = in->unique, .slot = slot, .start_ns = MonotonicNanos(), .kill_suidgid = kill,
                    .tmpfile = tmpfile};
}

void SessionIo::Replying(struct iovec* iov, int count) {
  if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return;
  const auto* out = static_cast<const fuse_out_header*>(iov[0].iov_base);
  if (out->unique == 0) return;  // a notification (poll), not a reply
  if (out->unique == init_unique_.load(std::memory_order_relaxed) && out->error == 0 && count >= 2)
    AmendInitReply(iov[1]);
  if (out->unique == serving.unique) {
    ops_[serving.slot].service_ns.Record(MonotonicNanos() - serving.start_ns);
    serving.unique = 0;
    serving.kill_suidgid = false;
  }
}

// libfuse's INIT reply, still in its own buffer: add the flags it cannot set.
void SessionIo::AmendInitReply(const struct iovec& arg) {
  auto* init = static_cast<fuse_init_out*>(arg.iov_base);
  if (arg.iov_len < offsetof(fuse_init_out, flags) + sizeof init->flags) return;
  if (options_.killpriv_v2 && kernel_offers_killpriv_v2_.load(std::memory_order_relaxed)) {
    init->flags |= FUSE_HANDLE_KILLPRIV_V2;
    killpriv_v2_.store(true, std::memory_order_relaxed);
  }
  if (arg.iov_len >= offsetof(fuse_init_out, flags2) + sizeof init->flags2 &&
      kernel_offers_direct_io_mmap_.load(std::memory_order_relaxed)) {
    init->flags |= FUSE_INIT_EXT;
    init->flags2 |= static_cast<std::uint32_t>(kDirectIoAllowMmap >> 32);
    direct_io_mmap_.store(true, std::memory_order_relaxed);
  }
  if (arg.iov_len >= offsetof(fuse_init_out, flags2) + sizeof init->flags2 && PrepareRings()) {
    // The kernel's max_payload_sz, which every entry's payload buffer must
    // hold: the larger of FUSE_MIN_READ_BUFFER, max_write and max_pages pages.
    std::uint64_t payload = std::max<std::uint64_t>(8192, init->max_write);
    if (arg.iov_len >= offsetof(fuse_init_out, max_pages) + sizeof init->max_pages && (init->flags & FUSE_MAX_PAGES))
      payload = std::max<std::uint64_t>(payload, std::uint64_t{init->max_pages} * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    uring_payload_bytes_.store(payload, std::memory_order_relaxed);
    init->flags |= FUSE_INIT_EXT;
    init->flags2 |= static_cast<std::uint32_t>(fuse_uring::kOverIoUring >> 32);
  }
}

std::string SessionIo::StatsText() const {
  std::uint64_t total = 0;
  std::uint64_t service_ns = 0;
  std::string per_op;
  for (std::uint32_t op = 0; op < kOpcodeSlots; ++op) {
    const std::uint64_t n = ops_[op].count.load(std::memory_order_relaxed);
    if (n == 0 || op == kControlSlot) continue;
    total += n;
    const Histogram& h = ops_[op].service_ns;
    service_ns += h.Sum();
    const std::string_view name = OpcodeName(op);
    per_op += fmt::format("fuse_req_{} {}\n", name, n);
    if (h.Count() == 0) continue;  // never answered (forget, batch_forget, interrupt)
    per_op += fmt::format("fuse_req_{}_us_mean {:.1f}\nfuse_req_{}_us_p50 {:.1f}\nfuse_req_{}_us_p99 {:.1f}\n", name,
                          h.Mean() / 1e3, name, static_cast<double>(h.Percentile(0.5)) / 1e3, name,
                          static_cast<double>(h.Percentile(0.99)) / 1e3);
  }
  const std::int64_t cpu_us = ProcessCpuNanos() / 1000;
  const UringTransport* uring = uring_.load(std::memory_order_acquire);
  const std::string transport =
      fmt::format("fuse_transport {}\n{}", this->transport(), uring != nullptr ? uring->StatsText() : std::string());
  return transport + fmt::format(
      "fuse_killpriv_v2 {}\nfuse_direct_io_mmap {}\nfuse_requests {}\n{}fuse_req_control {}\nfuse_service_us {}\n"
      "fuse_req_taken_last_waiter {}\nfuse_workers_busy_max {}\nfuse_daemon_cpu_us {}\n",
      killpriv_v2() ? 1 : 0, direct_io_mmap() ? 1 : 0, total, per_op,
      ops_[kControlSlot].count.load(std::memory_order_relaxed), service_ns / 1000,
      taken_last_waiter_.load(std::memory_order_relaxed), busy_max_.load(std::memory_order_relaxed), cpu_us);
}

}  // namespace walfs::mount
