#include "crash/short_workload.h"

#include <linux/fs.h>

#include <random>

#include <fmt/format.h>

#include "crash/content.h"

namespace walfs::crash {
namespace {

constexpr const char* kCoreNames[] = {
    "append",      "overwrite", "truncate-down",  "truncate-up",     "setxattr",         "removexattr",
    "link",        "unlink",    "rename",         "rename-other-dir", "rename-over",     "exchange",
    "create-sibling", "replace-via-tmp", "move-into-new-dir", "rename-parent"};
static_assert(std::size(kCoreNames) == static_cast<std::size_t>(ShortCore::kCount));
constexpr const char* kPersistNames[] = {"-", "fsync", "fdatasync", "fsync-dir", "fsync-other"};
static_assert(std::size(kPersistNames) == static_cast<std::size_t>(ShortPersist::kCount));

ShortOp Decode(std::uint64_t core_op, std::uint64_t persist) {
  return {static_cast<ShortCore>(core_op / 2), static_cast<int>(core_op % 2), static_cast<ShortPersist>(persist)};
}
// Index i of seq-1: the core op fastest, then the (non-empty) persistence.
ShortOp Seq1(std::uint64_t i) { return Decode(i % kShortCoreOps, 1 + i / kShortCoreOps); }

}  // namespace

std::vector<ShortOp> ShortSequence(std::uint64_t seed) {
  std::uint64_t i = seed ? seed - 1 : 0;
  if (i < kSeq1) return {Seq1(i)};
  i -= kSeq1;
  if (i < kSeq2) {
    const std::uint64_t first = i / kSeq1;
    return {Decode(first % kShortCoreOps, first / kShortCoreOps), Seq1(i % kSeq1)};
  }
  std::mt19937_64 rng(Mix(seed));
  std::vector<ShortOp> seq(3 + rng() % 2);
  for (ShortOp& op : seq) op = Decode(rng() % kShortCoreOps, rng() % kShortPersists);
  seq.back().persist = static_cast<ShortPersist>(1 + rng() % (kShortPersists - 1));
  return seq;
}

std::string DescribeSequence(const std::vector<ShortOp>& seq) {
  std::string s;
  for (const ShortOp& op : seq)
    s += fmt::format("{}{}({}) {}", s.empty() ? "" : "; ", kCoreNames[static_cast<int>(op.core)],
                     op.target ? "B" : "A", kPersistNames[static_cast<int>(op.persist)]);
  return s;
}

Status ShortWorkload::Body() {
  WALFS_RETURN_IF_ERROR(Setup());
  h_.first_interesting_op = Now();
  for (std::size_t step = 0; step < seq_.size(); ++step) {
    const ShortOp& op = seq_[step];
    const int dir_before = DirOf(files_[op.target]);
    WALFS_RETURN_IF_ERROR(Core(op, static_cast<int>(step)));
    // A file that lost its name: its directory is the one it was in.
    const int fid = files_[op.target];
    const int dir = NameOf(fid) ? DirOf(fid) : dir_before;
    switch (op.persist) {
      case ShortPersist::kNone: break;
      case ShortPersist::kFsync: WALFS_RETURN_IF_ERROR(Fsync(fid, false)); break;
      case ShortPersist::kFdatasync: WALFS_RETURN_IF_ERROR(Fsync(fid, true)); break;
      case ShortPersist::kFsyncDir: WALFS_RETURN_IF_ERROR(FsyncDir(dir, false)); break;
      case ShortPersist::kFsyncOther: WALFS_RETURN_IF_ERROR(Fsync(files_[1 - op.target], false)); break;
      case ShortPersist::kCount: break;
    }
  }
  return Status::Ok();
}

Status ShortWorkload::Setup() {
  WALFS_ASSIGN_OR_RETURN(d_, MakeDir(0, "d"));
  WALFS_ASSIGN_OR_RETURN(files_[0], Create(0, "A"));
  WALFS_RETURN_IF_ERROR(Write(files_[0], 0, 9000));
  WALFS_RETURN_IF_ERROR(SetXattr(files_[0], "user.a", 50));
  WALFS_ASSIGN_OR_RETURN(files_[1], Create(d_, "B"));
  WALFS_RETURN_IF_ERROR(Write(files_[1], 0, 6000));
  WALFS_RETURN_IF_ERROR(SetXattr(files_[1], "user.a", 50));
  WALFS_RETURN_IF_ERROR(Fsync(files_[0], false));
  WALFS_RETURN_IF_ERROR(Fsync(files_[1], false));
  WALFS_RETURN_IF_ERROR(FsyncDir(0, false));
  return FsyncDir(d_, false);
}

const Name* ShortWorkload::NameOf(int fid) const {
  const File& f = h_.files[fid];
  return f.names.empty() ? nullptr : &*f.names.begin();
}

int ShortWorkload::DirOf(int fid) const {
  const Name* n = NameOf(fid);
  if (!n) return 0;
  for (int d : LiveDirs())
    if (h_.dirs[d].ino == n->first) return d;
  return 0;
}

int ShortWorkload::OtherDir(int fid) const { return DirOf(fid) == 0 ? d_ : 0; }

Status ShortWorkload::Core(const ShortOp& op, int step) {
  const int t = files_[op.target], other = files_[1 - op.target];
  const File& f = h_.files[t];
  const Name* name = NameOf(t);
  const Name* other_name = NameOf(other);
  const std::uint64_t size = f.data.size();
  switch (op.core) {
    case ShortCore::kAppend:
      return size + 3000 <= kMaxFileSize ? Write(t, size, 3000) : Status::Ok();
    case ShortCore::kOverwrite:
      return Write(t, std::min<std::uint64_t>(1000, size), 4096);
    case ShortCore::kTruncateDown:
      return Truncate(t, size / 3);
    case ShortCore::kTruncateUp:
      return Truncate(t, std::min(kMaxFileSize, size + 10000));
    case ShortCore::kSetXattr:
      return SetXattr(t, "user.a", 70 + step);
    case ShortCore::kRemoveXattr:
      return f.xattrs.count("user.a") ? RemoveXattr(t, "user.a") : Status::Ok();
    case ShortCore::kLink:
      if (!name) return Status::Ok();
      return Link(t, {h_.dirs[OtherDir(t)].ino, fmt::format("L{}", step)});
    case ShortCore::kUnlink:
      return name ? Unlink(*name, /*drop_if_unnamed=*/false) : Status::Ok();
    case ShortCore::kRename:
      if (!name) return Status::Ok();
      return Rename(*name, {name->first, fmt::format("R{}", step)}, 0, false);
    case ShortCore::kRenameOtherDir:
      if (!name) return Status::Ok();
      return Rename(*name, {h_.dirs[OtherDir(t)].ino, fmt::format("M{}", step)}, 0, false);
    case ShortCore::kRenameOver:
      if (!name || !other_name) return Status::Ok();
      return Rename(*name, *other_name, 0, false);
    case ShortCore::kExchange:
      if (!name || !other_name) return Status::Ok();
      return Rename(*name, *other_name, RENAME_EXCHANGE, false);
    case ShortCore::kCreateSibling: {
      WALFS_ASSIGN_OR_RETURN(int c, Create(DirOf(t), fmt::format("C{}", step)));
      return Write(c, 0, 5000);
    }
    case ShortCore::kReplaceViaTmp: {
      if (!name) return Status::Ok();
      const Name target = *name;
      WALFS_ASSIGN_OR_RETURN(int tmp, Create(DirOf(t), fmt::format("T{}", step)));
      WALFS_RETURN_IF_ERROR(Write(tmp, 0, 7000));
      WALFS_RETURN_IF_ERROR(Fsync(tmp, false));
      WALFS_RETURN_IF_ERROR(Rename(*NameOf(tmp), target, 0, false));
      files_[op.target] = tmp;  // the file at the name from now on
      return Status::Ok();
    }
    case ShortCore::kMoveIntoNewDir: {
      if (!name) return Status::Ok();
      const Name from = *name;
      WALFS_ASSIGN_OR_RETURN(int nd, MakeDir(DirOf(t), fmt::format("D{}", step)));
      return Rename(from, {h_.dirs[nd].ino, fmt::format("m{}", step)}, 0, false);
    }
    case ShortCore::kRenameParent: {
      for (const auto& [n, e] : ns_)
        if (e.dir && e.id == d_) return Rename(Name(n), {h_.dirs[0].ino, fmt::format("e{}", step)}, 0, false);
      return Status::Ok();
    }
    case ShortCore::kCount: break;
  }
  return Status::Ok();
}

}  // namespace walfs::crash
