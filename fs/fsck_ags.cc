// fsck phase 2, the allocation groups: each AG's header, bitmap and
// inode-map blocks verified (rebuilt with `repair`: fs/fsck_ag_repair.h),
// the chunks each map lists scanned (fs/fsck_inodes.cc), then the chunks
// no map lists found from what names their inodes (fs/fsck_chunks.h).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/fsck_ag_repair.h"
#include "fs/fsck_chunks.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// How many of `count` blocks, from the first, pass `written` -- but at
// least `min`, which must have been written whatever they hold now.
std::uint32_t WrittenPrefix(std::uint32_t count, std::uint32_t min, const std::function<bool(std::uint32_t)>& written) {
  std::uint32_t n = 0;
  while (n < count && written(n)) ++n;
  return std::max(n, min);
}

// Inode-map block `index` of AG `agno` (in *b) made again from its
// records that verify and whose chunk's first inode reads
// (ReadUnlistedChunk): a record that names blocks holding no chunk would
// have them cleared as unreadable inodes.  Returns the records dropped.
Result<std::uint32_t> SalvageImapBlockAt(Context* c, std::uint32_t agno, std::uint32_t index,
                                         std::vector<std::byte>* b) {
  const Superblock& sb = c->sb();
  std::uint32_t dropped = 0;
  *b = SalvageImapBlock(*b, sb, agno, index, &dropped);
  for (std::uint32_t slot = 0; slot < RecordsPerImapBlock(sb.block_size); ++slot) {
    const ImapRecord rec = GetImapRecord(*b, slot);
    if (rec.start == 0) continue;
    const ChunkAt at{agno, rec.start, sb.AgStart(agno) + rec.start};
    WALFS_ASSIGN_OR_RETURN(std::optional<ImapRecord> read,
                           ReadUnlistedChunk(c->dev, sb, at, at.first_block * sb.inodes_per_block()));
    if (read) continue;
    PutImapRecord(*b, slot, ImapRecord{});
    ++dropped;
  }
  SealBlock(*b);
  return dropped;
}

Status ScanAg(Context* c, std::uint32_t agno) {
  const Superblock& sb = c->sb();
  const bool repair = c->options.repair;
  FsckReport* r = c->report;
  AgState& ag = c->ags[agno];
  const std::uint64_t start = sb.AgStart(agno);
  std::vector<std::byte> b;
  WALFS_RETURN_IF_ERROR(c->ReadBlock(start, &b));
  auto h = DecodeAgHeader(b, sb, agno);
  if (!h.ok()) {
    c->Problem(std::string(h.status().message()));
    if (repair) {
      ag.rebuild_header = true;
      ag.header_problem = r->problems.size() - 1;
      ag.salvaged_head = PeekAgHeader(b).unlinked_head;
    }
  } else {
    ag.header_ok = true;
    ag.header = *h;
    WALFS_RETURN_IF_ERROR(CheckSuperCopy(c, agno, &b));
  }
  c->Claim(start, AgFirstFree(sb), fmt::format("AG {} metadata", agno));
  ag.bitmap_on_disk = ag.header_ok ? BitmapBlocksOnDisk(sb, ag.header) : sb.bitmap_blocks;
  ag.imap_on_disk = ag.header_ok ? ImapBlocksOnDisk(sb, ag.header) : sb.imap_blocks;
  if (!ag.header_ok && sb.uninit_ag()) {
    // The header's counts are lost with it: the blocks that verify, up to
    // the first that does not, are taken to be the ones written.
    ag.bitmap_on_disk = WrittenPrefix(sb.bitmap_blocks, MetadataBitmapBlocks(sb), [&](std::uint32_t i) {
      return c->ReadBlock(start + AgBitmapStart() + i, &b).ok() && VerifyBitmapBlock(b, sb, agno, i).ok();
    });
    ag.imap_on_disk = WrittenPrefix(sb.imap_blocks, 0, [&](std::uint32_t i) {
      return c->ReadBlock(start + AgImapStart(sb) + i, &b).ok() && VerifyImapBlock(b, sb, agno, i).ok();
    });
  }
  for (std::uint32_t i = 0; i < ag.bitmap_on_disk; ++i) {
    WALFS_RETURN_IF_ERROR(c->ReadBlock(start + AgBitmapStart() + i, &b));
    if (Status s = VerifyBitmapBlock(b, sb, agno, i); !s.ok()) {
      c->Problem(std::string(s.message()));
      if (!repair) continue;
      // Its bits kept; phase 3 corrects them from what is claimed.
      b = ReheadBitmapBlock(b, sb, agno, i);
      WALFS_RETURN_IF_ERROR(c->dev->Write((start + AgBitmapStart() + i) * sb.block_size, b.data(), b.size()));
      c->Repaired(r->problems.size() - 1, "header and CRC rewritten, its bits checked against the blocks in use");
    }
  }
  for (std::uint32_t i = 0; i < ag.imap_on_disk; ++i) {
    WALFS_RETURN_IF_ERROR(c->ReadBlock(start + AgImapStart(sb) + i, &b));
    bool rewrite = false;
    if (Status s = VerifyImapBlock(b, sb, agno, i); !s.ok()) {
      c->Problem(std::string(s.message()));
      if (!repair) continue;
      WALFS_ASSIGN_OR_RETURN(const std::uint32_t dropped, SalvageImapBlockAt(c, agno, i, &b));
      c->Repaired(r->problems.size() - 1,
                  fmt::format("rebuilt from its records that check out ({} dropped: their chunks are found again "
                              "from what names their inodes)",
                              dropped));
      rewrite = true;
    }
    for (std::uint32_t slot = 0; slot < RecordsPerImapBlock(sb.block_size); ++slot) {
      ImapRecord rec = GetImapRecord(b, slot);
      if (rec.start == 0) continue;
      ++ag.chunks;
      const ImapRecord before = rec;
      WALFS_RETURN_IF_ERROR(ScanChunk(c, agno, &rec));
      if (rec.free_mask != before.free_mask) {
        PutImapRecord(b, slot, rec);
        rewrite = true;
      }
      // Every 64 chunks (4,096 inodes): often enough for a person, rare
      // enough to cost nothing.
      if (++c->chunks_scanned % 64 == 0)
        c->Advance(2, static_cast<double>(c->chunks_scanned) / static_cast<double>(c->expected_chunks));
    }
    if (rewrite) {
      SealBlock(b);
      WALFS_RETURN_IF_ERROR(c->dev->Write((start + AgImapStart(sb) + i) * sb.block_size, b.data(), b.size()));
    }
  }
  return Status::Ok();
}

Status AddUnlistedChunk(Context* c, const ChunkAt& at, ImapRecord rec) {
  const Superblock& sb = c->sb();
  FsckReport* r = c->report;
  AgState& ag = c->ags[at.agno];
  const std::uint64_t first_ino = at.first_block * sb.inodes_per_block();
  const std::size_t problem = r->problems.size();
  r->problems.push_back({fmt::format("AG {}: the inode chunk at block {} (inodes {}-{}, {} in use) is missing "
                                     "from the inode map",
                                     at.agno, at.first_block, first_ino, first_ino + sb.inodes_per_chunk - 1,
                                     sb.inodes_per_chunk - rec.free_count),
                         false});
  ++ag.chunks;
  WALFS_RETURN_IF_ERROR(ScanChunk(c, at.agno, &rec));  // may repair its inodes, and the mask with them
  if (!c->options.repair) return Status::Ok();
  WALFS_ASSIGN_OR_RETURN(const bool added, AddImapRecord(c->dev, sb, at.agno, &ag.imap_on_disk, rec));
  if (added) c->Repaired(problem, "added");
  else r->problems[problem].message += ": the map has no room for it (left to a person)";
  return Status::Ok();
}

// The inode chunks the map on disk does not list (fs/fsck_chunks.h: a
// map written back less often than the chunks and directories it
// describes), found from what names their inodes -- directory entries
// and unlinked lists -- and checked like the listed ones; each found
// chunk's directories may name more.  Which is the truth when the map
// and the inodes disagree (docs/disk_format.md): the inodes, both ways.
// A chunk whose inodes read is a chunk, listed or not; an inode that
// reads in use is in use whatever its map bit says (freeing it would
// drop every entry naming it, and hand it out again over a live file),
// and one that reads free is free (the map bit of an allocation whose
// inode never reached the disk).  With `repair` the chunk is added to the
// map, its free mask from its inodes; free space follows from what they
// claim (phase 3).
Status FindUnlistedChunks(Context* c) {
  const Superblock& sb = c->sb();
  std::set<std::uint64_t> tried;  // chunks' first blocks, each read once
  for (bool found = true; found;) {
    found = false;
    std::vector<std::uint64_t> named{sb.root_ino};  // the superblock names the root
    for (const auto& [ino, info] : c->inodes) {
      for (const DirEntry& e : info.entries) named.push_back(e.ino);
      named.push_back(info.next_unlinked);
    }
    for (const AgState& ag : c->ags)
      if (ag.header_ok) named.push_back(ag.header.unlinked_head);
    for (const std::uint64_t ino : named) {
      if (ino == 0 || c->inodes.contains(ino)) continue;
      const std::optional<ChunkAt> at = ChunkHolding(sb, ino);
      if (!at || !tried.insert(at->first_block).second) continue;
      // A listed chunk (a free inode in it), or blocks something else
      // owns: not a chunk the map lost.
      bool owned = false;
      for (std::uint32_t b = 0; b < sb.blocks_per_chunk(); ++b) owned = owned || c->claimed[at->first_block + b];
      if (owned) continue;
      WALFS_ASSIGN_OR_RETURN(std::optional<ImapRecord> rec, ReadUnlistedChunk(c->dev, sb, *at, ino));
      if (!rec) continue;  // never written: what names it is dangling
      WALFS_RETURN_IF_ERROR(AddUnlistedChunk(c, *at, *rec));
      found = true;
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckAgsAndInodes(Context* c) {
  const Superblock& sb = c->sb();
  c->claimed.assign(sb.total_blocks, false);
  for (std::uint64_t b = 0; b < sb.data_start(); ++b) c->claimed[b] = true;  // sb + log
  c->report->blocks_in_use = sb.data_start();
  c->ags.resize(sb.ag_count);
  c->expected_chunks = std::max<std::uint64_t>(1, sb.icount / std::max<std::uint32_t>(1, sb.inodes_per_chunk));
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) WALFS_RETURN_IF_ERROR(ScanAg(c, agno));
  return FindUnlistedChunks(c);
}

}  // namespace walfs::fs::fsck
