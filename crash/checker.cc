#include "crash/checker.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "crash/content.h"
#include "fs/fsck.h"

namespace walfs::crash {

std::vector<std::string> Checker::Check(MemoryDevice* dev, std::size_t limit, std::size_t moment) {
  limit_ = limit;
  moment_ = moment;
  errors_.clear();
  std::unique_ptr<MemoryDevice> copy = dev->Clone();
  auto replayed = fs::CheckImage(copy.get(), {.replay = true});
  if (!replayed.ok()) Error("fsck with replay: " + replayed.status().ToString());
  else if (!replayed->problems.empty()) Error("fsck with replay:" + Problems(*replayed));
  auto first = MountAndWalk(dev, /*unmount=*/false);
  if (!first.ok()) {
    Error("mount: " + first.status().ToString());
    return errors_;
  }
  CheckTree(*first);
  if (auto why = names_.Check(first->Names(), limit_, moment_)) Error(*why);
  auto again = MountAndWalk(dev, /*unmount=*/true);
  if (!again.ok()) Error("mount after a crash right after recovery: " + again.status().ToString());
  else if (!(*again == *first)) Error("a crash right after recovery changed the tree");
  auto clean = fs::CheckImage(dev, {.replay = false});
  if (!clean.ok()) Error("fsck after a clean unmount: " + clean.status().ToString());
  else if (!clean->problems.empty()) Error("fsck after a clean unmount:" + Problems(*clean));
  auto third = MountAndWalk(dev, /*unmount=*/true);
  if (!third.ok()) Error("mount after a clean unmount: " + third.status().ToString());
  else if (!(*third == *first)) Error("unmounting and mounting again changed the tree");
  return errors_;
}

// The first byte of `got` that is neither `base`'s byte there (if given;
// zero past its end), nor zero (if allowed), nor written to `f` by a write
// that began in [from, limit).
std::optional<std::uint64_t> Checker::Unexplained(const File& f, const std::string& got, const std::string* base,
                                                  bool zero_ok, std::size_t from) const {
  std::vector<bool> ok(got.size());
  for (std::size_t o = 0; o < got.size(); ++o)
    ok[o] = (zero_ok && got[o] == 0) || (base && (o < base->size() ? (*base)[o] : '\0') == got[o]);
  for (const WriteRec& w : f.writes) {
    if (w.start < from || !Before(w.start)) continue;
    const Content c(h_.seed, f.fid, w.gen, h_.low_lsn);
    for (std::uint64_t o = w.off; o < std::min<std::uint64_t>(w.off + w.len, got.size()); ++o)
      if (!ok[o] && got[o] == c.At(o)) ok[o] = true;
  }
  for (std::size_t o = 0; o < got.size(); ++o)
    if (!ok[o]) return o;
  return std::nullopt;
}

std::string Checker::Describe(const File& f, const std::string& got, std::uint64_t o) const {
  std::string gens;
  for (const WriteRec& w : f.writes)
    if (o >= w.off && o < w.off + w.len) gens += fmt::format(" {}{}", w.gen, Before(w.start) ? "" : "(later)");
  return fmt::format("f{} byte {} is {:#04x}; writes covering it:{}", f.fid, o, static_cast<std::uint8_t>(got[o]),
                     gens.empty() ? " none" : gens);
}

// Stale data: every inode in the tree is something the workload made, and
// holds only its bytes.
std::optional<std::string> Checker::Stale(const File& f, const Node& n) const {
  if (f.symlink) {
    if (n.data != f.target) return fmt::format("symlink f{} has a wrong target", f.fid);
    return std::nullopt;
  }
  bool size_ok = n.data.empty();
  for (const Change& c : f.changes) size_ok |= Before(c.start) && c.size == n.data.size();
  if (!size_ok) return fmt::format("f{} has size {}, a size it never had", f.fid, n.data.size());
  if (auto o = Unexplained(f, n.data, nullptr, true, 0)) return "stale data: " + Describe(f, n.data, *o);
  for (const auto& [k, v] : n.xattrs) {
    auto it = f.xattr_values.find(k);
    if (it == f.xattr_values.end() || !it->second.count(v))
      return fmt::format("f{} xattr {} has a value never set", f.fid, k);
  }
  return std::nullopt;
}

void Checker::CheckTree(const Tree& t) {
  std::map<std::uint64_t, std::vector<const File*>> by_ino;
  for (const File& f : h_.files)
    if (Before(f.created)) by_ino[f.ino].push_back(&f);
  for (const auto& [ino, n] : t.inodes) {
    if (S_ISDIR(n.mode)) {
      const std::uint64_t dir_ino = ino;  // clang before 16 cannot capture a structured binding
      const bool known = std::any_of(h_.dirs.begin(), h_.dirs.end(),
                                     [&](const Dir& d) { return d.ino == dir_ino && Before(d.created); });
      if (!known) Error(fmt::format("directory inode {} was never made", ino));
      continue;
    }
    std::optional<std::string> why = fmt::format("inode {} (mode {:o}) was never made", ino, n.mode);
    for (const File* f : by_ino[ino])
      if (f->symlink == S_ISLNK(n.mode) && (why = Stale(*f, n)) == std::nullopt) break;
    if (why) Error(*why);
  }
  std::map<std::uint64_t, int> made;  // files and directories given each inode number
  for (const File& f : h_.files) made[f.ino] += Before(f.created);
  for (const Dir& d : h_.dirs) made[d.ino] += Before(d.created);
  for (const File& f : h_.files)
    if (Before(f.created)) CheckSynced(f, t, made[f.ino] > 1);
}

// A file fsynced by the crash moment: its fsynced state, or a later one.
void Checker::CheckSynced(const File& f, const Tree& t, bool ino_reused) {
  const Synced* s = nullptr;
  for (const Synced& x : f.fsyncs)
    if (x.end <= moment_) s = &x;
  if (!s) return;
  bool changed = false, zeroes = false, removes = false;
  std::set<std::uint64_t> sizes{s->data.size()};
  for (const Change& c : f.changes) {
    if (c.start < s->end || !Before(c.start)) continue;
    changed = true;
    zeroes |= c.zeroes;
    removes |= c.removes;
    sizes.insert(c.size);
  }
  auto names = t.names.find(f.ino);
  auto node = t.inodes.find(f.ino);
  const std::string what =
      fmt::format("f{} (ino {}, fsynced at op {}, size {})", f.fid, f.ino, s->end, s->data.size());
  if (!changed) {
    if (s->names.empty()) {  // fsynced unlinked (an open file): it must stay gone
      if (names != t.names.end()) Error(what + ": named again, though its unlink was fsynced");
      return;
    }
    if (names == t.names.end() || names->second != s->names) {
      Error(what + ": not under its fsynced names");
      return;
    }
    const Node& n = node->second;
    if (n.data.size() != s->data.size())
      Error(fmt::format("{}: size {}", what, n.data.size()));
    else if (n.data != s->data)
      Error(fmt::format("{}: content differs: {}", what,
                        Describe(f, n.data, *Unexplained(f, n.data, &s->data, false, SIZE_MAX))));
    if (n.xattrs != s->xattrs) Error(what + ": xattrs differ");
    return;
  }
  if (ino_reused) return;  // the stale-data check covers whoever holds it
  if (names == t.names.end()) {
    // (Fsynced while unlinked: it was gone already.)
    if (!removes && !s->names.empty()) Error(what + ": gone, though nothing after the fsync removed it");
    return;
  }
  for (const Name& nm : names->second)
    if (!f.all_names.count(nm)) Error(fmt::format("{}: under {}/{}, a name it never had", what, nm.first, nm.second));
  const Node& n = node->second;
  if (!sizes.count(n.data.size())) Error(fmt::format("{}: size {}, older than its fsync", what, n.data.size()));
  if (auto o = Unexplained(f, n.data, &s->data, zeroes, s->end))
    Error(fmt::format("{}: a byte older than the fsync: {}", what, Describe(f, n.data, *o)));
}

}  // namespace walfs::crash
