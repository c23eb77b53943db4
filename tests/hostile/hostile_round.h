// One hostile-image round (docs/hostile_images.md, "What is asserted"):
// mutate a copy of a base image, fsck it, mount it, and if it mounts, walk
// the whole tree reading everything, change a few things, and unmount.
//
//   RoundResult r = RunRound(base, seed);
//   for (const std::string& v : r.violations) ADD_FAILURE() << v;
//
// Violations are what the round asserts: every error is a Status with a
// message, and fsck reports damage to a clean image's in-use metadata that
// its checksums or magics must catch (Mutation::must_flag).  A crash or a
// hang is the caller's to catch (a watchdog, or a forked child).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_mutate.h"

namespace walfs::fs {
class Filesystem;
}

namespace walfs::hostile {

struct RoundResult {
  std::uint64_t seed = 0;
  Mutation mutation;
  // fsck (on its own copy, replaying a dirty log as fsck.walfs does).
  bool fsck_flagged = false;    // problems, or it could not open the image
  int fsck_exit = 0;            // fsck.walfs's exit code
  std::string fsck_first;       // the first problem or the error
  // Mount.
  bool mounted = false;
  std::string mount_error;      // the refusal, when not mounted
  // After a mount: operations tried, and how many failed with a corruption,
  // I/O or shutdown error (the filesystem noticed damage) or another error
  // (a name or size the damage made wrong: ENOENT, EEXIST, ENOSPC, ...).
  std::uint64_t ops = 0;
  std::uint64_t damage_errors = 0;
  std::uint64_t other_errors = 0;
  std::string first_error;
  bool unmount_ok = false;
  std::string unmount_error;
  std::vector<std::string> violations;
  // The kernel-log lines (base/messages.h) the round produced: shutdowns,
  // refusals, corruption met.  RunOnImage empties the process's message
  // ring first; callers that expect these messages silence the sink
  // (Messages::Sink::kNone) and print this for a failed round.
  std::string messages;
};

// Deterministic in (base, seed, kind): kind < 0 lets the seed choose.
RoundResult RunRound(const BaseImage& base, std::uint64_t seed, int kind = -1);
// The same on an image damaged elsewhere (the image fuzzer), `m` saying how.
RoundResult RunOnImage(std::vector<std::byte> image, const Mutation& m);

// The mounted part (hostile_walk.cc): walks the whole tree reading every
// file, symlink and xattr, then creates, writes, renames, truncates and
// unlinks a few things.  Bounded however the tree is damaged (depth,
// entries, bytes, a directory reached twice).
void ExerciseMounted(fs::Filesystem* fs, RoundResult* r);
// The walk alone (a read-only mount).
void WalkMounted(fs::Filesystem* fs, RoundResult* r);

}  // namespace walfs::hostile
