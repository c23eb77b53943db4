#include "tests/hostile/walfs_hostile_repair.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "tests/hostile/forked_round.h"
#include "tests/hostile/hostile_guard.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_repair_round.h"

namespace walfs::hostile {
namespace {

// What a child hands back through shared memory.
struct RepairShared {
  bool done, opened, log_unreplayable, mounted, unmount_ok, repaired;
  int repair_exit, second_exit;
  std::uint64_t damage_errors;
  char description[200];
  char left[2000];  // the problems left, one a line (the first ones)
  char error[300];  // the mount's refusal or the first damage error
};

void CopyText(char* dst, std::size_t n, const std::string& s) { std::snprintf(dst, n, "%s", s.c_str()); }

void Fill(const RepairRoundResult& r, RepairShared* out) {
  out->opened = r.opened;
  out->log_unreplayable = r.log_unreplayable;
  out->mounted = r.mounted;
  out->unmount_ok = r.unmount_ok;
  out->repaired = r.repaired();
  out->repair_exit = r.repair_exit;
  out->second_exit = r.second_exit;
  out->damage_errors = r.damage_errors;
  CopyText(out->description, sizeof(out->description), r.mutation.description);
  std::string left;
  for (const std::string& l : r.left) left += l + "\n";
  CopyText(out->left, sizeof(out->left), left);
  CopyText(out->error, sizeof(out->error), r.mounted ? r.first_error : r.mount_error);
  out->done = true;
}

struct RepairRow {
  std::uint64_t tried = 0, exit0 = 0, exit1 = 0, exit4 = 0, exit8 = 0, log_refused = 0, flagged = 0,
                unmountable = 0, damaged = 0, settled = 0, crashes = 0, hangs = 0;
  void Add(const RepairRow& o) {
    tried += o.tried; exit0 += o.exit0; exit1 += o.exit1; exit4 += o.exit4; exit8 += o.exit8;
    log_refused += o.log_refused; flagged += o.flagged; unmountable += o.unmountable; damaged += o.damaged;
    settled += o.settled; crashes += o.crashes; hangs += o.hangs;
  }
};


}  // namespace

int RunRepairCampaign(const RepairCampaignOptions& o) {
  auto* shared = static_cast<RepairShared*>(
      mmap(nullptr, sizeof(RepairShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) {
    std::perror("walfs-hostile: mmap");
    return 1;
  }
  std::map<std::pair<int, int>, RepairRow> rows;
  // Rounds left flagged, per structure a problem left names (a round counts
  // once per structure).
  std::map<std::string, std::uint64_t> by_structure;
  std::vector<std::string> unsettled;
  RoundGuard guard(o.timeout_s);
  for (int f = 0; f < 2; ++f) {
    if (o.flavour >= 0 && f != o.flavour) continue;
    const Flavour flavour = static_cast<Flavour>(f);
    auto base = BuildBaseImage(flavour);
    if (!base.ok()) {
      fmt::print(stderr, "walfs-hostile: {}\n", base.status().message());
      return 1;
    }
    for (std::uint64_t seed = o.seed_base; seed < o.seed_base + o.seeds; ++seed) {
      const int kind = o.kind >= 0 ? o.kind : static_cast<int>(seed % kBlockKinds);
      RepairRow& row = rows[{f, kind}];
      ++row.tried;
      const std::string where = fmt::format("{} seed={} kind={}", FlavourName(flavour), seed,
                                            BlockKindName(static_cast<BlockKind>(kind)));
      Fate fate = Fate::kFinished;
      if (o.fork) {
        std::memset(shared, 0, sizeof(*shared));
        int signo = 0;
        fate = RunForked([&] { Fill(RunRepairRound(*base, seed, kind), shared); }, &shared->done, o.timeout_s,
                         &signo);
      } else {
        std::memset(shared, 0, sizeof(*shared));
        guard.Begin(seed);
        Fill(RunRepairRound(*base, seed, kind), shared);
        guard.End();
      }
      if (fate != Fate::kFinished) {
        (fate == Fate::kCrashed ? row.crashes : row.hangs) += 1;
        unsettled.push_back(fmt::format("{} {}", fate == Fate::kCrashed ? "CRASH" : "HANG", where));
        continue;
      }
      const RepairShared& s = *shared;
      (s.repair_exit == 0 ? row.exit0 : s.repair_exit == 1 ? row.exit1 : s.repair_exit == 4 ? row.exit4 : row.exit8) += 1;
      row.log_refused += s.log_unreplayable;
      const bool flagged = s.left[0] != '\0' || s.second_exit != 0;
      row.flagged += flagged;
      row.unmountable += !s.mounted;
      row.damaged += s.mounted && (s.damage_errors > 0 || !s.unmount_ok);
      row.settled += s.repaired;
      if (s.repaired || s.log_unreplayable) continue;
      std::set<std::string> structures;
      std::istringstream lines(s.left);
      for (std::string line; std::getline(lines, line);)
        structures.insert(std::string(RepairStructureOf(line)));
      if (!s.mounted) structures.insert("(unmountable)");
      for (const std::string& st : structures) ++by_structure[st];
      std::string first = s.left;
      if (const auto nl = first.find('\n'); nl != std::string::npos) first.resize(nl);
      unsettled.push_back(fmt::format("LEFT {}: {}\n    {}{}", where, s.description, first.empty() ? "" : first,
                                      s.mounted ? (s.damage_errors ? fmt::format(" | mounted, then: {}", s.error) : "")
                                                : fmt::format(" | mount refused: {}", s.error)));
    }
  }
  static constexpr char kHeader[] = "{:<8} {:<12} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>5}\n";
  fmt::print(kHeader, "flavour", "kind", "tried", "-y=0", "-y=1", "-y=4", "-y=8", "log-ref", "flagged", "unmount",
             "mnt+errs", "settled", "crashes", "hangs");
  RepairRow all;
  for (const auto& [key, r] : rows) {
    fmt::print(kHeader, FlavourName(static_cast<Flavour>(key.first)), BlockKindName(static_cast<BlockKind>(key.second)),
               r.tried, r.exit0, r.exit1, r.exit4, r.exit8, r.log_refused, r.flagged, r.unmountable, r.damaged,
               r.settled, r.crashes, r.hangs);
    all.Add(r);
  }
  fmt::print(kHeader, "all", "all", all.tried, all.exit0, all.exit1, all.exit4, all.exit8, all.log_refused,
             all.flagged, all.unmountable, all.damaged, all.settled, all.crashes, all.hangs);
  fmt::print("\nrounds left unsettled by structure (log refusals, -L's to settle, not counted):\n");
  for (const auto& [st, n] : by_structure) fmt::print("  {:<14} {}\n", st, n);
  for (std::size_t i = 0; i < unsettled.size() && i < static_cast<std::size_t>(o.show); ++i)
    fmt::print("{}\n", unsettled[i]);
  if (unsettled.size() > static_cast<std::size_t>(o.show))
    fmt::print("... and {} more\n", unsettled.size() - static_cast<std::size_t>(o.show));
  return unsettled.empty() ? 0 : 1;
}

}  // namespace walfs::hostile
