// FuseServer (mount/fuse_server.h): the dispatch table (MakeOps: every
// handler wrapped with its trace events), INIT and DESTROY, and the
// server's own state -- the control directory's sources, invalidations,
// the low-space policy and the writeback push.  The handlers are in
// mount/fuse_handlers.h by family; the transports that carry requests to
// them (/dev/fuse, io_uring) are mount/session_io.h and
// mount/uring_transport.h, which the handlers never see.
#include "mount/fuse_server.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/block_device_fault_command.h"
#include "base/messages.h"
#include "journal/wake_mode.h"
#include "mount/bdi_limit.h"
#include "mount/fuse_caller.h"
#include "mount/fuse_events.h"
#include "mount/fuse_handlers.h"
#include "mount/fuse_reply.h"
#include "mount/sync_file.h"
#include "tracing/tracer.h"

namespace walfs::mount {

namespace {

using namespace handlers;  // NOLINT(build/namespaces): the table names every handler

void Init(void* userdata, fuse_conn_info* conn) {
  auto* s = static_cast<FuseServer*>(userdata);
  s->options().Negotiate(conn);
  s->SetWritebackGranted((conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0);
}

void Destroy(void* userdata) { static_cast<FuseServer*>(userdata)->control().InterruptReaders(); }

// A name field of an fs event (fuse_events.h): the name cut to
// kTraceNameBytes, then its whole length.
void PutTraceName(const char* name, std::uint64_t* f) {
  const std::string_view n = name != nullptr ? std::string_view(name) : std::string_view();
  tracing::PackChars(n, f, kTraceNameFields);
  f[kTraceNameFields] = n.size();
}

// Wraps a handler with its enter/exit trace events (one branch each when
// the events are off).  What the enter event says beyond caller and inode
// depends on the operation (fuse_events.h); everything that is not the
// handler's own work -- naming the caller, the enter event (whose first
// use on a thread allocates its ring) -- happens before the latency clock
// starts.
template <const FuseOpEvents* Ev, auto Handler>
struct Traced {
  template <typename First, typename... Rest>
  static void Call(fuse_req_t req, First first, Rest... rest) {
    std::uint64_t ino = 0;
    if constexpr (std::is_integral_v<First>) ino = static_cast<std::uint64_t>(first);
    if constexpr (Ev == &kFuseOp_symlink) ino = std::get<0>(std::tie(rest...));  // the directory
    // Requests on /.walfs files are not traced: a trace_pipe reader would
    // otherwise wake itself with the events of its own reads.
    if ((!Ev->enter.active() && !Ev->exit.active()) || ControlDir::IsControlIno(ino))
      return Handler(req, first, rest...);
    const auto pid = static_cast<std::uint32_t>(fuse_req_ctx(req)->pid);
    NoteCaller(pid);
    std::uint64_t f[tracing::kMaxFields] = {pid, ino};
    const auto args = std::tie(first, rest...);
    if constexpr (Ev == &kFuseOp_lookup || Ev == &kFuseOp_mknod || Ev == &kFuseOp_mkdir ||
                  Ev == &kFuseOp_unlink || Ev == &kFuseOp_rmdir || Ev == &kFuseOp_create ||
                  Ev == &kFuseOp_rename || Ev == &kFuseOp_setxattr || Ev == &kFuseOp_getxattr ||
                  Ev == &kFuseOp_removexattr) {
      PutTraceName(std::get<1>(args), &f[2]);  // the entry's or the attribute's name
    } else if constexpr (Ev == &kFuseOp_symlink || Ev == &kFuseOp_link) {
      PutTraceName(std::get<2>(args), &f[2]);  // the new entry's name
    } else if constexpr (Ev == &kFuseOp_read) {
      f[2] = static_cast<std::uint64_t>(std::get<2>(args));  // off
      f[3] = std::get<1>(args);                              // size
    } else if constexpr (Ev == &kFuseOp_write) {
      f[2] = static_cast<std::uint64_t>(std::get<3>(args));
      f[3] = std::get<2>(args);
    } else if constexpr (Ev == &kFuseOp_fallocate) {
      f[2] = static_cast<std::uint64_t>(std::get<2>(args));
      f[3] = static_cast<std::uint64_t>(std::get<3>(args));
      f[4] = static_cast<std::uint64_t>(std::get<1>(args));  // mode
    }
    TakeRepliedErrno();
    WALFS_TRACE(Ev->enter, f[0], f[1], f[2], f[3], f[4], f[5]);
    if constexpr (Ev == &kFuseOp_rename) {
      std::uint64_t to[tracing::kMaxFields] = {pid, std::get<2>(args)};
      PutTraceName(std::get<3>(args), &to[2]);
      WALFS_TRACE(kFuseRenameTo, to[0], to[1], to[2], to[3], to[4], to[5]);
    }
    const auto start = std::chrono::steady_clock::now();
    Handler(req, first, rest...);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    WALFS_TRACE(Ev->exit, pid, ino, TakeRepliedErrno(), ns);
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.destroy = Destroy;
  ops.lookup = Traced<&kFuseOp_lookup, Lookup>::Call;
  ops.forget = Traced<&kFuseOp_forget, Forget>::Call;
  ops.forget_multi = Traced<&kFuseOp_forget_multi, ForgetMulti>::Call;
  ops.getattr = Traced<&kFuseOp_getattr, GetAttr>::Call;
  ops.setattr = Traced<&kFuseOp_setattr, SetAttr>::Call;
  ops.readlink = Traced<&kFuseOp_readlink, Readlink>::Call;
  ops.mknod = Traced<&kFuseOp_mknod, Mknod>::Call;
  ops.mkdir = Traced<&kFuseOp_mkdir, Mkdir>::Call;
  ops.unlink = Traced<&kFuseOp_unlink, Unlink>::Call;
  ops.rmdir = Traced<&kFuseOp_rmdir, Rmdir>::Call;
  ops.symlink = Traced<&kFuseOp_symlink, Symlink>::Call;
  ops.rename = Traced<&kFuseOp_rename, Rename>::Call;
  ops.link = Traced<&kFuseOp_link, Link>::Call;
  ops.open = Traced<&kFuseOp_open, Open>::Call;
  ops.create = Traced<&kFuseOp_create, Create>::Call;
  ops.read = Traced<&kFuseOp_read, Read>::Call;
  ops.write = Traced<&kFuseOp_write, Write>::Call;
  ops.flush = Traced<&kFuseOp_flush, Flush>::Call;
  ops.release = Traced<&kFuseOp_release, Release>::Call;
  ops.fsync = Traced<&kFuseOp_fsync, Fsync>::Call;
  ops.opendir = Traced<&kFuseOp_opendir, OpenDir>::Call;
  ops.readdir = Traced<&kFuseOp_readdir, ReadDir>::Call;
  ops.readdirplus = Traced<&kFuseOp_readdirplus, ReadDirPlus>::Call;
  ops.releasedir = Traced<&kFuseOp_releasedir, ReleaseDir>::Call;
  ops.fsyncdir = Traced<&kFuseOp_fsyncdir, FsyncDir>::Call;
  ops.statfs = Traced<&kFuseOp_statfs, StatFs>::Call;
  ops.access = Traced<&kFuseOp_access, Access>::Call;
  ops.setxattr = Traced<&kFuseOp_setxattr, SetXattr>::Call;
  ops.getxattr = Traced<&kFuseOp_getxattr, GetXattr>::Call;
  ops.listxattr = Traced<&kFuseOp_listxattr, ListXattr>::Call;
  ops.removexattr = Traced<&kFuseOp_removexattr, RemoveXattr>::Call;
  ops.fallocate = Traced<&kFuseOp_fallocate, Fallocate>::Call;
  ops.lseek = Traced<&kFuseOp_lseek, Lseek>::Call;
  ops.copy_file_range = Traced<&kFuseOp_copy_file_range, CopyFileRange>::Call;
  ops.poll = Traced<&kFuseOp_poll, Poll>::Call;
  ops.ioctl = Traced<&kFuseOp_ioctl, Ioctl>::Call;
  return ops;
}

}  // namespace

FuseServer::FuseServer(fs::Filesystem* fs, const FuseServerOptions& options, std::string mount_options)
    : fs_(fs),
      options_(options),
      writeback_(options.writeback_reserve_bytes),
      session_io_({.killpriv_v2 = options.killpriv_v2,
                   .transport = options.transport == "dev"     ? SessionIo::Transport::kDev
                                : options.transport == "uring" ? SessionIo::Transport::kUring
                                                               : SessionIo::Transport::kAuto,
                   .uring_lanes = options.uring_lanes}),
      polls_([this](std::uint64_t fh) { return control_->Readable(fh); }) {
  ControlDir::Sources src;
  src.tracer = &tracing::Tracer::Get();
  src.stats = [this, fs] {
    return fs->StatsText() + session_io_.StatsText() +
           fmt::format("writeback_cache {}\nwriteback_reserve_bytes {}\nwriteback_lost {}\n",
                       writeback_granted() ? 1 : 0, writeback_.reserve_bytes(), writeback_.lost_writebacks()) +
           fmt::format("writeback_dirty_bound {}\nwriteback_gate_bytes {}\nwriteback_low_space {}\n"
                       "writeback_refused {}\n",
                       writeback_.dirty_bound(), writeback_.gate_bytes(), writeback_.low_space() ? 1 : 0,
                       writeback_.refused_writes()) +
           (push_ ? push_->StatsText() : std::string()) +
           fmt::format("fuse_polls {}\n", polls_received_.load(std::memory_order_relaxed));
  };
  src.get_grant_wake = [fs] { return std::string(journal::WakeModeName(fs->wake_mode())); };
  src.set_grant_wake = [fs](std::string_view v) -> Status {
    WALFS_ASSIGN_OR_RETURN(journal::WakeMode m, journal::ParseWakeMode(v));
    return fs->SetWakeMode(m);
  };
  src.parent_ino = FUSE_ROOT_ID;
  src.owner_uid = getuid();
  src.owner_gid = getgid();
  src.files.push_back({.name = "messages",
                       .read = [] { return Messages::Get().Text(); },
                       .write = {},
                       .help = "the mount's kernel-style log: mount, recovery, errors, shutdown",
                       .owner_reads_only = true});
  src.files.push_back(
      {.name = "mount_options",
       .read =
           [this, fs, text = std::move(mount_options)] {
             return fmt::format("{}wake={}\n{}transport_in_use={}\nfilesystem={}\n", text,
                                journal::WakeModeName(fs->wake_mode()), options_.OptionsText(),
                                session_io_.transport(), fs->Describe());
           },
       .write = {},
       .help = "every mount option in effect, defaults included, one name=value a line"});
  src.files.push_back(SyncControlFile([fs] { return fs->Sync(); }));
  src.files.back().anyone_writes = true;  // as sync(2), which any user may call
  if (FaultDevice* dev = fs->fault_device()) {
    // The last command applied, for reads of the file.
    struct Last {
      std::mutex mu;
      std::string command;
    };
    auto last = std::make_shared<Last>();
    src.files.push_back({.name = "fault",
                         .read =
                             [this, dev, last] {
                               std::lock_guard l(last->mu);
                               return FaultText(*dev, last->command) + session_io_.RingFaultText();
                             },
                         .write =
                             [this, dev, last](std::string_view command) -> Status {
                               // The image's I/O (base/block_device_fault_command.h), or the
                               // rings' commits (SessionIo::ApplyRingFault).
                               WALFS_RETURN_IF_ERROR(SessionIo::IsRingFaultCommand(command)
                                                         ? session_io_.ApplyRingFault(command)
                                                         : ApplyFaultCommand(dev, command));
                               Message(Severity::kWarning, "fault injection: {}", command);
                               std::lock_guard l(last->mu);
                               last->command = std::string(command);
                               return Status::Ok();
                             },
                         .snapshot = false,
                         .help = "testing (-o fault_injection): fail the image's I/O or a ring commit; "
                                 "read: what is armed"});
  }
  control_ = std::make_unique<ControlDir>(std::move(src));
}

FuseServer::~FuseServer() { StopPolling(); }

void FuseServer::InvalidateAttr(fuse_ino_t ino) {
  fuse_session* se = session_.load(std::memory_order_acquire);
  if (se == nullptr) return;
  // off < 0: the attributes only, no page cache; the kernel takes no inode
  // lock for it, so a handler may send it before it replies.
  const int rc = fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
  if (rc != 0 && rc != -ENOENT) Message(Severity::kWarning, "attribute invalidation of inode {}: {}", ino, strerror(-rc));
}

void FuseServer::NoteSpace() {
  if (!writeback_granted()) return;
  if (!writeback_.NoteAvailable(fs_->AvailableBytes())) return;
  const std::vector<std::uint64_t> writers = writeback_.CachedWriterInodes();
  Message(Severity::kWarning,
          "low space: below {} MiB free; {} file(s) open through the page cache now ask before each write, "
          "refused (ENOSPC) below {} MiB",
          writeback_.low_space_bytes() >> 20, writers.size(), writeback_.gate_bytes() >> 20);
  for (std::uint64_t ino : writers) InvalidateAttr(ino);
}

void FuseServer::LearnMount(const std::string& mountpoint) {
  Result<std::string> dev = MountDeviceNumber(mountpoint);
  Result<std::uint64_t> bound = dev.ok() ? BdiDirtyBound(*dev) : Result<std::uint64_t>(dev.status());
  if (bound.ok()) {
    writeback_.SetDirtyBound(*bound);
  } else {
    Message(Severity::kWarning, "the kernel's dirty-page bound for this mount is unknown ({}); assuming {} MiB",
            bound.status().message(), writeback_.dirty_bound() >> 20);
  }
  int push_ms = options_.writeback_cache ? options_.writeback_push_ms : 0;
  if (push_ms > 0 && !dev.ok()) {
    Message(Severity::kWarning, "writeback push off: this mount's device number is unknown ({})",
            dev.status().message());
    push_ms = 0;
  }
  push_ = std::make_unique<WritebackPush>(
      WritebackPush::Options{.mountpoint = mountpoint, .device = dev.ok() ? *dev : "", .interval_ms = push_ms});
  WritebackPush* push = push_.get();
  writeback_.SetWritersObserver([push](std::uint64_t ino, bool open, bool any) {
    if (open)
      push->FileOpened(ino);
    else
      push->FileReleased(ino);
    push->SetWanted(any);
  });
  push->Start();
}

void FuseServer::StopWritebackPush() {
  if (push_) push_->RequestStop();
}

void FuseServer::JoinWritebackPush() {
  if (push_) push_->Join();
}

void FuseServer::WriteBackCached(fuse_ino_t ino, off_t from) {
  fuse_session* se = session_.load(std::memory_order_acquire);
  if (se == nullptr) return;
  // off >= 0: the kernel invalidates the pages from `from` on, and writes
  // each dirty one back first (invalidate_inode_pages2_range launders dirty
  // folios), through WRITE requests that other workers serve; the notify
  // returns once that is done.
  const int rc = fuse_lowlevel_notify_inval_inode(se, ino, from, 0);
  if (rc != 0 && rc != -ENOENT)
    Message(Severity::kWarning, "write-back of cached pages of inode {}: {}", ino, strerror(-rc));
}

const fuse_lowlevel_ops& FuseServer::Operations() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace walfs::mount