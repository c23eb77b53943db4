// The log-damage flavour of the hostile-image campaign
// (docs/hostile_images.md, "Log damage"): a crashed image whose log is
// damaged, which must now be repaired, not only refused (issue 17).
//
//   WALFS_ASSIGN_OR_RETURN(BaseImage base, BuildBaseImage(Flavour::kLogDamage));
//   LogDamageResult r = RunLogDamageRound(base, seed);
//   for (const std::string& v : r.violations) ADD_FAILURE() << v;
//
// The base image is the crashed one, its last session made in steps
// (LogDamagePhase), each step's checkpoint forced to the log on its own, so
// BaseImage::steps says which records each step needs.  What was written
// back before that session (everything Populate made, then unmounted) is
// the durable set: no log damage may lose it.
//
// A round damages the log one way (LogDamageKind), then on copies of the
// damaged image:
//   (a) a mount replays or refuses with a message naming -o norecovery and
//       fsck.walfs -L; if it mounts, the durable set is there, each step is
//       all there or not at all, and (for damage the CRCs catch) the steps
//       applied are the ones before the damage, every one whose records lie
//       wholly before it included (a record at the head whose CRC fails is a
//       torn write, trimmed);
//   (b) a norecovery mount succeeds and reads the durable set;
//   (c) fsck -L (zero a log recovery cannot replay, then repair) leaves an
//       image a no-modify check finds clean, that mounts read-write, keeps
//       the durable set, survives the walk and the changes, and unmounts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/block_device_memory.h"
#include "base/status.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_mutate.h"

namespace walfs::fs {
class Filesystem;
}

namespace walfs::hostile {

// The crashed session of a kLogDamage image, step by step: each step's
// changes, then Sync (its checkpoint on disk), then the log's head.  The
// log stays under three quarters full, so the AIL writes none of it back:
// the metadata on disk is what Populate left (the rounds' norecovery mount
// checks it: the durable set, no step).
Status LogDamagePhase(fs::Filesystem* fs, const BaseImage& base, MemoryDevice* dev, std::vector<LogStep>* steps);

// How the log is damaged.
enum class LogDamageKind : std::uint8_t {
  kRecord = 0,    // the campaign's log-record mutator (hostile_mutate.h): raw, or resealed
  kHeadCrc,       // bytes of the head record changed, its CRC left failing
  kTornHead,      // the log cut short inside a record: its last sectors never written, none after it
  kZeroSectors,   // 1-8 sectors of the active log zeroed
  kCycleStamp,    // one sector's cycle stamp changed
  kHeaderSector,  // a record's header sector damaged (magic, cycle, lsn, len, crc...)
  kCount,
};
inline constexpr int kLogDamageKinds = static_cast<int>(LogDamageKind::kCount);
std::string_view LogDamageKindName(LogDamageKind k);

struct LogMutation {
  LogDamageKind kind = LogDamageKind::kRecord;
  bool at_head = false;    // the first damaged record is the last one
  bool resealed = false;   // CRC and cycle stamps made right again around the change
  bool forged = false;     // resealed payload: a record that replays what it now says
  bool changed = false;
  std::uint64_t damaged_lsn = 0;  // the first record the damage touches
  // Steps whose every record lies before that record: a recovery that
  // replays anything replays them.
  std::size_t steps_before = 0;
  // The bytes the damage may have changed: from the active log's first
  // record to its last one's end.
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string description;
};

// `image` as Mutate's (hostile_mutate.h), damaged in place in bytes
// [m.offset, m.offset + m.length) only: the active log's records.
LogMutation MutateLog(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind = -1);

struct LogDamageResult {
  std::uint64_t seed = 0;
  LogMutation mutation;
  bool mounted = false;
  std::string mount_error;
  int steps_replayed = -1;    // by the mount; -1 when refused
  bool norecovery_mounted = false;
  bool log_zeroed = false;    // -L zeroed it (rather than recovering it)
  int repair_exit = 0;        // fsck -L's exit code
  std::size_t recheck_problems = 0;  // the no-modify check after it
  int steps_after_repair = -1;
  bool repaired_mounted = false;
  std::vector<std::string> violations;
  std::string messages;
};

// Deterministic in (base, seed, kind); kind < 0 lets the seed choose.
LogDamageResult RunLogDamageRound(const BaseImage& base, std::uint64_t seed, int kind = -1);

// How many steps are all there, or -1 if the image is not one of the
// step-prefix states; *why says what breaks it.  `durable` checks the
// durable set too.
int StepsApplied(fs::Filesystem* fs, const BaseImage& base, std::string* why);

}  // namespace walfs::hostile
