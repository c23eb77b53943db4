// fsck.walfs's checker (fs/fsck.h): the phases in their order
// (fs/fsck_phases.h, a file each, sharing fs/fsck_context.h), the repairs
// made through a mount, and CheckImage's passes -- the check run again
// while a pass repairs something, as e2fsck restarts.
#include "fs/fsck.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/fsck_context.h"
#include "fs/fsck_phases.h"

namespace walfs::fs {

std::size_t FsckReport::unrepaired() const {
  return static_cast<std::size_t>(
      std::count_if(problems.begin(), problems.end(), [](const FsckProblem& p) { return !p.repaired; }));
}

int FsckReport::ExitCode() const {
  if (!opened) return 8;
  if (unrepaired() > 0) return 4;
  return problems.empty() ? 0 : 1;
}

namespace {

// One pass: the superblock, then the six phases.
Status RunPhases(fsck::Context* c) {
  const FsckOptions& o = c->options;
  FsckReport* r = c->report;
  WALFS_RETURN_IF_ERROR(fsck::ReadSuperblock(c));
  WALFS_ASSIGN_OR_RETURN(const bool refused, fsck::RefuseOrZeroLog(c));
  if (refused) return Status::Ok();
  c->Phase(1);
  WALFS_RETURN_IF_ERROR(fsck::CheckLog(c));
  fsck::CheckErrorRecord(c);
  if (o.skip_if_clean && !o.zero_log && r->sb.clean() && c->log_was_clean && r->problems.empty()) {
    r->skipped = true;
    return Status::Ok();
  }
  c->Phase(2);
  WALFS_RETURN_IF_ERROR(fsck::CheckAgsAndInodes(c));
  c->Advance(2, 1);
  c->Phase(3);
  WALFS_RETURN_IF_ERROR(fsck::CheckBlockOwnership(c));
  c->Phase(4);
  fsck::CheckTree(c);
  c->Phase(5);
  fsck::CheckUnlinked(c);
  // The namespace repairs made offline, once the tree and the link counts
  // are known: a B+tree directory's entries and the inodes nothing reaches
  // are left to the repairs through a mount (walfs has no offline B+tree
  // editor); nothing reachable is freed.
  if (o.repair) {
    WALFS_RETURN_IF_ERROR(fsck::EmptyUnreadableDirectories(c));
    fsck::DropDanglingEntries(c);
    fsck::SetFoundLinkCounts(c);
  }
  c->Phase(6);
  WALFS_RETURN_IF_ERROR(fsck::CheckCounters(c));
  c->Advance(6, 1);
  return Status::Ok();
}

// Whether every problem left is one the repairs through a mount make (or
// the next pass then does): the allocation maps and every inode read
// agree, so the filesystem's own code may run on the image.
bool MountRepairable(const fsck::Context& c) {
  if (c.drops.empty() && c.orphans.empty()) return false;
  std::set<std::size_t> ok = c.mount_repairable;
  const FsckReport& r = *c.report;
  if (r.errors_problem != SIZE_MAX) ok.insert(r.errors_problem);  // cleared at the end
  for (const fsck::Drop& d : c.drops) ok.insert(d.problem);
  for (const auto& o : c.orphans) ok.insert(o.second);
  for (std::size_t i = 0; i < r.problems.size(); ++i)
    if (!r.problems[i].repaired && !ok.contains(i)) return false;
  return true;
}

// The pass's report was merged into `r` after `base` problems kept from
// earlier passes: its problem indices move with it.
void Rebase(fsck::Context* c, FsckReport* r, std::size_t base) {
  c->report = r;
  for (fsck::Drop& d : c->drops) d.problem += base;
  for (auto& o : c->orphans) o.second += base;
  std::set<std::size_t> moved;
  for (std::size_t i : c->mount_repairable) moved.insert(i + base);
  c->mount_repairable = std::move(moved);
}

// The repairs through a mount (docs/fs.md): the image mounted in-process,
// B+tree directory entries naming inodes not in use dropped, and inodes
// nothing reaches named in /lost+found.  Each repaired problem is marked in
// `r`; one that fails stays as it was, with the reason appended.
Status RepairThroughMount(BlockDevice* device, const fsck::Context& c, FsckReport* r) {
  MountOptions mo;
  mo.commit_interval_s = 0;
  mo.lazy_commit_ms = 0;
  mo.warn_recorded_errors = false;  // fsck reports the record itself
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<Filesystem> fs, Filesystem::MountDevice(device, mo));
  for (const auto& d : c.drops) {
    Status s = fs->RepairDropEntry(d.dir, d.name);
    r->problems[d.problem].message += s.ok() ? std::string(": entry removed") : fmt::format(" (not removed: {})", s.message());
    r->problems[d.problem].repaired = s.ok();
  }
  for (const auto& [ino, problem] : c.orphans) {
    Result<std::string> name = fs->RepairReconnect(ino);
    r->problems[problem].message +=
        name.ok() ? fmt::format(": reconnected as /lost+found/{}", *name)
                  : fmt::format(" (not reconnected: {})", name.status().message());
    r->problems[problem].repaired = name.ok();
  }
  return fs->Unmount();
}

}  // namespace

Result<FsckReport> CheckImage(BlockDevice* device, const FsckOptions& options) {
  if ((options.repair || options.zero_log) && !options.replay)
    return Status::InvalidArgument("repairs need the log replayed first (-n with -y or -L)");
  if (options.clear_and_reconnect && !options.repair)
    return Status::InvalidArgument("clear_and_reconnect needs repair");
  FsckReport r;
  auto c = std::make_unique<fsck::Context>(device, options, &r);
  Status s = RunPhases(c.get());
  if (!s.ok() && !r.opened) return s;
  if (!s.ok()) r.problems.push_back({fmt::format("the check stopped: {}", s.ToString()), false});
  // A repair can make others possible (leaks are freed only once every
  // owner reads; a corrected inode map changes what the tree finds; a
  // reconnected inode has its link count set by the next pass), as e2fsck
  // restarts: check again while the last pass repaired something.  What
  // the last pass found is the report's verdict; what earlier passes
  // repaired stays in it.
  for (int pass = 2; s.ok() && options.repair && pass <= 6; ++pass) {
    auto unrepaired = [&] {
      return std::any_of(r.problems.begin(), r.problems.end(), [](const FsckProblem& p) { return !p.repaired; });
    };
    if (!unrepaired()) break;
    // The allocation maps agree with the inodes, and only the namespace is
    // left: the filesystem's own code repairs it.
    if (MountRepairable(*c)) {
      if (Status m = RepairThroughMount(device, *c, &r); !m.ok())
        r.problems.push_back({fmt::format("repairs through a mount stopped: {}", m.ToString()), false});
    }
    if (!std::any_of(r.problems.begin(), r.problems.end(), [](const FsckProblem& p) { return p.repaired; })) break;
    FsckOptions again = options;
    again.zero_log = false;  // the log is clean now
    again.skip_if_clean = false;
    again.progress = nullptr;
    FsckReport next;
    c = std::make_unique<fsck::Context>(device, again, &next);
    s = RunPhases(c.get());
    if (!s.ok()) {
      r.problems.push_back({fmt::format("the check stopped: {}", s.ToString()), false});
      break;
    }
    std::vector<FsckProblem> kept;
    for (FsckProblem& p : r.problems)
      if (p.repaired) kept.push_back(std::move(p));
    const bool progress = std::any_of(next.problems.begin(), next.problems.end(),
                                      [](const FsckProblem& p) { return p.repaired; }) ||
                          MountRepairable(*c);
    // Indices in `next` shift by what was kept: the pass's lists index
    // the report it wrote, so it keeps writing into `next` until merged.
    const std::size_t base = kept.size();
    for (FsckProblem& p : next.problems) kept.push_back(std::move(p));
    r.problems = std::move(kept);
    r.recorded_errors = next.recorded_errors;
    r.errors_problem = next.errors_problem == SIZE_MAX ? SIZE_MAX : base + next.errors_problem;
    r.inodes_in_use = next.inodes_in_use;
    r.directories = next.directories;
    r.blocks_in_use = next.blocks_in_use;
    Rebase(c.get(), &r, base);
    if (!progress) break;
  }
  if (s.ok() && options.repair) WALFS_RETURN_IF_ERROR(ClearErrorRecord(device, &r));
  return r;
}

}  // namespace walfs::fs
