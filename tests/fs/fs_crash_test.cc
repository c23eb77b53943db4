// Crash specs of the mounted filesystem over the write-recording device.  A
// seeded random POSIX workload -- creates, mkdir/rmdir, symlinks, sparse,
// unaligned, appending and overwriting writes, truncates up and down, renames
// within and across directories and over existing files, links, unlinks,
// xattrs, fsync/fdatasync, and forgets (the kernel dropping an inode) -- runs
// on a fresh 16 MiB image with the smallest log, then the filesystem is
// destroyed without unmounting (the log halts).  For every prefix of the
// write stream that ends at a flush (whole, and with its last write torn) and
// for sampled reorderings of the writes in flight, the crash image must:
//  - mount (recovery), and pass fsck with replay and, after a clean unmount,
//    without;
//  - hold every file fsynced before the crash under its fsynced names with
//    exactly its fsynced size, bytes and xattrs -- or, if it changed after
//    that fsync, that state or a later one, never an older byte;
//  - expose no stale data: every byte of every file is zero or a byte this
//    workload wrote to that file at that offset (content is a function of
//    (seed, file, generation, offset), never zero);
//  - recover idempotently: crashing right after recovery, and unmounting
//    cleanly, then mounting again both show the same tree.
// FsCrashRegression below keeps the two bugs this test found, reduced.
// WALFS_FS_CRASH_SEEDS=N runs seeds 1..N (default 3).
#include <linux/fs.h>
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "fs/dir.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"

namespace walfs::fs {
namespace {

constexpr std::uint64_t kImageBytes = 16ull << 20;  // every crash state copies it: small keeps the run short
constexpr std::uint64_t kMaxFileSize = 192 * 1024;
constexpr Caller kRoot{};

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The bytes write `gen` puts in file `fid`: never zero, so a zero is a hole.
// With `low_lsn`, bytes 12..15 of every 4 KiB are zero: the high half of
// the LSN a metadata block header keeps at byte 8 (block_header.h), so that
// a freed data block reads as cycle 0 (see DataBlockReusedAsMetadataIsReplayed).
class Content {
 public:
  Content(std::uint64_t seed, int fid, std::uint32_t gen, bool low_lsn)
      : key_(Mix(Mix(seed ^ Mix(fid)) ^ gen)), low_lsn_(low_lsn) {}
  char At(std::uint64_t off) const {
    if (low_lsn_ && (off & 4095) >= 12 && (off & 4095) < 16) return '\0';
    const auto b = static_cast<std::uint8_t>(Mix(key_ ^ (off >> 3)) >> ((off & 7) * 8));
    return static_cast<char>(b ? b : 0xa5);
  }
  std::string Bytes(std::uint64_t off, std::size_t len) const {
    std::string s(len, '\0');
    for (std::size_t i = 0; i < len; ++i) s[i] = At(off + i);
    return s;
  }

 private:
  std::uint64_t key_;
  bool low_lsn_;
};

using Name = std::pair<std::uint64_t, std::string>;  // (parent inode, name)
using Xattrs = std::map<std::string, std::string>;

struct WriteRec {
  std::uint32_t gen;
  std::uint64_t off, len;
  std::size_t start;  // ops recorded when the write began
};
// A change to a file after which it may look different on disk.
struct Change {
  std::size_t start;
  std::uint64_t size;     // its size afterwards
  bool zeroes = false;    // a truncate: bytes may read as zeros
  bool removes = false;   // lost a name (unlink, renamed over) or was freed
};
struct Synced {
  std::size_t end;  // ops recorded when fsync returned
  std::string data;
  Xattrs xattrs;
  std::set<Name> names;
};
struct File {
  int fid = 0;
  std::uint64_t ino = 0;
  std::size_t created = 0;
  bool symlink = false;
  std::string target;  // a symlink's
  std::string data;
  Xattrs xattrs;
  std::set<Name> names;
  std::set<Name> all_names;  // every name it ever had
  std::vector<WriteRec> writes;
  std::vector<Change> changes;
  std::vector<Synced> fsyncs;
  std::map<std::string, std::set<std::string>> xattr_values;  // every value ever set
  std::uint64_t lookups = 0;
  bool dead = false;  // freed (no names, forgotten)
};
struct Dir {
  std::uint64_t ino = 0, parent = 0;
  std::size_t created = 0;
  std::uint64_t lookups = 0;
  bool live = true;
};
struct Entry {
  bool dir;
  int id;  // index into dirs or files
};
struct OpRec {
  std::size_t start, end;
  std::string text;
};

// ---------------------------------------------------------------- workload

struct WorkloadOptions {
  // false: the kernel keeps every linked inode (forgets only unlinked ones);
  // see FsyncAfterTheInodeWasForgottenForcesItsChanges.
  bool forget_linked = true;
  bool low_lsn = false;  // see Content
};

class Workload {
 public:
  Workload(std::uint64_t seed, WorkloadOptions options) : seed_(seed), options_(options), rng_(seed) {}

  void Run(int count) {
    disk_ = std::make_unique<MemoryDevice>(kImageBytes);
    auto sb = MakeFilesystem(disk_.get(), {.log_bytes = MinLogBytes(4096), .now_s = 1});
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    auto rec = RecordingDevice::Create(disk_.get());
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    rec_ = std::move(rec).value();
    auto fs = Filesystem::MountDevice(rec_.get(), {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(fs).value();
    dirs_.push_back({.ino = fs_->root(), .parent = fs_->root(), .lookups = 1});
    for (int i = 0; i < count && !::testing::Test::HasFailure(); ++i) Step();
    fs_.reset();  // the crash
  }

  // --- the recorded run, for the checker
  std::uint64_t seed_;
  WorkloadOptions options_;
  std::unique_ptr<MemoryDevice> disk_;
  std::unique_ptr<RecordingDevice> rec_;
  std::vector<Dir> dirs_;
  std::vector<File> files_;
  std::vector<OpRec> log_;

 private:
  std::uint64_t R(std::uint64_t n) { return n ? rng_() % n : 0; }
  bool P(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::size_t Now() const { return rec_->op_count(); }
  void Log(std::size_t start, std::string text) { log_.push_back({start, Now(), std::move(text)}); }

  std::vector<int> LiveDirs() const {
    std::vector<int> v;
    for (int i = 0; i < static_cast<int>(dirs_.size()); ++i)
      if (dirs_[i].live) v.push_back(i);
    return v;
  }
  std::vector<int> Files(bool regular_only, bool named_only) const {
    std::vector<int> v;
    for (const File& f : files_)
      if (!f.dead && (!regular_only || !f.symlink) && (!named_only || !f.names.empty())) v.push_back(f.fid);
    return v;
  }
  std::vector<Name> EntriesOf(std::uint64_t dir_ino) const {
    std::vector<Name> v;
    for (auto it = ns_.lower_bound({dir_ino, ""}); it != ns_.end() && it->first.first == dir_ino; ++it)
      v.push_back(it->first);
    return v;
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[R(v.size())]; }

  // The kernel holds a lookup on whatever it operates on.
  void Hold(File& f) {
    if (f.lookups > 0 || f.names.empty()) return;
    const Name& n = *f.names.begin();
    auto st = fs_->Lookup(n.first, n.second);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_EQ(st->st_ino, f.ino);
    f.lookups = 1;
  }
  void Changed(File& f, std::size_t start, bool zeroes = false, bool removes = false) {
    f.changes.push_back({start, f.data.size(), zeroes, removes});
  }
  // The kernel drops the inode: an unlinked one is freed.
  void Drop(File& f) {
    const std::size_t start = Now();
    fs_->Forget(f.ino, f.lookups);
    f.lookups = 0;
    if (f.names.empty()) {
      f.dead = true;
      Changed(f, start, false, true);
    }
    Log(start, fmt::format("forget f{} (ino {}){}", f.fid, f.ino, f.dead ? ", freed" : ""));
  }
  void Unnamed(File& f, const Name& n, std::size_t start) {
    f.names.erase(n);
    ns_.erase(n);
    Changed(f, start, false, true);
    if (f.names.empty() && P(0.7)) Drop(f);
  }

  void Step() {
    const bool want_files = Files(false, true).size() < 6;
    const std::uint64_t r = want_files ? 0 : R(100);
    if (r < 10) return Create(false);
    if (r < 12) return Create(true);
    if (r < 15) return MakeDir();
    if (r < 43) return WriteOp();
    if (r < 50) return TruncateOp();
    if (r < 59) return RenameOp();
    if (r < 63) return LinkOp();
    if (r < 69) return UnlinkOp();
    if (r < 70) return RmdirOp();
    if (r < 76) return XattrOp();
    if (r < 92) return FsyncOp();
    return ForgetOp();
  }

  void Create(bool symlink) {
    const Dir d = dirs_[Pick(LiveDirs())];
    File f;
    f.fid = static_cast<int>(files_.size());
    f.symlink = symlink;
    const std::string name = fmt::format("{}{}", symlink ? "s" : "f", f.fid);
    const std::size_t start = Now();
    if (symlink) {
      const std::size_t len = P(0.5) ? 1 + R(kDataForkRoom) : kDataForkRoom + 1 + R(3000);
      f.target = Content(seed_, f.fid, 0, options_.low_lsn).Bytes(0, len);
    }
    auto st = symlink ? fs_->Symlink(kRoot, d.ino, name, f.target)
                      : fs_->Mknod(kRoot, d.ino, name, S_IFREG | 0644, 0);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    f.ino = st->st_ino;
    f.created = start;
    f.lookups = 1;
    f.names = f.all_names = {{d.ino, name}};
    f.changes.push_back({start, symlink ? f.target.size() : 0});
    ns_[{d.ino, name}] = {false, f.fid};
    files_.push_back(std::move(f));
    Log(start, fmt::format("{} {}/{} -> ino {}", symlink ? "symlink" : "create", d.ino, name, st->st_ino));
  }

  void MakeDir() {
    const Dir d = dirs_[Pick(LiveDirs())];
    const std::string name = fmt::format("d{}", dirs_.size());
    const std::size_t start = Now();
    auto st = fs_->Mkdir(kRoot, d.ino, name, 0755);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ns_[{d.ino, name}] = {true, static_cast<int>(dirs_.size())};
    dirs_.push_back({.ino = st->st_ino, .parent = d.ino, .created = start, .lookups = 1});
    Log(start, fmt::format("mkdir {}/{} -> ino {}", d.ino, name, st->st_ino));
  }

  void WriteOp() {
    const std::vector<int> v = Files(true, false);
    if (v.empty()) return;
    File& f = files_[Pick(v)];
    Hold(f);
    if (f.lookups == 0) return;
    const std::uint64_t size = f.data.size();
    std::uint64_t off, len;
    switch (R(4)) {
      case 0: off = size, len = 1 + R(16384); break;                          // append
      case 1: off = R(size + 1), len = 1 + R(12000); break;                   // overwrite
      case 2: off = size + 1 + R(65536), len = 1 + R(9000); break;            // sparse
      default: off = R(kMaxFileSize), len = 1 + R(32768); break;              // anywhere
    }
    off = std::min(off, kMaxFileSize - 1);
    len = std::min(len, kMaxFileSize - off);
    const auto gen = static_cast<std::uint32_t>(f.writes.size() + 1);
    const std::string bytes = Content(seed_, f.fid, gen, options_.low_lsn).Bytes(off, len);
    const std::size_t start = Now();
    auto n = fs_->Write(f.ino, off, bytes.data(), bytes.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, len);
    if (f.data.size() < off + len) f.data.resize(off + len, '\0');
    f.data.replace(off, len, bytes);
    f.writes.push_back({gen, off, len, start});
    Changed(f, start);
    Log(start, fmt::format("write f{} [{}, {}) gen {} -> size {}", f.fid, off, off + len, gen, f.data.size()));
  }

  void TruncateOp() {
    const std::vector<int> v = Files(true, false);
    if (v.empty()) return;
    File& f = files_[Pick(v)];
    Hold(f);
    if (f.lookups == 0) return;
    const std::uint64_t size = f.data.size();
    const std::uint64_t to = P(0.6) ? R(size + 1) : std::min(kMaxFileSize, size + R(65536));
    struct stat attr {};
    attr.st_size = static_cast<off_t>(to);
    const std::size_t start = Now();
    auto st = fs_->SetAttr(f.ino, attr, kSetSize);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    f.data.resize(to, '\0');
    Changed(f, start, /*zeroes=*/true);
    Log(start, fmt::format("truncate f{} {} -> {}", f.fid, size, to));
  }

  bool Below(int dir, std::uint64_t ino) const {  // is `ino` dir or inside it?
    for (std::uint64_t at = ino;;) {
      if (at == dirs_[dir].ino) return true;
      if (at == dirs_[0].ino) return false;
      auto d = std::find_if(dirs_.begin(), dirs_.end(), [&](const Dir& x) { return x.live && x.ino == at; });
      if (d == dirs_.end()) return false;
      at = d->parent;
    }
  }

  void RenameOp() {
    if (ns_.empty()) return;
    auto it = ns_.begin();
    std::advance(it, R(ns_.size()));
    const Name src = it->first;
    const Entry e = it->second;
    const int dd = Pick(LiveDirs());
    if (e.dir && Below(e.id, dirs_[dd].ino)) return;
    Name dst{dirs_[dd].ino, fmt::format("n{}", log_.size())};
    std::optional<int> over;  // a file renamed over
    if (!e.dir && P(0.4)) {
      std::vector<Name> targets;
      for (const Name& n : EntriesOf(dst.first))
        if (!ns_[n].dir && ns_[n].id != e.id) targets.push_back(n);
      if (!targets.empty()) {
        dst = Pick(targets);
        over = ns_[dst].id;
        Hold(files_[*over]);
      }
    }
    const std::size_t start = Now();
    Status s = fs_->Rename(src.first, src.second, dst.first, dst.second, 0);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Log(start, fmt::format("rename {}/{} -> {}/{}{}", src.first, src.second, dst.first, dst.second,
                           over ? fmt::format(" over f{}", *over) : ""));
    ns_.erase(src);
    if (over) Unnamed(files_[*over], dst, start);
    ns_[dst] = e;
    if (e.dir) {
      dirs_[e.id].parent = dst.first;
      return;
    }
    File& f = files_[e.id];
    f.names.erase(src);
    f.names.insert(dst);
    f.all_names.insert(dst);
    Changed(f, start);
  }

  void LinkOp() {
    const std::vector<int> v = Files(false, true);
    if (v.empty()) return;
    File& f = files_[Pick(v)];
    const Name dst{dirs_[Pick(LiveDirs())].ino, fmt::format("l{}", log_.size())};
    const std::size_t start = Now();
    auto st = fs_->Link(f.ino, dst.first, dst.second);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    f.lookups += 1;
    f.names.insert(dst);
    f.all_names.insert(dst);
    ns_[dst] = {false, f.fid};
    Changed(f, start);
    Log(start, fmt::format("link f{} -> {}/{}", f.fid, dst.first, dst.second));
  }

  void UnlinkOp() {
    std::vector<Name> v;
    for (const auto& [n, e] : ns_)
      if (!e.dir) v.push_back(n);
    if (v.empty()) return;
    const Name n = Pick(v);
    File& f = files_[ns_[n].id];
    Hold(f);
    const std::size_t start = Now();
    Status s = fs_->Unlink(n.first, n.second);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Log(start, fmt::format("unlink {}/{} (f{})", n.first, n.second, f.fid));
    Unnamed(f, n, start);
  }

  void RmdirOp() {
    std::vector<int> v;
    for (int d : LiveDirs())
      if (d != 0 && EntriesOf(dirs_[d].ino).empty()) v.push_back(d);
    if (v.empty()) return;
    Dir& d = dirs_[Pick(v)];
    Name n;
    for (const auto& [name, e] : ns_)
      if (e.dir && dirs_[e.id].ino == d.ino) n = name;
    const std::size_t start = Now();
    Status s = fs_->Rmdir(n.first, n.second);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ns_.erase(n);
    d.live = false;
    fs_->Forget(d.ino, d.lookups);
    Log(start, fmt::format("rmdir {}/{} (ino {})", n.first, n.second, d.ino));
  }

  void XattrOp() {
    const std::vector<int> v = Files(true, false);
    if (v.empty()) return;
    File& f = files_[Pick(v)];
    Hold(f);
    if (f.lookups == 0) return;
    const std::string key = fmt::format("user.k{}", R(4));
    const std::size_t start = Now();
    if (f.xattrs.count(key) && P(0.2)) {
      Status s = fs_->RemoveXattr(f.ino, key);
      ASSERT_TRUE(s.ok()) << s.ToString();
      f.xattrs.erase(key);
      Log(start, fmt::format("removexattr f{} {}", f.fid, key));
    } else {
      // Up to one B+tree record with 4 KiB blocks: values spanning several
      // records are not exercised here yet.
      const std::size_t len = P(0.7) ? 1 + R(200) : 200 + R(1100);
      const std::string value = Content(seed_, f.fid, 1000000 + static_cast<std::uint32_t>(log_.size()), false).Bytes(0, len);
      Status s = fs_->SetXattr(f.ino, key, value, 0);
      ASSERT_TRUE(s.ok()) << s.ToString();
      f.xattrs[key] = value;
      f.xattr_values[key].insert(value);
      Log(start, fmt::format("setxattr f{} {} ({} bytes)", f.fid, key, len));
    }
    Changed(f, start);
  }

  void FsyncOp() {
    const std::vector<int> v = Files(true, true);
    if (v.empty()) return;
    File& f = files_[Pick(v)];
    Hold(f);
    const bool datasync = P(0.5);
    const std::size_t start = Now();
    Status s = fs_->Fsync(f.ino, datasync);
    ASSERT_TRUE(s.ok()) << s.ToString();
    f.fsyncs.push_back({Now(), f.data, f.xattrs, f.names});
    Log(start, fmt::format("{} f{} (size {})", datasync ? "fdatasync" : "fsync", f.fid, f.data.size()));
  }

  void ForgetOp() {
    std::vector<int> v;
    for (const File& f : files_)
      if (!f.dead && f.lookups > 0 && (options_.forget_linked || f.names.empty())) v.push_back(f.fid);
    if (!v.empty()) Drop(files_[Pick(v)]);
  }

  std::mt19937_64 rng_;
  std::unique_ptr<Filesystem> fs_;
  std::map<Name, Entry> ns_;
};

// ---------------------------------------------------------------- the recovered tree

struct Node {
  std::uint32_t mode = 0;
  std::uint32_t nlink = 0;
  std::string data;  // file bytes, or a symlink's target
  Xattrs xattrs;
  bool operator==(const Node&) const = default;
};
struct Tree {
  std::map<std::uint64_t, Node> inodes;
  std::map<std::uint64_t, std::set<Name>> names;
  bool operator==(const Tree&) const = default;
};

Status Walk(Filesystem* fs, std::uint64_t dir, Tree* t) {
  std::vector<std::pair<std::string, std::uint64_t>> entries;
  WALFS_RETURN_IF_ERROR(fs->ReadDir(dir, 0, [&](std::string_view name, std::uint64_t ino, std::uint32_t,
                                               std::uint64_t) {
    if (name != "." && name != "..") entries.emplace_back(std::string(name), ino);
    return true;
  }));
  for (const auto& [name, ino] : entries) {
    t->names[ino].insert({dir, name});
    if (t->inodes.count(ino)) continue;
    WALFS_ASSIGN_OR_RETURN(struct stat st, fs->GetAttr(ino));
    Node& n = t->inodes[ino];
    n.mode = st.st_mode;
    n.nlink = static_cast<std::uint32_t>(st.st_nlink);
    if (S_ISDIR(st.st_mode)) {
      WALFS_RETURN_IF_ERROR(Walk(fs, ino, t));
    } else if (S_ISLNK(st.st_mode)) {
      WALFS_ASSIGN_OR_RETURN(n.data, fs->Readlink(ino));
    } else {
      n.data.resize(static_cast<std::size_t>(st.st_size));
      WALFS_ASSIGN_OR_RETURN(std::size_t got, fs->Read(ino, 0, n.data.size(), n.data.data()));
      if (got != n.data.size()) return Status::Internal(fmt::format("short read of inode {}", ino));
      WALFS_ASSIGN_OR_RETURN(std::vector<std::string> keys, fs->ListXattr(ino));
      for (const std::string& k : keys) {
        WALFS_ASSIGN_OR_RETURN(n.xattrs[k], fs->GetXattr(ino, k));
      }
    }
  }
  return Status::Ok();
}

Result<Tree> MountAndWalk(BlockDevice* dev, bool unmount) {
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<Filesystem> fs, Filesystem::MountDevice(dev, {}));
  Tree t;
  WALFS_RETURN_IF_ERROR(Walk(fs.get(), fs->root(), &t));
  if (unmount) WALFS_RETURN_IF_ERROR(fs->Unmount());
  return t;  // else destroyed mounted: a crash right after recovery
}

std::string Problems(const FsckReport& r) {
  std::string s;
  for (const FsckProblem& p : r.problems) s += "\n  " + p.message;
  return s;
}

// ---------------------------------------------------------------- the checks

class Checker {
 public:
  explicit Checker(const Workload& w) : w_(w) {}

  // The crash image `dev`: writes [0, limit) may have landed; fsyncs that
  // returned by op `moment` are durable.  Returns what is wrong.
  std::vector<std::string> Check(MemoryDevice* dev, std::size_t limit, std::size_t moment) {
    limit_ = limit;
    moment_ = moment;
    errors_.clear();
    MemoryDevice copy(dev->Contents());
    auto replayed = CheckImage(&copy, {.replay = true});
    if (!replayed.ok()) Error("fsck with replay: " + replayed.status().ToString());
    else if (!replayed->problems.empty()) Error("fsck with replay:" + Problems(*replayed));
    auto first = MountAndWalk(dev, /*unmount=*/false);
    if (!first.ok()) {
      Error("mount: " + first.status().ToString());
      return errors_;
    }
    CheckTree(*first);
    auto again = MountAndWalk(dev, /*unmount=*/true);
    if (!again.ok()) Error("mount after a crash right after recovery: " + again.status().ToString());
    else if (!(*again == *first)) Error("a crash right after recovery changed the tree");
    auto clean = CheckImage(dev, {.replay = false});
    if (!clean.ok()) Error("fsck after a clean unmount: " + clean.status().ToString());
    else if (!clean->problems.empty()) Error("fsck after a clean unmount:" + Problems(*clean));
    auto third = MountAndWalk(dev, /*unmount=*/true);
    if (!third.ok()) Error("mount after a clean unmount: " + third.status().ToString());
    else if (!(*third == *first)) Error("unmounting and mounting again changed the tree");
    return errors_;
  }

 private:
  void Error(std::string e) { errors_.push_back(std::move(e)); }
  bool Before(std::size_t op) const { return op < limit_; }

  // The first byte of `got` that is neither `base`'s byte there (if given;
  // zero past its end), nor zero (if allowed), nor written to `f` by a write
  // that began in [from, limit).
  std::optional<std::uint64_t> Unexplained(const File& f, const std::string& got, const std::string* base,
                                           bool zero_ok, std::size_t from) const {
    std::vector<bool> ok(got.size());
    for (std::size_t o = 0; o < got.size(); ++o)
      ok[o] = (zero_ok && got[o] == 0) || (base && (o < base->size() ? (*base)[o] : '\0') == got[o]);
    for (const WriteRec& w : f.writes) {
      if (w.start < from || !Before(w.start)) continue;
      const Content c(w_.seed_, f.fid, w.gen, w_.options_.low_lsn);
      for (std::uint64_t o = w.off; o < std::min<std::uint64_t>(w.off + w.len, got.size()); ++o)
        if (!ok[o] && got[o] == c.At(o)) ok[o] = true;
    }
    for (std::size_t o = 0; o < got.size(); ++o)
      if (!ok[o]) return o;
    return std::nullopt;
  }
  std::string Describe(const File& f, const std::string& got, std::uint64_t o) const {
    std::string gens;
    for (const WriteRec& w : f.writes)
      if (o >= w.off && o < w.off + w.len) gens += fmt::format(" {}{}", w.gen, Before(w.start) ? "" : "(later)");
    return fmt::format("f{} byte {} is {:#04x}; writes covering it:{}", f.fid, o,
                       static_cast<std::uint8_t>(got[o]), gens.empty() ? " none" : gens);
  }

  // Stale data: every inode in the tree is something the workload made, and
  // holds only its bytes.
  std::optional<std::string> Stale(const File& f, const Node& n) const {
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

  void CheckTree(const Tree& t) {
    std::map<std::uint64_t, std::vector<const File*>> by_ino;
    for (const File& f : w_.files_)
      if (Before(f.created)) by_ino[f.ino].push_back(&f);
    for (const auto& [ino, n] : t.inodes) {
      if (S_ISDIR(n.mode)) {
        const std::uint64_t dir_ino = ino;  // clang before 16 cannot capture a structured binding
        const bool known = std::any_of(w_.dirs_.begin(), w_.dirs_.end(),
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
    for (const File& f : w_.files_) made[f.ino] += Before(f.created);
    for (const Dir& d : w_.dirs_) made[d.ino] += Before(d.created);
    for (const File& f : w_.files_)
      if (Before(f.created)) CheckSynced(f, t, made[f.ino] > 1);
  }

  // A file fsynced by the crash moment: its fsynced state, or a later one.
  void CheckSynced(const File& f, const Tree& t, bool ino_reused) {
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
    const std::string what = fmt::format("f{} (ino {}, fsynced at op {}, size {})", f.fid, f.ino, s->end,
                                         s->data.size());
    if (!changed) {
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
      if (!removes) Error(what + ": gone, though nothing after the fsync removed it");
      return;
    }
    for (const Name& nm : names->second)
      if (!f.all_names.count(nm)) Error(fmt::format("{}: under {}/{}, a name it never had", what, nm.first, nm.second));
    const Node& n = node->second;
    if (!sizes.count(n.data.size())) Error(fmt::format("{}: size {}, older than its fsync", what, n.data.size()));
    if (auto o = Unexplained(f, n.data, &s->data, zeroes, s->end))
      Error(fmt::format("{}: a byte older than the fsync: {}", what, Describe(f, n.data, *o)));
  }

  const Workload& w_;
  std::size_t limit_ = 0, moment_ = 0;
  std::vector<std::string> errors_;
};

// ---------------------------------------------------------------- specs

std::vector<std::uint64_t> Seeds() {
  const char* env = std::getenv("WALFS_FS_CRASH_SEEDS");
  const int n = env ? std::max(1, std::atoi(env)) : 3;
  std::vector<std::uint64_t> v;
  for (int i = 1; i <= n; ++i) v.push_back(static_cast<std::uint64_t>(i));
  return v;
}

// Reports the first failing state with the ops up to it.
bool Report(const Workload& w, const std::vector<std::string>& errors, const std::string& state,
            std::size_t limit) {
  if (errors.empty()) return true;
  std::string msg = fmt::format("seed {}, {}:", w.seed_, state);
  for (const std::string& e : errors) msg += "\n  " + e;
  msg += "\nops (recorded device ops [start, end)):";
  for (const OpRec& o : w.log_)
    if (o.start < limit) msg += fmt::format("\n  [{}, {}) {}", o.start, o.end, o.text);
  ADD_FAILURE() << msg;
  return false;
}

// PlanCrash lets the write half of a kIoPreflush request land while its
// flush half has not completed, which BlockDevice's contract rules out (the
// write starts after the flush: docs/block_device.md): then a log record can
// land without the file data written before it.  Such plans are skipped.
// A preflush pair is a flush whose completion was seen only after the next
// op, a write, was issued.
bool PreflushRespected(const std::vector<RecordedOp>& ops, const std::vector<PlannedWrite>& plan) {
  std::map<std::size_t, std::uint64_t> landed;
  for (const PlannedWrite& pw : plan) landed[pw.op] = pw.bytes;
  for (const PlannedWrite& pw : plan) {
    const std::size_t f = pw.op - 1;
    if (pw.op == 0 || ops[f].kind != RecordedOp::Kind::kFlush || ops[f].completed_before <= pw.op) continue;
    // It landed, so its flush completed: what that flush covers landed whole.
    for (std::size_t x = 0; x < f; ++x) {
      if (ops[x].kind != RecordedOp::Kind::kWrite || ops[x].failed || ops[x].completed_before > f) continue;
      auto it = landed.find(x);
      if (it == landed.end() || it->second != ops[x].data.size()) return false;
    }
  }
  return true;
}

// Runs the workload for `seed` and checks every crash state; returns how
// many were checked (stopping at the first that fails).
std::size_t RunAndCheck(std::uint64_t seed, WorkloadOptions options) {
  // Each crash state makes a few images.  Left to itself glibc maps and
  // unmaps every one, and faulting their pages in costs more than all the
  // checks; keep them in the heap instead (a no-op under the sanitizers).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  Workload w(seed, options);
  w.Run(400);
  if (::testing::Test::HasFailure()) return 0;
  Checker checker(w);
  const std::vector<std::size_t> flushes = w.rec_->FlushPoints();
  EXPECT_GT(flushes.size(), 10u);
  const std::vector<RecordedOp> ops = w.rec_->ops();
  std::size_t states = 0;
  auto check = [&](Result<std::unique_ptr<MemoryDevice>> img, std::size_t limit, std::size_t moment,
                   const std::string& state) {
    EXPECT_TRUE(img.ok()) << img.status().ToString();
    ++states;
    return img.ok() && Report(w, checker.Check(img->get(), limit, moment), state, limit);
  };
  bool ok = true;
  for (std::size_t f : flushes) {
    const std::size_t n = f + 1;
    if (!(ok = check(w.rec_->MaterializePrefix(n), n, n, fmt::format("prefix {} (after flush {})", n, f))))
      break;
    // The last write before the flush torn: only fsyncs that returned before
    // it was issued count.
    std::size_t last = SIZE_MAX;
    for (std::size_t i = f; i-- > 0;)
      if (ops[i].kind == RecordedOp::Kind::kWrite) {
        last = i;
        break;
      }
    if (last == SIZE_MAX || ops[last].data.size() <= 512) continue;
    if (!(ok = check(w.rec_->MaterializePrefix(last + 1, 1), last + 1, last,
                     fmt::format("prefix {} with write {} torn to one sector", last + 1, last))))
      break;
  }
  // Writes in flight land in any order the crash model allows, some torn.
  std::mt19937_64 rng(seed);
  for (int s = 0, tries = 0; s < 40 && ok && tries < 400; ++tries) {
    const std::size_t n = 1 + rng() % ops.size();
    CrashSampleOptions o{.seed = rng(), .land_probability = 0.5, .tear_probability = 0.3,
                         .before_completions = (tries % 2) == 1};
    auto plan = w.rec_->PlanCrash(n, o);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) break;
    if (!PreflushRespected(ops, *plan)) continue;
    ok = check(w.rec_->Apply(*plan), n, o.before_completions ? n - 1 : n,
               fmt::format("sample {} at {} (crash seed {}{})", s, n, o.seed,
                           o.before_completions ? ", before completions" : ""));
    ++s;
  }
  std::printf("seed %llu: %zu device ops recorded, %zu flushes, %zu crash states checked\n",
              static_cast<unsigned long long>(seed), ops.size(), flushes.size(), states);
  return states;
}

class FsCrash : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FsCrash, EveryCrashStateKeepsFsyncedFilesAndNoStaleData) {
  RecordProperty("crash_states", static_cast<int>(RunAndCheck(GetParam(), {})));
}

INSTANTIATE_TEST_SUITE_P(Seeds, FsCrash, ::testing::ValuesIn(Seeds()));

// ---------------------------------------------------------------- reduced bugs

struct Mounted {
  Mounted() {
    EXPECT_TRUE(MakeFilesystem(&disk, {.log_bytes = MinLogBytes(4096), .now_s = 1}).ok());
    rec = std::move(RecordingDevice::Create(&disk)).value();
    fs = std::move(Filesystem::MountDevice(rec.get(), {})).value();
  }
  std::uint64_t Create(const std::string& name) {
    auto st = fs->Mknod(kRoot, fs->root(), name, S_IFREG | 0644, 0);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return st.ok() ? st->st_ino : 0;
  }
  // Crashes and recovers the image as it was when everything issued landed.
  std::unique_ptr<MemoryDevice> CrashAndRecover() {
    fs.reset();
    auto img = rec->MaterializePrefix(rec->op_count());
    EXPECT_TRUE(img.ok());
    return std::move(img).value();
  }
  MemoryDevice disk{kImageBytes};
  std::unique_ptr<RecordingDevice> rec;
  std::unique_ptr<Filesystem> fs;
};

// An inode the kernel forgot (evicted with its last_seq and data_dirty)
// and looked up again: its fsync still forces its changes.
TEST(FsCrashRegression, FsyncAfterTheInodeWasForgottenForcesItsChanges) {
  Mounted m;
  const std::uint64_t ino = m.Create("a");
  const std::string data(10000, 'x');
  ASSERT_TRUE(m.fs->Write(ino, 0, data.data(), data.size()).ok());
  m.fs->Forget(ino, 1);  // the kernel drops the inode; the file stays
  ASSERT_TRUE(m.fs->Lookup(m.fs->root(), "a").ok());  // open("a")
  const std::size_t before = m.rec->op_count();
  ASSERT_TRUE(m.fs->Fsync(ino, false).ok());
  EXPECT_GT(m.rec->op_count(), before) << "fsync issued no I/O";
  auto img = m.CrashAndRecover();
  auto fs = Filesystem::MountDevice(img.get(), {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto st = (*fs)->Lookup((*fs)->root(), "a");
  ASSERT_TRUE(st.ok()) << "the fsynced file is gone: " << st.status().ToString();
  EXPECT_EQ(st->st_size, static_cast<off_t>(data.size()));
}

// A freed data block reused as metadata (here an xattr leaf) whose old
// bytes read as a later LSN at the stamp's offset is still replayed:
// recovery trusts a stamp only in a block of the logged type at its address
// (format::BlockStampValid).
TEST(FsCrashRegression, DataBlockReusedAsMetadataIsReplayed) {
  Mounted m;
  const std::uint64_t a = m.Create("a");
  const std::string data(4096, '\xff');  // reads as LSN 0xffffffff/0xffffffff
  ASSERT_TRUE(m.fs->Write(a, 0, data.data(), data.size()).ok());
  ASSERT_TRUE(m.fs->Fsync(a, false).ok());
  ASSERT_TRUE(m.fs->Unlink(m.fs->root(), "a").ok());
  m.fs->Forget(a, 1);  // frees a's block
  const std::uint64_t b = m.Create("b");
  ASSERT_TRUE(m.fs->Fsync(b, false).ok());  // the free is on disk: the block is reusable
  const std::uint64_t c = m.Create("c");
  ASSERT_TRUE(m.fs->SetXattr(c, "user.x", "value", 0).ok());  // its leaf takes a's block
  ASSERT_TRUE(m.fs->Fsync(c, false).ok());
  auto img = m.CrashAndRecover();
  MemoryDevice copy(img->Contents());
  auto r = CheckImage(&copy, {.replay = true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->problems.empty()) << Problems(*r);
  auto fs = Filesystem::MountDevice(img.get(), {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto v = (*fs)->GetXattr(c, "user.x");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "value");
}

}  // namespace
}  // namespace walfs::fs
