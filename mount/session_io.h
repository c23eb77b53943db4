// SessionIo: the FUSE session's raw I/O.  libfuse reads every request from
// /dev/fuse and writes every reply through the callbacks installed here
// (fuse_session_custom_io), so walfs sees the kernel's protocol itself where
// libfuse 3.14 does not pass it on:
//
//  - Accounting: every request by opcode (count, and the time from reading
//    it to writing its reply: the daemon's service time), the `fuse_req_*`
//    lines of .walfs/stats.
//  - FUSE_TMPFILE, which libfuse 3.14 would refuse (ENOSYS, and the kernel
//    would refuse O_TMPFILE for good): passed on as a CREATE (Tmpfile()).
//  - FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 cannot ask for: it is added
//    to the INIT reply when the kernel offers it.  The kernel then marks its
//    superblock SB_NOSEC (no GETXATTR security.capability before writes, no
//    GETATTR before a chown) and leaves clearing setuid/setgid to walfs,
//    flagging the WRITE, SETATTR and OPEN requests that must do it; those
//    flags, which libfuse drops, are kept for the handler (KillSuidgid()).
//  - FUSE_DIRECT_IO_ALLOW_MMAP, which libfuse 3.14 does not know either:
//    without it the kernel refuses MAP_SHARED (ENODEV) on files walfs opens
//    with FOPEN_DIRECT_IO, as it does near a full disk.
//  - FUSE_OVER_IO_URING: when the kernel offers it (the fuse module's
//    enable_uring) and Options::transport allows, the rings are made and
//    the flag added to the INIT reply; once the reply is in, the ring lanes
//    register and carry the requests (mount/uring_transport.h), handing
//    each to libfuse as if read from /dev/fuse (Received, then
//    fuse_session_process_buf) and taking its reply back (WriteReply).
//
// A request is read and handled by one worker thread, which replies before
// it reads the next (walfs replies to every request in its handler), so the
// request being served is thread-local state.
//
// Workers: a worker is *waiting* while it sits in read(2) on /dev/fuse and
// *busy* from the return of that read until it calls read again.  A request
// the kernel queues while no worker waits stays queued until a busy worker
// finishes (or libfuse starts another, up to max_threads).  The daemon
// cannot see when the kernel queued a request, so what it counts is the
// condition for waiting: `fuse_req_taken_last_waiter`, the requests whose
// taking left no worker waiting, and the peak of busy workers.  The time
// itself, the kernel's and the queue's share of a request, is measured
// from outside by walfs-requests (its `outside us/request` row).
//
//   fuse_session_mount(se, mountpoint);
//   server.session_io().Attach(se);     // se's userdata: the FuseServer
//   ... in a handler: if (SessionIo::KillSuidgid()) ...
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/histogram.h"
#include "base/status.h"
#include "mount/uring_transport.h"

namespace walfs::mount {

class SessionIo {
 public:
  // How requests reach the daemon (mount/uring_transport.h).  kAuto: the
  // rings when the kernel offers them at INIT and they can be set up,
  // /dev/fuse otherwise (said in one message line, with how to enable
  // them); kUring: the same, but a kernel that does not offer them is a
  // warning; kDev: /dev/fuse only.
  enum class Transport { kAuto, kDev, kUring };
  struct Options {
    // Ask for FUSE_HANDLE_KILLPRIV_V2 when the kernel offers it.
    bool killpriv_v2 = true;
    Transport transport = Transport::kAuto;
    std::uint32_t uring_lanes = 4;  // lanes per ring queue (UringTransport::Options)
  };
  explicit SessionIo(Options options) : options_(options) {}
  // Forgets this thread's busy spell here: with -s the main thread served
  // requests, and its thread-locals outlive the session.
  ~SessionIo();
  SessionIo(const SessionIo&) = delete;
  SessionIo& operator=(const SessionIo&) = delete;

  // Routes the mounted session's I/O through this SessionIo (its fd stays
  // the session's).  `se`'s userdata must be the FuseServer whose
  // session_io() this is.
  Status Attach(fuse_session* se);
  // Stops the ring lanes (if any) and joins them: after the session loop,
  // before the session is destroyed.
  void StopTransport();
  // "uring" once the kernel took the rings, else "dev".
  std::string_view transport() const;

  // For the request the calling thread is serving: the kernel asked walfs to
  // clear setuid (and setgid, when group-executable) as part of it
  // (FUSE_WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID).
  static bool KillSuidgid();

  // The request being served is the kernel's FUSE_TMPFILE (O_TMPFILE),
  // which libfuse 3.14 does not know: it is handed to libfuse as a CREATE
  // (the same arguments and reply), and the create handler asks this.
  static bool Tmpfile();

  // For the request the calling thread is serving, when it carries no
  // payload (a READ): a buffer of at least `size` bytes that the transport
  // sends a reply's data from without copying it (a ring lane's payload
  // buffer: UringTransport::ReplyBuffer), or empty (a /dev/fuse worker,
  // whose writev copies once anyway; the handler uses its own buffer).
  static std::span<char> ReplyBuffer(std::size_t size);

  // Whether the kernel accepted FUSE_HANDLE_KILLPRIV_V2 (set at INIT).
  bool killpriv_v2() const { return killpriv_v2_.load(std::memory_order_relaxed); }
  // Whether the kernel was told it may mmap(MAP_SHARED) direct-I/O files.
  bool direct_io_mmap() const { return direct_io_mmap_.load(std::memory_order_relaxed); }

  // `fuse_killpriv_v2 0|1`, `fuse_direct_io_mmap 0|1`, `fuse_requests N` (about files and directories), then per opcode seen:
  // `fuse_req_<op> N` and its service time `fuse_req_<op>_us_mean|p50|p99`;
  // `fuse_req_control N` (requests about /.walfs, apart: reading the stats
  // is no part of the load it measures); `fuse_service_us` (the service
  // times' sum), `fuse_req_taken_last_waiter`, `fuse_workers_busy_max`;
  // `fuse_daemon_cpu_us`.
  std::string StatsText() const;

  // Testing (-o fault_injection's .walfs/fault): `ring_commit N` makes the
  // N-th commit of a reply through the rings from now carry an id the
  // kernel refuses (UringTransport::FailNthCommit; 0 disarms).
  // InvalidArgument for another command, a bad N, or a mount serving
  // through /dev/fuse.  IsRingFaultCommand tells which commands are these.
  static bool IsRingFaultCommand(std::string_view command);
  Status ApplyRingFault(std::string_view command);
  // `ring_commit_failures: N` (the commits the kernel refused), or "" when
  // the mount serves through /dev/fuse.
  std::string RingFaultText() const;

  // The callbacks (public for the C trampolines in session_io.cc).
  // Reading()/ReadDone() bracket a worker's read(2) of /dev/fuse;
  // WorkerIdle() ends a busy spell (at the next read, or when libfuse
  // retires the worker).
  void Reading();
  void ReadDone();
  void WorkerIdle();
  // A ring lane (mount/uring_transport.h) serves a request: counted busy
  // like a /dev/fuse worker, from the request's arrival to its reply.
  void LaneBusy();
  void LaneIdle();
  void Received(void* buf, std::size_t len);
  void Replying(struct iovec* iov, int count);
  // libfuse's writev: a reply to a request a ring carried goes back
  // through the ring, anything else to /dev/fuse.
  ssize_t WriteReply(int fd, struct iovec* iov, int count);

 private:
  void AmendInitReply(const struct iovec& arg);
  // At INIT: the rings made ready to be offered, or why not (a message).
  bool PrepareRings();

  static constexpr std::size_t kOpcodeSlots = 64;  // FUSE opcodes are < 52; the rest share the last
  static constexpr std::uint32_t kControlSlot = 0;  // opcode 0 does not exist: requests about /.walfs
  struct OpStats {
    std::atomic<std::uint64_t> count{0};
    Histogram service_ns;
  };

  const Options options_;
  std::atomic<std::uint64_t> init_unique_{0};   // the INIT request, whose reply gets KILLPRIV_V2
  std::atomic<bool> kernel_offers_killpriv_v2_{false};
  std::atomic<bool> killpriv_v2_{false};
  std::atomic<bool> kernel_offers_direct_io_mmap_{false};
  std::atomic<bool> direct_io_mmap_{false};
  std::array<OpStats, kOpcodeSlots> ops_;
  fuse_session* se_ = nullptr;
  std::atomic<bool> kernel_offers_uring_{false};
  // Made at INIT when offered (set: the flag went in the INIT reply),
  // started once the INIT reply is in; read by
  // every reply after that (the pointer is set before INIT's reply is
  // written, and never changes until StopTransport).
  std::unique_ptr<UringTransport> uring_owner_;
  std::atomic<UringTransport*> uring_{nullptr};
  std::atomic<std::uint64_t> uring_payload_bytes_{0};
  // Workers now in read(2) and now busy (see "Workers" above); the peak of
  // busy ones; requests taken when no other worker was left waiting.
  std::atomic<std::int32_t> waiting_{0};
  std::atomic<std::int32_t> busy_{0};
  std::atomic<std::int32_t> busy_max_{0};
  std::atomic<std::uint64_t> taken_last_waiter_{0};
};

}  // namespace walfs::mount
