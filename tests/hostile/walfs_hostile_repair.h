// walfs-hostile --repair: the flip campaign (issue 24, docs/hostile_images.md
// "Repair rounds"), one byte flipped per round, fsck -y, then a second
// check and a mount that must find nothing (RunRepairRound).
#pragma once

#include <cstdint>
#include <string>

namespace walfs::hostile {

struct RepairCampaignOptions {
  std::uint64_t seeds = 100;
  std::uint64_t seed_base = 1;
  int kind = -1;     // < 0: seed % kBlockKinds
  int flavour = -1;  // < 0: both
  double timeout_s = 60;
  bool fork = true;
  int show = 20;     // rounds left flagged printed with their first problem
};

// Prints a table per (flavour, kind), the structures left flagged, and the
// first `show` rounds the repair did not settle.  Exit status: 0 when every
// round was repaired (or refused a log only -L settles), 1 otherwise.
int RunRepairCampaign(const RepairCampaignOptions& o);

}  // namespace walfs::hostile
