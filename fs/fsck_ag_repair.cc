#include "fs/fsck_ag_repair.h"

#include <algorithm>
#include <set>

#include "fs/format/block_header.h"

namespace walfs::fs {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

AgHeader GeometryAgHeader(const Superblock& sb, std::uint32_t agno, std::uint32_t bitmap_init, std::uint32_t imap_init) {
  AgHeader h;
  h.agno = agno;
  h.length = sb.AgLength(agno);
  if (sb.uninit_ag()) {
    h.bitmap_init = bitmap_init;
    h.imap_init = imap_init;
  }
  return h;
}

std::vector<std::byte> ReheadBitmapBlock(std::span<const std::byte> damaged, const Superblock& sb, std::uint32_t agno,
                                         std::uint32_t index) {
  std::vector<std::byte> b(sb.block_size);
  InitBitmapBlock(sb, agno, index, b);
  std::copy(damaged.begin() + kBlockHeaderSize, damaged.begin() + sb.block_size, b.begin() + kBlockHeaderSize);
  SealBlock(b);
  return b;
}

std::vector<std::byte> SalvageImapBlock(std::span<const std::byte> damaged, const Superblock& sb, std::uint32_t agno,
                                        std::uint32_t index, std::uint32_t* dropped) {
  std::vector<std::byte> b(sb.block_size);
  InitImapBlock(sb, agno, index, b);
  std::set<std::uint32_t> starts;
  *dropped = 0;
  for (std::uint32_t slot = 0; slot < RecordsPerImapBlock(sb.block_size); ++slot) {
    const ImapRecord r = GetImapRecord(damaged, slot);
    if (r.start == 0 && r.free_count == 0 && r.free_mask == 0) continue;
    PutImapRecord(b, slot, r);
    SealBlock(b);
    if (r.start != 0 && !starts.contains(r.start)) {
      if (VerifyImapBlock(b, sb, agno, index).ok()) {
        starts.insert(r.start);
        continue;
      }
      // A count that disagrees with its mask: the mask kept (the chunk's
      // inodes correct it when the chunk is scanned).
      ImapRecord counted = r;
      counted.free_count = static_cast<std::uint32_t>(__builtin_popcountll(r.free_mask));
      PutImapRecord(b, slot, counted);
      SealBlock(b);
      if (VerifyImapBlock(b, sb, agno, index).ok()) {
        starts.insert(r.start);
        continue;
      }
    }
    PutImapRecord(b, slot, ImapRecord{});
    ++*dropped;
  }
  SealBlock(b);
  return b;
}

}  // namespace walfs::fs
