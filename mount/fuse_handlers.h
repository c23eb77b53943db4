// The FUSE low-level handlers, by family, as FuseServer's dispatch table
// (mount/fuse_server.cc, MakeOps) calls them: each turns one request into a
// Filesystem call (or, under /.walfs, a ControlDir call) and replies.  They
// never learn which transport carried the request.
//
//   fuse_names.cc   the namespace and directories
//   fuse_data.cc    file data: open, read, write, fsync, seek, poll ...
//   fuse_attrs.cc   attributes, statfs, xattrs; the attribute replies
//   fuse_ioctl.cc   FITRIM and WALFS_IOC_GROWFS
//
// The helpers below are what the families share.
#pragma once

#include <sys/stat.h>

#include <cstdint>

#include "base/status.h"
#include "mount/control_dir.h"
#include "mount/fuse_server.h"

namespace walfs::mount::handlers {

inline FuseServer* Server(fuse_req_t req) { return static_cast<FuseServer*>(fuse_req_userdata(req)); }

// A handle of a walfs file that writes through the kernel's cache carries
// this in fi->fh, so that its RELEASE is counted off (WritebackGuard).
inline constexpr std::uint64_t kCachedWriterHandle = 1;

// /.walfs in the root: no request may create, remove or rename it.
inline bool IsReservedName(fuse_ino_t parent, const char* name) {
  return parent == FUSE_ROOT_ID && ControlDir::kName == name;
}

// Replies with an inode's attributes (fuse_attrs.cc): a control file's
// stat; an entry with the mount's timeouts and FUSE inode number; an entry
// or attribute reply, or the error.
struct stat ControlStat(const ControlDir::Attr& a);
fuse_entry_param Entry(FuseServer* s, struct stat st);
void ReplyEntry(fuse_req_t req, const Result<struct stat>& r);
void ReplyAttr(fuse_req_t req, Result<struct stat> r);

// fuse_names.cc
void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets);
void Readlink(fuse_req_t req, fuse_ino_t ino);
void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
            unsigned int flags);
void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);
void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);

// fuse_data.cc
void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi);
void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info* fi);
void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);
void CopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info* fi_in, fuse_ino_t ino_out,
                   off_t off_out, fuse_file_info* fi_out, size_t len, int flags);
void Poll(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, fuse_pollhandle* ph);

// fuse_attrs.cc
void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi);
void StatFs(fuse_req_t req, fuse_ino_t ino);
void Access(fuse_req_t req, fuse_ino_t ino, int mask);
void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags);
void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);

// fuse_ioctl.cc
void Ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void* arg, fuse_file_info* fi, unsigned flags,
           const void* in_buf, size_t in_bufsz, size_t out_bufsz);

}  // namespace walfs::mount::handlers
