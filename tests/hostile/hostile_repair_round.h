// The flip campaign's round (docs/hostile_images.md, "Repair rounds";
// issue 24): one byte of one metadata block flipped, then what
// `fsck.walfs -y` must achieve -- a second check finds nothing and the
// image mounts, walks, changes and unmounts without meeting damage.
//
//   RepairRoundResult r = RunRepairRound(base, seed);
//   if (!r.left.empty()) fmt::print("{}\n", r.left.front());
//
// `left` is what the repair did not fix: problems -y left unrepaired and
// problems the second check (-n) still reports, each with the structure it
// names (RepairStructureOf), so a campaign can count them by structure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_mutate.h"

namespace walfs::hostile {

struct RepairRoundResult {
  std::uint64_t seed = 0;
  Mutation mutation;
  bool opened = false;            // the first check opened the image
  int repair_exit = 0;            // fsck.walfs -y's exit code (0 clean, 1 repaired, 4 left, 8 not run)
  bool log_unreplayable = false;  // -y refused a log it cannot replay (by design: -L's to settle)
  std::vector<std::string> left;  // unrepaired after -y, then what the second check reports
  int second_exit = 0;            // the second check's (-n) exit code
  bool mounted = false;
  std::string mount_error;
  std::uint64_t damage_errors = 0;  // the walk and changes after the mount
  std::string first_error;
  bool unmount_ok = false;
  std::string messages;
  // Repaired: the second check is clean, and the image mounted, met no
  // damage and unmounted.
  bool repaired() const { return left.empty() && second_exit == 0 && mounted && damage_errors == 0 && unmount_ok; }
};

// Deterministic in (base, seed, kind): FlipOneByte, then the round.
RepairRoundResult RunRepairRound(const BaseImage& base, std::uint64_t seed, int kind = -1);

// The structure a problem message names, for counting: "ag_header",
// "bitmap", "imap", "inode", "dir_tree", "extent_tree", "xattr_tree",
// "namespace", "counters", "log", "superblock", or "other".
std::string_view RepairStructureOf(std::string_view problem);

}  // namespace walfs::hostile
