// Inodes (docs/disk_format.md, "Inodes").  512 bytes each, in chunks of 64
// allocated from an AG's free space; the inode number says where it lives:
//
//   ino = fsblock * inodes_per_block + slot
//
// Core (little-endian):
//    0 magic u16 "IN"   2 version u8   3 format u8 (data fork)   4 mode u16
//    6 aformat u8 (xattr fork)   7 pad u8
//    8 uid u32   12 gid u32   16 nlink u32   20 generation u32
//   24 size u64  32 nblocks u64 (blocks allocated to the file, forks included)
//   40 atime_s i64  48 mtime_s i64  56 ctime_s i64  64 crtime_s i64
//   72 atime_ns u32 76 mtime_ns u32 80 ctime_ns u32 84 crtime_ns u32
//   88 flags u32   92 nextents u32 (data fork extents)
//   96 next_unlinked u64 (the AG's unlinked list; 0: end)   104 ino u64 (self)
//  112 lsn u64   120 crc u32   124 rdev u32
//  128 fork_off u16 (the xattr fork's offset in the literal area; 0: none)
//  130 anextents u16   132 reserved[28]
//  160 literal area [160, 512): the data fork, then the xattr fork
//
// The crc covers the 512 bytes with the crc field zeroed.  The lsn of an
// inode chunk *block* (what recovery compares) is the lsn field of the
// block's first inode, which writeback stamps (BufLogItem lsn_offset 112).
// A free inode has magic and ino set and mode 0.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fs/format/literal.h"

namespace walfs::fs::format {

inline constexpr std::uint16_t kInodeMagic = 0x4e49;  // "IN"
inline constexpr std::uint8_t kInodeVersion = 1;
inline constexpr std::uint32_t kInodeCoreSize = 160;
inline constexpr std::uint32_t kInodeLsnOffset = 112;
inline constexpr std::uint32_t kInodeCrcOffset = 120;

enum class ForkFormat : std::uint8_t {
  kNone = 0,     // no data (device nodes, fifos, sockets; an absent xattr fork)
  kLocal = 1,    // bytes inline in the literal area (short symlinks, small dirs and xattrs)
  kExtents = 2,  // extent records inline
  kBtree = 3,    // the root of an extent B+tree inline
};
std::string_view ForkFormatName(ForkFormat f);

struct Timestamp {
  std::int64_t sec = 0;
  std::uint32_t nsec = 0;
  friend bool operator==(const Timestamp&, const Timestamp&) = default;
};

struct InodeCore {
  ForkFormat format = ForkFormat::kNone;
  ForkFormat aformat = ForkFormat::kNone;
  std::uint16_t mode = 0;  // 0: free
  std::uint32_t uid = 0, gid = 0;
  std::uint32_t nlink = 0;
  std::uint32_t generation = 0;
  std::uint64_t size = 0;
  std::uint64_t nblocks = 0;
  Timestamp atime, mtime, ctime, crtime;
  std::uint32_t flags = 0;
  std::uint32_t nextents = 0;
  std::uint64_t next_unlinked = 0;
  std::uint64_t ino = 0;
  std::uint64_t lsn = 0;
  std::uint32_t rdev = 0;
  std::uint16_t fork_off = 0;
  std::uint16_t anextents = 0;
  // The literal area (kInodeSize - kInodeCoreSize bytes).
  Literal literal;

  bool free() const { return mode == 0; }
  friend bool operator==(const InodeCore&, const InodeCore&) = default;
};

inline constexpr std::uint32_t kLiteralSize = 512 - kInodeCoreSize;
static_assert(kLiteralSize == Literal::kCapacity);

// Writes one inode's 512 bytes (crc computed).  literal is padded with zeros.
void EncodeInode(const InodeCore& inode, std::span<std::byte> out);
// Decodes and checks one inode: magic, crc, version, that it is inode `ino`,
// fork formats that fit its mode, sizes that fit the literal area.
Result<InodeCore> DecodeInode(std::span<const std::byte> in, std::uint64_t ino);
// Recomputes the CRC of every inode in an inode chunk block (at writeback
// and after recovery replayed logged chunks into it).  Slots without the
// inode magic are left alone: the decoder will report them.
void SealInodeBlock(std::span<std::byte> block);
// Writeback stamps a chunk block's LSN in its first inode; this copies it
// into every inode of the block (before SealInodeBlock), so that a write
// torn at a sector -- an inode -- leaves inodes whose LSNs differ, which
// InodeBlockLsnsAgree catches.
void SpreadInodeBlockLsn(std::span<std::byte> block);
// Whether every inode of a chunk block read from disk is the inode its
// place names (`first_ino` + slot) and carries the first inode's LSN:
// then the block was written whole and its stamp may be trusted.
bool InodeBlockLsnsAgree(std::span<const std::byte> block, std::uint64_t first_ino);
// A free inode as mkfs and chunk allocation write it.
InodeCore FreeInode(std::uint64_t ino, std::uint32_t generation);

// Extent record, 16 bytes:
//   file_block u64 | disk_block:48 len:15 unwritten:1 (u64)
struct Extent {
  std::uint64_t file_block = 0;
  std::uint64_t disk_block = 0;
  std::uint32_t length = 0;  // 1 .. kMaxExtentLength
  bool unwritten = false;
  friend bool operator==(const Extent&, const Extent&) = default;
};
inline constexpr std::size_t kExtentSize = 16;
inline constexpr std::uint32_t kMaxExtentLength = (1u << 15);
void EncodeExtent(const Extent& e, char* out);
Extent DecodeExtent(const char* in);

// A directory in local format: the parent's inode number, then entries
//   ino u64, namelen u8, ftype u8, name[namelen]
// packed; the inode size is the byte length of it all.
struct DirEntry {
  std::uint64_t ino = 0;
  std::uint8_t ftype = 0;  // DT_* value
  std::string name;
  friend bool operator==(const DirEntry&, const DirEntry&) = default;
};
inline constexpr std::size_t kMaxNameLen = 255;
std::string EncodeLocalDir(std::uint64_t parent, const std::vector<DirEntry>& entries);
// Corruption for a truncated entry, an empty or over-long name, a name with
// '/' or NUL, "." or "..", or inode 0.
Status DecodeLocalDir(std::string_view data, std::uint64_t* parent, std::vector<DirEntry>* entries);

}  // namespace walfs::fs::format
