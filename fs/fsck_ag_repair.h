// fsck's rebuilds of an allocation group's own blocks (fs/fsck.h, with
// `repair`), as xfs_repair phases 2 and 5 rebuild AG headers and free-space
// and inode indexes from the superblock's geometry and what the scan finds:
//
//   - an AG header that does not verify (CRC, magic, a field) is made again
//     from the geometry (agno, length; the blocks written, uninit_ag, as
//     the scan found them); the checker then stores the counts it made and
//     the unlinked list's head when the old one still leads to a sound list
//     (else the list is empty and its inodes go to /lost+found);
//   - a bitmap block that does not verify gets its header and CRC made
//     again and keeps its bits, which the ownership phase then corrects
//     from what every inode claims;
//   - an inode-map block that does not verify is made again from those of
//     its records that verify on their own; a chunk whose record is dropped
//     is found again from what names its inodes (fs/fsck_chunks.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fs/format/ag_format.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs {

// The header of AG `agno` from the geometry alone: counts zero, no unlinked
// list; `bitmap_init`, `imap_init` as given (uninit_ag; zero without it).
format::AgHeader GeometryAgHeader(const format::Superblock& sb, std::uint32_t agno, std::uint32_t bitmap_init,
                                  std::uint32_t imap_init);

// Bitmap block `index` of AG `agno`, its header made again over the bits of
// `damaged`, sealed.
std::vector<std::byte> ReheadBitmapBlock(std::span<const std::byte> damaged, const format::Superblock& sb,
                                         std::uint32_t agno, std::uint32_t index);

// Inode-map block `index` of AG `agno` holding each record of `damaged`
// that verifies on its own, or with its free count made its mask's (in
// place, no two for one chunk), sealed;
// *dropped counts the used slots left out.
std::vector<std::byte> SalvageImapBlock(std::span<const std::byte> damaged, const format::Superblock& sb,
                                        std::uint32_t agno, std::uint32_t index, std::uint32_t* dropped);

}  // namespace walfs::fs
