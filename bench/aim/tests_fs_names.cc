// The namespace tests of tests_fs.h: creat_clo and link_test (re-aim-7
// src/creat_clo.c) and disk_src (src/disk_src.c).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "bench/aim/fakeh.h"
#include "bench/aim/fd.h"
#include "bench/aim/scratch_file.h"
#include "bench/aim/tests_fs.h"

namespace walfs::bench::aim {
namespace {

constexpr int kCreatLoop = 1000;  // creat_clo's n
constexpr int kLinkMax = 8;       // THE_LINK_MAX: POSIX's smallest LINK_MAX
constexpr int kLinkLoop = 9;      // LINK_LOOP
constexpr int kScramblePasses = 5;  // disk_src's MSCR

// link_test's extra names; unlinks whatever is still linked if the test
// fails part way.  Dismiss() once the recipe has removed them itself.
class LinkNames {
 public:
  LinkNames(int dir_fd, std::vector<std::string> names) : dir_fd_(dir_fd), names_(std::move(names)) {}
  LinkNames(const LinkNames&) = delete;
  LinkNames& operator=(const LinkNames&) = delete;
  ~LinkNames() {
    for (const std::string& n : names_) ::unlinkat(dir_fd_, n.c_str(), 0);
  }
  const std::string& operator[](std::size_t i) const { return names_[i]; }
  void Dismiss() { names_.clear(); }

 private:
  int dir_fd_;
  std::vector<std::string> names_;
};

// disk_src's scramble(): kScramblePasses passes of swapping each slot with a
// random one, over all 75 slots (empty ones included).
void Scramble(std::vector<const std::string*>* slots, std::mt19937* rng) {
  for (int pass = 0; pass < kScramblePasses; ++pass)
    for (std::size_t i = 0; i < slots->size(); ++i) std::swap((*slots)[i], (*slots)[(*rng)() % slots->size()]);
}

std::vector<const std::string*> Slots(const std::vector<std::string>& names) {
  std::vector<const std::string*> slots(kDirlistSlots, nullptr);
  for (std::size_t i = 0; i < names.size(); ++i) slots[i] = &names[i];
  return slots;
}

}  // namespace

// creat()s and closes one name 1000 times (the first creates it, the rest
// truncate it), then unlinks it.
Status CreatClo(FsEnv& env) {
  ScratchFile f(env.dir_fd, env.namer->Next("tmpb."));
  for (int i = 0; i < kCreatLoop; ++i) {
    WALFS_RETURN_IF_ERROR(f.Creat());
    WALFS_RETURN_IF_ERROR(f.Close());
  }
  return f.Unlink();
}

// Creates a file and 7 more links to it, then 9 times round-robin unlinks
// and relinks each of the 7, then unlinks all 8 names and only then closes
// the file: the last unlink frees the inode while it is open.
Status LinkTest(FsEnv& env) {
  std::vector<std::string> names;
  for (int i = 0; i < kLinkMax; ++i) names.push_back(env.namer->Next("link"));
  ScratchFile first(env.dir_fd, names[0]);
  WALFS_RETURN_IF_ERROR(first.Creat());
  LinkNames links(env.dir_fd, std::vector<std::string>(names.begin() + 1, names.end()));
  auto link = [&](int i) -> Status {
    if (::linkat(env.dir_fd, names[0].c_str(), env.dir_fd, names[i].c_str(), 0) != 0)
      return Status::FromErrno(errno, "link " + names[0] + " to " + names[i]);
    return Status::Ok();
  };
  auto unlink = [&](int i) -> Status {
    if (::unlinkat(env.dir_fd, names[i].c_str(), 0) != 0) return Status::FromErrno(errno, "unlink " + names[i]);
    return Status::Ok();
  };
  for (int i = 1; i < kLinkMax; ++i) WALFS_RETURN_IF_ERROR(link(i));
  for (int n = 0; n < kLinkLoop; ++n) {
    for (int i = 1; i < kLinkMax; ++i) {
      WALFS_RETURN_IF_ERROR(unlink(i));
      WALFS_RETURN_IF_ERROR(link(i));
    }
  }
  WALFS_RETURN_IF_ERROR(first.Unlink());
  for (int i = 1; i < kLinkMax; ++i) WALFS_RETURN_IF_ERROR(unlink(i));
  links.Dismiss();
  return first.Close();
}

// Directory searches in fakeh/: reads dirlist, scrambles its stat list and
// its creat list, then walks the 75 slots: stat() the stat name, creat(),
// close() and unlink() the creat name.  re-aim chdir()s into fakeh and back;
// here the paths resolve from a descriptor of fakeh opened for the job.
Status DiskSrc(FsEnv& env) {
  Fd fakeh(::openat(env.dir_fd, kFakehDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fakeh.ok()) return Status::FromErrno(errno, "open fakeh");
  std::string text;
  {
    Fd list(::openat(fakeh.get(), kDirlistName, O_RDONLY | O_CLOEXEC));
    if (!list.ok()) return Status::FromErrno(errno, "open fakeh/dirlist");
    WALFS_RETURN_IF_ERROR(ReadToEnd(list.get(), &text, "read fakeh/dirlist"));
  }
  WALFS_ASSIGN_OR_RETURN(const Dirlist dirlist, ParseDirlist(text, env.pid));
  std::vector<const std::string*> stats = Slots(dirlist.stat_paths);
  std::vector<const std::string*> creats = Slots(dirlist.creat_paths);
  Scramble(&stats, env.rng);
  Scramble(&creats, env.rng);
  for (int i = 0; i < kDirlistSlots; ++i) {
    if (const std::string* path = stats[i]) {
      struct stat st;
      if (::fstatat(fakeh.get(), path->c_str(), &st, 0) != 0)
        return Status::FromErrno(errno, "stat fakeh/" + *path);
    }
    if (const std::string* path = creats[i]) {
      ScratchFile f(fakeh.get(), *path);
      WALFS_RETURN_IF_ERROR(f.Creat());
      WALFS_RETURN_IF_ERROR(f.Close());
      WALFS_RETURN_IF_ERROR(f.Unlink());
    }
  }
  return Status::Ok();
}

}  // namespace walfs::bench::aim
