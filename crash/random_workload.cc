#include "crash/random_workload.h"

#include <algorithm>

#include <fmt/format.h>

#include "fs/dir.h"

namespace walfs::crash {

Status RandomWorkload::Body() {
  for (int i = 0; i < options_.ops; ++i) WALFS_RETURN_IF_ERROR(Step());
  return Status::Ok();
}

Status RandomWorkload::Step() {
  const bool want_files = Files(false, true).size() < 6;
  const std::uint64_t r = want_files ? 0 : R(100);
  if (r < 10) return CreateOp(false);
  if (r < 12) return CreateOp(true);
  if (r < 15) return MakeDirOp();
  if (r < 43) return WriteOp();
  if (r < 50) return options_.preallocate && P(0.5) ? FallocateOp() : TruncateOp();
  if (r < 59) return RenameOp();
  if (r < 63) return LinkOp();
  if (r < 69) return UnlinkOp();
  if (r < 70) return RmdirOp();
  if (r < 76) return XattrOp();
  if (r < 92) return FsyncOp();
  return ForgetOp();
}

Status RandomWorkload::CreateOp(bool symlink) {
  const int d = Pick(LiveDirs());
  const std::string name = fmt::format("{}{}", symlink ? "s" : "f", h_.files.size());
  if (!symlink) return Create(d, name).status();
  const std::size_t len = P(0.5) ? 1 + R(fs::kDataForkRoom) : fs::kDataForkRoom + 1 + R(3000);
  return Symlink(d, name, len).status();
}

Status RandomWorkload::MakeDirOp() {
  return MakeDir(Pick(LiveDirs()), fmt::format("d{}", h_.dirs.size())).status();
}

Status RandomWorkload::WriteOp() {
  const std::vector<int> v = Files(true, false);
  if (v.empty()) return Status::Ok();
  const File& f = h_.files[Pick(v)];
  if (f.lookups == 0 && f.names.empty()) return Status::Ok();
  const std::uint64_t size = f.data.size();
  std::uint64_t off, len;
  switch (R(4)) {
    case 0: off = size, len = 1 + R(16384); break;                // append
    case 1: off = R(size + 1), len = 1 + R(12000); break;         // overwrite
    case 2: off = size + 1 + R(65536), len = 1 + R(9000); break;  // sparse
    default: off = R(kMaxFileSize), len = 1 + R(32768); break;    // anywhere
  }
  off = std::min(off, kMaxFileSize - 1);
  len = std::min(len, kMaxFileSize - off);
  return Write(f.fid, off, len);
}

Status RandomWorkload::TruncateOp() {
  const std::vector<int> v = Files(true, false);
  if (v.empty()) return Status::Ok();
  const File& f = h_.files[Pick(v)];
  if (f.lookups == 0 && f.names.empty()) return Status::Ok();
  const std::uint64_t size = f.data.size();
  const std::uint64_t to = P(0.6) ? R(size + 1) : std::min(kMaxFileSize, size + R(65536));
  return Truncate(f.fid, to);
}

Status RandomWorkload::FallocateOp() {
  const std::vector<int> v = Files(true, false);
  if (v.empty()) return Status::Ok();
  const File& f = h_.files[Pick(v)];
  if (f.lookups == 0 && f.names.empty()) return Status::Ok();
  // Over the file's end or inside it; a few blocks to a few dozen.
  const std::uint64_t off = std::min(kMaxFileSize - 1, P(0.5) ? R(f.data.size() + 1) : R(kMaxFileSize));
  const std::uint64_t len = std::min(kMaxFileSize - off, 1 + R(98304));
  return Fallocate(f.fid, off, len, P(0.5));
}

Status RandomWorkload::RenameOp() {
  if (ns_.empty()) return Status::Ok();
  auto it = ns_.begin();
  std::advance(it, R(ns_.size()));
  const Name src = it->first;
  const Entry e = it->second;
  const int dd = Pick(LiveDirs());
  if (e.dir && Below(e.id, h_.dirs[dd].ino)) return Status::Ok();
  Name dst{h_.dirs[dd].ino, fmt::format("n{}", h_.log.size())};
  if (!e.dir && P(0.4)) {
    std::vector<Name> targets;
    for (const Name& n : EntriesOf(dst.first))
      if (!ns_.at(n).dir && ns_.at(n).id != e.id) targets.push_back(n);
    if (!targets.empty()) dst = Pick(targets);
  }
  const bool over = ns_.count(dst) > 0;
  return Rename(src, dst, 0, over && P(0.7));
}

Status RandomWorkload::LinkOp() {
  const std::vector<int> v = Files(false, true);
  if (v.empty()) return Status::Ok();
  const int fid = Pick(v);
  return Link(fid, {h_.dirs[Pick(LiveDirs())].ino, fmt::format("l{}", h_.log.size())});
}

Status RandomWorkload::UnlinkOp() {
  std::vector<Name> v;
  for (const auto& [n, e] : ns_)
    if (!e.dir) v.push_back(n);
  if (v.empty()) return Status::Ok();
  return Unlink(Pick(v), P(0.7));
}

Status RandomWorkload::RmdirOp() {
  std::vector<int> v;
  for (int d : LiveDirs())
    if (d != 0 && EntriesOf(h_.dirs[d].ino).empty()) v.push_back(d);
  if (v.empty()) return Status::Ok();
  return Rmdir(Pick(v));
}

Status RandomWorkload::XattrOp() {
  const std::vector<int> v = Files(true, false);
  if (v.empty()) return Status::Ok();
  const File& f = h_.files[Pick(v)];
  if (f.lookups == 0 && f.names.empty()) return Status::Ok();
  const std::string key = fmt::format("user.k{}", R(4));
  if (f.xattrs.count(key) && P(0.2)) return RemoveXattr(f.fid, key);
  // Up to one B+tree record with 4 KiB blocks: values spanning several
  // records are not exercised here yet.
  const std::size_t len = P(0.7) ? 1 + R(200) : 200 + R(1100);
  return SetXattr(f.fid, key, len);
}

Status RandomWorkload::FsyncOp() {
  const std::vector<int> v = Files(true, true);
  if (v.empty()) return Status::Ok();
  const int fid = Pick(v);
  return Fsync(fid, P(0.5));
}

Status RandomWorkload::ForgetOp() {
  std::vector<int> v;
  for (const File& f : h_.files)
    if (!f.dead && f.lookups > 0 && (options_.forget_linked || f.names.empty())) v.push_back(f.fid);
  if (!v.empty()) Forget(Pick(v));
  return Status::Ok();
}

}  // namespace walfs::crash
