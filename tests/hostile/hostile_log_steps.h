// The steps of a log-damage image's crashed session, and what the image
// must show of them and of what came before (hostile_log_damage.h).
//
// Each step is one checkpoint (the session's lazy and periodic pushes are
// off, and each step ends with Sync), so a recovery applies a step whole or
// not at all, and applies a prefix of them: a torn or trimmed log loses its
// newest steps first.
//
//   for (std::size_t i = 0; i < kLogSteps; ++i) ApplyStep(fs, base, i), fs->Sync(), ...
//   std::vector<StepState> s = StepStates(fs, base);
//   std::vector<std::string> lost = CheckDurable(fs, base);
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tests/hostile/hostile_image.h"

namespace walfs::fs {
class Filesystem;
}

namespace walfs::hostile {

// Seven steps that touch the durable set's structures, then small ones
// (ten files created in /bulk each) that put the first seven more than the
// recovery window (journal::RecoveryWindowSectors: 16 of the largest log
// buffers, 1,840 sectors) behind the head: damage there is in the middle
// of the log, which a mount must refuse and fsck -L zero.
inline constexpr std::size_t kNamedSteps = 7;
inline constexpr std::size_t kBulkSteps = 90;
inline constexpr std::size_t kLogSteps = kNamedSteps + kBulkSteps;
inline constexpr std::size_t kHiddenStep = 0;  // the unlinked file left open: no name shows it
std::string_view StepName(std::size_t i);
Status ApplyStep(fs::Filesystem* fs, const BaseImage& base, std::size_t i);

enum class StepState {
  kAbsent,   // none of the step is visible
  kApplied,  // all of it is
  kHidden,   // the step leaves nothing a name can see (an unlinked file left open)
  kPartly,   // some of it: a checkpoint half applied, or damage
};
struct StepView {
  StepState state = StepState::kAbsent;
  std::string detail;  // for kPartly: what is and is not there
};
std::vector<StepView> StepStates(fs::Filesystem* fs, const BaseImage& base);

// How many leading steps are applied (up to the last one applied; a hidden
// step shows neither way), and whether the states are such a prefix: no step partly
// there, none applied after one absent.
struct StepPrefix {
  std::size_t applied = 0;
  bool is_prefix = true;
  std::string why;  // when not
};
StepPrefix PrefixOf(const std::vector<StepView>& states);

// The durable set: every file, directory, link, device node and xattr that
// Populate made and the unmount after it wrote to its home location, less
// what the steps touch (a renamed entry, unlinked entries: those are the
// steps' to show).  Names and contents, read through the filesystem; what is
// missing or wrong, one line each (empty: all there).
std::vector<std::string> CheckDurable(fs::Filesystem* fs, const BaseImage& base);

}  // namespace walfs::hostile
