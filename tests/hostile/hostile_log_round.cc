// One log-damage round (hostile_log_damage.h): damage the log, then mount,
// mount with norecovery, and repair with fsck -L, each on its own copy.
#include <algorithm>

#include <fmt/format.h>

#include "base/block_device_memory.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "tests/hostile/hostile_log_damage.h"
#include "tests/hostile/hostile_log_steps.h"
#include "tests/hostile/hostile_round.h"

namespace walfs::hostile {

namespace {

class LogRound {
 public:
  LogRound(const BaseImage& base, LogDamageResult* r) : base_(base), r_(r) {}

  // (a) A mount replays or refuses, saying what can still be done.
  void Mount(MemoryDevice& dev) {
    auto fs = fs::Filesystem::MountDevice(&dev, {.image = {}, .buffer_cache = 1024});
    if (!fs.ok()) {
      r_->mount_error = fs.status().ToString();
      if (fs.status().message().empty()) Violation("mount: refused without a message");
      else if (!Forged() && fs.status().message().find("fsck.walfs -L") == std::string::npos)
        Violation("mount: refused without naming -o norecovery and fsck.walfs -L: " + r_->mount_error);
      // A record at the head that fails its CRC, or a log cut short inside
      // its last record, is a torn write: trimmed, never fatal.
      if (TornHead()) Violation("mount: a torn head record refused the mount: " + r_->mount_error);
      NoModifyCheckNamesTheWayOut(dev);
      return;
    }
    r_->mounted = true;
    r_->steps_replayed = CheckSteps("mount", fs->get());
    Exercise("mount", *fs);
  }

  // (b) norecovery mounts read-only whatever the log holds, and shows the
  // image as last written back: the durable set, none of the steps.
  void Norecovery(MemoryDevice& dev) {
    auto fs = fs::Filesystem::MountDevice(
        &dev, {.image = {}, .read_only = true, .norecovery = true, .buffer_cache = 1024});
    if (!fs.ok()) {
      Violation("norecovery mount refused: " + fs.status().ToString());
      return;
    }
    r_->norecovery_mounted = true;
    for (const std::string& l : CheckDurable(fs->get(), base_)) Violation("norecovery: durable " + l + " is lost");
    const StepPrefix p = PrefixOf(StepStates(fs->get(), base_));
    if (!p.is_prefix || p.applied != 0)
      Violation(fmt::format("norecovery: shows {} of the log's steps ({})", p.applied, p.why));
    RoundResult walk;
    WalkMounted(fs->get(), &walk);
    Adopt("norecovery", walk, /*strict=*/true);
    (void)(*fs)->Unmount();
  }

  // (c) fsck -L, then a no-modify check that finds nothing, then a
  // read-write mount that keeps the durable set and survives the round.
  void Repair(MemoryDevice& dev) {
    auto fixed = fs::CheckImage(&dev, {.replay = true, .repair = true, .clear_and_reconnect = true, .zero_log = true});
    if (!fixed.ok()) {
      Violation("fsck -L could not run: " + fixed.status().ToString());
      return;
    }
    r_->repair_exit = fixed->ExitCode();
    for (const fs::FsckProblem& p : fixed->problems) {
      if (p.message.rfind("log zeroed", 0) == 0) r_->log_zeroed = true;
      if (p.message.empty()) Violation("fsck -L: a problem without a message");
    }
    auto check = fs::CheckImage(&dev, {.replay = false});
    if (!check.ok()) {
      Violation("fsck -n after fsck -L could not run: " + check.status().ToString());
      return;
    }
    r_->recheck_problems = check->problems.size();
    if (!Forged()) {
      if (check->log_dirty) Violation("fsck -n after fsck -L: the log is still dirty");
      for (std::size_t i = 0; i < check->problems.size() && i < 5; ++i)
        Violation("fsck -n after fsck -L: " + check->problems[i].message);
    }
    auto fs = fs::Filesystem::MountDevice(&dev, {.image = {}, .buffer_cache = 1024});
    if (!fs.ok()) {
      Violation("mount after fsck -L refused: " + fs.status().ToString());
      return;
    }
    r_->repaired_mounted = true;
    r_->steps_after_repair = CheckSteps("after fsck -L", fs->get());
    Exercise("after fsck -L", *fs);
    if (Forged()) return;
    auto after = fs::CheckImage(&dev, {.replay = false});
    if (!after.ok() || !after->problems.empty())
      Violation("fsck -n after the repaired image's round: " +
                (after.ok() ? after->problems.front().message : after.status().ToString()));
  }

 private:
  // A record resealed around a changed payload replays what it now says:
  // that is metadata damage written through the log, which neither a
  // mount nor fsck can tell from a change, so nothing about content or
  // consistency is asserted for it (only no crash, and messages).
  bool Forged() const { return r_->mutation.forged; }
  bool Resealed() const { return r_->mutation.resealed; }
  bool TornHead() const {
    const LogMutation& m = r_->mutation;
    return m.changed && m.at_head && !m.resealed &&
           (m.kind == LogDamageKind::kHeadCrc || m.kind == LogDamageKind::kTornHead);
  }

  void Violation(std::string v) { r_->violations.push_back(std::move(v)); }

  // fsck -n on a log the mount refused reports it, with the same way out.
  void NoModifyCheckNamesTheWayOut(MemoryDevice& dev) {
    auto check = fs::CheckImage(&dev, {.replay = false});
    if (!check.ok()) {
      Violation("fsck -n of the refused image could not run: " + check.status().ToString());
      return;
    }
    const bool named = std::any_of(check->problems.begin(), check->problems.end(), [](const fs::FsckProblem& p) {
      return p.message.rfind("log: ", 0) == 0 && p.message.find("fsck.walfs -L") != std::string::npos;
    });
    if (!named && !Forged()) Violation("fsck -n of the refused image does not name fsck.walfs -L");
  }

  // The steps a mounted image shows: a prefix of them (the log replayed in
  // order and cut at the damage), with every step wholly before a damage
  // the CRCs catch.  Returns how many.
  int CheckSteps(std::string_view when, fs::Filesystem* fs) {
    if (!Forged())
      for (const std::string& l : CheckDurable(fs, base_)) Violation(fmt::format("{}: durable {} is lost", when, l));
    const StepPrefix p = PrefixOf(StepStates(fs, base_));
    if (Forged()) return static_cast<int>(p.applied);
    if (!p.is_prefix) Violation(fmt::format("{}: the steps are not a prefix: {}", when, p.why));
    // The steps wholly before the damage, less trailing hidden ones (which
    // no name shows).
    std::size_t need = r_->mutation.steps_before;
    while (need > 0 && need - 1 == kHiddenStep) --need;
    if (!Resealed() && !r_->log_zeroed && p.applied < need)
      Violation(fmt::format("{}: {} steps kept, but {} lie wholly before the damage", when, p.applied, need));
    return static_cast<int>(p.applied);
  }

  void Exercise(std::string_view when, const std::unique_ptr<fs::Filesystem>& fs) {
    RoundResult walk;
    ExerciseMounted(fs.get(), &walk);
    const Status s = fs->Unmount();
    if (!s.ok()) {
      walk.unmount_error = s.ToString();
      if (!Forged()) Violation(fmt::format("{}: unmount failed: {}", when, s.ToString()));
    }
    Adopt(when, walk, !Forged());
  }

  void Adopt(std::string_view when, const RoundResult& walk, bool strict) {
    for (const std::string& v : walk.violations) Violation(fmt::format("{}: {}", when, v));
    if (strict && walk.damage_errors > 0)
      Violation(fmt::format("{}: {} operations met damage, first {}", when, walk.damage_errors, walk.first_error));
  }

  const BaseImage& base_;
  LogDamageResult* r_;
};

}  // namespace

LogDamageResult RunLogDamageRound(const BaseImage& base, std::uint64_t seed, int kind) {
  LogDamageResult r;
  r.seed = seed;
  ScratchImage scratch(base);
  r.mutation = MutateLog(base, seed, scratch.bytes(), kind);
  const DamagedImage damaged = scratch.Damaged(r.mutation.offset, r.mutation.length);
  Messages::Get().Clear();
  LogRound round(base, &r);
  round.Mount(*damaged.Device());
  round.Norecovery(*damaged.Device());
  round.Repair(*damaged.Device());
  r.messages = Messages::Get().Text();
  return r;
}

}  // namespace walfs::hostile
