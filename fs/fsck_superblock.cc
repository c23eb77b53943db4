// fsck, before phase 1: the superblock -- read, or rebuilt from the copies
// in the AG headers (fs/super_copy.h); each copy checked against it; its
// error record reported, and cleared once the check leaves nothing else.
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fsck.h"
#include "fs/fsck_phases.h"
#include "fs/super.h"
#include "fs/super_copy.h"

namespace walfs::fs {
namespace fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// A primary superblock that does not decode: the geometry is taken from
// the copies in the AG headers (fs/super_copy.h), and with `repair` the
// primary is rebuilt from them before anything else is read -- not
// clean, so the counters are counted and stored at the end, and with no
// error record (this check is the one the record would ask for).
Status SuperblockFromCopy(Context* c, const Status& why) {
  FsckReport* r = c->report;
  Result<SuperblockCopy> copy = FindSuperblockCopy(c->dev, /*scan=*/true);
  if (!copy.ok()) {
    if (!why.IsCorruption()) return why;  // NotSupported: a newer walfs's image, not damage
    return Status::Corruption(fmt::format("{}; {}", why.message(), copy.status().message()));
  }
  r->sb = copy->sb;
  r->opened = true;
  c->primary_from_copy = true;
  FsckProblem p{fmt::format("{}; the copies in the AG headers ({} agree) describe the filesystem", why.message(),
                            copy->witnesses),
                false};
  if (c->options.repair) {
    WALFS_RETURN_IF_ERROR(WriteSuperblock(c->dev, r->sb));
    p.message += fmt::format(": superblock rebuilt from AG {}'s copy", copy->agno);
    p.repaired = true;
  } else {
    p.message += ": fsck.walfs -y rebuilds the superblock from them";
  }
  r->problems.push_back(std::move(p));
  return Status::Ok();
}

}  // namespace

Status ReadSuperblock(Context* c) {
  FsckReport* r = c->report;
  std::vector<std::byte> b(kSuperSize);
  WALFS_RETURN_IF_ERROR(c->dev->Read(0, b.data(), b.size()));
  Result<Superblock> sb = DecodeSuperblock(b, c->dev->size_bytes());
  if (!sb.ok() && !r->opened) return SuperblockFromCopy(c, sb.status());
  // -n checks with the copy's geometry, the primary left as it is.
  if (!sb.ok() && c->primary_from_copy) return Status::Ok();
  WALFS_ASSIGN_OR_RETURN(r->sb, std::move(sb));
  r->opened = true;
  return Status::Ok();
}

// The AG header's copy of the superblock (fs/super_copy.h) describes
// this filesystem, at a size no larger than the superblock's: a copy
// written before a grow says the smaller size, and is right to.
Status CheckSuperCopy(Context* c, std::uint32_t agno, std::vector<std::byte>* b) {
  const Superblock& sb = c->sb();
  if (!sb.super_copies()) return Status::Ok();
  Result<Superblock> copy = DecodeAgSuperCopy(*b, c->dev->size_bytes());
  std::string what;
  if (!copy.ok()) {
    what = copy.status().message();
  } else if (std::string field = SuperblockCopyMismatch(*copy, sb); !field.empty()) {
    what = fmt::format("its {} is not the superblock's", field);
  } else if (copy->total_blocks > sb.total_blocks || copy->ag_count > sb.ag_count) {
    what = fmt::format("it says {} blocks in {} AGs, more than the superblock's {} in {}", copy->total_blocks,
                       copy->ag_count, sb.total_blocks, sb.ag_count);
  }
  if (what.empty()) return Status::Ok();
  FsckProblem p{fmt::format("AG {} header's copy of the superblock: {}", agno, what), false};
  if (c->options.repair) {
    EncodeAgHeader(PeekAgHeader(*b), sb, *b);
    WALFS_RETURN_IF_ERROR(c->dev->Write(sb.AgStart(agno) * sb.block_size, b->data(), b->size()));
    p.message += ": rewritten from the superblock";
    p.repaired = true;
  }
  c->report->problems.push_back(std::move(p));
  return Status::Ok();
}

// Damage a mount found is checked for even on an image marked clean
// (e2fsck -p checks a filesystem whose s_error_count is set).  The
// problem is repaired -- the record cleared -- by CheckImage once
// nothing else is left (ClearErrorRecord).
void CheckErrorRecord(Context* c) {
  FsckReport* r = c->report;
  if (r->sb.errors.empty()) return;
  r->recorded_errors = r->sb.errors;
  r->errors_problem = r->problems.size();
  c->Problem(fmt::format("errors were recorded while mounted: {}", ErrorRecordString(r->sb.errors)));
}

}  // namespace fsck

Status ClearErrorRecord(BlockDevice* device, FsckReport* r) {
  if (r->recorded_errors.empty() || r->errors_problem >= r->problems.size()) return Status::Ok();
  FsckProblem& p = r->problems[r->errors_problem];
  for (const FsckProblem& other : r->problems)
    if (&other != &p && !other.repaired) return Status::Ok();  // still damaged: fsck is not done
  std::vector<std::byte> b(format::kSuperSize);
  WALFS_RETURN_IF_ERROR(device->Read(0, b.data(), b.size()));
  char* sp = reinterpret_cast<char*>(b.data());
  format::EncodeErrorRecord(format::ErrorRecord{}, sp + format::kSuperErrorsOffset);
  format::SealSuperblock(b);
  WALFS_RETURN_IF_ERROR(device->Write(0, b.data(), b.size()));
  WALFS_RETURN_IF_ERROR(device->Flush());
  p.repaired = true;
  p.message += "; the record is cleared";
  r->sb.errors = format::ErrorRecord{};
  return Status::Ok();
}

}  // namespace walfs::fs
