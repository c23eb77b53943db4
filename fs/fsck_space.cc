// fsck phase 3, block ownership: each AG's free-space bitmap against the
// blocks phase 2 found owned (AG metadata, inode chunks, every extent and
// B+tree node).  A block in use that nothing owns is a leak, freed with
// `repair` only when every owner was read; a block owned but free is
// marked in use with `repair`, whatever else is wrong.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

Status CompareBitmap(Context* c, std::uint32_t agno) {
  const Superblock& sb = c->sb();
  FsckReport* r = c->report;
  AgState& ag = c->ags[agno];
  const std::uint64_t start = sb.AgStart(agno);
  const std::uint32_t len = sb.AgLength(agno);
  const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
  std::vector<std::byte> b;
  std::uint64_t leaked = 0, unmarked = 0, first_leak = 0, first_unmarked = 0;
  const bool free_leaks = c->options.repair && c->claims_complete;
  // A claimed block the bitmap calls free would be allocated again over
  // its owner: -y marks it in use whatever else is wrong (the worst that
  // can come of it is a leak).
  const bool mark_unmarked = c->options.repair;
  for (std::uint32_t i = 0; i < sb.bitmap_blocks; ++i) {
    // A block never written is an empty AG's: nothing it marks can leak.
    const bool on_disk = i < ag.bitmap_on_disk;
    if (on_disk) {
      WALFS_RETURN_IF_ERROR(c->ReadBlock(start + AgBitmapStart() + i, &b));
    } else {
      b.resize(sb.block_size);
      FillBitmapBlock(sb, agno, i, len, b);
    }
    bool rewrite = false;
    for (std::uint64_t bit = 0; bit < bits; ++bit) {
      const std::uint64_t agblock = std::uint64_t{i} * bits + bit;
      const bool used = BitmapTest(b, bit);
      if (agblock >= len) {
        if (!used) c->Problem(fmt::format("AG {} bitmap: block {} past the AG's end is free", agno, agblock));
        continue;
      }
      const bool claimed = c->claimed[start + agblock];
      if (used && !claimed) {
        if (leaked++ == 0) first_leak = start + agblock;
        if (free_leaks && on_disk) {
          BitmapSet(b, bit, false);
          rewrite = true;
          ++ag.free_blocks;
          continue;
        }
      }
      if (!used && claimed) {
        if (unmarked++ == 0) first_unmarked = start + agblock;
        if (mark_unmarked) {
          BitmapSet(b, bit, true);
          rewrite = true;
          ++r->blocks_in_use;
          continue;
        }
      }
      if (!used) ++ag.free_blocks;
      if (used) ++r->blocks_in_use;
    }
    if (rewrite) {
      // uninit_ag: a block not written yet is written with those before
      // it, and the header counts them (phase 6 rewrites it).
      for (std::uint32_t j = ag.bitmap_on_disk; j < i; ++j) {
        std::vector<std::byte> fill(sb.block_size);
        FillBitmapBlock(sb, agno, j, len, fill);
        WALFS_RETURN_IF_ERROR(c->dev->Write((start + AgBitmapStart() + j) * sb.block_size, fill.data(), fill.size()));
      }
      ag.bitmap_on_disk = std::max(ag.bitmap_on_disk, i + 1);
      SealBlock(b);
      WALFS_RETURN_IF_ERROR(c->dev->Write((start + AgBitmapStart() + i) * sb.block_size, b.data(), b.size()));
    }
  }
  if (leaked)
    r->problems.push_back({fmt::format("AG {}: {} blocks are in use in the bitmap but owned by nothing "
                                       "(first {}){}",
                                       agno, leaked, first_leak, free_leaks ? ": freed" : ""),
                           free_leaks});
  if (leaked) c->mount_repairable.insert(r->problems.size() - 1);  // space lost, nothing more
  if (unmarked)
    r->problems.push_back({fmt::format("AG {}: {} blocks are in use but free in the bitmap (first {}){}", agno,
                                       unmarked, first_unmarked, mark_unmarked ? ": marked in use" : ""),
                           mark_unmarked});
  return Status::Ok();
}

}  // namespace

Status CheckBlockOwnership(Context* c) {
  const FsckReport& r = *c->report;
  // Leaked blocks are freed (-y) only when every owner was read without
  // trouble: a damaged inode's blocks would look leaked.  (The error
  // record is no trouble reading an owner.)
  c->claims_complete = r.problems.size() == (r.errors_problem < r.problems.size() ? 1u : 0u);
  for (std::uint32_t agno = 0; agno < r.sb.ag_count; ++agno) {
    WALFS_RETURN_IF_ERROR(CompareBitmap(c, agno));
    c->Advance(3, static_cast<double>(agno + 1) / r.sb.ag_count);
  }
  return Status::Ok();
}

}  // namespace walfs::fs::fsck
