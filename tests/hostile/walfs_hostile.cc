// walfs-hostile: damaged images against fsck and mount, many rounds, with a
// table of outcomes (docs/hostile_images.md, "walfs-hostile").
//
//   walfs-hostile [--quick] [--seeds N] [--seed-base S] [--kind KIND]
//                 [--flavour clean|crashed] [--timeout SECONDS] [--no-fork]
//                 [--json PATH]
//   walfs-hostile --repair [--seeds N] [--seed-base S] [--kind KIND]
//                 [--flavour clean|crashed] [--show N]
//
// Each round runs in a forked child (unless --no-fork), so a crash or a
// hang is counted with its seed rather than ending the run.  Exit status:
// 0 when no round crashed, hung or broke an assertion, 1 otherwise, 2 for
// bad usage.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/messages.h"
#include "tests/hostile/forked_round.h"
#include "tests/hostile/hostile_guard.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_round.h"
#include "tests/hostile/walfs_hostile_repair.h"
#include "tools/cli.h"

namespace walfs::hostile {
namespace {

struct Options {
  std::uint64_t seeds = 1000;  // rounds per flavour
  std::uint64_t seed_base = 1;
  int kind = -1;
  int flavour = -1;
  double timeout_s = 60;
  bool fork = true;
  std::string json;
};

// What a child hands back through shared memory.
struct Shared {
  bool done;
  bool mounted, fsck_flagged, must_flag, damaged, unmount_ok;
  std::uint32_t violations;
  char first_violation[400];
  char description[200];
  char first_error[300];
  char messages[1200];  // the round's kernel log (the end of it, if long)
};

void Copy(char* dst, std::size_t n, const std::string& s) {
  std::snprintf(dst, n, "%s", s.c_str());
}

void Fill(const RoundResult& r, Shared* out) {
  out->mounted = r.mounted;
  out->fsck_flagged = r.fsck_flagged;
  out->must_flag = r.mutation.must_flag;
  out->damaged = r.damage_errors > 0 || (r.mounted && !r.unmount_ok);
  out->unmount_ok = r.unmount_ok;
  out->violations = static_cast<std::uint32_t>(r.violations.size());
  Copy(out->first_violation, sizeof(out->first_violation), r.violations.empty() ? "" : r.violations.front());
  Copy(out->description, sizeof(out->description), r.mutation.description);
  Copy(out->first_error, sizeof(out->first_error), r.first_error.empty() ? r.unmount_error : r.first_error);
  const std::size_t keep = sizeof(out->messages) - 1;
  Copy(out->messages, sizeof(out->messages),
       r.messages.size() > keep ? r.messages.substr(r.messages.size() - keep) : r.messages);
  out->done = true;
}

struct Row {
  std::uint64_t tried = 0, refused = 0, mounted = 0, mounted_errors = 0, fsck_flagged = 0, must_flag = 0,
                missed = 0, fsck_blind = 0, violations = 0, crashes = 0, hangs = 0;
  void Add(const Row& o) {
    tried += o.tried; refused += o.refused; mounted += o.mounted; mounted_errors += o.mounted_errors;
    fsck_flagged += o.fsck_flagged; must_flag += o.must_flag; missed += o.missed; fsck_blind += o.fsck_blind;
    violations += o.violations;
    crashes += o.crashes; hangs += o.hangs;
  }
};


int Run(const Options& o) {
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) {
    std::perror("walfs-hostile: mmap");
    return 1;
  }
  std::map<std::pair<int, int>, Row> rows;
  std::vector<std::string> failures;
  std::vector<std::string> blind;  // the mount met damage fsck did not report
  std::uint64_t total = 0;
  RoundGuard guard(o.timeout_s);  // --no-fork: a hang aborts with its seed
  for (int f = 0; f < 2; ++f) {
    if (o.flavour >= 0 && f != o.flavour) continue;
    const Flavour flavour = static_cast<Flavour>(f);
    auto base = BuildBaseImage(flavour);
    if (!base.ok()) {
      fmt::print(stderr, "walfs-hostile: {}\n", base.status().ToString());
      return 1;
    }
    for (std::uint64_t seed = o.seed_base; seed < o.seed_base + o.seeds; ++seed) {
      const int kind = o.kind >= 0 ? o.kind : static_cast<int>(seed % kBlockKinds);
      Row& row = rows[{f, kind}];
      ++row.tried;
      ++total;
      Fate fate = Fate::kFinished;
      int signo = 0;
      if (o.fork) {
        std::memset(shared, 0, sizeof(*shared));
        fate = RunForked([&] { Fill(RunRound(*base, seed, kind), shared); }, &shared->done, o.timeout_s, &signo);
      } else {
        guard.Begin(seed);
        Fill(RunRound(*base, seed, kind), shared);
        guard.End();
      }
      const std::string where = fmt::format("{} seed={} kind={}", FlavourName(flavour), seed,
                                            BlockKindName(static_cast<BlockKind>(kind)));
      if (fate == Fate::kCrashed) {
        ++row.crashes;
        failures.push_back(fmt::format("CRASH {} (signal {})", where, signo));
        continue;
      }
      if (fate == Fate::kHung) {
        ++row.hangs;
        failures.push_back(fmt::format("HANG {} (over {} s)", where, o.timeout_s));
        continue;
      }
      const Shared& s = *shared;
      row.refused += !s.mounted;
      row.mounted += s.mounted;
      row.mounted_errors += s.mounted && s.damaged;
      row.fsck_flagged += s.fsck_flagged;
      row.must_flag += s.must_flag;
      row.missed += s.must_flag && !s.fsck_flagged;
      if (s.mounted && s.damaged && !s.fsck_flagged) {
        ++row.fsck_blind;
        blind.push_back(fmt::format("FSCK-BLIND {}: {} -> {}", where, s.description, s.first_error));
      }
      if (s.violations > 0) {
        row.violations += 1;
        failures.push_back(fmt::format("VIOLATION {}: {} ({})\n{}", where, s.first_violation, s.description,
                                       s.messages));
      }
    }
  }

  static constexpr char kHeader[] = "{:<8} {:<12} {:>6} {:>8} {:>8} {:>9} {:>8} {:>9} {:>7} {:>6} {:>5} {:>7} {:>5}\n";
  fmt::print(kHeader, "flavour", "kind", "tried", "refused", "mounted", "mnt+errs", "fsck", "must_flag", "missed",
             "blind", "viol", "crashes", "hangs");
  std::ofstream json;
  if (!o.json.empty()) json.open(o.json);
  Row all;
  auto emit = [&](const std::string& flavour, const std::string& kind, const Row& r) {
    fmt::print(kHeader, flavour, kind, r.tried, r.refused, r.mounted, r.mounted_errors, r.fsck_flagged, r.must_flag,
               r.missed, r.fsck_blind, r.violations, r.crashes, r.hangs);
    if (json.is_open())
      json << nlohmann::json{{"flavour", flavour},        {"kind", kind},
                             {"tried", r.tried},          {"refused", r.refused},
                             {"mounted", r.mounted},      {"mounted_errors", r.mounted_errors},
                             {"fsck_flagged", r.fsck_flagged}, {"must_flag", r.must_flag},
                             {"missed", r.missed},        {"fsck_blind", r.fsck_blind},
                             {"violations", r.violations},
                             {"crashes", r.crashes},      {"hangs", r.hangs}}
                  .dump()
           << "\n";
  };
  for (const auto& [key, r] : rows) {
    emit(std::string(FlavourName(static_cast<Flavour>(key.first))),
         std::string(BlockKindName(static_cast<BlockKind>(key.second))), r);
    all.Add(r);
  }
  emit("all", "all", all);
  // The first few rounds fsck was blind to, as leads (not failures).
  for (std::size_t i = 0; i < blind.size() && i < 10; ++i) fmt::print("{}\n", blind[i]);
  for (const std::string& f : failures) fmt::print("{}\n", f);
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace walfs::hostile

int main(int argc, char** argv) {
  using namespace walfs::hostile;
  Options o;
  CLI::App app{"walfs-hostile: damages one metadata block of a populated image per round (both "
               "flavours: cleanly unmounted, crashed with a dirty log), then runs fsck and mounts, "
               "walks, changes and unmounts it.  Prints a table of outcomes per flavour and block "
               "kind, then every round that crashed, hung or broke an assertion.",
               "walfs-hostile"};
  walfs::cli::AddVersion(app, "walfs-hostile");
  std::vector<std::string> kinds;
  for (int j = 0; j < kBlockKinds; ++j) kinds.emplace_back(BlockKindName(static_cast<BlockKind>(j)));
  std::string kind, flavour;
  bool quick = false, no_fork = false, repair = false;
  int show = 20;
  app.add_flag("--quick", quick, "54 rounds per flavour (unless --seeds)");
  app.add_option("--seeds", o.seeds, "rounds per flavour (default 1000)")->check(walfs::cli::AtLeast(1));
  app.add_option("--seed-base", o.seed_base, "the first round's seed (default 1)")->check(walfs::cli::AtLeast(0));
  app.add_option("--kind", kind, "only this block kind")->check(CLI::IsMember(kinds));
  app.add_option("--flavour", flavour, "only this flavour: clean or crashed")
      ->check(CLI::IsMember({"clean", "crashed"}));
  app.add_option("--timeout", o.timeout_s, "seconds a round may take before it counts as hung (default 60)")
      ->check(walfs::cli::Positive());
  app.add_flag("--no-fork", no_fork, "run rounds in this process (a crash ends the run)");
  app.add_option("--json", o.json, "one JSON object per table row");
  app.add_flag("--repair", repair,
               "the flip campaign instead: one byte flipped per round, fsck -y, then a second check and a "
               "mount must find nothing (default 100 rounds per flavour)");
  app.add_option("--show", show, "--repair: rounds left unsettled printed (default 20)")->check(walfs::cli::AtLeast(0));
  if (auto code = walfs::cli::Parse(app, argc, argv)) return *code;
  if (quick && app.count("--seeds") == 0) o.seeds = 54;
  o.fork = !no_fork;
  if (!flavour.empty()) o.flavour = flavour == "clean" ? 0 : 1;
  for (int j = 0; j < kBlockKinds; ++j)
    if (!kind.empty() && kinds[static_cast<std::size_t>(j)] == kind) o.kind = j;
  // Damaged rounds shut filesystems down and refuse mounts by design: their
  // messages go with the round's report (VIOLATION lines), not to stderr.
  walfs::Messages::Get().SetSink(walfs::Messages::Sink::kNone);
  if (repair)
    return RunRepairCampaign({.seeds = app.count("--seeds") ? o.seeds : 100,
                              .seed_base = o.seed_base,
                              .kind = o.kind,
                              .flavour = o.flavour,
                              .timeout_s = o.timeout_s,
                              .fork = o.fork,
                              .show = show});
  return Run(o);
}
