#include "fs/format/inode_format.h"

#include <sys/stat.h>

#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/coding.h"
#include "base/crc32c.h"
#include "fs/format/superblock_format.h"

namespace walfs::fs::format {

namespace {
std::uint32_t InodeCrc(const char* p) {
  static constexpr char kZero[4] = {0, 0, 0, 0};
  std::uint32_t crc = crc32c::Extend(0, p, kInodeCrcOffset);
  crc = crc32c::Extend(crc, kZero, 4);
  return crc32c::Extend(crc, p + kInodeCrcOffset + 4, kInodeSize - kInodeCrcOffset - 4);
}
void PutTime(char* p, std::size_t sec_off, std::size_t nsec_off, const Timestamp& t) {
  EncodeFixed64(p + sec_off, static_cast<std::uint64_t>(t.sec));
  EncodeFixed32(p + nsec_off, t.nsec);
}
Timestamp GetTime(const char* p, std::size_t sec_off, std::size_t nsec_off) {
  return Timestamp{static_cast<std::int64_t>(DecodeFixed64(p + sec_off)),
                   DecodeFixed32(p + nsec_off)};
}
}  // namespace

std::string_view ForkFormatName(ForkFormat f) {
  switch (f) {
    case ForkFormat::kNone: return "none";
    case ForkFormat::kLocal: return "local";
    case ForkFormat::kExtents: return "extents";
    case ForkFormat::kBtree: return "btree";
  }
  return "?";
}

void EncodeInode(const InodeCore& n, std::span<std::byte> out) {
  WALFS_CHECK(out.size() >= kInodeSize && n.literal.size() <= kLiteralSize);
  char* p = reinterpret_cast<char*>(out.data());
  std::memset(p, 0, kInodeSize);
  EncodeFixed16(p + 0, kInodeMagic);
  p[2] = static_cast<char>(kInodeVersion);
  p[3] = static_cast<char>(n.format);
  EncodeFixed16(p + 4, n.mode);
  p[6] = static_cast<char>(n.aformat);
  EncodeFixed32(p + 8, n.uid);
  EncodeFixed32(p + 12, n.gid);
  EncodeFixed32(p + 16, n.nlink);
  EncodeFixed32(p + 20, n.generation);
  EncodeFixed64(p + 24, n.size);
  EncodeFixed64(p + 32, n.nblocks);
  PutTime(p, 40, 72, n.atime);
  PutTime(p, 48, 76, n.mtime);
  PutTime(p, 56, 80, n.ctime);
  PutTime(p, 64, 84, n.crtime);
  EncodeFixed32(p + 88, n.flags);
  EncodeFixed32(p + 92, n.nextents);
  EncodeFixed64(p + 96, n.next_unlinked);
  EncodeFixed64(p + 104, n.ino);
  EncodeFixed64(p + 112, n.lsn);
  EncodeFixed32(p + 124, n.rdev);
  EncodeFixed16(p + 128, n.fork_off);
  EncodeFixed16(p + 130, n.anextents);
  std::memcpy(p + kInodeCoreSize, n.literal.data(), n.literal.size());
  EncodeFixed32(p + kInodeCrcOffset, InodeCrc(p));
}

Result<InodeCore> DecodeInode(std::span<const std::byte> in, std::uint64_t ino) {
  if (in.size() < kInodeSize)
    return Status::Corruption(fmt::format("inode {}: {} bytes", ino, in.size()));
  const char* p = reinterpret_cast<const char*>(in.data());
  auto bad = [ino](std::string_view why) {
    return Status::Corruption(fmt::format("inode {}: {}", ino, why));
  };
  if (DecodeFixed16(p) != kInodeMagic)
    return bad(fmt::format("magic {:#06x} is not {:#06x}", DecodeFixed16(p), kInodeMagic));
  if (DecodeFixed32(p + kInodeCrcOffset) != InodeCrc(p)) return bad("CRC mismatch");
  if (static_cast<std::uint8_t>(p[2]) != kInodeVersion)
    return bad(fmt::format("version {}", static_cast<int>(static_cast<std::uint8_t>(p[2]))));
  InodeCore n;
  n.format = static_cast<ForkFormat>(p[3]);
  n.mode = DecodeFixed16(p + 4);
  n.aformat = static_cast<ForkFormat>(p[6]);
  n.uid = DecodeFixed32(p + 8);
  n.gid = DecodeFixed32(p + 12);
  n.nlink = DecodeFixed32(p + 16);
  n.generation = DecodeFixed32(p + 20);
  n.size = DecodeFixed64(p + 24);
  n.nblocks = DecodeFixed64(p + 32);
  n.atime = GetTime(p, 40, 72);
  n.mtime = GetTime(p, 48, 76);
  n.ctime = GetTime(p, 56, 80);
  n.crtime = GetTime(p, 64, 84);
  n.flags = DecodeFixed32(p + 88);
  n.nextents = DecodeFixed32(p + 92);
  n.next_unlinked = DecodeFixed64(p + 96);
  n.ino = DecodeFixed64(p + 104);
  n.lsn = DecodeFixed64(p + 112);
  n.rdev = DecodeFixed32(p + 124);
  n.fork_off = DecodeFixed16(p + 128);
  n.anextents = DecodeFixed16(p + 130);
  n.literal.assign(p + kInodeCoreSize, kLiteralSize);
  if (n.ino != ino) return bad(fmt::format("says it is inode {}", n.ino));
  if (static_cast<std::uint8_t>(n.format) > 3 || static_cast<std::uint8_t>(n.aformat) > 3)
    return bad(fmt::format("fork formats {}/{}", static_cast<int>(n.format),
                           static_cast<int>(n.aformat)));
  if (n.fork_off > kLiteralSize || n.fork_off % 8 != 0)
    return bad(fmt::format("xattr fork offset {}", n.fork_off));
  if (n.free()) {
    if (n.nlink != 0 || n.format != ForkFormat::kNone) return bad("free, but has links or data");
    return n;
  }
  const std::uint32_t data_room = n.fork_off ? n.fork_off : kLiteralSize;
  switch (n.mode & S_IFMT) {
    case S_IFREG:
      if (n.format != ForkFormat::kExtents && n.format != ForkFormat::kBtree)
        return bad(fmt::format("regular file in {} format", ForkFormatName(n.format)));
      break;
    case S_IFDIR:
      if (n.format == ForkFormat::kNone) return bad("directory without a data fork");
      if (n.format == ForkFormat::kLocal && n.size > data_room)
        return bad(fmt::format("inline directory of {} bytes in {}", n.size, data_room));
      break;
    case S_IFLNK:
      if (n.format == ForkFormat::kLocal && n.size > data_room)
        return bad(fmt::format("inline symlink of {} bytes in {}", n.size, data_room));
      if (n.size == 0 || n.size > 4096) return bad(fmt::format("symlink of {} bytes", n.size));
      break;
    case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
      if (n.format != ForkFormat::kNone) return bad("special file with a data fork");
      break;
    default:
      return bad(fmt::format("mode {:o} has no file type", n.mode));
  }
  if (n.format == ForkFormat::kExtents) {
    if (std::uint64_t{n.nextents} * kExtentSize > data_room)
      return bad(fmt::format("{} inline extents in {} bytes", n.nextents, data_room));
    // In file order and disjoint: lookups search them by halves (FileMap).
    std::uint64_t next_free = 0;
    for (std::uint32_t i = 0; i < n.nextents; ++i) {
      const Extent e = DecodeExtent(n.literal.data() + std::size_t{i} * kExtentSize);
      if (e.file_block < next_free || e.file_block > (std::uint64_t{1} << 48))
        return bad(fmt::format("inline extent {} at file block {} overlaps or is out of order", i, e.file_block));
      next_free = e.file_block + e.length;
    }
  }
  return n;
}

void SealInodeBlock(std::span<std::byte> block) {
  for (std::size_t off = 0; off + kInodeSize <= block.size(); off += kInodeSize) {
    char* p = reinterpret_cast<char*>(block.data() + off);
    if (DecodeFixed16(p) != kInodeMagic) continue;
    EncodeFixed32(p + kInodeCrcOffset, InodeCrc(p));
  }
}

void SpreadInodeBlockLsn(std::span<std::byte> block) {
  if (block.size() < kInodeSize) return;
  const std::uint64_t lsn = DecodeFixed64(reinterpret_cast<const char*>(block.data()) + kInodeLsnOffset);
  for (std::size_t off = kInodeSize; off + kInodeSize <= block.size(); off += kInodeSize) {
    char* p = reinterpret_cast<char*>(block.data() + off);
    if (DecodeFixed16(p) == kInodeMagic) EncodeFixed64(p + kInodeLsnOffset, lsn);
  }
}

bool InodeBlockLsnsAgree(std::span<const std::byte> block, std::uint64_t first_ino) {
  if (block.size() < kInodeSize) return false;
  const char* first = reinterpret_cast<const char*>(block.data());
  const std::uint64_t lsn = DecodeFixed64(first + kInodeLsnOffset);
  std::uint64_t ino = first_ino;
  for (std::size_t off = 0; off + kInodeSize <= block.size(); off += kInodeSize, ++ino) {
    const char* p = first + off;
    if (DecodeFixed16(p) != kInodeMagic || DecodeFixed64(p + 104) != ino ||
        DecodeFixed64(p + kInodeLsnOffset) != lsn)
      return false;
  }
  return true;
}

InodeCore FreeInode(std::uint64_t ino, std::uint32_t generation) {
  InodeCore n;
  n.ino = ino;
  n.generation = generation;
  return n;
}

void EncodeExtent(const Extent& e, char* out) {
  WALFS_CHECK(e.length >= 1 && e.length <= kMaxExtentLength && e.disk_block < (1ull << 48));
  EncodeFixed64(out, e.file_block);
  EncodeFixed64(out + 8, e.disk_block | (std::uint64_t{e.length - 1} << 48) |
                             (std::uint64_t{e.unwritten} << 63));
}

Extent DecodeExtent(const char* in) {
  const std::uint64_t w = DecodeFixed64(in + 8);
  return Extent{DecodeFixed64(in), w & ((1ull << 48) - 1),
                static_cast<std::uint32_t>(((w >> 48) & 0x7fff) + 1), (w >> 63) != 0};
}

std::string EncodeLocalDir(std::uint64_t parent, const std::vector<DirEntry>& entries) {
  std::string out;
  PutFixed64(&out, parent);
  for (const DirEntry& e : entries) {
    WALFS_CHECK(!e.name.empty() && e.name.size() <= kMaxNameLen);
    PutFixed64(&out, e.ino);
    out.push_back(static_cast<char>(e.name.size()));
    out.push_back(static_cast<char>(e.ftype));
    out.append(e.name);
  }
  return out;
}

Status DecodeLocalDir(std::string_view data, std::uint64_t* parent, std::vector<DirEntry>* entries) {
  entries->clear();
  if (data.size() < 8)
    return Status::Corruption(fmt::format("inline directory of {} bytes has no parent", data.size()));
  *parent = DecodeFixed64(data.data());
  if (*parent == 0) return Status::Corruption("inline directory: parent inode 0");
  std::size_t pos = 8;
  while (pos < data.size()) {
    if (data.size() - pos < 10)
      return Status::Corruption(fmt::format("inline directory: entry at {} is truncated", pos));
    DirEntry e;
    e.ino = DecodeFixed64(data.data() + pos);
    const auto len = static_cast<std::uint8_t>(data[pos + 8]);
    e.ftype = static_cast<std::uint8_t>(data[pos + 9]);
    pos += 10;
    if (len == 0 || data.size() - pos < len)
      return Status::Corruption(fmt::format("inline directory: name of {} bytes at {}", len, pos));
    e.name.assign(data.data() + pos, len);
    pos += len;
    if (e.ino == 0) return Status::Corruption(fmt::format("inline directory: \"{}\" -> inode 0", e.name));
    if (e.name == "." || e.name == ".." || e.name.find('/') != std::string::npos ||
        e.name.find('\0') != std::string::npos)
      return Status::Corruption(fmt::format("inline directory: invalid name \"{}\"", e.name));
    entries->push_back(std::move(e));
  }
  return Status::Ok();
}

}  // namespace walfs::fs::format
