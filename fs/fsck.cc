#include "fs/fsck.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/block_device_overlay.h"
#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/block_types.h"
#include "fs/format/btree_format.h"
#include "fs/dir.h"
#include "fs/filesystem.h"
#include "fs/format/inode_format.h"
#include "fs/fsck_ag_repair.h"
#include "fs/fsck_btree_repair.h"
#include "fs/fsck_chunks.h"
#include "fs/fsck_log.h"
#include "fs/mkfs.h"
#include "fs/posix_acl.h"
#include "fs/super.h"
#include "fs/super_copy.h"
#include "journal/log.h"
#include "journal/log_recover.h"

namespace walfs::fs {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

std::size_t FsckReport::unrepaired() const {
  return static_cast<std::size_t>(
      std::count_if(problems.begin(), problems.end(), [](const FsckProblem& p) { return !p.repaired; }));
}

int FsckReport::ExitCode() const {
  if (!opened) return 8;
  if (unrepaired() > 0) return 4;
  return problems.empty() ? 0 : 1;
}

namespace {

struct InodeInfo {
  std::uint16_t mode = 0;
  std::uint32_t nlink = 0;
  std::uint64_t parent = 0;  // directories in local format
  std::vector<DirEntry> entries;
  bool entries_known = false;
  std::uint64_t next_unlinked = 0;
  std::uint32_t links_found = 0;  // entries naming it (and "." / ".." for directories)
  bool reached = false;
  bool local_dir = false;  // a directory whose entries are inline in the inode
};

std::uint8_t FtypeOf(std::uint16_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return 8;   // DT_REG
    case S_IFDIR: return 4;   // DT_DIR
    case S_IFLNK: return 10;  // DT_LNK
    case S_IFCHR: return 2;   // DT_CHR
    case S_IFBLK: return 6;   // DT_BLK
    case S_IFIFO: return 1;   // DT_FIFO
    case S_IFSOCK: return 12; // DT_SOCK
  }
  return 0;
}

class Checker {
 public:
  Checker(BlockDevice* dev, const FsckOptions& o, FsckReport* r) : dev_(dev), o_(o), r_(r) {}

  Status Run() {
    WALFS_RETURN_IF_ERROR(ReadSuperblock());
    const Status replayable = journal::RecoverLog(DryRunOptions()).status();
    // A log recovery cannot replay still holds changes the metadata on disk
    // lacks, and a `-o ro,norecovery` mount can still read that metadata.
    // Repairing it now (-y, -p) would rewrite it as if the log held nothing
    // -- dropping the entries whose inodes only the log completes -- and
    // take from the person the choice xfs_repair leaves them: copy out
    // first, then -L.  So nothing is written until -L settles the log.
    if (o_.repair && !o_.zero_log && !replayable.ok()) {
      r_->log_unreplayable = true;
      Problem(fmt::format("the log cannot be replayed ({}); repairing now would lose what it holds: mount "
                          "with -o ro,norecovery to copy data out first, then run fsck.walfs -L",
                          replayable.message()));
      return Status::Ok();
    }
    // -L zeroes only a log that recovery cannot replay: one it can is
    // recovered below, losing nothing.
    if (o_.zero_log && !replayable.ok()) {
      // Said before the log is touched, so a failed rewrite still says it.
      WALFS_ASSIGN_OR_RETURN(std::string lost, DescribeLogLoss(dev_, r_->sb));
      if (!lost.empty()) {  // a clean log is left alone
        Status zeroed = ZeroLog(dev_, r_->sb);
        r_->problems.push_back({fmt::format("log zeroed (-L): {}", lost), zeroed.ok()});
        if (!zeroed.ok()) return Status::IoError(fmt::format("zeroing the log: {}", zeroed.message()));
      }
    }
    Phase(1, "log");
    WALFS_RETURN_IF_ERROR(CheckLog());
    // Damage a mount found is checked for even on an image marked clean
    // (e2fsck -p checks a filesystem whose s_error_count is set).  The
    // problem is repaired -- the record cleared -- by CheckImage once
    // nothing else is left (ClearErrorRecord).
    if (!r_->sb.errors.empty()) {
      r_->recorded_errors = r_->sb.errors;
      r_->errors_problem = r_->problems.size();
      Problem(fmt::format("errors were recorded while mounted: {}", ErrorRecordString(r_->sb.errors)));
    }
    if (o_.skip_if_clean && !o_.zero_log && r_->sb.clean() && log_was_clean_ && r_->problems.empty()) {
      r_->skipped = true;
      return Status::Ok();
    }
    claimed_.assign(r_->sb.total_blocks, false);
    for (std::uint64_t b = 0; b < r_->sb.data_start(); ++b) claimed_[b] = true;  // sb + log
    r_->blocks_in_use = r_->sb.data_start();
    ags_.resize(r_->sb.ag_count);
    Phase(2, "allocation groups and inodes");
    expected_chunks_ = std::max<std::uint64_t>(1, r_->sb.icount / std::max<std::uint32_t>(1, r_->sb.inodes_per_chunk));
    for (std::uint32_t agno = 0; agno < r_->sb.ag_count; ++agno) WALFS_RETURN_IF_ERROR(ScanAg(agno));
    WALFS_RETURN_IF_ERROR(FindUnlistedChunks());
    // Leaked blocks are freed (-y) only when every owner was read without
    // trouble: a damaged inode's blocks would look leaked.
    Advance(2, 1);
    // (The error record is no trouble reading an owner.)
    claims_complete_ = r_->problems.size() == (r_->errors_problem < r_->problems.size() ? 1u : 0u);
    Phase(3, "block ownership");
    for (std::uint32_t agno = 0; agno < r_->sb.ag_count; ++agno) {
      WALFS_RETURN_IF_ERROR(CompareBitmap(agno));
      Advance(3, static_cast<double>(agno + 1) / r_->sb.ag_count);
    }
    Phase(4, "directory tree");
    CheckTree();
    Phase(5, "unlinked lists");
    CheckUnlinked();
    if (o_.repair) WALFS_RETURN_IF_ERROR(RepairNamespace());
    Phase(6, "counters");
    WALFS_RETURN_IF_ERROR(CheckCounters());
    Advance(6, 1);
    return Status::Ok();
  }

 private:
  struct AgState {
    bool header_ok = false;
    AgHeader header;
    std::uint32_t free_inodes = 0;   // counted
    std::uint32_t chunks = 0;        // counted
    std::uint32_t free_blocks = 0;   // counted from the bitmap
    // Bitmap and inode-map blocks on disk (uninit_ag: the header's counts;
    // the rest are an empty AG's and are not read).
    std::uint32_t bitmap_on_disk = 0, imap_on_disk = 0;
    // With `repair`, a header that does not verify is rebuilt
    // (fs/fsck_ag_repair.h): the problem that says so, and the old
    // unlinked head, kept if it still leads to a sound list.
    bool rebuild_header = false;
    std::size_t header_problem = 0;
    std::uint64_t salvaged_head = 0;
  };

  void Problem(std::string message) { r_->problems.push_back({std::move(message), false}); }
  // A problem found earlier, now repaired.
  void Repaired(std::size_t problem, std::string_view how) {
    r_->problems[problem].message += fmt::format(": {}", how);
    r_->problems[problem].repaired = true;
  }

  // Reads inode `ino`, lets `change` edit it, and writes its block back.
  Status RewriteInode(std::uint64_t ino, const std::function<Status(InodeCore*)>& change) {
    const Superblock& sb = r_->sb;
    const std::uint64_t block = ino / sb.inodes_per_block();
    const std::size_t offset = std::size_t{ino % sb.inodes_per_block()} * kInodeSize;
    std::vector<std::byte> b;
    WALFS_RETURN_IF_ERROR(ReadBlock(block, &b));
    WALFS_ASSIGN_OR_RETURN(InodeCore core, DecodeInode(std::span<const std::byte>(b).subspan(offset, kInodeSize), ino));
    WALFS_RETURN_IF_ERROR(change(&core));
    EncodeInode(core, std::span<std::byte>(b).subspan(offset, kInodeSize));
    return dev_->Write(block * sb.block_size, b.data(), b.size());
  }

  // -y's repairs of the namespace made here, after the tree and the link
  // counts were checked: directories whose B+tree cannot be read are
  // emptied, entries naming inodes not in use are dropped from inline
  // directories, and every inode the tree reached gets the link count of
  // the links found to it.  A B+tree directory's entries and the inodes
  // nothing reaches are left to the repairs through a mount (CheckImage:
  // walfs has no offline B+tree editor); nothing reachable is freed.
  Status RepairNamespace() {
    for (const std::uint64_t dir : empties_) {
      WALFS_RETURN_IF_ERROR(RewriteInode(dir, [&](InodeCore* n) -> Status {
        DirIndex::SetLocal(n, DecodeFixed64(n->literal.data() + 16), {});  // a B+tree's parent at byte 16
        n->nlink = 2;
        if (n->fork_off == 0) n->nblocks = 0;
        return Status::Ok();
      }));
    }
    for (const auto& entry : dangling_) {
      // Not a structured binding: a lambda may not capture one (C++20).
      const auto& names = entry.second;
      Status s = RewriteInode(entry.first, [&](InodeCore* n) -> Status {
        const std::uint32_t room = n->fork_off ? n->fork_off : kLiteralSize;
        std::uint64_t parent = 0;
        std::vector<DirEntry> entries;
        WALFS_RETURN_IF_ERROR(
            DecodeLocalDir(std::string_view(n->literal).substr(0, std::min<std::uint64_t>(n->size, room)), &parent, &entries));
        std::erase_if(entries, [&](const DirEntry& e) {
          return std::any_of(names.begin(), names.end(), [&](const auto& d) { return d.first == e.name; });
        });
        DirIndex::SetLocal(n, parent, entries);
        return Status::Ok();
      });
      if (!s.ok()) continue;  // left reported
      for (const auto& [name, problem] : names) Repaired(problem, "entry removed");
    }
    for (const auto& [ino, problem] : relink_) {
      const std::uint32_t found = inodes_[ino].links_found;
      if (RewriteInode(ino, [&](InodeCore* n) {
            n->nlink = found;
            return Status::Ok();
          }).ok())
        Repaired(problem, fmt::format("set to {}", found));
    }
    return Status::Ok();
  }

  static constexpr int kPhases = 6;
  static constexpr const char* kPhaseNames[kPhases + 1] = {
      "", "log", "allocation groups and inodes", "block ownership", "directory tree", "unlinked lists", "counters"};
  void Phase(int phase, std::string_view name) {
    if (o_.progress) o_.progress({.phase = phase, .phases = kPhases, .name = name, .done = 0});
  }
  void Advance(int phase, double done) {
    if (o_.progress)
      o_.progress({.phase = phase, .phases = kPhases, .name = kPhaseNames[phase], .done = std::min(done, 1.0)});
  }

  Status ReadBlock(std::uint64_t blkno, std::vector<std::byte>* b) {
    b->resize(r_->sb.block_size);
    return dev_->Read(blkno * r_->sb.block_size, b->data(), b->size());
  }

  Status ReadSuperblock() {
    std::vector<std::byte> b(kSuperSize);
    WALFS_RETURN_IF_ERROR(dev_->Read(0, b.data(), b.size()));
    Result<Superblock> sb = DecodeSuperblock(b, dev_->size_bytes());
    if (!sb.ok() && !r_->opened) return SuperblockFromCopy(sb.status());
    // -n checks with the copy's geometry, the primary left as it is.
    if (!sb.ok() && primary_from_copy_) return Status::Ok();
    WALFS_ASSIGN_OR_RETURN(r_->sb, std::move(sb));
    r_->opened = true;
    return Status::Ok();
  }

  // A primary superblock that does not decode: the geometry is taken from
  // the copies in the AG headers (fs/super_copy.h), and with `repair` the
  // primary is rebuilt from them before anything else is read -- not
  // clean, so the counters are counted and stored at the end, and with no
  // error record (this check is the one the record would ask for).
  Status SuperblockFromCopy(const Status& why) {
    Result<SuperblockCopy> c = FindSuperblockCopy(dev_, /*scan=*/true);
    if (!c.ok()) {
      if (!why.IsCorruption()) return why;  // NotSupported: a newer walfs's image, not damage
      return Status::Corruption(fmt::format("{}; {}", why.message(), c.status().message()));
    }
    r_->sb = c->sb;
    r_->opened = true;
    primary_from_copy_ = true;
    FsckProblem p{fmt::format("{}; the copies in the AG headers ({} agree) describe the filesystem", why.message(),
                              c->witnesses),
                  false};
    if (o_.repair) {
      WALFS_RETURN_IF_ERROR(WriteSuperblock(dev_, r_->sb));
      p.message += fmt::format(": superblock rebuilt from AG {}'s copy", c->agno);
      p.repaired = true;
    } else {
      p.message += ": fsck.walfs -y rebuilds the superblock from them";
    }
    r_->problems.push_back(std::move(p));
    return Status::Ok();
  }

  // The AG header's copy of the superblock (fs/super_copy.h) describes
  // this filesystem, at a size no larger than the superblock's: a copy
  // written before a grow says the smaller size, and is right to.
  Status CheckSuperCopy(std::uint32_t agno, std::vector<std::byte>* b) {
    const Superblock& sb = r_->sb;
    if (!sb.super_copies()) return Status::Ok();
    Result<Superblock> copy = DecodeAgSuperCopy(*b, dev_->size_bytes());
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
    if (o_.repair) {
      EncodeAgHeader(PeekAgHeader(*b), sb, *b);
      WALFS_RETURN_IF_ERROR(dev_->Write(sb.AgStart(agno) * sb.block_size, b->data(), b->size()));
      p.message += ": rewritten from the superblock";
      p.repaired = true;
    }
    r_->problems.push_back(std::move(p));
    return Status::Ok();
  }

  // Brings the metadata up to date with the log before it is checked: the
  // metadata on disk is behind a dirty log, and checking it as it is would
  // report the log's contents as damage.  Without -n the log is recovered
  // and closed as a mount recovers and cleanly unmounts it (unmount record
  // written), so the next mount and fsck find it clean.  With -n the log is
  // replayed onto an in-memory overlay of the device (xfs_repair -n's
  // in-memory replay) and the rest of the check reads that: the image as
  // the log would leave it, with nothing written.
  journal::RecoverOptions DryRunOptions() const {
    journal::RecoverOptions ro;
    ro.log = journal::LogRegion{dev_, r_->sb.log_offset(), r_->sb.log_sectors()};
    ro.metadata = dev_;
    ro.max_inflight_sectors = journal::RecoveryWindowSectors(r_->sb.log_sectors());
    ro.dry_run = true;
    ro.seal = SealMetadataBlock;
    ro.stamp_valid = BlockStampValid;
    return ro;
  }

  Status CheckLog() {
    journal::RecoverOptions ro = DryRunOptions();
    auto rr = journal::RecoverLog(ro);
    if (!rr.ok()) {
      // The metadata is then checked as last written back; say what can
      // still be done with the log.
      Problem(fmt::format("log: {}; the log cannot be replayed: mount with -o ro,norecovery to copy data "
                          "out first (the image as last written back), then run fsck.walfs -L to zero it "
                          "(what it holds is lost)",
                          rr.status().message()));
      return Status::Ok();
    }
    // A log a mount would recover: no unmount record at its head.  It may
    // hold no committed transaction (a crash right after the mount).
    const bool needs_recovery = !rr->position.empty && !rr->position.clean;
    r_->log_transactions = needs_recovery ? rr->transactions : 0;
    r_->log_dirty = needs_recovery && rr->transactions > 0;
    if (!needs_recovery) {
      log_clean_ = log_was_clean_ = true;
      return Status::Ok();
    }
    if (o_.replay) {
      auto log = journal::Log::Open(LogOptionsFor(dev_, r_->sb));
      if (!log.ok()) {
        Problem(fmt::format("log: {}", log.status().message()));
        return Status::Ok();
      }
      if (Status s = (*log)->Close(); !s.ok()) {
        Problem(fmt::format("log: recovered, but the unmount record could not be written: {}", s.message()));
        return Status::Ok();
      }
      r_->replayed = r_->log_dirty;
      log_clean_ = true;
      // The log may have held a grow: check the geometry it left.
      return ReadSuperblock();
    }
    if (!r_->log_dirty) return Status::Ok();
    Problem(fmt::format("the log holds {} committed transactions not yet replayed; run fsck.walfs "
                        "without -n or mount it",
                        rr->transactions));
    WALFS_ASSIGN_OR_RETURN(overlay_, OverlayDevice::Create(dev_));
    ro.log.device = overlay_.get();
    ro.metadata = overlay_.get();
    ro.dry_run = false;
    rr = journal::RecoverLog(ro);
    if (!rr.ok()) return Status::IoError(fmt::format("replaying the log in memory: {}", rr.status().message()));
    dev_ = overlay_.get();
    r_->replayed_in_memory = true;
    return ReadSuperblock();
  }

  void Claim(std::uint64_t blkno, std::uint32_t count, const std::string& who) {
    for (std::uint64_t b = blkno; b < blkno + count; ++b) {
      if (b >= r_->sb.total_blocks) {
        Problem(fmt::format("{} claims block {}, beyond the end of the filesystem", who, b));
        return;
      }
      if (claimed_[b]) {
        Problem(fmt::format("block {} is claimed twice (again by {})", b, who));
        continue;
      }
      claimed_[b] = true;
    }
  }

  Status ScanAg(std::uint32_t agno) {
    const Superblock& sb = r_->sb;
    AgState& ag = ags_[agno];
    const std::uint64_t start = sb.AgStart(agno);
    std::vector<std::byte> b;
    WALFS_RETURN_IF_ERROR(ReadBlock(start, &b));
    auto h = DecodeAgHeader(b, sb, agno);
    if (!h.ok()) {
      Problem(std::string(h.status().message()));
      if (o_.repair) {
        ag.rebuild_header = true;
        ag.header_problem = r_->problems.size() - 1;
        ag.salvaged_head = PeekAgHeader(b).unlinked_head;
      }
    } else {
      ag.header_ok = true;
      ag.header = *h;
      WALFS_RETURN_IF_ERROR(CheckSuperCopy(agno, &b));
    }
    Claim(start, AgFirstFree(sb), fmt::format("AG {} metadata", agno));
    ag.bitmap_on_disk = ag.header_ok ? BitmapBlocksOnDisk(sb, ag.header) : sb.bitmap_blocks;
    ag.imap_on_disk = ag.header_ok ? ImapBlocksOnDisk(sb, ag.header) : sb.imap_blocks;
    if (!ag.header_ok && sb.uninit_ag()) {
      // The header's counts are lost with it: the blocks that verify, up to
      // the first that does not, are taken to be the ones written.
      ag.bitmap_on_disk = WrittenPrefix(sb.bitmap_blocks, MetadataBitmapBlocks(sb), [&](std::uint32_t i) {
        return ReadBlock(start + AgBitmapStart() + i, &b).ok() && VerifyBitmapBlock(b, sb, agno, i).ok();
      });
      ag.imap_on_disk = WrittenPrefix(sb.imap_blocks, 0, [&](std::uint32_t i) {
        return ReadBlock(start + AgImapStart(sb) + i, &b).ok() && VerifyImapBlock(b, sb, agno, i).ok();
      });
    }
    for (std::uint32_t i = 0; i < ag.bitmap_on_disk; ++i) {
      WALFS_RETURN_IF_ERROR(ReadBlock(start + AgBitmapStart() + i, &b));
      if (Status s = VerifyBitmapBlock(b, sb, agno, i); !s.ok()) {
        Problem(std::string(s.message()));
        if (!o_.repair) continue;
        // Its bits kept; phase 3 corrects them from what is claimed.
        b = ReheadBitmapBlock(b, sb, agno, i);
        WALFS_RETURN_IF_ERROR(dev_->Write((start + AgBitmapStart() + i) * sb.block_size, b.data(), b.size()));
        Repaired(r_->problems.size() - 1, "header and CRC rewritten, its bits checked against the blocks in use");
      }
    }
    for (std::uint32_t i = 0; i < ag.imap_on_disk; ++i) {
      WALFS_RETURN_IF_ERROR(ReadBlock(start + AgImapStart(sb) + i, &b));
      bool rewrite = false;
      if (Status s = VerifyImapBlock(b, sb, agno, i); !s.ok()) {
        Problem(std::string(s.message()));
        if (!o_.repair) continue;
        WALFS_ASSIGN_OR_RETURN(const std::uint32_t dropped, SalvageImapBlockAt(agno, i, &b));
        Repaired(r_->problems.size() - 1,
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
        WALFS_RETURN_IF_ERROR(ScanChunk(agno, &rec));
        if (rec.free_mask != before.free_mask) {
          PutImapRecord(b, slot, rec);
          rewrite = true;
        }
        // Every 64 chunks (4,096 inodes): often enough for a person, rare
        // enough to cost nothing.
        if (++chunks_scanned_ % 64 == 0)
          Advance(2, static_cast<double>(chunks_scanned_) / static_cast<double>(expected_chunks_));
      }
      if (rewrite) {
        SealBlock(b);
        WALFS_RETURN_IF_ERROR(dev_->Write((start + AgImapStart(sb) + i) * sb.block_size, b.data(), b.size()));
      }
    }
    return Status::Ok();
  }

  // Inode-map block `index` of AG `agno` (in *b) made again from its
  // records that verify and whose chunk's first inode reads
  // (ReadUnlistedChunk): a record that names blocks holding no chunk would
  // have them cleared as unreadable inodes.  Returns the records dropped.
  Result<std::uint32_t> SalvageImapBlockAt(std::uint32_t agno, std::uint32_t index, std::vector<std::byte>* b) {
    const Superblock& sb = r_->sb;
    std::uint32_t dropped = 0;
    *b = SalvageImapBlock(*b, sb, agno, index, &dropped);
    for (std::uint32_t slot = 0; slot < RecordsPerImapBlock(sb.block_size); ++slot) {
      const ImapRecord rec = GetImapRecord(*b, slot);
      if (rec.start == 0) continue;
      const ChunkAt at{agno, rec.start, sb.AgStart(agno) + rec.start};
      WALFS_ASSIGN_OR_RETURN(std::optional<ImapRecord> read,
                             ReadUnlistedChunk(dev_, sb, at, at.first_block * sb.inodes_per_block()));
      if (read) continue;
      PutImapRecord(*b, slot, ImapRecord{});
      ++dropped;
    }
    SealBlock(*b);
    return dropped;
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
  // claim (CompareBitmap).
  Status FindUnlistedChunks() {
    const Superblock& sb = r_->sb;
    std::set<std::uint64_t> tried;  // chunks' first blocks, each read once
    for (bool found = true; found;) {
      found = false;
      std::vector<std::uint64_t> named{sb.root_ino};  // the superblock names the root
      for (const auto& [ino, info] : inodes_) {
        for (const DirEntry& e : info.entries) named.push_back(e.ino);
        named.push_back(info.next_unlinked);
      }
      for (const AgState& ag : ags_)
        if (ag.header_ok) named.push_back(ag.header.unlinked_head);
      for (const std::uint64_t ino : named) {
        if (ino == 0 || inodes_.contains(ino)) continue;
        const std::optional<ChunkAt> at = ChunkHolding(sb, ino);
        if (!at || !tried.insert(at->first_block).second) continue;
        // A listed chunk (a free inode in it), or blocks something else
        // owns: not a chunk the map lost.
        bool owned = false;
        for (std::uint32_t b = 0; b < sb.blocks_per_chunk(); ++b) owned = owned || claimed_[at->first_block + b];
        if (owned) continue;
        WALFS_ASSIGN_OR_RETURN(std::optional<ImapRecord> rec, ReadUnlistedChunk(dev_, sb, *at, ino));
        if (!rec) continue;  // never written: what names it is dangling
        WALFS_RETURN_IF_ERROR(AddUnlistedChunk(*at, *rec));
        found = true;
      }
    }
    return Status::Ok();
  }

  Status AddUnlistedChunk(const ChunkAt& at, ImapRecord rec) {
    const Superblock& sb = r_->sb;
    AgState& ag = ags_[at.agno];
    const std::uint64_t first_ino = at.first_block * sb.inodes_per_block();
    const std::size_t problem = r_->problems.size();
    r_->problems.push_back({fmt::format("AG {}: the inode chunk at block {} (inodes {}-{}, {} in use) is missing "
                                        "from the inode map",
                                        at.agno, at.first_block, first_ino, first_ino + sb.inodes_per_chunk - 1,
                                        sb.inodes_per_chunk - rec.free_count),
                            false});
    ++ag.chunks;
    WALFS_RETURN_IF_ERROR(ScanChunk(at.agno, &rec));  // may repair its inodes, and the mask with them
    if (!o_.repair) return Status::Ok();
    WALFS_ASSIGN_OR_RETURN(const bool added, AddImapRecord(dev_, sb, at.agno, ag.imap_on_disk, rec));
    if (added) Repaired(problem, "added");
    else r_->problems[problem].message += ": the map has no room for it (left to a person)";
    return Status::Ok();
  }

  // How many of `count` blocks, from the first, pass `written` -- but at
  // least `min`, which must have been written whatever they hold now.
  static std::uint32_t WrittenPrefix(std::uint32_t count, std::uint32_t min,
                                     const std::function<bool(std::uint32_t)>& written) {
    std::uint32_t n = 0;
    while (n < count && written(n)) ++n;
    return std::max(n, min);
  }

  // Walks a B+tree from its root (read from disk, every node verified and
  // claimed for `ino`), calling fn for each leaf record.  False if the tree
  // is damaged (the problem is reported).
  bool WalkTree(std::uint64_t ino, const char* what, std::uint64_t root, std::uint8_t levels,
                const std::function<void(std::uint64_t key, std::string_view value)>& fn) {
    if (root == 0) return true;
    const Superblock& sb = r_->sb;
    if (levels == 0 || levels > 8) {
      Problem(fmt::format("inode {}: {} tree of height {}", ino, what, levels));
      return false;
    }
    struct Todo { std::uint64_t block; int level; std::uint64_t low, high; };
    std::vector<Todo> stack{{root, levels - 1, 0, UINT64_MAX}};
    std::vector<std::byte> b;
    std::uint64_t last_key = 0;
    bool any = false;
    while (!stack.empty()) {
      const Todo t = stack.back();
      stack.pop_back();
      if (t.block < sb.data_start() || t.block >= sb.total_blocks) {
        Problem(fmt::format("inode {}: {} tree points outside the filesystem (block {})", ino, what, t.block));
        return false;
      }
      Claim(t.block, 1, fmt::format("inode {} ({} tree)", ino, what));
      if (!ReadBlock(t.block, &b).ok()) {
        Problem(fmt::format("inode {}: {} tree block {} unreadable", ino, what, t.block));
        return false;
      }
      if (Status st = VerifyBtreeNode(b, t.block, sb.metadata_uuid()); !st.ok()) {
        Problem(fmt::format("inode {}: {} tree: {}", ino, what, st.message()));
        return false;
      }
      const BtreeNodeHeader h = DecodeBtreeNodeHeader(b);
      if (h.owner != ino || h.level != t.level) {
        Problem(fmt::format("inode {}: {} tree block {} belongs to {} at level {}, not level {}", ino,
                            what, t.block, h.owner, h.level, t.level));
        return false;
      }
      if (h.level == 0) {
        for (const auto& [key, value] : BtreeLeafRecords(b)) {
          if (key < t.low || key >= t.high || (any && key <= last_key)) {
            Problem(fmt::format("inode {}: {} tree key {} out of order", ino, what, key));
            return false;
          }
          any = true;
          last_key = key;
          fn(key, value);
        }
      } else {
        const auto entries = BtreeEntries(b);
        // Children in reverse so the leftmost is walked first.
        for (std::size_t i = entries.size(); i-- > 0;) {
          const std::uint64_t low = i == 0 ? t.low : entries[i].first;
          const std::uint64_t high = i + 1 < entries.size() ? entries[i + 1].first : t.high;
          stack.push_back({entries[i].second, t.level - 1, low, high});
        }
      }
    }
    return true;
  }

  void CheckXattrFork(std::uint64_t ino, const InodeCore& inode) {
    if (inode.aformat == ForkFormat::kNone) return;
    if (inode.aformat != ForkFormat::kBtree || inode.fork_off != kXattrForkOffset) {
      Problem(fmt::format("inode {}: xattr fork in {} format at {}", ino, ForkFormatName(inode.aformat), inode.fork_off));
      return;
    }
    const BtreeRoot root = GetForkRoot(inode.literal, kXattrForkOffset);
    // A POSIX ACL's value, gathered from its records (keys ascend: a
    // value's later chunks follow its first).
    struct Pending {
      std::string name;
      std::uint64_t key_base = 0;  // hash and collision index
      std::uint32_t total = 0;
      std::string value;
    };
    std::optional<Pending> acl;
    auto finish_acl = [&] {
      if (!acl) return;
      if (acl->value.size() == acl->total) CheckAcl(ino, inode, acl->name, acl->value);
      acl.reset();  // a short value: the xattr walk's own checks speak for it
    };
    // Each value's first record (chunk 0) starts namelen, name, total length.
    WalkTree(ino, "xattr", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
      if ((key & 0xff) != 0) {
        if (acl && (key & ~std::uint64_t{0xff}) == acl->key_base) acl->value.append(v);
        return;
      }
      finish_acl();
      const std::size_t n = static_cast<std::uint8_t>(v.empty() ? 0 : v[0]);
      if (n == 0 || v.size() < 5 + n) {
        Problem(fmt::format("inode {}: xattr record of {} bytes", ino, v.size()));
        return;
      }
      // As for directory entries: a name under another name's hash is one
      // that getxattr and removexattr cannot find (though listxattr lists it).
      const std::string_view name = v.substr(1, n);
      if ((key & ~std::uint64_t{0xffff}) != DirHashKey(name))
        Problem(fmt::format("inode {}: xattr \"{}\" is filed under the wrong hash", ino, name));
      if (IsAclXattr(name))
        acl = Pending{std::string(name), key & ~std::uint64_t{0xff},
                      DecodeFixed32(v.data() + 1 + n), std::string(v.substr(5 + n))};
    });
    finish_acl();
  }

  // A POSIX ACL the kernel would refuse, or a default ACL on a
  // non-directory (which nothing applies), is damage.
  void CheckAcl(std::uint64_t ino, const InodeCore& inode, std::string_view name, std::string_view value) {
    Result<Acl> acl = DecodeAcl(value);
    if (!acl.ok()) {
      Problem(fmt::format("inode {}: {}: {}", ino, name, acl.status().message()));
      return;
    }
    if (name == kAclDefaultXattr && !S_ISDIR(inode.mode))
      Problem(fmt::format("inode {}: a default ACL on a non-directory", ino));
  }

  // The inodes of chunk block `blkno` (read into *b) that do not decode:
  // a CRC alone wrong is recomputed, anything else is cleared (never the
  // root's); the block is written back, and *b holds it, if any changed.
  Status RepairUnreadableInodes(std::uint64_t blkno, std::vector<std::byte>* b) {
    const Superblock& sb = r_->sb;
    std::uint32_t changed = 0;
    for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
      const std::uint64_t ino = blkno * sb.inodes_per_block() + s;
      const std::span<std::byte> slot = std::span<std::byte>(*b).subspan(std::size_t{s} * kInodeSize, kInodeSize);
      Result<InodeCore> inode = DecodeInode(slot, ino);
      if (inode.ok()) continue;
      // Only its CRC wrong, everything else sound: the CRC is recomputed
      // (e2fsck's answer to a bad inode checksum).
      std::vector<std::byte> resealed(*b);
      SealInodeBlock(resealed);
      const std::span<std::byte> fixed = std::span<std::byte>(resealed).subspan(std::size_t{s} * kInodeSize, kInodeSize);
      if (DecodeInode(fixed, ino).ok()) {
        std::copy(fixed.begin(), fixed.end(), slot.begin());
        r_->problems.push_back(
            {fmt::format("{}: checksum recomputed (the inode reads otherwise)", inode.status().message()), true});
        ++changed;
        continue;
      }
      if (ino == sb.root_ino) continue;  // never cleared: reported, left to a person
      r_->problems.push_back({fmt::format("{}: cleared (a free inode now)", inode.status().message()), true});
      EncodeInode(FreeInode(ino, 0), slot);
      ++changed;
    }
    if (changed == 0) return Status::Ok();
    return dev_->Write(blkno * sb.block_size, b->data(), b->size());
  }

  // With `repair`, the chunk's inodes are the truth for its map record
  // (*rec): an inode that decodes is free or in use as it says -- an inode
  // in use that the map called free would be handed out again over a live
  // file.  An inode that does not decode is repaired first: one whose CRC
  // alone is wrong gets it recomputed; any other (never written back before
  // the log was lost, or destroyed) is cleared, as e2fsck and xfs_repair
  // clear inodes they cannot read -- its data is unreachable anyway, and
  // the entries naming it and the blocks it held are repaired as such --
  // except the root directory's, which is left to a person.
  Status ScanChunk(std::uint32_t agno, ImapRecord* rec) {
    const Superblock& sb = r_->sb;
    const std::uint64_t first = sb.AgStart(agno) + rec->start;
    Claim(first, sb.blocks_per_chunk(), fmt::format("the inode chunk at block {}", first));
    std::vector<std::byte> b;
    for (std::uint32_t bi = 0; bi < sb.blocks_per_chunk(); ++bi) {
      WALFS_RETURN_IF_ERROR(ReadBlock(first + bi, &b));
      if (o_.clear_and_reconnect) WALFS_RETURN_IF_ERROR(RepairUnreadableInodes(first + bi, &b));
      for (std::uint32_t s = 0; s < sb.inodes_per_block(); ++s) {
        const std::uint32_t index = bi * sb.inodes_per_block() + s;
        const std::uint64_t ino = (first + bi) * sb.inodes_per_block() + s;
        const std::uint64_t bit = std::uint64_t{1} << index;
        bool map_free = (rec->free_mask & bit) != 0;
        auto inode = DecodeInode(std::span<const std::byte>(b).subspan(std::size_t{s} * kInodeSize,
                                                                      kInodeSize),
                                 ino);
        if (!inode.ok()) {
          if (map_free) ++ags_[agno].free_inodes;
          Problem(std::string(inode.status().message()));
          continue;
        }
        if (inode->free() != map_free) {
          r_->problems.push_back({fmt::format("inode {} is {} but the inode map says {}{}", ino,
                                              inode->free() ? "free" : "in use", map_free ? "free" : "in use",
                                              o_.repair ? ": map corrected" : ""),
                                  o_.repair});
          if (o_.repair) {
            map_free = inode->free();
            rec->free_mask = map_free ? rec->free_mask | bit : rec->free_mask & ~bit;
            rec->free_count = static_cast<std::uint32_t>(__builtin_popcountll(rec->free_mask));
          }
        }
        if (map_free) ++ags_[agno].free_inodes;
        if (inode->free()) continue;
        if (o_.clear_and_reconnect) {
          // A damaged extent map or xattr tree is rebuilt from what still
          // reads (fs/fsck_btree_repair.h) before it is walked and claimed.
          WALFS_ASSIGN_OR_RETURN(std::vector<FsckProblem> rebuilt, RepairInodeTrees(dev_, sb, ino, &*inode, [&](std::uint64_t blk) { return blk < claimed_.size() && claimed_[blk]; }));
          if (std::any_of(rebuilt.begin(), rebuilt.end(), [](const FsckProblem& p) { return p.repaired; }))
            WALFS_RETURN_IF_ERROR(RewriteInode(ino, [&](InodeCore* n) {
              *n = *inode;
              return Status::Ok();
            }));
          for (FsckProblem& p : rebuilt) r_->problems.push_back(std::move(p));
        }
        ++r_->inodes_in_use;
        InodeInfo& info = inodes_[ino];
        info.mode = inode->mode;
        info.nlink = inode->nlink;
        info.next_unlinked = inode->next_unlinked;
        const std::uint32_t data_room = inode->fork_off ? inode->fork_off : kLiteralSize;
        CheckXattrFork(ino, *inode);
        if (inode->format == ForkFormat::kExtents || (inode->format == ForkFormat::kBtree && !S_ISDIR(inode->mode))) {
          std::uint64_t blocks = 0, count = 0;
          auto claim = [&](const Extent& x) {
            if (x.disk_block < sb.data_start() || x.disk_block + x.length > sb.total_blocks) {
              Problem(fmt::format("inode {}: extent at file block {} maps blocks {}+{} outside the data area",
                                  ino, x.file_block, x.disk_block, x.length));
              return;
            }
            Claim(x.disk_block, x.length, fmt::format("inode {}", ino));
            blocks += x.length;
            ++count;
          };
          if (inode->format == ForkFormat::kExtents) {
            for (std::uint32_t e = 0; e < inode->nextents; ++e)
              claim(DecodeExtent(inode->literal.data() + std::size_t{e} * kExtentSize));
          } else {
            const BtreeRoot root = GetForkRoot(inode->literal, 0);
            std::uint64_t next_free = 0;
            WalkTree(ino, "extent", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
              if (v.size() != kExtentSize) {
                Problem(fmt::format("inode {}: extent record of {} bytes", ino, v.size()));
                return;
              }
              const Extent x = DecodeExtent(v.data());
              if (x.file_block != key || x.file_block < next_free)
                Problem(fmt::format("inode {}: extent at file block {} overlaps or is misfiled", ino, x.file_block));
              next_free = x.file_block + x.length;
              claim(x);
            });
            if (count != inode->nextents)
              Problem(fmt::format("inode {} has {} extents but counts {}", ino, count, inode->nextents));
          }
          if (blocks != inode->nblocks)
            Problem(fmt::format("inode {} maps {} blocks but counts {}", ino, blocks, inode->nblocks));
        }
        if (S_ISDIR(inode->mode)) {
          ++r_->directories;
          if (inode->format == ForkFormat::kLocal) {
            info.local_dir = true;
            const std::string_view data =
                std::string_view(inode->literal).substr(0, std::min<std::uint64_t>(inode->size, data_room));
            if (Status st = DecodeLocalDir(data, &info.parent, &info.entries); !st.ok())
              Problem(fmt::format("directory {}: {}", ino, st.message()));
            else
              info.entries_known = true;
          } else if (inode->format == ForkFormat::kBtree) {
            const BtreeRoot root = GetForkRoot(inode->literal, 0);
            info.parent = DecodeFixed64(inode->literal.data() + 16);
            bool ok = true;
            const std::size_t problems_before = r_->problems.size();
            const bool walked = WalkTree(ino, "directory", root.block, root.levels, [&](std::uint64_t key, std::string_view v) {
              if (v.size() < 10 || v.size() > 9 + kMaxNameLen) {
                Problem(fmt::format("directory {}: entry of {} bytes", ino, v.size()));
                ok = false;
                return;
              }
              DirEntry e;
              e.ino = DecodeFixed64(v.data());
              e.ftype = static_cast<std::uint8_t>(v[8]);
              e.name.assign(v.substr(9));
              if ((key & ~std::uint64_t{0xffff}) != DirHashKey(e.name)) {
                Problem(fmt::format("directory {}: \"{}\" is filed under the wrong hash", ino, e.name));
                ok = false;
              }
              info.entries.push_back(std::move(e));
            });
            info.entries_known = walked && ok;
            if (!info.entries_known && o_.clear_and_reconnect) {
              // Its index cannot be read whole: emptied (RepairNamespace),
              // and the inodes its entries named are reconnected to
              // /lost+found by number -- names lost, files kept.
              for (std::size_t p = problems_before; p < r_->problems.size(); ++p) {
                r_->problems[p].message += ": directory emptied";
                r_->problems[p].repaired = true;
              }
              if (r_->problems.size() == problems_before)
                r_->problems.push_back({fmt::format("directory {}: its index cannot be read: emptied", ino), true});
              empties_.push_back(ino);
            }
          } else {
            Problem(fmt::format("directory {}: {} format", ino, ForkFormatName(inode->format)));
          }
        }
      }
    }
    return Status::Ok();
  }

  Status CompareBitmap(std::uint32_t agno) {
    const Superblock& sb = r_->sb;
    const std::uint64_t start = sb.AgStart(agno);
    const std::uint32_t len = sb.AgLength(agno);
    const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
    std::vector<std::byte> b;
    std::uint64_t leaked = 0, unmarked = 0, first_leak = 0, first_unmarked = 0;
    const bool free_leaks = o_.repair && claims_complete_;
    // A claimed block the bitmap calls free would be allocated again over
    // its owner: -y marks it in use whatever else is wrong (the worst that
    // can come of it is a leak).
    const bool mark_unmarked = o_.repair;
    for (std::uint32_t i = 0; i < sb.bitmap_blocks; ++i) {
      // A block never written is an empty AG's: nothing it marks can leak.
      const bool on_disk = i < ags_[agno].bitmap_on_disk;
      if (on_disk) {
        WALFS_RETURN_IF_ERROR(ReadBlock(start + AgBitmapStart() + i, &b));
      } else {
        b.resize(sb.block_size);
        FillBitmapBlock(sb, agno, i, len, b);
      }
      bool rewrite = false;
      for (std::uint64_t bit = 0; bit < bits; ++bit) {
        const std::uint64_t agblock = std::uint64_t{i} * bits + bit;
        const bool used = BitmapTest(b, bit);
        if (agblock >= len) {
          if (!used) Problem(fmt::format("AG {} bitmap: block {} past the AG's end is free", agno, agblock));
          continue;
        }
        const bool claimed = claimed_[start + agblock];
        if (used && !claimed) {
          if (leaked++ == 0) first_leak = start + agblock;
          if (free_leaks && on_disk) {
            BitmapSet(b, bit, false);
            rewrite = true;
            ++ags_[agno].free_blocks;
            continue;
          }
        }
        if (!used && claimed) {
          if (unmarked++ == 0) first_unmarked = start + agblock;
          if (mark_unmarked) {
            BitmapSet(b, bit, true);
            rewrite = true;
            ++r_->blocks_in_use;
            continue;
          }
        }
        if (!used) ++ags_[agno].free_blocks;
        if (used) ++r_->blocks_in_use;
      }
      if (rewrite) {
        // uninit_ag: a block not written yet is written with those before
        // it, and the header counts them (CheckCounters rewrites it).
        for (std::uint32_t j = ags_[agno].bitmap_on_disk; j < i; ++j) {
          std::vector<std::byte> fill(sb.block_size);
          FillBitmapBlock(sb, agno, j, len, fill);
          WALFS_RETURN_IF_ERROR(dev_->Write((start + AgBitmapStart() + j) * sb.block_size, fill.data(), fill.size()));
        }
        ags_[agno].bitmap_on_disk = std::max(ags_[agno].bitmap_on_disk, i + 1);
        SealBlock(b);
        WALFS_RETURN_IF_ERROR(dev_->Write((start + AgBitmapStart() + i) * sb.block_size, b.data(), b.size()));
      }
    }
    if (leaked)
      r_->problems.push_back({fmt::format("AG {}: {} blocks are in use in the bitmap but owned by nothing "
                                          "(first {}){}",
                                          agno, leaked, first_leak, free_leaks ? ": freed" : ""),
                              free_leaks});
    if (leaked) mount_repairable_.insert(r_->problems.size() - 1);  // space lost, nothing more
    if (unmarked)
      r_->problems.push_back({fmt::format("AG {}: {} blocks are in use but free in the bitmap (first {}){}", agno,
                                          unmarked, first_unmarked, mark_unmarked ? ": marked in use" : ""),
                              mark_unmarked});
    return Status::Ok();
  }

  void CheckTree() {
    const std::uint64_t root = r_->sb.root_ino;
    auto it = inodes_.find(root);
    if (it == inodes_.end() || !S_ISDIR(it->second.mode)) {
      Problem(fmt::format("the root inode {} is not an allocated directory", root));
      return;
    }
    std::deque<std::uint64_t> queue{root};
    it->second.reached = true;
    it->second.links_found += 1;  // the root's ".." is itself
    while (!queue.empty()) {
      const std::uint64_t dir = queue.front();
      queue.pop_front();
      InodeInfo& d = inodes_[dir];
      d.links_found += 1;  // "."
      if (!d.entries_known) continue;
      if (dir == root && d.parent != root)
        Problem(fmt::format("the root directory's parent is {}, not itself", d.parent));
      std::map<std::string, int> names;
      for (const DirEntry& e : d.entries) {
        if (++names[e.name] == 2) Problem(fmt::format("directory {} holds \"{}\" twice", dir, e.name));
        auto t = inodes_.find(e.ino);
        if (t == inodes_.end()) {
          Problem(fmt::format("directory {}: \"{}\" names inode {}, which is not in use", dir,
                              e.name, e.ino));
          if (!o_.clear_and_reconnect) continue;
          if (d.local_dir) dangling_[dir].push_back({e.name, r_->problems.size() - 1});
          else drops_.push_back({dir, e.name, r_->problems.size() - 1});
          continue;
        }
        InodeInfo& target = t->second;
        if (FtypeOf(target.mode) != e.ftype)
          Problem(fmt::format("directory {}: \"{}\" says file type {} but inode {} has mode {:o}",
                              dir, e.name, e.ftype, e.ino, target.mode));
        target.links_found += 1;
        if (S_ISDIR(target.mode)) {
          if (target.reached) {
            Problem(fmt::format("directory {} is reached twice (again as \"{}\" in {})", e.ino,
                                e.name, dir));
            continue;
          }
          if (target.entries_known && target.parent != dir)
            Problem(fmt::format("directory {} (\"{}\" in {}) says its parent is {}", e.ino, e.name,
                                dir, target.parent));
          d.links_found += 1;  // the child's ".."
          queue.push_back(e.ino);
        }
        target.reached = true;
      }
    }
  }

  void CheckUnlinked() {
    const Superblock& sb = r_->sb;
    std::unordered_map<std::uint64_t, bool> on_list;
    for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
      if (ags_[agno].rebuild_header) SalvageUnlinkedHead(agno);
      if (!ags_[agno].header_ok && !ags_[agno].rebuild_header) continue;
      std::uint64_t ino = ags_[agno].header.unlinked_head;
      for (std::uint64_t steps = 0; ino != 0; ++steps) {
        auto it = inodes_.find(ino);
        if (it == inodes_.end()) {
          Problem(fmt::format("AG {} unlinked list: inode {} is not in use", agno, ino));
          break;
        }
        if (on_list[ino]) {
          Problem(fmt::format("AG {} unlinked list loops at inode {}", agno, ino));
          break;
        }
        on_list[ino] = true;
        if (it->second.nlink != 0)
          Problem(fmt::format("inode {} is on the unlinked list with {} links", ino, it->second.nlink));
        ino = it->second.next_unlinked;
      }
    }
    // Inodes nothing reaches but an entry of another such directory: those
    // come back with it when it is reconnected.
    std::unordered_map<std::uint64_t, bool> named_by_lost;
    for (const auto& [ino, info] : inodes_)
      if (!info.reached)
        for (const DirEntry& e : info.entries) named_by_lost[e.ino] = true;
    for (auto& [ino, info] : inodes_) {
      if (!info.reached) {
        if (!on_list[ino]) {
          Problem(fmt::format("inode {} (mode {:o}, {} links) is in no directory and on no unlinked "
                              "list",
                              ino, info.mode, info.nlink));
          if (!o_.clear_and_reconnect) continue;
          if (!named_by_lost[ino]) orphans_.push_back({ino, r_->problems.size() - 1});
          else mount_repairable_.insert(r_->problems.size() - 1);
        }
        continue;
      }
      if (info.links_found != info.nlink) {
        Problem(fmt::format("inode {} has link count {} but {} links were found", ino, info.nlink,
                            info.links_found));
        // Not one on an unlinked list: the next mount frees those.
        if (!on_list[ino]) relink_.push_back({ino, r_->problems.size() - 1});
      }
    }
  }

  // A rebuilt header keeps its old unlinked head only if it leads to a
  // sound list: in-use inodes of this AG with no links, no loop.  Else the
  // list starts empty, and its inodes are ones nothing reaches
  // (/lost+found, with -y).
  void SalvageUnlinkedHead(std::uint32_t agno) {
    const Superblock& sb = r_->sb;
    AgState& ag = ags_[agno];
    std::set<std::uint64_t> seen;
    bool sound = true;
    for (std::uint64_t ino = ag.salvaged_head; sound && ino != 0;) {
      auto it = inodes_.find(ino);
      const std::uint64_t block = ino / sb.inodes_per_block();
      sound = it != inodes_.end() && it->second.nlink == 0 && seen.insert(ino).second &&
              block >= sb.AgStart(agno) && block < sb.AgStart(agno) + sb.AgLength(agno);
      if (sound) ino = it->second.next_unlinked;
    }
    ag.header = GeometryAgHeader(sb, agno, ag.bitmap_on_disk, ag.imap_on_disk);
    ag.header.unlinked_head = sound ? ag.salvaged_head : 0;
  }

  Status CheckCounters() {
    const Superblock& sb = r_->sb;
    std::uint64_t free_total = 0, icount = 0, ifree = 0;
    bool all_ok = true;
    std::vector<std::byte> b;
    for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
      AgState& ag = ags_[agno];
      const std::uint32_t counted_icount = ag.chunks * sb.inodes_per_chunk;
      free_total += ag.free_blocks;
      icount += counted_icount;
      ifree += ag.free_inodes;
      if (ag.rebuild_header) {
        AgHeader want = ag.header;  // SalvageUnlinkedHead's
        want.free_blocks = ag.free_blocks;
        want.icount = counted_icount;
        want.ifree = ag.free_inodes;
        want.chunks = ag.chunks;
        if (sb.uninit_ag()) want.bitmap_init = ag.bitmap_on_disk;
        b.assign(sb.block_size, std::byte{0});
        EncodeAgHeader(want, sb, b);
        WALFS_RETURN_IF_ERROR(dev_->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
        Repaired(ag.header_problem,
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
      if (sb.uninit_ag()) want.bitmap_init = ag.bitmap_on_disk;  // raised by a bitmap repair
      if (want.bitmap_init != ag.header.bitmap_init) {
        b.assign(sb.block_size, std::byte{0});
        EncodeAgHeader(want, sb, b);
        WALFS_RETURN_IF_ERROR(dev_->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
        ag.header.bitmap_init = want.bitmap_init;
      }
      if (want.free_blocks == ag.header.free_blocks && want.icount == ag.header.icount &&
          want.ifree == ag.header.ifree && want.chunks == ag.header.chunks)
        continue;
      FsckProblem p{fmt::format("AG {} counters: free {} inodes {} free inodes {} chunks {}; "
                                "counted {} {} {} {}",
                                agno, ag.header.free_blocks, ag.header.icount, ag.header.ifree,
                                ag.header.chunks, want.free_blocks, want.icount, want.ifree,
                                want.chunks),
                    false};
      if (o_.repair) {
        b.assign(sb.block_size, std::byte{0});
        EncodeAgHeader(want, sb, b);
        WALFS_RETURN_IF_ERROR(dev_->Write(sb.AgStart(agno) * sb.block_size, b.data(), b.size()));
        p.repaired = true;
      }
      r_->problems.push_back(std::move(p));
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
      return dev_->Write(0, b.data(), b.size());
    };
    if (all_ok && differ && sb.clean() && !r_->log_dirty) {
      FsckProblem p{fmt::format("superblock counters: free {} inodes {} free inodes {}; counted "
                                "{} {} {}",
                                sb.free_blocks, sb.icount, sb.ifree, free_total, icount, ifree),
                    false};
      if (o_.repair) {
        WALFS_RETURN_IF_ERROR(rewrite());
        p.repaired = true;
      }
      r_->problems.push_back(std::move(p));
    } else if (all_ok && log_clean_ && o_.replay && (differ || !sb.clean())) {
      // After a crash (now recovered, or with nothing to recover): store
      // the counted counters and mark the image clean, as a clean unmount
      // does.
      WALFS_RETURN_IF_ERROR(rewrite());
      r_->marked_clean = true;
    }
    if (o_.repair || r_->marked_clean) WALFS_RETURN_IF_ERROR(dev_->Flush());
    return Status::Ok();
  }

  BlockDevice* dev_;  // the device checked: the image, or with -n and a dirty log overlay_
  std::unique_ptr<OverlayDevice> overlay_;
  bool log_was_clean_ = false;  // nothing to recover when the check began
  bool log_clean_ = false;  // the log is (now) clean: counters may be stored, the image marked clean
  const FsckOptions o_;
  FsckReport* r_;
  std::vector<bool> claimed_;
  bool claims_complete_ = false;
  // For RepairNamespace: per inline directory, its entries that name inodes
  // not in use (name, problem index); inodes whose link count is wrong.
  std::map<std::uint64_t, std::vector<std::pair<std::string, std::size_t>>> dangling_;
  std::vector<std::pair<std::uint64_t, std::size_t>> relink_;
  std::vector<std::uint64_t> empties_;  // B+tree directories to empty
  // For the repairs through a mount (CheckImage): entries of B+tree
  // directories naming inodes not in use (dir, name, problem), inodes to
  // reconnect (ino, problem), and the other problems those repairs and the
  // next pass take care of (inodes that come back with a reconnected
  // directory, leaks).
  struct Drop {
    std::uint64_t dir;
    std::string name;
    std::size_t problem;
  };
  std::vector<Drop> drops_;
  std::vector<std::pair<std::uint64_t, std::size_t>> orphans_;
  std::set<std::size_t> mount_repairable_;

 public:
  const std::vector<Drop>& drops() const { return drops_; }
  // The checker's report was merged into `r` after `base` problems kept
  // from earlier passes: its problem indices move with it.
  void Rebase(FsckReport* r, std::size_t base) {
    r_ = r;
    for (Drop& d : drops_) d.problem += base;
    for (auto& o : orphans_) o.second += base;
    std::set<std::size_t> moved;
    for (std::size_t i : mount_repairable_) moved.insert(i + base);
    mount_repairable_ = std::move(moved);
  }
  const std::vector<std::pair<std::uint64_t, std::size_t>>& orphans() const { return orphans_; }
  // Whether every problem left is one the repairs through a mount make (or
  // the next pass then does): the allocation maps and every inode read
  // agree, so the filesystem's own code may run on the image.
  bool MountRepairable() const {
    if (drops_.empty() && orphans_.empty()) return false;
    std::set<std::size_t> ok = mount_repairable_;
    if (r_->errors_problem != SIZE_MAX) ok.insert(r_->errors_problem);  // cleared at the end
    for (const Drop& d : drops_) ok.insert(d.problem);
    for (const auto& o : orphans_) ok.insert(o.second);
    for (std::size_t i = 0; i < r_->problems.size(); ++i)
      if (!r_->problems[i].repaired && !ok.contains(i)) return false;
    return true;
  }
  std::vector<AgState> ags_;
  std::unordered_map<std::uint64_t, InodeInfo> inodes_;
  std::uint64_t chunks_scanned_ = 0;   // progress of phase 2
  bool primary_from_copy_ = false;  // the primary did not decode; r_->sb is the copies'
  std::uint64_t expected_chunks_ = 1;  // from the superblock's inode count
};

}  // namespace

namespace {

// The repairs through a mount (docs/fs.md): the image mounted in-process,
// B+tree directory entries naming inodes not in use dropped, and inodes
// nothing reaches named in /lost+found.  Each repaired problem is marked in
// `r`; one that fails stays as it was, with the reason appended.
Status RepairThroughMount(BlockDevice* device, const Checker& c, FsckReport* r) {
  MountOptions mo;
  mo.commit_interval_s = 0;
  mo.lazy_commit_ms = 0;
  mo.warn_recorded_errors = false;  // fsck reports the record itself
  WALFS_ASSIGN_OR_RETURN(std::unique_ptr<Filesystem> fs, Filesystem::MountDevice(device, mo));
  for (const auto& d : c.drops()) {
    Status s = fs->RepairDropEntry(d.dir, d.name);
    r->problems[d.problem].message += s.ok() ? std::string(": entry removed") : fmt::format(" (not removed: {})", s.message());
    r->problems[d.problem].repaired = s.ok();
  }
  for (const auto& [ino, problem] : c.orphans()) {
    Result<std::string> name = fs->RepairReconnect(ino);
    r->problems[problem].message +=
        name.ok() ? fmt::format(": reconnected as /lost+found/{}", *name)
                  : fmt::format(" (not reconnected: {})", name.status().message());
    r->problems[problem].repaired = name.ok();
  }
  return fs->Unmount();
}

}  // namespace

Result<FsckReport> CheckImage(BlockDevice* device, const FsckOptions& options) {
  if ((options.repair || options.zero_log) && !options.replay)
    return Status::InvalidArgument("repairs need the log replayed first (-n with -y or -L)");
  if (options.clear_and_reconnect && !options.repair)
    return Status::InvalidArgument("clear_and_reconnect needs repair");
  FsckReport r;
  auto c = std::make_unique<Checker>(device, options, &r);
  Status s = c->Run();
  if (!s.ok() && !r.opened) return s;
  if (!s.ok()) r.problems.push_back({fmt::format("the check stopped: {}", s.ToString()), false});
  // A repair can make others possible (leaks are freed only once every
  // owner reads; a corrected inode map changes what the tree finds; a
  // reconnected inode has its link count set by the next pass), as e2fsck
  // restarts: check again while the last pass repaired something.  What
  // the last pass found is the report's verdict; what earlier passes
  // repaired stays in it.
  for (int pass = 2; s.ok() && options.repair && pass <= 6; ++pass) {
    auto unrepaired = [&] {
      return std::any_of(r.problems.begin(), r.problems.end(), [](const FsckProblem& p) { return !p.repaired; });
    };
    if (!unrepaired()) break;
    // The allocation maps agree with the inodes, and only the namespace is
    // left: the filesystem's own code repairs it.
    if (c->MountRepairable()) {
      if (Status m = RepairThroughMount(device, *c, &r); !m.ok())
        r.problems.push_back({fmt::format("repairs through a mount stopped: {}", m.ToString()), false});
    }
    if (!std::any_of(r.problems.begin(), r.problems.end(), [](const FsckProblem& p) { return p.repaired; })) break;
    FsckOptions again = options;
    again.zero_log = false;  // the log is clean now
    again.skip_if_clean = false;
    again.progress = nullptr;
    FsckReport next;
    c = std::make_unique<Checker>(device, again, &next);
    s = c->Run();
    if (!s.ok()) {
      r.problems.push_back({fmt::format("the check stopped: {}", s.ToString()), false});
      break;
    }
    std::vector<FsckProblem> kept;
    for (FsckProblem& p : r.problems)
      if (p.repaired) kept.push_back(std::move(p));
    const bool progress = std::any_of(next.problems.begin(), next.problems.end(),
                                      [](const FsckProblem& p) { return p.repaired; }) ||
                          c->MountRepairable();
    // Indices in `next` shift by what was kept: the checker's lists index
    // the report it wrote, so it keeps writing into `next` until merged.
    const std::size_t base = kept.size();
    for (FsckProblem& p : next.problems) kept.push_back(std::move(p));
    r.problems = std::move(kept);
    r.recorded_errors = next.recorded_errors;
    r.errors_problem = next.errors_problem == SIZE_MAX ? SIZE_MAX : base + next.errors_problem;
    r.inodes_in_use = next.inodes_in_use;
    r.directories = next.directories;
    r.blocks_in_use = next.blocks_in_use;
    c->Rebase(&r, base);
    if (!progress) break;
  }
  if (s.ok() && options.repair) WALFS_RETURN_IF_ERROR(ClearErrorRecord(device, &r));
  return r;
}

Status ClearErrorRecord(BlockDevice* device, FsckReport* r) {
  if (r->recorded_errors.empty() || r->errors_problem >= r->problems.size()) return Status::Ok();
  FsckProblem& p = r->problems[r->errors_problem];
  for (const FsckProblem& other : r->problems)
    if (&other != &p && !other.repaired) return Status::Ok();  // still damaged: fsck is not done
  std::vector<std::byte> b(kSuperSize);
  WALFS_RETURN_IF_ERROR(device->Read(0, b.data(), b.size()));
  char* sp = reinterpret_cast<char*>(b.data());
  EncodeErrorRecord(ErrorRecord{}, sp + kSuperErrorsOffset);
  SealSuperblock(b);
  WALFS_RETURN_IF_ERROR(device->Write(0, b.data(), b.size()));
  WALFS_RETURN_IF_ERROR(device->Flush());
  p.repaired = true;
  p.message += "; the record is cleared";
  r->sb.errors = ErrorRecord{};
  return Status::Ok();
}

}  // namespace walfs::fs
