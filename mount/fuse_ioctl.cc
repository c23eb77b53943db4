// The FUSE IOCTL handler: WALFS_IOC_GROWFS (walfs-growfs) and FITRIM
// (fstrim); every other command is ENOTTY.
#include <linux/fs.h>

#include <cstring>

#include "mount/fuse_events.h"
#include "mount/fuse_handlers.h"
#include "mount/fuse_reply.h"
#include "mount/growfs_ioctl.h"

namespace walfs::mount::handlers {

namespace {

// WALFS_IOC_GROWFS (walfs-growfs MNT; mount/growfs_ioctl.h): the geometry
// for anyone, a grow for root only (as FITRIM, below).  The grow runs on
// this FUSE worker thread; the others go on serving, and allocating.
void Growfs(fuse_req_t req, FuseServer* s, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  if (in_bufsz < sizeof(GrowfsArgs) || out_bufsz < sizeof(GrowfsArgs)) return (void)FailErrno(req, EINVAL);
  GrowfsArgs args{};
  std::memcpy(&args, in_buf, sizeof args);  // the ABI struct, not an on-disk one
  fs::GrowReport r;
  if (args.flags & kGrowfsQuery) {
    r = s->fs()->Geometry();
  } else {
    if (fuse_req_ctx(req)->uid != 0) return (void)FailErrno(req, EPERM);
    Result<fs::GrowReport> grown = s->fs()->Grow(args.new_bytes);
    if (!grown.ok()) return ReplyErr(req, grown.status());
    r = *grown;
  }
  args.block_size = r.block_size;
  args.old_blocks = r.old_blocks;
  args.new_blocks = r.new_blocks;
  args.old_ag_count = r.old_ag_count;
  args.new_ag_count = r.new_ag_count;
  args.ag_blocks = r.ag_blocks;
  args.log_blocks = r.log_blocks;
  args.data_start = r.data_start;
  args.unused_blocks = r.unused_blocks;
  args.device_bytes = r.device_bytes;
  args.steps = r.steps;
  fuse_reply_ioctl(req, 0, &args, sizeof args);
}

}  // namespace

// FITRIM (fstrim MNT), the other ioctl walfs answers (docs/fs.md, "Discard"):
// a restricted ioctl, so the kernel copies the struct fstrim_range in and
// out by the command's encoding, and on a directory only because INIT
// granted FUSE_CAP_IOCTL_DIR.  The kernel asks CAP_SYS_ADMIN of FITRIM on
// its own filesystems; FUSE passes the ioctl on unchecked with nothing but
// the caller's ids, so walfs lets only root trim.  Every other command is
// ENOTTY, as from a filesystem without ioctls.
// struct fstrim_range is three u64s for 32-bit callers too, so
// FUSE_IOCTL_COMPAT needs nothing of its own.
void Ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void*, fuse_file_info*, unsigned /*flags*/,
           const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  FuseServer* s = Server(req);
  if (ControlDir::IsControlIno(ino)) return (void)FailErrno(req, ENOTTY);
  if (cmd == static_cast<unsigned int>(kIocGrowfs)) return Growfs(req, s, in_buf, in_bufsz, out_bufsz);
  if (cmd != FITRIM) return (void)FailErrno(req, ENOTTY);
  if (fuse_req_ctx(req)->uid != 0) return (void)FailErrno(req, EPERM);  // first, as ext4 and XFS check
  if (in_bufsz < sizeof(fstrim_range) || out_bufsz < sizeof(fstrim_range)) return (void)FailErrno(req, EINVAL);
  fstrim_range range{};
  std::memcpy(&range, in_buf, sizeof range);  // the kernel's ABI struct, not an on-disk one
  Result<std::uint64_t> trimmed = s->fs()->Trim(range.start, range.len, range.minlen);
  if (!trimmed.ok()) return ReplyErr(req, trimmed.status());
  range.len = *trimmed;  // what fstrim prints
  fuse_reply_ioctl(req, 0, &range, sizeof range);
}

}  // namespace walfs::mount::handlers
