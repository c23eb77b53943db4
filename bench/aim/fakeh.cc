#include "bench/aim/fakeh.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "bench/aim/fd.h"

namespace walfs::bench::aim {
namespace {

// One directory of fake names.  `missing` has bit k set when fake<k> is
// absent; `creat` has bit k set for a "c .../notexist<k>" line.  The layout
// is re-aim-7's fakeh/dirlist.
struct LeafDir {
  std::string_view path;
  std::uint64_t missing;
  unsigned creat;
};

constexpr std::uint64_t Bit(int k) { return std::uint64_t{1} << k; }
constexpr unsigned kAllCreat = 0xfe;  // notexist1..7

constexpr LeafDir kLeaves[] = {
    {"bin", Bit(28) | Bit(34), kAllCreat},
    {"usr/spool/uucp/XTMP", Bit(24), kAllCreat & ~(1u << 4)},
    {"usr/ja/sun.rex628/src/man/man1", Bit(8), kAllCreat & ~(1u << 2)},
    {"usr/steiny/bin/src/bied", Bit(14) | Bit(34), kAllCreat & ~(1u << 6)},
    {"usr/tony", Bit(34), kAllCreat & ~(1u << 2) & ~(1u << 5)},
    {"usr/dist/Tuner/sccs/source", 0, kAllCreat & ~(1u << 4)},
    {"usr/ja.apr17/port/tools/compress", 0, kAllCreat},
    {".", 0, 0},
};
constexpr int kFakeNames = 40;
// The fake names disk_src stats, where present in a directory.
constexpr std::uint64_t kStatSet =
    Bit(4) | Bit(8) | Bit(14) | Bit(18) | Bit(24) | Bit(28) | Bit(34) | Bit(38);
constexpr std::string_view kExtraName = "usr/spool/uucp/TM.";
constexpr std::string_view kFirstName = "fake00";  // the inode's first name

std::string LeafPath(std::string_view leaf, std::string_view name) {
  return leaf == "." ? std::string(name) : fmt::format("{}/{}", leaf, name);
}

// "a/b/c" -> {"a", "a/b", "a/b/c"}
std::vector<std::string> Prefixes(std::string_view path) {
  std::vector<std::string> out;
  if (path == ".") return out;
  for (std::size_t pos = 0;;) {
    pos = path.find('/', pos);
    out.emplace_back(path.substr(0, pos));
    if (pos == std::string_view::npos) return out;
    ++pos;
  }
}

}  // namespace

FakehShape ExpectedFakehShape() {
  FakehShape s;
  for (const LeafDir& leaf : kLeaves) {
    for (int k = 0; k < kFakeNames; ++k) {
      if (leaf.missing & Bit(k)) continue;
      ++s.linked_names;
      if (kStatSet & Bit(k)) ++s.stat_paths;
    }
    s.creat_paths += __builtin_popcount(leaf.creat);
    s.max_depth = std::max(s.max_depth, static_cast<int>(Prefixes(leaf.path).size()));
  }
  ++s.linked_names;  // TM.
  return s;
}

std::string FakehDirlist() {
  std::string out = ".\n./fake00\n./dirlist\n";
  std::set<std::string> listed;
  for (const LeafDir& leaf : kLeaves) {
    for (const std::string& dir : Prefixes(leaf.path)) {
      if (listed.insert(dir).second) out += fmt::format("./{}\n", dir);
      if (dir == "usr/spool/uucp") out += fmt::format("./{}\n", kExtraName);
    }
    const std::string prefix = leaf.path == "." ? "." : fmt::format("./{}", leaf.path);
    for (int k = 0; k < kFakeNames; ++k) {
      if (leaf.missing & Bit(k)) continue;
      if (leaf.path == "." && k == 0) continue;  // listed at the top
      out += fmt::format("{}{}/fake{:02}\n", (kStatSet & Bit(k)) ? "s " : "", prefix, k);
      if (k == 0) {
        for (int c = 1; c <= 7; ++c)
          if (leaf.creat & (1u << c)) out += fmt::format("c {}/notexist{}\n", prefix, c);
      }
    }
  }
  return out;
}

Status CreateFakeh(int parent_fd) {
  if (mkdirat(parent_fd, kFakehDir, 0777) != 0) return Status::FromErrno(errno, "mkdir fakeh");
  Fd root(openat(parent_fd, kFakehDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) return Status::FromErrno(errno, "open fakeh");
  for (const LeafDir& leaf : kLeaves) {
    for (const std::string& dir : Prefixes(leaf.path)) {
      if (mkdirat(root.get(), dir.c_str(), 0777) != 0 && errno != EEXIST)
        return Status::FromErrno(errno, "mkdir fakeh/" + dir);
    }
  }
  {
    Fd first(openat(root.get(), kFirstName.data(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!first.ok()) return Status::FromErrno(errno, "create fakeh/fake00");
  }
  auto link_name = [&](const std::string& name) -> Status {
    if (linkat(root.get(), kFirstName.data(), root.get(), name.c_str(), 0) != 0)
      return Status::FromErrno(errno, "link fakeh/" + name);
    return Status::Ok();
  };
  for (const LeafDir& leaf : kLeaves) {
    for (int k = 0; k < kFakeNames; ++k) {
      if (leaf.missing & Bit(k)) continue;
      const std::string name = LeafPath(leaf.path, fmt::format("fake{:02}", k));
      if (name == kFirstName) continue;
      WALFS_RETURN_IF_ERROR(link_name(name));
    }
  }
  WALFS_RETURN_IF_ERROR(link_name(std::string(kExtraName)));

  const std::string text = FakehDirlist();
  Fd list(openat(root.get(), kDirlistName, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!list.ok()) return Status::FromErrno(errno, "create fakeh/dirlist");
  return WriteAll(list.get(), text.data(), text.size(), "write fakeh/dirlist");
}

Result<Dirlist> ParseDirlist(std::string_view text, int pid) {
  Dirlist d;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.size() < 3 || (line[0] != 's' && line[0] != 'c')) continue;
    const std::string_view path = line.substr(2);
    if (line[0] == 's') {
      d.stat_paths.emplace_back(path);
    } else {
      d.creat_paths.push_back(fmt::format("{}{:05}", path, pid % 100000));
    }
  }
  if (d.stat_paths.size() > kDirlistSlots || d.creat_paths.size() > kDirlistSlots)
    return Status::Corruption("fakeh/dirlist lists more than 75 names of one kind");
  return d;
}

}  // namespace walfs::bench::aim
