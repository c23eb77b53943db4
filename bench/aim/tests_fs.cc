// The data tests of tests_fs.h: disk_rr, disk_rw, disk_rd, disk_wrt,
// disk_cp and their sync_ variants (re-aim-7 src/disk1.c).  The namespace
// tests (creat_clo, link_test, disk_src) are in tests_fs_names.cc.
#include "bench/aim/tests_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "bench/aim/fd.h"
#include "bench/aim/scratch_file.h"

namespace walfs::bench::aim {
namespace {

// re-aim's static nbuf: one 1 KiB buffer that every transfer of the process
// goes through, so a copy writes what it last read.
char nbuf[kBlockSize];

Status DoSync(const FsEnv& env) {
  if (!env.sync_calls) return Status::Ok();
  if (env.syncer != nullptr) return env.syncer->Sync();
  if (::syncfs(env.dir_fd) != 0) return Status::FromErrno(errno, "syncfs");
  return Status::Ok();
}

Status WriteBlock(int fd, const std::string& name) {
  return WriteAll(fd, nbuf, sizeof nbuf, "write " + name);
}

Status ReadBlock(int fd, const std::string& name) {
  const ssize_t r = ::read(fd, nbuf, sizeof nbuf);
  if (r < 0) return Status::FromErrno(errno, "read " + name);
  if (r != sizeof nbuf) return Status::FromErrno(EIO, fmt::format("short read ({} bytes) of {}", r, name));
  return Status::Ok();
}

Status WriteBlocks(const ScratchFile& f, std::int64_t n) {
  while (n-- > 0) WALFS_RETURN_IF_ERROR(WriteBlock(f.fd(), f.name()));
  return Status::Ok();
}

// lseek to a random block of a file of `blocks` blocks (rand() % blocks << 10).
Status SeekRandomBlock(FsEnv& env, int fd, std::int64_t blocks, const std::string& name) {
  const off_t off = static_cast<off_t>((*env.rng)() % static_cast<std::uint64_t>(blocks)) * kBlockSize;
  if (::lseek(fd, off, SEEK_SET) < 0) return Status::FromErrno(errno, "lseek " + name);
  return Status::Ok();
}

// disk_cp and sync_disk_cp: copy `blocks` blocks of tmpa.common to a new file.
// re-aim's disk_cp unlinks the copy while both files are open, closes both,
// then unlinks it again (the second unlink fails with ENOENT and is ignored);
// sync_disk_cp writes with O_SYNC and unlinks after closing.
Status Copy(FsEnv& env, std::int64_t blocks, bool sync) {
  if (!sync) WALFS_RETURN_IF_ERROR(DoSync(env));
  Fd src(::openat(env.dir_fd, kCommonFile, O_RDONLY | O_CLOEXEC));
  if (!src.ok()) return Status::FromErrno(errno, std::string("open ") + kCommonFile);
  ScratchFile dst(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(dst.Creat(sync ? O_SYNC : 0));
  if (!sync) WALFS_RETURN_IF_ERROR(DoSync(env));
  if (::lseek(src.get(), 0, SEEK_SET) < 0) return Status::FromErrno(errno, "lseek tmpa.common");
  for (std::int64_t i = 0; i < blocks; ++i) {
    WALFS_RETURN_IF_ERROR(ReadBlock(src.get(), kCommonFile));
    WALFS_RETURN_IF_ERROR(WriteBlock(dst.fd(), dst.name()));
  }
  if (sync) {
    src.Reset();
    WALFS_RETURN_IF_ERROR(dst.Close());
    return dst.Unlink();
  }
  WALFS_RETURN_IF_ERROR(dst.Unlink());  // "make it anonymous (and work NFS harder)"
  src.Reset();
  WALFS_RETURN_IF_ERROR(dst.Close());
  ::unlinkat(env.dir_fd, dst.name().c_str(), 0);  // re-aim's second unlink: ENOENT
  return DoSync(env);
}

}  // namespace

std::string TempNamer::Next(std::string_view prefix) {
  std::string name = fmt::format("{}{:05}{:05}", prefix, pid_, counter_);
  counter_ = (counter_ + 1) % 100000;
  return name;
}

Status CreateCommonFile(int dir_fd, std::int64_t blocks) {
  char buf[kBlockSize];
  for (int j = 0; j < kBlockSize; ++j) buf[j] = static_cast<char>(' ' + j % 95);
  Fd fd(::openat(dir_fd, kCommonFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777));
  if (!fd.ok()) return Status::FromErrno(errno, std::string("create ") + kCommonFile);
  for (std::int64_t i = 0; i < blocks; ++i)
    WALFS_RETURN_IF_ERROR(WriteAll(fd.get(), buf, sizeof buf, std::string("write ") + kCommonFile));
  if (::close(fd.Release()) != 0) return Status::FromErrno(errno, std::string("close ") + kCommonFile);
  return Status::Ok();
}

// Writes a file, then reads random blocks of it ("encourage the system to
// read from disk instead of the buffer cache"); closes before unlinking.
Status DiskRr(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(f.Creat());
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, env.blocks));
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(DoSync(env));
  WALFS_RETURN_IF_ERROR(f.Open(O_RDONLY));
  for (std::int64_t i = 0; i < env.blocks; ++i) {
    WALFS_RETURN_IF_ERROR(SeekRandomBlock(env, f.fd(), env.blocks, f.name()));
    WALFS_RETURN_IF_ERROR(ReadBlock(f.fd(), f.name()));
  }
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(f.Unlink());
  return DoSync(env);
}

// Writes a file, reopens it and overwrites random blocks, then unlinks it
// while it is still open and closes it.
Status DiskRw(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(f.Creat());
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, env.blocks));
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(DoSync(env));
  WALFS_RETURN_IF_ERROR(f.Open(O_WRONLY));
  for (std::int64_t i = 0; i < env.blocks; ++i) {
    WALFS_RETURN_IF_ERROR(SeekRandomBlock(env, f.fd(), env.blocks, f.name()));
    WALFS_RETURN_IF_ERROR(WriteBlock(f.fd(), f.name()));
  }
  WALFS_RETURN_IF_ERROR(f.Unlink());
  WALFS_RETURN_IF_ERROR(f.Close());
  return DoSync(env);
}

// Writes a file, then reads it sequentially; closes before unlinking.
Status DiskRd(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpf."));
  WALFS_RETURN_IF_ERROR(f.Creat());
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, env.blocks));
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(DoSync(env));
  WALFS_RETURN_IF_ERROR(f.Open(O_RDONLY));
  if (::lseek(f.fd(), 0, SEEK_SET) < 0) return Status::FromErrno(errno, "lseek " + f.name());
  for (std::int64_t i = 0; i < env.blocks; ++i) WALFS_RETURN_IF_ERROR(ReadBlock(f.fd(), f.name()));
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(DoSync(env));
  return f.Unlink();
}

// Writes a file sequentially, unlinks it while open, closes it.
Status DiskWrt(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(f.Creat());
  WALFS_RETURN_IF_ERROR(DoSync(env));
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, env.blocks));
  WALFS_RETURN_IF_ERROR(f.Unlink());  // "unlink moved after write 10/17/95"
  WALFS_RETURN_IF_ERROR(f.Close());
  return DoSync(env);
}

Status DiskCp(FsEnv& env) { return Copy(env, env.blocks, /*sync=*/false); }

// The sync_ tests move half as many blocks ("so as not to pound disk").
Status SyncDiskCp(FsEnv& env) { return Copy(env, env.blocks / 2, /*sync=*/true); }

// Writes half a file, reopens it O_SYNC and overwrites random blocks of it.
Status SyncDiskRw(FsEnv& env) {
  const std::int64_t blocks = env.blocks / 2;
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(f.Creat());
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, blocks));
  WALFS_RETURN_IF_ERROR(f.Close());
  WALFS_RETURN_IF_ERROR(f.Open(O_WRONLY | O_SYNC));
  for (std::int64_t i = 0; i < blocks; ++i) {
    WALFS_RETURN_IF_ERROR(SeekRandomBlock(env, f.fd(), blocks, f.name()));
    WALFS_RETURN_IF_ERROR(WriteBlock(f.fd(), f.name()));
  }
  WALFS_RETURN_IF_ERROR(f.Close());
  return f.Unlink();
}

// Writes half a file through an O_SYNC descriptor.
Status SyncDiskWrt(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  WALFS_RETURN_IF_ERROR(f.Creat(O_SYNC));
  WALFS_RETURN_IF_ERROR(WriteBlocks(f, env.blocks / 2));
  WALFS_RETURN_IF_ERROR(f.Close());
  return f.Unlink();
}

FsTestFn FindFsTest(std::string_view name) {
  static constexpr std::pair<std::string_view, FsTestFn> kTests[] = {
      {"creat_clo", CreatClo},       {"disk_cp", DiskCp},         {"disk_rd", DiskRd},
      {"disk_rr", DiskRr},           {"disk_rw", DiskRw},         {"disk_src", DiskSrc},
      {"disk_wrt", DiskWrt},         {"link_test", LinkTest},     {"sync_disk_cp", SyncDiskCp},
      {"sync_disk_rw", SyncDiskRw},  {"sync_disk_wrt", SyncDiskWrt},
  };
  for (const auto& [n, fn] : kTests)
    if (n == name) return fn;
  return nullptr;
}

}  // namespace walfs::bench::aim
