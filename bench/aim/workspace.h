// Workspace: walfs-aim's own directory in each DIR of the command line, and
// everything the run keeps there between jobs.
//
// re-aim-7 works in the disk directories themselves and removes what it
// knows it made (tmpa.common, fakeh, link*).  walfs-aim makes one directory
// per DIR, "walfs-aim.<pid>.<n>", and removes it whole, so even the files of
// a user that failed half way through a recipe do not outlive the run.
//
//   WALFS_ASSIGN_OR_RETURN(auto ws, Workspace::Create({"/mnt/a", "/mnt/b"}));
//   WALFS_RETURN_IF_ERROR(ws->PrepareLevel(blocks));   // tmpa.common, per level
//   ... users run their jobs in ws->dir_fd(i) ...
//   WALFS_RETURN_IF_ERROR(ws->Remove());               // or the destructor
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "mount/sync_client.h"

namespace walfs::bench::aim {

class Workspace {
 public:
  // Makes the work directory and the fakeh tree in every one of `dirs`.  An
  // unusable DIR (missing, not a directory, read-only, no hard links) fails
  // with a message naming it; whatever was made by then is removed.
  static Result<std::unique_ptr<Workspace>> Create(const std::vector<std::string>& dirs);

  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();

  // Before each load level: (re)writes tmpa.common with `blocks` KiB in every
  // directory, then syncs each file system with syncer(i) (re-aim runs
  // "sync" here; neither is timed).
  Status PrepareLevel(std::int64_t blocks);

  // Removes every work directory; the first error is returned, the rest of
  // the directories are still removed.
  Status Remove();

  int dir_count() const { return static_cast<int>(dirs_.size()); }
  int dir_fd(int i) const { return dirs_[static_cast<std::size_t>(i)].work_fd; }
  // "<DIR>/walfs-aim.<pid>.<n>", for messages.
  const std::string& path(int i) const { return dirs_[static_cast<std::size_t>(i)].path; }
  // How directory i's filesystem is synced: on walfs through its
  // .walfs/sync (sync(2) never reaches a FUSE daemon), else syncfs.
  const mount::FsSyncer& syncer(int i) const { return *dirs_[static_cast<std::size_t>(i)].syncer; }
  // "syncfs", or "walfs sync (MNT/.walfs/sync)" for one of them.
  std::string SyncMethods() const;

 private:
  struct Dir {
    std::string path;
    std::string name;  // of the work directory inside DIR
    int parent_fd = -1;
    int work_fd = -1;
    std::unique_ptr<mount::FsSyncer> syncer;  // over work_fd
  };
  Workspace() = default;

  std::vector<Dir> dirs_;
};

// Removes <parent_fd>/<name> and everything below it (rm -rf, without
// following symlinks).  ENOENT for `name` itself is success.
Status RemoveTree(int parent_fd, const std::string& name);

}  // namespace walfs::bench::aim
