// fsck phase 6, counters: each AG header's free blocks, inodes, free inodes
// and chunks against what phases 2 and 3 counted (a header phase 2 found
// damaged is rebuilt here, with the counts); then the superblock's lazy
// counters -- a problem only for an image marked clean; after a crash they
// are stored, and the image marked clean, as a clean unmount leaves it.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "fs/format/superblock_format.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

Status CheckCounters(Context* c) {
  const Superblock& sb = c->sb();
  const FsckOptions& o = c->options;
  FsckReport* r = c->report;
  std::uint64_t free_total = 0, icount = 0, ifree = 0;
  bool all_ok = true;
  std::vector<std::byte> b;
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
    AgState& ag = c->ags[agno];
    const std::uint32_t counted_icount = ag.chunks * sb.inodes_per_chunk;
    free_total += ag.free_blocks;
    icount += counted_icount;
    ifree += ag.free_inodes;
    if (ag.rebuild_header) {
      AgHeader want = ag.header;  // phase 5's SalvageUnlinkedHead's
      want.free_blocks = ag.free_blocks;
      want.icount = counted_icount;
      want.ifree = ag.free_inodes;
      want.chunks = ag.chunks;
      if (sb.uninit_ag()) {
        want.bitmap_init = ag.bitmap_on_disk;
        want.imap_init = ag.imap_on_disk;
      }
      b.assign(sb.block_size, std::byte{0});
      EncodeAgHeader(want, sb, b);
      WALFS_RETURN_IF_ERROR(c->dev->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
      c->Repaired(ag.header_problem,
                  fmt::format("rebuilt from the superblock's geometry and the scan (free blocks {}, inodes {}, free "
                              "inodes {}, chunks {}, {})",
                              want.free_blocks, want.icount, want.ifree, want.chunks,
                              want.unlinked_head ? fmt::format("unlinked list from inode {} kept", want.unlinked_head)
                                                 : std::string("unlinked list empty")));
      continue;
    }
    if (!ag.header_ok) {
      all_ok = false;
      continue;
    }
    AgHeader want = ag.header;
    want.free_blocks = ag.free_blocks;
    want.icount = counted_icount;
    want.ifree = ag.free_inodes;
    want.chunks = ag.chunks;
    if (sb.uninit_ag()) {
      want.bitmap_init = ag.bitmap_on_disk;  // raised by a bitmap repair
      want.imap_init = ag.imap_on_disk;      // raised by a chunk added to the map (fsck_chunks.h)
    }
    if (want.bitmap_init != ag.header.bitmap_init || want.imap_init != ag.header.imap_init) {
      b.assign(sb.block_size, std::byte{0});
      EncodeAgHeader(want, sb, b);
      WALFS_RETURN_IF_ERROR(c->dev->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
      ag.header.bitmap_init = want.bitmap_init;
      ag.header.imap_init = want.imap_init;
    }
    if (want.free_blocks == ag.header.free_blocks && want.icount == ag.header.icount &&
        want.ifree == ag.header.ifree && want.chunks == ag.header.chunks)
      continue;
    FsckProblem p{fmt::format("AG {} counters: free {} inodes {} free inodes {} chunks {}; "
                              "counted {} {} {} {}",
                              agno, ag.header.free_blocks, ag.header.icount, ag.header.ifree, ag.header.chunks,
                              want.free_blocks, want.icount, want.ifree, want.chunks),
                  false};
    if (o.repair) {
      b.assign(sb.block_size, std::byte{0});
      EncodeAgHeader(want, sb, b);
      WALFS_RETURN_IF_ERROR(c->dev->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
      p.repaired = true;
    }
    r->problems.push_back(std::move(p));
  }
  // The lazy counters are exact only for a cleanly unmounted image; after
  // a crash they are stale by design (the mount recomputes them), so a
  // replay rewrites them without calling that a problem.
  const bool differ = sb.free_blocks != free_total || sb.icount != icount || sb.ifree != ifree;
  auto rewrite = [&]() -> Status {
    Superblock fixed = sb;
    fixed.free_blocks = free_total;
    fixed.icount = icount;
    fixed.ifree = ifree;
    fixed.flags |= kSuperClean;
    b.assign(sb.block_size, std::byte{0});
    EncodeSuperblock(fixed, b);
    return c->dev->Write(0, b.data(), b.size());
  };
  if (all_ok && differ && sb.clean() && !r->log_dirty) {
    FsckProblem p{fmt::format("superblock counters: free {} inodes {} free inodes {}; counted "
                              "{} {} {}",
                              sb.free_blocks, sb.icount, sb.ifree, free_total, icount, ifree),
                  false};
    if (o.repair) {
      WALFS_RETURN_IF_ERROR(rewrite());
      p.repaired = true;
    }
    r->problems.push_back(std::move(p));
  } else if (all_ok && c->log_clean && o.replay && (differ || !sb.clean())) {
    // After a crash (now recovered, or with nothing to recover): store
    // the counted counters and mark the image clean, as a clean unmount
    // does.
    WALFS_RETURN_IF_ERROR(rewrite());
    r->marked_clean = true;
  }
  if (o.repair || r->marked_clean) WALFS_RETURN_IF_ERROR(c->dev->Flush());
  return Status::Ok();
}

}  // namespace walfs::fs::fsck
