// The filesystem tests of the fserver mix: re-aim-7's recipes (disk1.c,
// creat_clo.c, disk_src.c), the same system calls in the same order, with
// 1 KiB transfers.  Each runs in one directory and leaves it as it found it.
//
//   FsEnv env{.dir_fd = dir, .blocks = 1034, .pid = getpid(), .rng = &rng, .namer = &namer};
//   Status s = FindFsTest("disk_rw")(env);
//
// `blocks` is re-aim's disk_iteration_count: FILESIZE + POOLSIZE / users, in
// 1 KiB blocks.  Every file a test writes has that many blocks (the sync_
// tests half as many), and disk_cp copies that many from tmpa.common, which
// the runner writes into every directory before each load level
// (CreateCommonFile).  docs/aim.md lists each recipe.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "base/status.h"
#include "mount/sync_client.h"

namespace walfs::bench::aim {

inline constexpr int kBlockSize = 1024;  // re-aim's NBUFSIZE
inline constexpr char kCommonFile[] = "tmpa.common";

// re-aim's aim_mktemp(): "<prefix><pid % 100000, 5 digits><counter, 5 digits>",
// unique per process without touching the file system.
class TempNamer {
 public:
  explicit TempNamer(int pid) : pid_(pid % 100000) {}
  std::string Next(std::string_view prefix);

 private:
  int pid_;
  int counter_ = 0;
};

struct FsEnv {
  int dir_fd = -1;          // the directory this job works in
  std::int64_t blocks = 0;  // disk_iteration_count, >= 1
  // re-aim's DO_SYNC() (system("sync") unless -y), off unless --sync is
  // given: `syncer` (the directory's filesystem made durable the way that
  // works on it: .walfs/sync on walfs, where syncfs never reaches the
  // daemon), or syncfs(dir_fd) without one.
  bool sync_calls = false;
  const mount::FsSyncer* syncer = nullptr;
  int pid = 0;              // for disk_src's creat names
  std::mt19937* rng = nullptr;  // aim_rand(): random blocks, disk_src's scramble
  TempNamer* namer = nullptr;
};

using FsTestFn = Status (*)(FsEnv& env);

// The recipe called `name` ("disk_rw"), or nullptr.
FsTestFn FindFsTest(std::string_view name);

// disk_create_all_files(): <dir>/tmpa.common, `blocks` KiB of printable bytes.
Status CreateCommonFile(int dir_fd, std::int64_t blocks);

Status CreatClo(FsEnv& env);
Status DiskCp(FsEnv& env);
Status DiskRd(FsEnv& env);
Status DiskRr(FsEnv& env);
Status DiskRw(FsEnv& env);
Status DiskSrc(FsEnv& env);
Status DiskWrt(FsEnv& env);
Status LinkTest(FsEnv& env);
Status SyncDiskCp(FsEnv& env);
Status SyncDiskRw(FsEnv& env);
Status SyncDiskWrt(FsEnv& env);

}  // namespace walfs::bench::aim
