// The mounted part of a hostile round: read everything, then change a few
// things, recording every error (hostile_round.h).
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "tests/hostile/hostile_round.h"

namespace walfs::hostile {

namespace {

constexpr int kMaxDepth = 24;
constexpr std::uint64_t kMaxEntries = 5000;
constexpr std::uint64_t kMaxReadBytes = 4ull << 20;
constexpr std::size_t kReadChunk = 64 * 1024;

class Walker {
 public:
  Walker(fs::Filesystem* fs, RoundResult* r) : fs_(fs), r_(r) {}

  // Counts one operation; false if it failed.  `contradiction` is an errno
  // that here means the image contradicts itself (ENODATA for a name
  // listxattr just listed, ENOENT for one readdir just returned): damage,
  // though the same errno elsewhere is an ordinary answer.
  bool Note(const Status& s, std::string_view what, int contradiction = 0) {
    ++r_->ops;
    if (s.ok()) return true;
    if (s.message().empty()) r_->violations.push_back(fmt::format("{}: an error without a message ({})", what, s.ToString()));
    // What a damaged image may cause: EUCLEAN (corruption) and EIO (I/O,
    // shutdown).  ENXIO from lseek, ENODATA, ENOTEMPTY and the like
    // (kInternal and the other codes) are answers, not damage.
    const bool damage = s.IsCorruption() || s.IsShutdown() || s.ToErrno() == EIO || s.ToErrno() == EUCLEAN ||
                        (contradiction != 0 && s.ToErrno() == contradiction);
    if (damage) {
      if (r_->damage_errors++ == 0 && r_->first_error.empty()) r_->first_error = fmt::format("{}: {}", what, s.ToString());
    } else {
      ++r_->other_errors;
    }
    return false;
  }
  template <typename T>
  bool Note(const Result<T>& res, std::string_view what, int contradiction = 0) {
    return Note(res.ok() ? Status::Ok() : res.status(), what, contradiction);
  }

  void Walk() { Dir(fs_->root(), "", 0); }

  void Change();

 private:
  void Dir(std::uint64_t ino, const std::string& path, int depth) {
    if (depth > kMaxDepth || !seen_.insert(ino).second) return;
    std::vector<std::pair<std::string, std::uint64_t>> entries;
    std::uint64_t offset = 0;
    for (;;) {
      std::size_t got = 0;
      std::uint64_t next = offset;
      Status s = fs_->ReadDir(ino, offset, [&](std::string_view name, std::uint64_t child, std::uint32_t, std::uint64_t n) {
        if (entries.size() >= kMaxEntries) return false;
        if (name != "." && name != "..") entries.emplace_back(std::string(name), child);
        next = n;
        return ++got < 128;
      });
      if (!Note(s, fmt::format("readdir {}/", path)) || got == 0 || next <= offset || entries.size() >= kMaxEntries) break;
      offset = next;
    }
    for (const auto& [name, child] : entries) {
      if (entries_++ >= kMaxEntries) return;
      const std::string p = path + "/" + name;
      Result<struct stat> st = fs_->Lookup(ino, name);
      if (!Note(st, "lookup " + p, ENOENT)) continue;
      const std::uint64_t cino = st->st_ino;
      Visit(cino, *st, p, depth);
      fs_->Forget(cino, 1);
    }
  }

  void Visit(std::uint64_t ino, const struct stat& st, const std::string& path, int depth) {
    Note(fs_->GetAttr(ino), "getattr " + path);
    Result<std::vector<std::string>> names = fs_->ListXattr(ino);
    if (Note(names, "listxattr " + path))
      for (const std::string& n : *names) Note(fs_->GetXattr(ino, n), fmt::format("getxattr {} {}", path, n), ENODATA);
    if (S_ISDIR(st.st_mode)) {
      Dir(ino, path, depth + 1);
    } else if (S_ISLNK(st.st_mode)) {
      Note(fs_->Readlink(ino), "readlink " + path);
    } else if (S_ISREG(st.st_mode) && seen_.insert(ino).second) {
      std::vector<char> buf(kReadChunk);
      for (std::uint64_t off = 0; off < static_cast<std::uint64_t>(st.st_size) && read_bytes_ < kMaxReadBytes;
           off += kReadChunk) {
        Result<std::size_t> n = fs_->Read(ino, off, buf.size(), buf.data());
        if (!Note(n, "read " + path) || *n == 0) break;
        read_bytes_ += *n;
      }
      Note(fs_->Lseek(ino, 0, SEEK_DATA), "lseek " + path);
    }
  }

  fs::Filesystem* const fs_;
  RoundResult* const r_;
  std::set<std::uint64_t> seen_;
  std::uint64_t entries_ = 0;
  std::uint64_t read_bytes_ = 0;
};

void Walker::Change() {
  const fs::Caller me{};
  const std::uint64_t root = fs_->root();
  const std::string data(3000, 'h');
  // A new file, written, synced, renamed into a new directory.
  Result<struct stat> f = fs_->Mknod(me, root, "hostile.new", S_IFREG | 0644, 0);
  if (Note(f, "create hostile.new")) {
    Note(fs_->Write(f->st_ino, 0, data.data(), data.size()), "write hostile.new");
    Note(fs_->Write(f->st_ino, 1 << 20, data.data(), data.size()), "write hostile.new far");
    Note(fs_->Fsync(f->st_ino, false), "fsync hostile.new");
    fs_->Forget(f->st_ino, 1);
  }
  Result<struct stat> d = fs_->Mkdir(me, root, "hostile.dir", 0755);
  if (Note(d, "mkdir hostile.dir")) {
    Note(fs_->Rename(root, "hostile.new", d->st_ino, "moved", 0), "rename hostile.new");
    fs_->Forget(d->st_ino, 1);
  }
  // Changes inside the structures the mutator damages.
  auto with = [&](std::uint64_t parent, const char* name, auto fn) {
    Result<struct stat> st = fs_->Lookup(parent, name);
    if (!Note(st, fmt::format("lookup {}", name))) return;
    fn(*st);
    fs_->Forget(st->st_ino, 1);
  };
  with(root, "big", [&](const struct stat& big) {
    for (int i = 0; i < 24; ++i) {
      Result<struct stat> c = fs_->Mknod(me, big.st_ino, fmt::format("hostile-added-{}", i), S_IFREG | 0644, 0);
      if (Note(c, "create in big")) fs_->Forget(c->st_ino, 1);
    }
    for (int i = 0; i < 6; ++i)
      Note(fs_->Unlink(big.st_ino, fmt::format("entry-with-a-longish-name-{:04}", 201 + i)), "unlink in big");
    Note(fs_->Rename(big.st_ino, "entry-with-a-longish-name-0300", root, "moved-out", 0), "rename out of big");
    Note(fs_->Rmdir(big.st_ino, "entry-with-a-longish-name-0310"), "rmdir in big");
  });
  with(root, "extents", [&](const struct stat& st) {
    Note(fs_->Write(st.st_ino, 3 * 1024, data.data(), data.size()), "write extents");
    struct stat attr {};
    attr.st_size = st.st_size / 2;
    Note(fs_->SetAttr(st.st_ino, attr, fs::kSetSize), "truncate extents");
    Note(fs_->Fallocate(st.st_ino, 0, 1 << 20, 64 * 1024), "fallocate extents");
  });
  with(root, "xattrs", [&](const struct stat& st) {
    Note(fs_->SetXattr(st.st_ino, "user.hostile", std::string(2000, 'x'), 0), "setxattr");
    Note(fs_->RemoveXattr(st.st_ino, "user.small3"), "removexattr");
    Note(fs_->SetXattr(st.st_ino, "user.large", "now small", 0), "setxattr replace large");
  });
  Note(fs_->Unlink(root, "sparse"), "unlink sparse");
  Note(fs_->Rename(root, "small", root, "small.renamed", 0), "rename small");
  Note(fs_->StatFs(), "statfs");
}

}  // namespace

void WalkMounted(fs::Filesystem* fs, RoundResult* r) { Walker(fs, r).Walk(); }

void ExerciseMounted(fs::Filesystem* fs, RoundResult* r) {
  Walker w(fs, r);
  w.Walk();
  w.Change();
}

}  // namespace walfs::hostile
