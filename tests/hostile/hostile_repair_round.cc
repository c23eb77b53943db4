#include "tests/hostile/hostile_repair_round.h"

#include <fmt/format.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "tests/hostile/hostile_round.h"

namespace walfs::hostile {

namespace {

bool Has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// fsck -y, fsck -n, mount, walk, change, unmount; fills *r.
void Round(MemoryDevice& dev, RepairRoundResult* r) {
  Result<fs::FsckReport> repair =
      fs::CheckImage(&dev, {.replay = true, .repair = true, .clear_and_reconnect = true});
  if (!repair.ok()) {
    r->repair_exit = 8;
    r->left.push_back(fmt::format("-y: {}", repair.status().message()));
    return;
  }
  r->opened = repair->opened;
  r->repair_exit = repair->ExitCode();
  r->log_unreplayable = repair->log_unreplayable;
  for (const fs::FsckProblem& p : repair->problems)
    if (!p.repaired) r->left.push_back(fmt::format("-y left: {}", p.message));

  Result<fs::FsckReport> second = fs::CheckImage(&dev, {.replay = false});
  if (!second.ok()) {
    r->second_exit = 8;
    r->left.push_back(fmt::format("-n: {}", second.status().message()));
  } else {
    r->second_exit = second->ExitCode();
    for (const fs::FsckProblem& p : second->problems) r->left.push_back(fmt::format("-n: {}", p.message));
  }

  Result<std::unique_ptr<fs::Filesystem>> fs = fs::Filesystem::MountDevice(&dev, {.image = {}, .buffer_cache = 1024});
  if (!fs.ok()) {
    r->mount_error = std::string(fs.status().message());
    return;
  }
  r->mounted = true;
  RoundResult walk;
  ExerciseMounted(fs->get(), &walk);
  r->damage_errors = walk.damage_errors;
  r->first_error = walk.first_error;
  const Status s = (*fs)->Unmount();
  r->unmount_ok = s.ok();
  if (!s.ok() && r->first_error.empty()) r->first_error = std::string(s.message());
}

}  // namespace

RepairRoundResult RunRepairRound(const BaseImage& base, std::uint64_t seed, int kind) {
  ScratchImage scratch(base);
  RepairRoundResult r;
  r.seed = seed;
  r.mutation = FlipOneByte(base, seed, scratch.bytes(), kind);
  const std::unique_ptr<MemoryDevice> dev = scratch.Damaged(r.mutation.offset, r.mutation.length).Device();
  Messages::Get().Clear();
  Round(*dev, &r);
  r.messages = Messages::Get().Text();
  return r;
}

std::string_view RepairStructureOf(std::string_view p) {
  if (Has(p, "claimed") || Has(p, "owned by nothing") || Has(p, "free in the bitmap")) return "ownership";
  if (Has(p, "log")) return "log";
  if (Has(p, "superblock")) return "superblock";
  if (Has(p, "header")) return Has(p, "AG ") ? "ag_header" : "other";
  if (Has(p, "bitmap")) return "bitmap";
  if (Has(p, "inode map")) return "imap";
  if (Has(p, "directory tree") || (Has(p, "directory ") && Has(p, "B+tree"))) return "dir_tree";
  if (Has(p, "extent tree") || Has(p, "extent record") || Has(p, "extents but counts") ||
      (Has(p, "maps ") && Has(p, "blocks but counts")))
    return "extent_tree";
  if (Has(p, "xattr")) return "xattr_tree";
  if (Has(p, "counters")) return "counters";
  if (Has(p, "inode ") && (Has(p, "CRC") || Has(p, "magic"))) return "inode";
  if (Has(p, "directory") || Has(p, "link") || Has(p, "unlinked") || Has(p, "lost+found")) return "namespace";
  return "other";
}

}  // namespace walfs::hostile
