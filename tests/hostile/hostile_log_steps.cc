// The log-damage image's steps and durable set (hostile_log_steps.h).  The
// names and contents mirror Populate in hostile_image.cc.
#include "tests/hostile/hostile_log_steps.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <optional>

#include <fmt/format.h>

#include "fs/filesystem.h"

namespace walfs::hostile {

namespace {

constexpr const char* kStepNames[kNamedSteps] = {
    "an unlinked file left open",
    "big/entry-with-a-longish-name-0001 renamed to /renamed",
    "ten files unlinked from big/ (0101, 0103, ... 0119)",
    "user.late set on /xattrs",
    "/late-file created and written",
    "/late-dir/inner created and written",
    "/late-file renamed to /late-dir/moved, /xattrs hard-linked as small/late-link",
};

std::string BigName(int i) { return fmt::format("entry-with-a-longish-name-{:04}", i); }
bool UnlinkedByStep2(int i) { return i > 100 && i < 120 && i % 2 == 1; }

const std::string kLateData = [] {
  std::string s;
  for (int i = 0; s.size() < 3000; ++i) s += fmt::format("late line {}\n", i);
  return s;
}();
constexpr std::string_view kInnerData = "written in the last session, before the crash\n";
constexpr std::string_view kLateXattr = "after the checkpoint";

// Looks a name up without keeping a lookup count (the round later unlinks
// names; a count never forgotten would keep their inodes open).
std::optional<struct stat> Find(fs::Filesystem* fs, std::uint64_t parent, std::string_view name) {
  Result<struct stat> st = fs->Lookup(parent, name);
  if (!st.ok()) return std::nullopt;
  fs->Forget(st->st_ino, 1);
  return *st;
}

std::uint64_t Ino(fs::Filesystem* fs, std::string_view name) {
  auto st = Find(fs, fs->root(), name);
  return st ? st->st_ino : 0;
}

std::optional<std::string> ReadAll(fs::Filesystem* fs, std::uint64_t ino, std::size_t size) {
  std::string out(size, '\0');
  Result<std::size_t> n = fs->Read(ino, 0, size, out.data());
  if (!n.ok() || *n != size) return std::nullopt;
  return out;
}

bool HasContent(fs::Filesystem* fs, std::uint64_t parent, std::string_view name, std::string_view data) {
  auto st = Find(fs, parent, name);
  if (!st || static_cast<std::uint64_t>(st->st_size) != data.size()) return false;
  auto got = ReadAll(fs, st->st_ino, data.size());
  return got && *got == data;
}

StepView Of(bool applied, bool absent, std::string detail) {
  if (applied) return {StepState::kApplied, ""};
  if (absent) return {StepState::kAbsent, ""};
  return {StepState::kPartly, std::move(detail)};
}

}  // namespace

std::string_view StepName(std::size_t i) {
  if (i < kNamedSteps) return kStepNames[i];
  return i < kLogSteps ? "ten files created in /bulk" : "?";
}

namespace {

constexpr int kBulkFiles = 10;
std::string BulkName(std::size_t step, int f) { return fmt::format("step-{:02}-file-{}", step, f); }

}  // namespace

Status ApplyStep(fs::Filesystem* fs, const BaseImage& base, std::size_t i) {
  const fs::Caller me{};
  const std::uint64_t root = fs->root();
  switch (i) {
    case 0: {
      WALFS_ASSIGN_OR_RETURN(struct stat o, fs->Mknod(me, root, "orphan", S_IFREG | 0644, 0));
      WALFS_RETURN_IF_ERROR(fs->Write(o.st_ino, 0, kLateData.data(), 1000).status());
      return fs->Unlink(root, "orphan");  // its lookup is never forgotten: open
    }
    case 1: return fs->Rename(base.big_dir_ino, BigName(1), root, "renamed", 0);
    case 2:
      for (int e = 101; e < 120; e += 2) WALFS_RETURN_IF_ERROR(fs->Unlink(base.big_dir_ino, BigName(e)));
      return Status::Ok();
    case 3: return fs->SetXattr(base.xattr_file_ino, "user.late", kLateXattr, 0);
    case 4: {
      WALFS_ASSIGN_OR_RETURN(struct stat f, fs->Mknod(me, root, "late-file", S_IFREG | 0644, 0));
      WALFS_RETURN_IF_ERROR(fs->Write(f.st_ino, 0, kLateData.data(), kLateData.size()).status());
      fs->Forget(f.st_ino, 1);
      return Status::Ok();
    }
    case 5: {
      WALFS_ASSIGN_OR_RETURN(struct stat d, fs->Mkdir(me, root, "late-dir", 0755));
      WALFS_ASSIGN_OR_RETURN(struct stat f, fs->Mknod(me, d.st_ino, "inner", S_IFREG | 0644, 0));
      WALFS_RETURN_IF_ERROR(fs->Write(f.st_ino, 0, kInnerData.data(), kInnerData.size()).status());
      fs->Forget(f.st_ino, 1);
      fs->Forget(d.st_ino, 1);
      return Status::Ok();
    }
    case 6: {
      WALFS_RETURN_IF_ERROR(fs->Rename(root, "late-file", Ino(fs, "late-dir"), "moved", 0));
      WALFS_ASSIGN_OR_RETURN(struct stat l, fs->Link(base.xattr_file_ino, Ino(fs, "small"), "late-link"));
      fs->Forget(l.st_ino, 1);
      return Status::Ok();
    }
    default: {
      if (i >= kLogSteps) return Status::InvalidArgument(fmt::format("no step {}", i));
      std::uint64_t bulk = Ino(fs, "bulk");
      if (bulk == 0) {
        WALFS_ASSIGN_OR_RETURN(struct stat d, fs->Mkdir(me, root, "bulk", 0755));
        fs->Forget(d.st_ino, 1);
        bulk = d.st_ino;
      }
      for (int f = 0; f < kBulkFiles; ++f) {
        WALFS_ASSIGN_OR_RETURN(struct stat st, fs->Mknod(me, bulk, BulkName(i, f), S_IFREG | 0644, 0));
        fs->Forget(st.st_ino, 1);
      }
      return Status::Ok();
    }
  }
}

std::vector<StepView> StepStates(fs::Filesystem* fs, const BaseImage& base) {
  const std::uint64_t root = fs->root();
  const std::uint64_t big = base.big_dir_ino, small = Ino(fs, "small"), xattrs = base.xattr_file_ino;
  const std::uint64_t late_dir = Ino(fs, "late-dir");
  std::vector<StepView> v(kLogSteps);
  v[0] = Find(fs, root, "orphan") ? StepView{StepState::kPartly, "the unlinked orphan has a name"}
                                  : StepView{StepState::kHidden, ""};
  {
    const bool old_name = Find(fs, big, BigName(1)).has_value(), new_name = Find(fs, root, "renamed").has_value();
    v[1] = Of(!old_name && new_name, old_name && !new_name,
              fmt::format("entry 0001 in big/ {}, /renamed {}", old_name, new_name));
  }
  {
    int present = 0;
    for (int e = 101; e < 120; e += 2) present += Find(fs, big, BigName(e)).has_value();
    v[2] = Of(present == 0, present == 10, fmt::format("{} of the 10 entries still in big/", present));
  }
  {
    Result<std::string> x = fs->GetXattr(xattrs, "user.late");
    v[3] = Of(x.ok() && *x == kLateXattr, !x.ok(),
              x.ok() ? fmt::format("user.late is \"{}\"", *x) : std::string(x.status().message()));
  }
  {
    // Step 6 moves late-file: either name, with its content.
    const bool at_root = Find(fs, root, "late-file").has_value();
    const bool moved = late_dir != 0 && Find(fs, late_dir, "moved").has_value();
    const bool whole = HasContent(fs, root, "late-file", kLateData) ||
                       (late_dir != 0 && HasContent(fs, late_dir, "moved", kLateData));
    v[4] = Of(whole && at_root != moved, !at_root && !moved,
              fmt::format("/late-file {}, /late-dir/moved {}, content whole {}", at_root, moved, whole));
  }
  {
    const bool inner = late_dir != 0 && Find(fs, late_dir, "inner").has_value();
    v[5] = Of(inner && HasContent(fs, late_dir, "inner", kInnerData), late_dir == 0,
              fmt::format("/late-dir {}, inner {}", late_dir != 0, inner));
  }
  {
    const bool moved = late_dir != 0 && Find(fs, late_dir, "moved").has_value();
    const bool at_root = Find(fs, root, "late-file").has_value();
    auto link = Find(fs, small, "late-link");
    const bool linked = link && link->st_ino == xattrs;
    v[6] = Of(moved && !at_root && linked, !moved && !link,
              fmt::format("/late-dir/moved {}, /late-file {}, small/late-link {}", moved, at_root, link.has_value()));
  }
  const std::uint64_t bulk = Ino(fs, "bulk");
  for (std::size_t i = kNamedSteps; i < kLogSteps; ++i) {
    int present = 0;
    for (int f = 0; f < kBulkFiles && bulk != 0; ++f) present += Find(fs, bulk, BulkName(i, f)).has_value();
    v[i] = Of(present == kBulkFiles, present == 0, fmt::format("{} of its {} files in /bulk", present, kBulkFiles));
  }
  return v;
}

StepPrefix PrefixOf(const std::vector<StepView>& states) {
  StepPrefix p;
  bool absent_seen = false;
  for (std::size_t i = 0; i < states.size(); ++i) {
    switch (states[i].state) {
      case StepState::kPartly:
        p.is_prefix = false;
        p.why = fmt::format("step {} ({}) is partly there: {}", i, StepName(i), states[i].detail);
        return p;
      case StepState::kAbsent: absent_seen = true; break;
      case StepState::kApplied:
        if (absent_seen) {
          p.is_prefix = false;
          p.why = fmt::format("step {} ({}) is there, but an earlier step is not", i, StepName(i));
          return p;
        }
        p.applied = i + 1;
        break;
      case StepState::kHidden: break;  // shows neither way: the steps around it decide
    }
  }
  return p;
}

std::vector<std::string> CheckDurable(fs::Filesystem* fs, const BaseImage& base) {
  std::vector<std::string> lost;
  const std::uint32_t bs = base.sb.block_size;
  const std::uint64_t root = fs->root();
  auto want = [&](bool ok, std::string what) {
    if (!ok) lost.push_back(std::move(what));
  };
  const auto big = Find(fs, root, "big"), small = Find(fs, root, "small");
  const auto extents = Find(fs, root, "extents"), sparse = Find(fs, root, "sparse"), xattrs = Find(fs, root, "xattrs");
  want(big && S_ISDIR(big->st_mode) && big->st_ino == base.big_dir_ino, "/big");
  want(small && S_ISDIR(small->st_mode), "/small");
  want(extents && extents->st_ino == base.extent_file_ino, "/extents");
  want(sparse.has_value(), "/sparse");
  want(xattrs && xattrs->st_ino == base.xattr_file_ino, "/xattrs");
  Result<std::string> onroot = fs->GetXattr(root, "user.onroot");
  want(onroot.ok() && *onroot == "r", "the root's user.onroot");
  if (big) {
    for (int i = 0; i < 400; ++i) {
      if (i == 1 || UnlinkedByStep2(i)) continue;
      auto e = Find(fs, big->st_ino, BigName(i));
      want(e && (i % 10 == 0 ? S_ISDIR(e->st_mode) : S_ISREG(e->st_mode)), "big/" + BigName(i));
    }
  }
  if (small) {
    Result<std::string> s = Result<std::string>(Status::NotFound("short-link"));
    if (auto l = Find(fs, small->st_ino, "short-link")) s = fs->Readlink(l->st_ino);
    want(s.ok() && *s == "../big", "small/short-link");
    Result<std::string> l = Result<std::string>(Status::NotFound("long-link"));
    if (auto e = Find(fs, small->st_ino, "long-link")) l = fs->Readlink(e->st_ino);
    want(l.ok() && *l == std::string(600, 'x'), "small/long-link");
    auto fifo = Find(fs, small->st_ino, "fifo");
    want(fifo && S_ISFIFO(fifo->st_mode), "small/fifo");
    auto chr = Find(fs, small->st_ino, "chardev");
    want(chr && S_ISCHR(chr->st_mode) && chr->st_rdev == makedev(1, 3), "small/chardev");
    auto hard = Find(fs, small->st_ino, "hardlink");
    want(hard && sparse && hard->st_ino == sparse->st_ino, "small/hardlink");
  }
  std::string block(bs, 'e');
  if (extents) {
    bool ok = static_cast<std::uint64_t>(extents->st_size) == std::uint64_t{319} * bs;
    std::string got(bs, '\0');
    for (int i = 0; i < 160 && ok; ++i) {
      block[0] = static_cast<char>('a' + i % 26);
      Result<std::size_t> n = fs->Read(extents->st_ino, std::uint64_t{2} * i * bs, bs, got.data());
      ok = n.ok() && *n == bs && got == block;
    }
    want(ok, "/extents' size or data");
  }
  // /sparse holds the last /extents block's first 100 bytes, however far
  // the loop above got.
  block[0] = static_cast<char>('a' + 159 % 26);
  if (sparse) {
    std::string got(100, '\0');
    Result<std::size_t> n = fs->Read(sparse->st_ino, std::uint64_t{64} * bs, 100, got.data());
    want(static_cast<std::uint64_t>(sparse->st_size) == std::uint64_t{64} * bs + 100 && n.ok() && *n == 100 &&
             got == std::string_view(block).substr(0, 100),
         "/sparse's size or data");
  }
  if (xattrs) {
    auto data = ReadAll(fs, xattrs->st_ino, 6);
    want(data && *data == "hello\n", "/xattrs' data");
    for (int i = 0; i < 40; ++i) {
      Result<std::string> v = fs->GetXattr(xattrs->st_ino, fmt::format("user.small{}", i));
      want(v.ok() && *v == fmt::format("value number {}", i), fmt::format("/xattrs' user.small{}", i));
    }
    Result<std::string> large = fs->GetXattr(xattrs->st_ino, "user.large");
    want(large.ok() && *large == std::string(8 * bs, 'L'), "/xattrs' user.large");
  }
  return lost;
}

}  // namespace walfs::hostile
