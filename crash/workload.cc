#include "crash/workload.h"

#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "crash/content.h"
#include "fs/dir.h"
#include "fs/mkfs.h"

namespace walfs::crash {
namespace {

constexpr fs::Caller kRoot{};

Status Failed(std::string_view what, const Status& s) {
  return Status::Internal(fmt::format("{} failed: {}", what, s.ToString()));
}

}  // namespace

Workload::Workload(std::uint64_t seed, bool low_lsn) {
  h_.seed = seed;
  h_.low_lsn = low_lsn;
}

Workload::~Workload() = default;

Status Workload::Run(bool discard) {
  disk_ = std::make_unique<MemoryDevice>(kImageBytes);
  auto sb = fs::MakeFilesystem(disk_.get(), {.log_bytes = fs::MinLogBytes(4096), .now_s = 1});
  if (!sb.ok()) return Failed("mkfs", sb.status());
  WALFS_ASSIGN_OR_RETURN(rec_, RecordingDevice::Create(disk_.get()));
  // No timed pushes (commit=0): the recorded write stream is then a function
  // of the seed alone, even when a slow (sanitized) run outlasts the 5 s
  // default interval.
  fs::MountOptions mo;
  mo.commit_interval_s = 0;
  mo.discard = discard;
  auto mounted = fs::Filesystem::MountDevice(rec_.get(), mo);
  if (!mounted.ok()) return Failed("mount", mounted.status());
  fs_ = std::move(mounted).value();
  h_.dirs.push_back({.ino = fs_->root(), .parent = fs_->root(), .lookups = 1});
  h_.namespaces.push_back({-1, {}});
  Status s = Body();
  fs_.reset();  // the crash
  return s;
}

// ---------------------------------------------------------------- bookkeeping

void Workload::Log(std::size_t start, std::string text, std::vector<std::uint64_t> touched,
                   bool names_changed, std::uint64_t fsynced) {
  h_.log.push_back({start, Now(), std::move(text), std::move(touched), fsynced});
  if (!names_changed) return;
  Namespace names;
  for (const auto& [n, e] : ns_) names[n] = InoOf(e);
  h_.namespaces.push_back({static_cast<std::ptrdiff_t>(h_.log.size() - 1), std::move(names)});
}

std::uint64_t Workload::InoOf(const Entry& e) const {
  return e.dir ? h_.dirs[e.id].ino : h_.files[e.id].ino;
}

Status Workload::Hold(File& f) {
  if (f.lookups > 0 || f.names.empty()) return Status::Ok();
  const Name& n = *f.names.begin();
  auto st = fs_->Lookup(n.first, n.second);
  if (!st.ok()) return Failed(fmt::format("lookup {}/{}", n.first, n.second), st.status());
  if (st->st_ino != f.ino)
    return Status::Internal(fmt::format("lookup {}/{} found ino {}, not f{}'s {}", n.first, n.second,
                                        st->st_ino, f.fid, f.ino));
  f.lookups = 1;
  return Status::Ok();
}

void Workload::Changed(File& f, std::size_t start, bool zeroes, bool removes) {
  f.changes.push_back({start, f.data.size(), zeroes, removes});
}

void Workload::Unnamed(File& f, const Name& n, std::size_t start, bool drop) {
  f.names.erase(n);
  Changed(f, start, false, true);
  if (f.names.empty() && drop) Forget(f.fid);
}

void Workload::Forget(int fid) {
  File& f = h_.files[fid];
  const std::size_t start = Now();
  fs_->Forget(f.ino, f.lookups);
  f.lookups = 0;
  if (f.names.empty()) {
    f.dead = true;
    Changed(f, start, false, true);
  }
  Log(start, fmt::format("forget f{} (ino {}){}", f.fid, f.ino, f.dead ? ", freed" : ""), {}, false);
}

// ---------------------------------------------------------------- queries

std::vector<int> Workload::LiveDirs() const {
  std::vector<int> v;
  for (int i = 0; i < static_cast<int>(h_.dirs.size()); ++i)
    if (h_.dirs[i].live) v.push_back(i);
  return v;
}

std::vector<int> Workload::Files(bool regular_only, bool named_only) const {
  std::vector<int> v;
  for (const File& f : h_.files)
    if (!f.dead && (!regular_only || !f.symlink) && (!named_only || !f.names.empty())) v.push_back(f.fid);
  return v;
}

std::vector<Name> Workload::EntriesOf(std::uint64_t dir_ino) const {
  std::vector<Name> v;
  for (auto it = ns_.lower_bound({dir_ino, ""}); it != ns_.end() && it->first.first == dir_ino; ++it)
    v.push_back(it->first);
  return v;
}

std::optional<Workload::Entry> Workload::EntryAt(const Name& n) const {
  auto it = ns_.find(n);
  if (it == ns_.end()) return std::nullopt;
  return it->second;
}

bool Workload::Below(int dir, std::uint64_t ino) const {
  for (std::uint64_t at = ino;;) {
    if (at == h_.dirs[dir].ino) return true;
    if (at == h_.dirs[0].ino) return false;
    auto d = std::find_if(h_.dirs.begin(), h_.dirs.end(), [&](const Dir& x) { return x.live && x.ino == at; });
    if (d == h_.dirs.end()) return false;
    at = d->parent;
  }
}

// ---------------------------------------------------------------- namespace ops

Result<int> Workload::Create(int dir, const std::string& name) {
  const Dir d = h_.dirs[dir];
  File f;
  f.fid = static_cast<int>(h_.files.size());
  const std::size_t start = Now();
  auto st = fs_->Mknod(kRoot, d.ino, name, S_IFREG | 0644, 0);
  if (!st.ok()) return Failed(fmt::format("create {}/{}", d.ino, name), st.status());
  f.ino = st->st_ino;
  f.created = start;
  f.lookups = 1;
  f.names = f.all_names = {{d.ino, name}};
  f.changes.push_back({start, 0});
  ns_[{d.ino, name}] = {false, f.fid};
  h_.files.push_back(std::move(f));
  Log(start, fmt::format("create {}/{} -> f{} ino {}", d.ino, name, h_.files.back().fid, st->st_ino),
      {d.ino, st->st_ino}, true);
  return h_.files.back().fid;
}

Result<int> Workload::Symlink(int dir, const std::string& name, std::size_t target_len) {
  const Dir d = h_.dirs[dir];
  File f;
  f.fid = static_cast<int>(h_.files.size());
  f.symlink = true;
  f.target = Content(h_.seed, f.fid, 0, h_.low_lsn).Bytes(0, target_len);
  const std::size_t start = Now();
  auto st = fs_->Symlink(kRoot, d.ino, name, f.target);
  if (!st.ok()) return Failed(fmt::format("symlink {}/{}", d.ino, name), st.status());
  f.ino = st->st_ino;
  f.created = start;
  f.lookups = 1;
  f.names = f.all_names = {{d.ino, name}};
  f.changes.push_back({start, f.target.size()});
  ns_[{d.ino, name}] = {false, f.fid};
  h_.files.push_back(std::move(f));
  Log(start, fmt::format("symlink {}/{} -> f{} ino {}", d.ino, name, h_.files.back().fid, st->st_ino),
      {d.ino, st->st_ino}, true);
  return h_.files.back().fid;
}

Result<int> Workload::MakeDir(int parent, const std::string& name) {
  const Dir d = h_.dirs[parent];
  const std::size_t start = Now();
  auto st = fs_->Mkdir(kRoot, d.ino, name, 0755);
  if (!st.ok()) return Failed(fmt::format("mkdir {}/{}", d.ino, name), st.status());
  const int id = static_cast<int>(h_.dirs.size());
  ns_[{d.ino, name}] = {true, id};
  h_.dirs.push_back({.ino = st->st_ino, .parent = d.ino, .created = start, .lookups = 1});
  Log(start, fmt::format("mkdir {}/{} -> ino {}", d.ino, name, st->st_ino), {d.ino, st->st_ino}, true);
  return id;
}

Status Workload::Rename(Name src, Name dst, unsigned flags, bool drop_victim) {
  const Entry e = ns_.at(src);
  const std::optional<Entry> over = EntryAt(dst);
  const bool exchange = flags & RENAME_EXCHANGE;
  if (over) {
    if (over->dir || e.dir) return Status::Internal("the workload renames over files only");
    WALFS_RETURN_IF_ERROR(Hold(h_.files[over->id]));
  }
  const std::size_t start = Now();
  Status s = fs_->Rename(src.first, src.second, dst.first, dst.second, flags);
  const std::string text = fmt::format("{} {}/{} -> {}/{}{}", exchange ? "exchange" : "rename", src.first,
                                       src.second, dst.first, dst.second,
                                       over ? fmt::format(" {} f{}", exchange ? "with" : "over", over->id) : "");
  if (!s.ok()) return Failed(text, s);
  std::vector<std::uint64_t> touched{src.first, dst.first, InoOf(e)};
  if (over) touched.push_back(InoOf(*over));
  ns_.erase(src);
  ns_[dst] = e;
  if (exchange) ns_[src] = *over;
  if (e.dir) {
    h_.dirs[e.id].parent = dst.first;
  } else {
    File& f = h_.files[e.id];
    f.names.erase(src);
    f.names.insert(dst);
    f.all_names.insert(dst);
    Changed(f, start);
  }
  Log(start, text, std::move(touched), true);
  if (!over) return Status::Ok();
  File& v = h_.files[over->id];
  if (!exchange) {
    Unnamed(v, dst, start, drop_victim);
    return Status::Ok();
  }
  v.names.erase(dst);
  v.names.insert(src);
  v.all_names.insert(src);
  Changed(v, start);
  return Status::Ok();
}

Status Workload::Link(int fid, const Name& dst) {
  File& f = h_.files[fid];
  const std::size_t start = Now();
  auto st = fs_->Link(f.ino, dst.first, dst.second);
  const std::string text = fmt::format("link f{} -> {}/{}", f.fid, dst.first, dst.second);
  if (!st.ok()) return Failed(text, st.status());
  f.lookups += 1;
  f.names.insert(dst);
  f.all_names.insert(dst);
  ns_[dst] = {false, f.fid};
  Changed(f, start);
  Log(start, text, {dst.first, f.ino}, true);
  return Status::Ok();
}

Status Workload::Unlink(Name n, bool drop_if_unnamed) {
  File& f = h_.files[ns_.at(n).id];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const std::size_t start = Now();
  Status s = fs_->Unlink(n.first, n.second);
  const std::string text = fmt::format("unlink {}/{} (f{})", n.first, n.second, f.fid);
  if (!s.ok()) return Failed(text, s);
  ns_.erase(n);
  Log(start, text, {n.first, f.ino}, true);
  Unnamed(f, n, start, drop_if_unnamed);
  return Status::Ok();
}

Status Workload::Rmdir(int dir) {
  Dir& d = h_.dirs[dir];
  Name n;
  for (const auto& [name, e] : ns_)
    if (e.dir && e.id == dir) n = name;
  const std::size_t start = Now();
  Status s = fs_->Rmdir(n.first, n.second);
  const std::string text = fmt::format("rmdir {}/{} (ino {})", n.first, n.second, d.ino);
  if (!s.ok()) return Failed(text, s);
  ns_.erase(n);
  d.live = false;
  fs_->Forget(d.ino, d.lookups);
  Log(start, text, {n.first, d.ino}, true);
  return Status::Ok();
}

// ---------------------------------------------------------------- file ops

Status Workload::Write(int fid, std::uint64_t off, std::uint64_t len) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const auto gen = static_cast<std::uint32_t>(f.writes.size() + 1);
  const std::string bytes = Content(h_.seed, f.fid, gen, h_.low_lsn).Bytes(off, len);
  const std::size_t start = Now();
  auto n = fs_->Write(f.ino, off, bytes.data(), bytes.size());
  const std::string text = fmt::format("write f{} [{}, {}) gen {}", f.fid, off, off + len, gen);
  if (!n.ok()) return Failed(text, n.status());
  if (*n != len) return Status::Internal(fmt::format("{}: wrote {} bytes", text, *n));
  // Only a write that grows the file is sure to log the inode: an overwrite
  // within the same clock tick logs nothing (Filesystem::Write).
  const bool grows = f.data.size() < off + len;
  if (grows) f.data.resize(off + len, '\0');
  f.data.replace(off, len, bytes);
  f.writes.push_back({gen, off, len, start});
  Changed(f, start);
  Log(start, fmt::format("{} -> size {}", text, f.data.size()), grows ? std::vector<std::uint64_t>{f.ino}
                                                                       : std::vector<std::uint64_t>{}, false);
  return Status::Ok();
}

Status Workload::Truncate(int fid, std::uint64_t to) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const std::uint64_t size = f.data.size();
  struct stat attr {};
  attr.st_size = static_cast<off_t>(to);
  const std::size_t start = Now();
  auto st = fs_->SetAttr(f.ino, attr, fs::kSetSize);
  const std::string text = fmt::format("truncate f{} {} -> {}", f.fid, size, to);
  if (!st.ok()) return Failed(text, st.status());
  f.data.resize(to, '\0');
  Changed(f, start, /*zeroes=*/true);
  Log(start, text, to != size ? std::vector<std::uint64_t>{f.ino} : std::vector<std::uint64_t>{}, false);
  return Status::Ok();
}

Status Workload::Fallocate(int fid, std::uint64_t off, std::uint64_t len, bool keep_size) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const std::uint64_t size = f.data.size();
  const std::size_t start = Now();
  Status s = fs_->Fallocate(f.ino, keep_size ? FALLOC_FL_KEEP_SIZE : 0, off, len);
  const std::string text = fmt::format("fallocate{} f{} [{}, {})", keep_size ? " keep_size" : "", f.fid, off, off + len);
  if (!s.ok()) return Failed(text, s);
  const bool grows = !keep_size && off + len > size;
  if (grows) f.data.resize(off + len, '\0');
  Changed(f, start, /*zeroes=*/true);
  Log(start, fmt::format("{} -> size {}", text, f.data.size()),
      grows ? std::vector<std::uint64_t>{f.ino} : std::vector<std::uint64_t>{}, false);
  return Status::Ok();
}

Status Workload::SetXattr(int fid, const std::string& key, std::size_t len) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const auto gen = 1000000 + static_cast<std::uint32_t>(h_.log.size());
  const std::string value = Content(h_.seed, f.fid, gen, false).Bytes(0, len);
  const std::size_t start = Now();
  Status s = fs_->SetXattr(f.ino, key, value, 0);
  const std::string text = fmt::format("setxattr f{} {} ({} bytes)", f.fid, key, len);
  if (!s.ok()) return Failed(text, s);
  f.xattrs[key] = value;
  f.xattr_values[key].insert(value);
  Changed(f, start);
  Log(start, text, {f.ino}, false);
  return Status::Ok();
}

Status Workload::RemoveXattr(int fid, const std::string& key) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const std::size_t start = Now();
  Status s = fs_->RemoveXattr(f.ino, key);
  const std::string text = fmt::format("removexattr f{} {}", f.fid, key);
  if (!s.ok()) return Failed(text, s);
  f.xattrs.erase(key);
  Changed(f, start);
  Log(start, text, {f.ino}, false);
  return Status::Ok();
}

Status Workload::Fsync(int fid, bool datasync) {
  File& f = h_.files[fid];
  WALFS_RETURN_IF_ERROR(Hold(f));
  const std::size_t start = Now();
  Status s = fs_->Fsync(f.ino, datasync);
  const std::string text = fmt::format("{} f{} (size {})", datasync ? "fdatasync" : "fsync", f.fid, f.data.size());
  if (!s.ok()) return Failed(text, s);
  f.fsyncs.push_back({Now(), f.data, f.xattrs, f.names});
  Log(start, text, {}, false, f.ino);
  return Status::Ok();
}

Status Workload::FsyncDir(int dir, bool datasync) {
  const Dir& d = h_.dirs[dir];
  const std::size_t start = Now();
  Status s = fs_->Fsync(d.ino, datasync);
  const std::string text = fmt::format("{} directory ino {}", datasync ? "fdatasync" : "fsync", d.ino);
  if (!s.ok()) return Failed(text, s);
  Log(start, text, {}, false, d.ino);
  return Status::Ok();
}

}  // namespace walfs::crash
