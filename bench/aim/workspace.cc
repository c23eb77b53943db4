#include "bench/aim/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench/aim/fakeh.h"
#include "bench/aim/tests_fs.h"

namespace walfs::bench::aim {
namespace {

// `s` again, its message prefixed with `path` (FromErrno appends strerror,
// so the old message's copy of it is dropped first).
Status WithPath(const Status& s, const std::string& path) {
  const int err = s.ToErrno() > 0 ? s.ToErrno() : EIO;
  std::string_view msg = s.message();
  const std::string suffix = fmt::format(": {}", std::strerror(err));
  if (msg.ends_with(suffix)) msg.remove_suffix(suffix.size());
  return Status::FromErrno(err, fmt::format("{}: {}", path, msg));
}

}  // namespace

Status RemoveTree(int parent_fd, const std::string& name) {
  const int fd = openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Ok();
    if (errno != ENOTDIR && errno != ELOOP) return Status::FromErrno(errno, "open " + name);
    if (unlinkat(parent_fd, name.c_str(), 0) != 0 && errno != ENOENT)
      return Status::FromErrno(errno, "unlink " + name);
    return Status::Ok();
  }
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "opendir " + name);
  }
  Status first;
  // Names are collected first: unlinking while readdir() walks the same
  // directory may skip entries on some file systems.
  std::vector<std::pair<std::string, bool>> entries;
  while (dirent* e = readdir(d)) {
    const std::string child = e->d_name;
    if (child == "." || child == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      is_dir = fstatat(fd, child.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    entries.emplace_back(child, is_dir);
  }
  for (const auto& [child, is_dir] : entries) {
    Status s = is_dir ? RemoveTree(fd, child) : Status::Ok();
    if (!is_dir && unlinkat(fd, child.c_str(), 0) != 0 && errno != ENOENT)
      s = Status::FromErrno(errno, "unlink " + name + "/" + child);
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  closedir(d);
  if (unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && first.ok())
    first = Status::FromErrno(errno, "rmdir " + name);
  return first;
}

Result<std::unique_ptr<Workspace>> Workspace::Create(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return Status::InvalidArgument("no test directory given");
  std::unique_ptr<Workspace> ws(new Workspace());
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const std::string& dir = dirs[i];
    Dir d;
    d.name = fmt::format("walfs-aim.{}.{}", getpid(), i);
    d.path = fmt::format("{}/{}", dir, d.name);
    d.parent_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d.parent_fd < 0) return Status::FromErrno(errno, dir);
    if (mkdirat(d.parent_fd, d.name.c_str(), 0777) != 0) {
      const int err = errno;
      close(d.parent_fd);
      return Status::FromErrno(err, fmt::format("{}: cannot create {}", dir, d.name));
    }
    // From here the destructor removes it.
    ws->dirs_.push_back(std::move(d));
    Dir& added = ws->dirs_.back();
    added.work_fd = openat(added.parent_fd, added.name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (added.work_fd < 0) return Status::FromErrno(errno, added.path);
    if (Status s = CreateFakeh(added.work_fd); !s.ok()) return WithPath(s, added.path);
    Result<mount::FsSyncer> syncer = mount::FsSyncer::Open(added.work_fd);
    if (!syncer.ok()) return WithPath(syncer.status(), added.path);
    added.syncer = std::make_unique<mount::FsSyncer>(std::move(*syncer));
  }
  return ws;
}

std::string Workspace::SyncMethods() const {
  std::string out;
  for (const Dir& d : dirs_) {
    const std::string m = d.syncer->walfs() ? fmt::format("{}/.walfs/sync", d.syncer->mountpoint()) : "syncfs";
    if (out.find(m) == std::string::npos) out += (out.empty() ? "" : ", ") + m;
  }
  return out;
}

Workspace::~Workspace() { (void)Remove(); }

Status Workspace::PrepareLevel(std::int64_t blocks) {
  for (const Dir& d : dirs_) {
    if (Status s = CreateCommonFile(d.work_fd, blocks); !s.ok()) return WithPath(s, d.path);
    if (Status s = d.syncer->Sync(); !s.ok()) return WithPath(s, d.path);
  }
  return Status::Ok();
}

Status Workspace::Remove() {
  Status first;
  for (Dir& d : dirs_) {
    if (d.work_fd >= 0) close(d.work_fd);
    d.work_fd = -1;
    if (d.parent_fd < 0) continue;
    if (Status s = RemoveTree(d.parent_fd, d.name); !s.ok() && first.ok()) first = WithPath(s, d.path);
    close(d.parent_fd);
    d.parent_fd = -1;
  }
  return first;
}

}  // namespace walfs::bench::aim
