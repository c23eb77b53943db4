// fakeh: the directory tree disk_src searches (re-aim-7 unpacks it from
// data/fakeh.tgz into every disk directory once per run).
//
// Eight directories up to six levels deep ("usr/ja/sun.rex628/src/man/man1")
// hold names fake00..fake39 -- a few missing per directory, as in the
// original -- and usr/spool/uucp holds "TM.".  Every one of those 314 names
// is a hard link to one empty inode.  fakeh/dirlist lists the tree; its
// "s <path>" lines (57) are the names disk_src stat()s and its "c <path>"
// lines (43) are names that do not exist, which disk_src creat()s, closes and
// unlinks, each with the caller's pid appended so users do not collide.
//
//   WALFS_RETURN_IF_ERROR(CreateFakeh(workdir_fd));      // once per run
//   Result<Dirlist> d = ParseDirlist(text, getpid());    // per disk_src job
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace walfs::bench::aim {

inline constexpr char kFakehDir[] = "fakeh";
inline constexpr char kDirlistName[] = "dirlist";

// What CreateFakeh builds, for tests and docs.
struct FakehShape {
  int linked_names = 0;  // names of the one shared inode (= its link count)
  int stat_paths = 0;
  int creat_paths = 0;
  int max_depth = 0;     // directory levels below fakeh/
};
FakehShape ExpectedFakehShape();

// The text of fakeh/dirlist.
std::string FakehDirlist();

// Creates <parent_fd>/fakeh with the tree, the shared inode and dirlist.
// Fails (and leaves what it made for the caller's cleanup) if fakeh exists.
Status CreateFakeh(int parent_fd);

struct Dirlist {
  std::vector<std::string> stat_paths;   // relative to fakeh/, "./bin/fake04"
  std::vector<std::string> creat_paths;  // "./bin/notexist100123" for pid 100123
};

// Parses dirlist text as disk_src's get_list() does: lines starting with 's'
// or 'c' count, everything else is ignored; creat names get "%05d" of
// pid % 100000 appended.  Corruption if a list exceeds 75 entries.
Result<Dirlist> ParseDirlist(std::string_view text, int pid);

// disk_src's fixed list length (MFILES): both lists are scrambled as 75
// slots, empty slots included.
inline constexpr int kDirlistSlots = 75;

}  // namespace walfs::bench::aim
